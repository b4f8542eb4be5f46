package models

import "errors"

// Domain errors. They are declared once here, wrapped with %w where context
// helps, and turned into an HTTP status and message only in api/errors.go.
// The messages of the errors a client sees are the spec's exact wording.
var (
	// Authentication and authorisation.
	ErrMissingAPIKey       = errors.New("missing x-api-key header")
	ErrInvalidAPIKey       = errors.New("invalid API key")
	ErrLegacyAPIKey        = errors.New("API key of the legacy generation: this service accepts only V3 keys")
	ErrWrongEnvironmentKey = errors.New("API key belongs to another environment")
	ErrHoldingClient       = errors.New("holding clients cannot use the payment and payout API")
	ErrIPNotAllowed        = errors.New("source IP is not on the client's allow-list")
	ErrTimestampWindow     = errors.New("Request timestamp outside valid window (5 minutes)")
	ErrMissingSignature    = errors.New("missing x-signature header")
	ErrInvalidSignature    = errors.New("invalid x-signature")
	ErrNoSigningSecret     = errors.New("no signing secret provisioned for this client")
	// ErrSigningSecretUnusable: the stored signing secret does not open
	// (moved from another client or field, altered, or under a key this
	// process lacks). The request is not authenticated; the operator's log
	// says why.
	ErrSigningSecretUnusable = errors.New("the signing secret of this client cannot be used; ask the operator to rotate the credentials")
	ErrContentEncoding       = errors.New("Content-Encoding is not supported; send the body uncompressed")
	ErrBodyTooLarge          = errors.New("request body exceeds 1 MiB")
	ErrRateLimited           = errors.New("rate limit exceeded; retry later")
	// ErrServerBusy: this API process serves as many requests as it may
	// at once (MAX_IN_FLIGHT); another instance, or this one a moment
	// later, will take the request.
	ErrServerBusy = errors.New("server busy; retry shortly")
	// ErrRequestTimeout: the request's work passed its deadline
	// (api's requestDeadline) and was abandoned; what it wrote was
	// committed whole or not at all, so a retry with the same
	// Idempotency-Key is safe.
	ErrRequestTimeout       = errors.New("request took too long; retry with the same Idempotency-Key")
	ErrWithdrawalsSuspended = errors.New("withdrawals are suspended for this client")

	// Resources.
	ErrNotFound       = errors.New("not found")
	ErrWalletNotFound = errors.New("wallet not found")
	ErrClientNotFound = errors.New("client not found")

	// Storage.
	ErrConflict = errors.New("conflicting concurrent change; retry")

	// Money. A posting that meets either is refused whole, never wrapped
	// or applied in part.
	ErrAmountOverflow = errors.New("amount overflow: the sum is beyond the range of stored amounts")
	ErrBalanceLimit   = errors.New("wallet balance would pass its maximum of ±100000000000000 IDR")
)

// Signature reuse: a signature is used once (docs/design.md, Signatures).
var (
	// ErrSignatureReused: the signature was accepted before for another
	// method, path or Idempotency-Key.
	ErrSignatureReused = errors.New("x-signature was already used; sign the request again")
	// ErrReplayCheckUnavailable: the store that remembers used signatures
	// could not answer, so a signed request that changes state is refused
	// rather than risk running twice.
	ErrReplayCheckUnavailable = errors.New("signature replay check unavailable; retry shortly")
)

// HintedError is a domain error with a hint for a person: what exactly was
// wrong, or how to fix it. The API answers Err's own message as "error"
// (the spec's wording, which clients match on) and Hint apart, as "hint".
// errors.Is and errors.As see Err through it.
type HintedError struct {
	Err  error
	Hint string
}

// Error is Err's message with the hint in parentheses, for logs.
func (e *HintedError) Error() string {
	if e.Hint == "" {
		return e.Err.Error()
	}
	return e.Err.Error() + " (" + e.Hint + ")"
}

