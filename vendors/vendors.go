// Package vendors declares what the service needs from a payout vendor
// (its bank list, a real-time account inquiry, submitting a payout and
// asking for its status) and the reference data they share: the Indonesian
// banks and e-wallets of banks.tsv.
//
// Implementations live in sub-packages: vendors/sandbox holds the two
// sandbox vendors, simbank and simwallet; vendors/vendorsim serves them over
// HTTP (payoutd vendorsim) and holds the HTTP client adapter for them.
package vendors

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/payoutd/payoutd/models"
)

// Bank is an entry of a vendor's bank list: a bank or an e-wallet.
type Bank struct {
	Code          string                // lowercase slug used as bank_code, e.g. "bca", "dana"
	Name          string                // e.g. "Bank Central Asia"
	SWIFT         string                // SWIFT/BIC; empty for e-wallets
	EWallet       bool                  // account numbers are phone numbers
	TransferTypes []models.TransferType // networks this vendor can use for it
}

// SupportsTransfer reports whether tt is one of the bank's transfer types.
func (b Bank) SupportsTransfer(tt models.TransferType) bool {
	for _, t := range b.TransferTypes {
		if t == tt {
			return true
		}
	}
	return false
}

// InquiryRequest asks whether an account exists and who holds it.
type InquiryRequest struct {
	BankCode     string
	AccountNo    string
	TransferType models.TransferType
}

// Account is the result of a successful inquiry.
type Account struct {
	// HolderName is the name the bank or e-wallet has registered for the
	// account; "" when the vendor's inquiry does not tell it (Xendit without
	// an inquiry bank), and the merchant must then supply one.
	HolderName string
}

// Inquirer resolves an account's holder in real time: the inquiry half of
// a Vendor, which a vendor without a name inquiry of its own may borrow
// from another (a Xendit wallet asks a SNAP bank).
type Inquirer interface {
	Inquire(ctx context.Context, req InquiryRequest) (Account, error)
}

// MaxHolderNameLength bounds a holder name in characters: the most both
// Xendit (account_holder_name, 1 to 100) and SNAP (beneficiaryAccountName,
// String(100)) take.
const MaxHolderNameLength = 100

// Payout asks the vendor to transfer Amount (the net amount) to an account.
// Reference is derived from the disbursement id and is the vendor's
// idempotency key: submitting the same reference twice pays once.
type Payout struct {
	Reference    string
	BankCode     string
	AccountNo    string
	TransferType models.TransferType
	Amount       models.Amount
	// HolderName is sent as the recipient's registered name, exactly as the
	// inquiry returned it or the merchant supplied it. Every payout has one:
	// rails refuse a transfer without it.
	HolderName string
}

// PayoutStatus is a vendor's view of a payout.
type PayoutStatus string

const (
	PayoutPending PayoutStatus = "PENDING" // accepted, money in flight
	PayoutSuccess PayoutStatus = "SUCCESS"
	PayoutFailed  PayoutStatus = "FAILED"
	// PayoutReturned: paid, then returned or reversed by the receiving bank
	// (days later, possibly). The only status that may follow SUCCESS.
	PayoutReturned PayoutStatus = "RETURNED"
)

// Final reports whether s is a vendor's final word, save for a return
// after SUCCESS.
func (s PayoutStatus) Final() bool {
	return s == PayoutSuccess || s == PayoutFailed || s == PayoutReturned
}

// PayoutResult is what the vendor says about a payout.
type PayoutResult struct {
	Reference string
	Status    PayoutStatus
	// FailureReason is set when Status is PayoutFailed, and is the return
	// reason when it is PayoutReturned.
	FailureReason string
}

// Errors a vendor returns. Callers decide with errors.Is. An inquiry's
// answer about the account is the domain's own error, which the client is
// told as it is: models.ErrAccountInactive (the account exists but cannot
// receive), models.ErrAccountNotResolved (no such account, or the number is
// malformed), models.ErrUnsupportedBank (the code is not on this vendor's
// list). The errors below are the vendor's side of a call, which the
// payout lifecycle decides on and never shows a client as they are.
var (
	// ErrUnavailable: the vendor could not be reached or answered 5xx; the
	// outcome of a submit is unknown and must be asked for, not retried blindly.
	// (A call refused before it left, ErrNotSent, is also ErrUnavailable but
	// has no outcome to ask for: callers that care test ErrNotSent first.)
	ErrUnavailable = errors.New("payout gateway unavailable")
	// ErrRejected: the vendor refused the payout; no money moved.
	ErrRejected = errors.New("vendor rejected the payout")
	// ErrUnknownPayout: Status was asked for a reference the vendor never accepted.
	ErrUnknownPayout = errors.New("vendor does not know this payout")
	// ErrNoHolderName: a payout without the recipient's name, which the
	// rail requires; refused before any call (wrapped in ErrRejected).
	ErrNoHolderName = errors.New("payout without the account holder's name")
)

