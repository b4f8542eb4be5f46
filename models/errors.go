package models

import (
	"errors"
	"fmt"
)

// Error codes: the kind of a domain error, which decides how it is
// answered (package api maps each code to an HTTP status, once). A code
// says what went wrong in the domain's terms, not in HTTP's.
const (
	// EINVALID: the request is malformed (a field missing or wrong).
	EINVALID = "invalid"
	// EUNAUTHORIZED: who is asking is not established (a key, a signature).
	EUNAUTHORIZED = "unauthorized"
	// EFORBIDDEN: who is asking may not do this.
	EFORBIDDEN = "forbidden"
	// ENOTFOUND: no such thing, or not the caller's.
	ENOTFOUND = "not_found"
	// ECONFLICT: the thing's state does not allow it now (cancelled,
	// decided, another request with the same key in flight).
	ECONFLICT = "conflict"
	// EEXPIRED: it was possible, and no longer is (a lock that ran out).
	EEXPIRED = "expired"
	// EINSUFFICIENT: the wallet's available balance does not cover it.
	EINSUFFICIENT = "insufficient_balance"
	// EUNPROCESSABLE: well-formed, but a business rule refuses it.
	EUNPROCESSABLE = "unprocessable"
	// EUNAVAILABLE: something it depends on cannot answer now; a retry
	// may succeed.
	EUNAVAILABLE = "unavailable"
	// ERATELIMITED: the caller asks too often; a retry after a wait may
	// succeed.
	ERATELIMITED = "rate_limited"
	// EINTERNAL: a bug, or a failure the caller cannot act on. Its message
	// is never shown: the caller gets InternalMessage, the log the detail.
	// Every error that is not an *Error has this code.
	EINTERNAL = "internal"
)

// InternalMessage is what a caller is told of an EINTERNAL error.
const InternalMessage = "internal server error"

// Error is a domain error: a code that decides how it is answered, the
// message a client sees (the spec's words, which clients match on), and a
// hint for a person (what exactly was wrong, how to fix it), answered
// apart from the message. The sentinels below are *Error values compared
// with errors.Is; errors wrapped with %w keep their code, and what a wrap
// adds is for the log, never for the client.
type Error struct {
	Code    string
	Message string
	Hint    string
	// err is the error a hint was attached to (WithHint): errors.Is and
	// errors.As see it through the hint, and the log shows its text.
	err error
}

// Errorf returns an *Error with the given code and a message formatted
// as fmt.Sprintf does.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Error is the message, or the text of the error a hint was attached to
// (with its wraps), followed by the hint in parentheses: for logs.
func (e *Error) Error() string {
	msg := e.Message
	if e.err != nil {
		msg = e.err.Error()
	}
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

func (e *Error) Unwrap() error { return e.err }

// ErrorCode returns the code of the outermost *Error in err's chain,
// EINTERNAL when there is none, and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) && e.Code != "" {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the message a client may see for err: the message
// of the outermost *Error in its chain, never what a wrap added;
// InternalMessage for an EINTERNAL error; "" for nil.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if ErrorCode(err) == EINTERNAL || !errors.As(err, &e) {
		return InternalMessage
	}
	return e.Message
}

// WithHint attaches a hint for a person to err; "" attaches none. The
// result has err's code and message, and errors.Is and errors.As see err
// through it; of two hints, the outer is the one answered.
func WithHint(err error, hint string) error {
	if err == nil || hint == "" {
		return err
	}
	return &Error{Code: ErrorCode(err), Message: ErrorMessage(err), Hint: hint, err: err}
}

// HintOf returns the hint of the outermost *Error in err's chain, or "".
func HintOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Hint
	}
	return ""
}

// Invalid returns an EINVALID error: the request is malformed. msg names
// the field and says what is wrong.
func Invalid(msg string) error { return &Error{Code: EINVALID, Message: msg} }

// Refuse returns an EUNPROCESSABLE error: the request is well-formed but a
// business rule refuses it (below the minimum, a transfer type the bank
// does not take). msg says which rule.
func Refuse(msg string) error { return &Error{Code: EUNPROCESSABLE, Message: msg} }

// Domain errors. They are declared once here, wrapped with %w where context
// helps, and turned into an HTTP status only by their code, in package api.
// The messages of the errors a client sees are the spec's exact wording.
// Errors only the HTTP layer produces (a missing header, a body too large,
// a rate limit) are package api's.
var (
	// Authentication and authorisation. The key's errors are found below
	// the HTTP layer (the key's format, its lookup, the cache of callers).
	ErrInvalidAPIKey        = Errorf(EUNAUTHORIZED, "invalid API key")
	ErrLegacyAPIKey         = Errorf(EUNAUTHORIZED, "API key of the legacy generation: this service accepts only V3 keys")
	ErrWrongEnvironmentKey  = Errorf(EUNAUTHORIZED, "API key belongs to another environment")
	ErrWithdrawalsSuspended = Errorf(EFORBIDDEN, "withdrawals are suspended for this client")

	// Resources.
	ErrNotFound       = Errorf(ENOTFOUND, "not found")
	ErrWalletNotFound = Errorf(ENOTFOUND, "wallet not found")
	ErrClientNotFound = Errorf(ENOTFOUND, "client not found")

	// Storage. Never a client's to act on.
	ErrConflict = Errorf(EINTERNAL, "conflicting concurrent change; retry")

	// Money. A posting that meets either is refused whole, never wrapped
	// or applied in part.
	ErrAmountOverflow = Errorf(EINTERNAL, "amount overflow: the sum is beyond the range of stored amounts")
	ErrBalanceLimit   = Errorf(EINTERNAL, "wallet balance would pass its maximum of ±100000000000000 IDR")
)

