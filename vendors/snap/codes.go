package snap

import (
	"fmt"
	"strconv"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
)

// Code is a SNAP responseCode: HTTP status (3 digits) + service code (2) +
// case code (2) ([BI-SNAP]; [FP-CODES] "response code = HTTP status code +
// service code + case code").
type Code struct {
	HTTP    int
	Service string
	Case    string
	Message string // responseMessage, when decoded from an answer
}

// String is the seven-digit code.
func (c Code) String() string { return fmt.Sprintf("%03d%s%s", c.HTTP, c.Service, c.Case) }

// ParseCode reads a seven-digit responseCode.
func ParseCode(s string) (Code, error) {
	if len(s) != 7 || !allDigits(s) {
		return Code{}, fmt.Errorf("snap: responseCode %q is not 7 digits", s)
	}
	h, _ := strconv.Atoi(s[:3])
	if h < 200 || h > 599 {
		return Code{}, fmt.Errorf("snap: responseCode %q has no HTTP status", s)
	}
	return Code{HTTP: h, Service: s[3:5], Case: s[5:7]}, nil
}

// NewCode builds the code of service with HTTP status h and case c.
func NewCode(h int, service, c string) Code { return Code{HTTP: h, Service: service, Case: c} }

// Kind is what a responseCode means to this adapter.
type Kind int

// Kinds of responseCode.
const (
	KindUnknown           Kind = iota // not in the table: treated as unavailable
	KindSuccess                       // 200xx00
	KindInProgress                    // 202xx00
	KindBadRequest                    // 400xx00..02
	KindUnauthorized                  // 401xx00: signature, client, key
	KindTokenInvalid                  // 401xx01, 401xx03: refresh the token, retry once
	KindExpired                       // 403xx00
	KindNotAllowed                    // 403xx01
	KindLimit                         // 403xx02, 403xx23
	KindDoNotHonor                    // 403xx05
	KindDormant                       // 403xx09
	KindInsufficientFunds             // 403xx14
	KindNotPermitted                  // 403xx15
	KindInactive                      // 403xx18
	KindTxNotFound                    // 404xx01
	KindInvalidAccount                // 404xx11
	KindDuplicateExternal             // 409xx00
	KindDuplicateRef                  // 409xx01
	KindTooMany                       // 429xx00
	KindServerError                   // 500xx00..02
	KindTimeout                       // 504xx00
)