// Vendor is a payout vendor.
type Vendor interface {
	// Name is the vendor's identifier, as stored on wallets ("simbank").
	Name() string
	// Banks lists the banks and e-wallets this vendor pays out to.
	Banks(ctx context.Context) ([]Bank, error)
	// Inquire resolves an account's holder in real time. Returns
	// models.ErrAccountInactive, models.ErrAccountNotResolved,
	// models.ErrUnsupportedBank or ErrUnavailable.
	Inquire(ctx context.Context, req InquiryRequest) (Account, error)
	// Submit asks for a payout. Returns ErrRejected (with the reason
	// wrapped) when refused, ErrUnavailable when the outcome is unknown.
	Submit(ctx context.Context, p Payout) (PayoutResult, error)
	// Status reports a payout by reference. Returns ErrUnknownPayout or
	// ErrUnavailable.
	Status(ctx context.Context, reference string) (PayoutResult, error)
}

// BatchSubmitter is a Vendor that takes several payouts in one call. The
// worker uses it for payouts submitted at the same moment; a vendor without
// it gets one Submit per payout. Outcome i answers payouts[i] exactly as
// Submit(payouts[i]) would have: same result, same error kinds.
type BatchSubmitter interface {
	SubmitBatch(ctx context.Context, payouts []Payout) []SubmitOutcome
}

// SubmitOutcome is one payout's answer within a batch: Result when Err is
// nil, otherwise an error as Submit returns it (ErrRejected, ErrUnavailable).
type SubmitOutcome struct {
	Result PayoutResult
	Err    error
}

// SubmitAll submits payouts through v and answers them in order: in one
// call when v is a BatchSubmitter, otherwise one Submit per payout, all at
// once, so a batch takes as long as its slowest payout.
func SubmitAll(ctx context.Context, v Vendor, payouts []Payout) []SubmitOutcome {
	if b, ok := v.(BatchSubmitter); ok {
		return b.SubmitBatch(ctx, payouts)
	}
	out := make([]SubmitOutcome, len(payouts))
	var wg sync.WaitGroup
	for i := range payouts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i].Result, out[i].Err = v.Submit(ctx, payouts[i])
		}()
	}
	wg.Wait()
	return out
}

// Completer finishes a sandbox payout by hand (payoutd admin sandbox complete).
type Completer interface {
	Complete(ctx context.Context, reference string, status PayoutStatus, reason string) error
}

// CallbackParser is implemented by vendors that push payout results to the
// service. ParseCallback verifies the request that came on relativeURL
// (its path and query as the request line carried them, which a vendor's
// signature may cover): ErrInvalidCallback when the signature is missing,
// wrong or outside a 5-minute window. It returns the result.
type CallbackParser interface {
	ParseCallback(relativeURL string, header http.Header, body []byte, now time.Time) (PayoutResult, error)
}

// Notifying is implemented by a CallbackParser whose configuration decides
// whether the vendor sends its results at all: a SNAP bank may send no
// notifications, and callbacks the service cannot verify are none. A
// CallbackParser without it is taken to notify.
type Notifying interface {
	Notifies() bool
}

// Notifies reports whether v pushes its payouts' results, returns
// included: it parses callbacks and, when it says, is configured to. The
// paid payouts of a vendor that does not are asked about a return by
// status inquiry for the return watch.
func Notifies(v Vendor) bool {
	if _, ok := v.(CallbackParser); !ok {
		return false
	}
	n, ok := v.(Notifying)
	return !ok || n.Notifies()
}

// Receiver is a vendor's callback side as a wrapper of the vendor keeps
// it: the parse, and whether the vendor notifies.
type Receiver interface {
	CallbackParser
	Notifying
}

// ReceiverOf is v's callback side for a wrapper to embed, so that the
// wrapper is a CallbackParser, and Notifies answers for it, exactly as for
// v. ok is false when v parses no callbacks.
func ReceiverOf(v Vendor) (Receiver, bool) {
	p, ok := v.(CallbackParser)
	if !ok {
		return nil, false
	}
	return receiver{p, Notifies(v)}, true
}

type receiver struct {
	CallbackParser
	notifies bool
}

func (r receiver) Notifies() bool { return r.notifies }

// ErrInvalidCallback: a vendor callback whose signature is missing, wrong or
// outside the 5-minute window; the receiver must not act on it, and the
// sender is told it was not authenticated.
var ErrInvalidCallback = models.Errorf(models.EUNAUTHORIZED, "vendor callback signature invalid")

// Registry finds vendors by name.
type Registry map[string]Vendor

// NewRegistry indexes vendors by their names.
func NewRegistry(vs ...Vendor) Registry {
	r := Registry{}
	for _, v := range vs {
		r[v.Name()] = v
	}
	return r
}