// ErrRateLimited: the client asked more often than its limit allows (the
// API's per-client limits, or the payout service's inquiry budget). The
// answer says when to retry.
var ErrRateLimited = Errorf(ERATELIMITED, "rate limit exceeded; retry later")

// ErrSignatureReused: the signature was accepted before for another
// method, path or Idempotency-Key; a signature is used once
// (docs/design.md, Signatures). A create's own record finds it too, below
// the HTTP layer.
var ErrSignatureReused = Errorf(EUNAUTHORIZED, "x-signature was already used; sign the request again")

// Disbursement errors. Their messages are the spec's words where it gives
// them.
var (
	ErrDisbursementNotFound  = Errorf(ENOTFOUND, "disbursement not found")
	ErrInsufficientBalance   = Errorf(EINSUFFICIENT, "Insufficient balance")
	ErrVendorPayoutFailed    = Errorf(EUNAVAILABLE, "Vendor payout request failed")
	ErrLockExpired           = Errorf(EEXPIRED, "Withdrawal lock has expired")
	ErrDisbursementCancelled = Errorf(ECONFLICT, "disbursement was cancelled")
	ErrIdempotencyInFlight   = Errorf(ECONFLICT, "concurrent request with the same Idempotency-Key; retry")
	ErrIdempotencyMismatch   = Errorf(EUNPROCESSABLE, "Idempotency-Key was already used with different parameters")
	// ErrUnsupportedBank: the bank code is not on the wallet's vendor's
	// list. Vendors return it from an inquiry as well.
	ErrUnsupportedBank = Errorf(EUNPROCESSABLE, "bank_code is not supported by this wallet's vendor")
	// ErrAccountInactive: the account exists but cannot receive (a
	// vendor's inquiry says so).
	ErrAccountInactive = Errorf(EUNPROCESSABLE, "bank account is inactive")
	// ErrAccountNotResolved: no such account, or the number is malformed
	// (a vendor's inquiry says so).
	ErrAccountNotResolved = Errorf(EUNPROCESSABLE, "bank account verification failed")
	// ErrHolderNameRequired: the recipient's rail needs the holder's name,
	// its inquiry did not return one and the request carried none.
	ErrHolderNameRequired = Errorf(EUNPROCESSABLE, "account_holder_name is required for this recipient")
	ErrGatewayUnavailable = Errorf(EUNAVAILABLE, "payout gateway is temporarily unavailable; retry later")

	// ErrTransitionRefused: the lifecycle does not allow the move. A bug or
	// an operator's mistake, never a client's.
	ErrTransitionRefused = Errorf(EINTERNAL, "disbursement status change refused")
	// ErrStaleStatus: the row was no longer in the expected status when the
	// guarded update ran; someone else moved it first.
	ErrStaleStatus = Errorf(EINTERNAL, "disbursement status changed concurrently")

	// ErrLateResultNotFound: no late vendor result with that id (operators,
	// through the admin CLI; no HTTP route returns it).
	ErrLateResultNotFound = Errorf(ENOTFOUND, "late vendor result not found")
	// ErrLateResultResolved: the late vendor result was resolved already;
	// its note is not overwritten.
	ErrLateResultResolved = Errorf(ECONFLICT, "late vendor result is already resolved")
)

// Payment errors.
var (
	ErrPaymentNotFound = Errorf(ENOTFOUND, "payment not found")
	ErrNoDefaultWallet = Errorf(EUNPROCESSABLE, "no default wallet configured")
	// ErrPaymentNotPending: a simulated payment of a payment already decided.
	ErrPaymentNotPending = Errorf(ECONFLICT, "payment is no longer pending")
	// ErrCheckoutToken: a staging simulation without the token of its
	// payment that the checkout page carries.
	ErrCheckoutToken = Errorf(EFORBIDDEN, "missing or invalid checkout token; reload the checkout page")
	// ErrSettlementRefused: the settlement cannot be applied (the wallet
	// would pass its maximum balance, a sum would overflow). It is recorded
	// on the payment (settlement_error) for operators and not retried.
	ErrSettlementRefused = Errorf(EINTERNAL, "settlement refused")
)