// codeTable is the one table of SNAP responseCodes this package knows,
// keyed by HTTP status and case code (the service code varies). Sources:
// [BI-SNAP] response code list, as republished by [DP-CODES],
// [FP-CODES] and [NP-CODES]; 403xx09 "Account is dormant" and the payout
// meanings from [MT-ERR].
//
//	code     message ([BI-SNAP])                       Inquire                Submit                         Status
//	200xx00  Successful                                holder name            PENDING (or its status)        its latestTransactionStatus
//	202xx00  Request In Progress                       unavailable            PENDING                        PENDING
//	400xx00  Bad Request                               not resolved           rejected                       unavailable
//	400xx01  Invalid Field Format {field}              not resolved           rejected                       unavailable
//	400xx02  Invalid Mandatory Field {field}           not resolved           rejected                       unavailable
//	401xx00  Unauthorized. [reason] (signature...)     unavailable+ErrAuth    unavailable+ErrAuth            unavailable+ErrAuth
//	401xx01  Invalid Token (B2B)                       refresh, retry once    refresh, retry once            refresh, retry once
//	401xx03  Token Not Found (B2B)                     refresh, retry once    refresh, retry once            refresh, retry once
//	403xx00  Transaction Expired ([DP-CODES])          unavailable            rejected                       unavailable
//	403xx01  Feature Not Allowed ([NP-CODES])          inactive               rejected                       unavailable
//	403xx02  Exceeds Transaction Amount Limit          unavailable            rejected                       unavailable
//	403xx05  Do Not Honor ([NP-CODES])                 inactive               rejected                       unavailable
//	403xx09  Account is dormant ([MT-ERR])             inactive               rejected (inactive)            unavailable
//	403xx14  Insufficient Funds                        unavailable            rejected+ErrSourceFunds        unavailable
//	403xx15  Transaction Not Permitted                 inactive               rejected                       unavailable
//	403xx18  Inactive Card/Account/Customer            inactive               rejected (inactive)            unavailable
//	403xx23  Account Limit Exceed ([NP-CODES])         unavailable            rejected                       unavailable
//	404xx01  Transaction Not Found                     unavailable            unavailable                    unknown payout
//	404xx11  Invalid Card/Account/Customer             not resolved           rejected (not resolved)        unavailable
//	409xx00  Conflict (X-EXTERNAL-ID reused that day)  unavailable            ask Status                     unavailable
//	409xx01  Duplicate partnerReferenceNo              unavailable            ask Status                     unavailable
//	429xx00  Too Many Requests                         unavailable            unavailable                    unavailable
//	500xx00  General Error                             unavailable            unavailable                    unavailable
//	500xx01  Internal Server Error                     unavailable            unavailable                    unavailable
//	500xx02  External Server Error                     unavailable            unavailable                    unavailable
//	504xx00  Timeout                                   unavailable            unavailable                    unavailable
//	other    -                                         unavailable            unavailable                    unavailable
//
// A 403 is the bank's refusal of this request: it moved nothing, so on a
// transfer every 403 the table knows is a rejection, never an unknown
// outcome to chase with status inquiries.
//
// Insufficient funds (403xx14) is the platform's source account at the
// bank, not the merchant's wallet. The bank refused this transfer and
// moved nothing, so Submit answers ErrRejected (the payout fails, the
// lock is released, the merchant may create it again), wrapping
// ErrSourceInsufficientFunds so operators are alerted to top the account
// up. Treating it as ErrUnavailable instead would leave the payout
// unresolved: the status inquiry knows no such transfer, and the merchant's
// funds would stay locked until the lock expires, for a condition only an
// operator can fix.
var codeTable = map[[2]string]Kind{
	{"200", "00"}: KindSuccess,
	{"202", "00"}: KindInProgress,
	{"400", "00"}: KindBadRequest,
	{"400", "01"}: KindBadRequest,
	{"400", "02"}: KindBadRequest,
	{"401", "00"}: KindUnauthorized,
	{"401", "01"}: KindTokenInvalid,
	{"401", "03"}: KindTokenInvalid,
	{"403", "00"}: KindExpired,
	{"403", "01"}: KindNotAllowed,
	{"403", "02"}: KindLimit,
	{"403", "05"}: KindDoNotHonor,
	{"403", "09"}: KindDormant,
	{"403", "14"}: KindInsufficientFunds,
	{"403", "15"}: KindNotPermitted,
	{"403", "18"}: KindInactive,
	{"403", "23"}: KindLimit,
	{"404", "01"}: KindTxNotFound,
	{"404", "11"}: KindInvalidAccount,
	{"409", "00"}: KindDuplicateExternal,
	{"409", "01"}: KindDuplicateRef,
	{"429", "00"}: KindTooMany,
	{"500", "00"}: KindServerError,
	{"500", "01"}: KindServerError,
	{"500", "02"}: KindServerError,
	{"504", "00"}: KindTimeout,
}

// Kind classifies c by codeTable.
func (c Code) Kind() Kind {
	return codeTable[[2]string{fmt.Sprintf("%03d", c.HTTP), c.Case}]
}

// Errors of this package besides the vendors.Err* ones, wrapped with them.
var (
	// ErrAuth: the bank refused our credentials or signature (401xx00), or
	// a token even after a refresh. Our configuration or clock is wrong;
	// operators must look. Wrapped with vendors.ErrUnavailable.
	ErrAuth = fmt.Errorf("snap: the bank refused the platform's credentials or signature")
	// ErrSourceInsufficientFunds: the platform's source account cannot
	// cover the transfer (403xx14). Wrapped with vendors.ErrRejected.
	ErrSourceInsufficientFunds = fmt.Errorf("snap: the platform's source account has insufficient funds")
)