// Get returns the named vendor.
func (r Registry) Get(name string) (Vendor, error) {
	v, ok := r[name]
	if !ok {
		return nil, fmt.Errorf("unknown vendor %q", name)
	}
	return v, nil
}

// Names lists the registered vendors.
func (r Registry) Names() []string {
	names := make([]string, 0, len(r))
	for n := range r {
		names = append(names, n)
	}
	return names
}

// FindBank returns the entry for code (case-insensitive) in banks.
func FindBank(banks []Bank, code string) (Bank, bool) {
	code = strings.ToLower(strings.TrimSpace(code))
	for _, b := range banks {
		if b.Code == code {
			return b, true
		}
	}
	return Bank{}, false
}

//go:embed banks.tsv
var banksTSV string

// EWalletCodes are the e-wallets payouts can go to, with their names.
var eWallets = []Bank{
	{Code: "dana", Name: "DANA", EWallet: true},
	{Code: "gopay", Name: "GoPay", EWallet: true},
	{Code: "ovo", Name: "OVO", EWallet: true},
	{Code: "linkaja", Name: "LinkAja", EWallet: true},
	{Code: "shopeepay", Name: "ShopeePay", EWallet: true},
}

// Directory returns every bank of banks.tsv and every e-wallet, without
// transfer types (each vendor sets its own), in a stable order.
func Directory() []Bank {
	var out []Bank
	for i, line := range strings.Split(strings.TrimSpace(banksTSV), "\n") {
		cols := strings.Split(line, "\t")
		if i == 0 || len(cols) != 4 {
			continue // header
		}
		out = append(out, Bank{Code: cols[0], Name: cols[2], SWIFT: cols[3]})
	}
	return append(out, eWallets...)
}

// ErrVendorDown marks, within an ErrUnavailable, an answer that says the
// vendor itself is failing: no answer at all (connection refused or
// broken, a timeout), a 5xx, or one of the vendor's documented "try again
// later" codes (429, SNAP 5xxxx, 504xx00). A circuit breaker counts these,
// and only these, as failures (vendors/breaker): an answer the service
// merely did not understand is still an answer. Adapters mark them with
// Down.
var ErrVendorDown = errors.New("vendor failing")

// Down marks err (an ErrUnavailable) as ErrVendorDown; its text is err's.
// nil stays nil.
func Down(err error) error {
	if err == nil {
		return nil
	}
	return downError{err}
}

type downError struct{ err error }

func (e downError) Error() string   { return e.err.Error() }
func (e downError) Unwrap() []error { return []error{e.err, ErrVendorDown} }

// ErrNotSent: a call refused before it left this process, because the
// vendor's circuit breaker is open or too many calls to it are under way
// (vendors/breaker). The vendor never saw it: a submit refused so was not
// attempted, and nothing needs to be asked about it. Every such error is
// a *RefusedError, and also an ErrUnavailable, so that a caller that does
// not look further treats it as the vendor being unavailable.
var ErrNotSent = errors.New("vendor call not sent")

// Why a call was refused (RefusedError.Reason).
const (
	RefusedBreakerOpen     = "breaker_open"      // the breaker is open, or half-open with its probe under way
	RefusedConcurrencyBusy = "concurrency_limit" // every slot of the vendor stayed taken for the bounded wait
)

// RefusedError is an ErrNotSent: which vendor refused the call locally,
// why, and when it is worth trying again.
type RefusedError struct {
	Vendor string
	Reason string // RefusedBreakerOpen or RefusedConcurrencyBusy
	// RetryAfter is how long until the breaker lets a probe through (for
	// a busy vendor, a short pause); at least a second.
	RetryAfter time.Duration
}

func (e *RefusedError) Error() string {
	what := "its circuit breaker is open"
	if e.Reason == RefusedConcurrencyBusy {
		what = "too many calls to it are under way"
	}
	return fmt.Sprintf("%s: vendor %s: %s; the call was not sent", ErrUnavailable, e.Vendor, what)
}

// Is makes a RefusedError both ErrNotSent and ErrUnavailable.
func (e *RefusedError) Is(target error) bool { return target == ErrNotSent || target == ErrUnavailable }

// RetryDelay is when the call is worth making again; the worker's retry
// backoff (tasks.RetryDelay) reads it.
func (e *RefusedError) RetryDelay() time.Duration { return max(e.RetryAfter, time.Second) }

// Gate says whether calls to a vendor go out now: its circuit breaker's
// view (vendors/breaker.Set implements it). The submit pumps claim
// payouts only of vendors it lets through, so that a payout is not
// claimed for a call that would be refused.
type Gate interface {
	// Ready reports whether a call to the vendor would be let through now
	// and, when not, how long until it is worth asking again.
	Ready(vendor string) (ok bool, retryIn time.Duration)
}