func (e *HintedError) Unwrap() error { return e.Err }

// WithHint attaches a hint for a person to err; "" attaches none.
func WithHint(err error, hint string) error {
	if err == nil || hint == "" {
		return err
	}
	return &HintedError{Err: err, Hint: hint}
}

// HintOf returns the hint of the outermost HintedError in err's chain, or "".
func HintOf(err error) string {
	var h *HintedError
	if errors.As(err, &h) {
		return h.Hint
	}
	return ""
}

// ValidationError is a 400: the request is malformed. Its message names the
// field and says what is wrong.
type ValidationError struct{ Message string }

func (e *ValidationError) Error() string { return e.Message }

// Invalid returns a ValidationError with the given message.
func Invalid(msg string) error { return &ValidationError{Message: msg} }

// IsValidation reports whether err is a ValidationError.
func IsValidation(err error) bool {
	var v *ValidationError
	return errors.As(err, &v)
}

// Disbursement errors. Their messages are the spec's words where it gives
// them; api/errors.go maps each to its status.
var (
	ErrDisbursementNotFound  = errors.New("disbursement not found")
	ErrInsufficientBalance   = errors.New("Insufficient balance")
	ErrVendorPayoutFailed    = errors.New("Vendor payout request failed")
	ErrLockExpired           = errors.New("Withdrawal lock has expired")
	ErrDisbursementCancelled = errors.New("disbursement was cancelled")
	ErrIdempotencyInFlight   = errors.New("concurrent request with the same Idempotency-Key; retry")
	ErrIdempotencyMismatch   = errors.New("Idempotency-Key was already used with different parameters")
	ErrUnsupportedBank       = errors.New("bank_code is not supported by this wallet's vendor")
	ErrAccountInactive       = errors.New("bank account is inactive")
	ErrAccountNotResolved    = errors.New("bank account verification failed")
	// ErrHolderNameRequired: the recipient's rail needs the holder's name,
	// its inquiry did not return one and the request carried none.
	ErrHolderNameRequired = errors.New("account_holder_name is required for this recipient")
	ErrGatewayUnavailable = errors.New("payout gateway is temporarily unavailable; retry later")

	// ErrTransitionRefused: the lifecycle does not allow the move. A bug or
	// an operator's mistake, never a client's.
	ErrTransitionRefused = errors.New("disbursement status change refused")
	// ErrStaleStatus: the row was no longer in the expected status when the
	// guarded update ran; someone else moved it first.
	ErrStaleStatus = errors.New("disbursement status changed concurrently")

	// ErrLateResultNotFound: no late vendor result with that id (operators).
	ErrLateResultNotFound = errors.New("late vendor result not found")
	// ErrLateResultResolved: the late vendor result was resolved already;
	// its note is not overwritten.
	ErrLateResultResolved = errors.New("late vendor result is already resolved")
)

// RuleError is a 422: the request is well-formed but a business rule
// refuses it (below the minimum, a transfer type the bank does not take).
type RuleError struct{ Message string }

func (e *RuleError) Error() string { return e.Message }

// Refuse returns a RuleError with the given message.
func Refuse(msg string) error { return &RuleError{Message: msg} }

// Payment errors.
var (
	ErrPaymentNotFound = errors.New("payment not found")
	ErrNoDefaultWallet = errors.New("no default wallet configured")
	// ErrPaymentNotPending: a simulated payment of a payment already decided.
	ErrPaymentNotPending = errors.New("payment is no longer pending")
	// ErrCheckoutToken: a staging simulation without the token of its
	// payment that the checkout page carries.
	ErrCheckoutToken = errors.New("missing or invalid checkout token; reload the checkout page")
	// ErrSettlementRefused: the settlement cannot be applied (the wallet
	// would pass its maximum balance, a sum would overflow). It is recorded
	// on the payment (settlement_error) for operators and not retried.
	ErrSettlementRefused = errors.New("settlement refused")
)