// codeError is an error that names the responseCode and message, never a
// secret or an account number.
func codeError(kind error, c Code) error { return &CodeError{Kind: kind, Code: c} }

// inquiryError maps a non-success answer of the account inquiry.
func inquiryError(c Code) error {
	switch c.Kind() {
	case KindBadRequest, KindInvalidAccount:
		return codeError(models.ErrAccountNotResolved, c)
	case KindInactive, KindDormant, KindNotPermitted, KindNotAllowed, KindDoNotHonor:
		return codeError(models.ErrAccountInactive, c)
	case KindUnauthorized, KindTokenInvalid:
		return fmt.Errorf("%w: %w", vendors.ErrUnavailable, codeError(ErrAuth, c))
	}
	return unavailable(c)
}

// submitError maps a non-success answer of the transfer that is neither a
// duplicate (answered by a status inquiry) nor a token to refresh.
func submitError(c Code) error {
	switch c.Kind() {
	case KindBadRequest, KindLimit, KindNotPermitted, KindExpired, KindNotAllowed, KindDoNotHonor:
		return codeError(vendors.ErrRejected, c)
	case KindInactive, KindDormant:
		return fmt.Errorf("%w: %w", vendors.ErrRejected, codeError(models.ErrAccountInactive, c))
	case KindInvalidAccount:
		return fmt.Errorf("%w: %w", vendors.ErrRejected, codeError(models.ErrAccountNotResolved, c))
	case KindInsufficientFunds:
		return fmt.Errorf("%w: %w", vendors.ErrRejected, codeError(ErrSourceInsufficientFunds, c))
	case KindUnauthorized, KindTokenInvalid:
		return fmt.Errorf("%w: %w", vendors.ErrUnavailable, codeError(ErrAuth, c))
	}
	return unavailable(c)
}

// statusError maps a non-success answer of the status inquiry.
func statusError(c Code) error {
	switch c.Kind() {
	case KindTxNotFound:
		return codeError(vendors.ErrUnknownPayout, c)
	case KindUnauthorized, KindTokenInvalid:
		return fmt.Errorf("%w: %w", vendors.ErrUnavailable, codeError(ErrAuth, c))
	}
	return unavailable(c)
}

// transactionStatuses maps latestTransactionStatus ([BI-SNAP] transfer
// status inquiry, service 36: 00 Success, 01 Initiated, 02 Paying,
// 03 Pending, 04 Refunded, 05 Canceled, 06 Failed, 07 Not found).
//
// 04 Refunded on a transfer means the money came back after it was paid:
// the payout is RETURNED. 05 Canceled is a failure (nothing paid). 07 is
// an unknown payout. Anything else is not trusted: unavailable.
var transactionStatuses = map[string]vendors.PayoutStatus{
	"00": vendors.PayoutSuccess,
	"01": vendors.PayoutPending,
	"02": vendors.PayoutPending,
	"03": vendors.PayoutPending,
	"04": vendors.PayoutReturned,
	"05": vendors.PayoutFailed,
	"06": vendors.PayoutFailed,
}

// TransactionStatusDesc is the description [BI-SNAP] gives each
// latestTransactionStatus.
var TransactionStatusDesc = map[string]string{
	"00": "Success", "01": "Initiated", "02": "Paying", "03": "Pending",
	"04": "Refunded", "05": "Canceled", "06": "Failed", "07": "Not found",
}

// unavailable is the error of an answer the tables above do not map: the
// bank's "try again later" (5xx, 504xx00 timeout, 429xx00 too many
// requests) marks the bank as failing (vendors.ErrVendorDown), anything
// else is an answer not understood.
func unavailable(c Code) error {
	err := codeError(vendors.ErrUnavailable, c)
	if c.HTTP >= 500 || c.Kind() == KindTooMany || c.Kind() == KindServerError || c.Kind() == KindTimeout {
		return vendors.Down(err)
	}
	return err
}
