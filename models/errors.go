package models

import "errors"

// Domain errors. They are declared once here, wrapped with %w where context
// helps, and turned into an HTTP status and message only in api/errors.go.
// The messages of the errors a client sees are the spec's exact wording.
var (
	// Authentication and authorisation.
	ErrMissingAPIKey        = errors.New("missing x-api-key header")
	ErrInvalidAPIKey        = errors.New("invalid API key")
	ErrLegacyAPIKey         = errors.New("API key of the legacy generation: this service accepts only V3 keys")
	ErrWrongEnvironmentKey  = errors.New("API key belongs to another environment")
	ErrHoldingClient        = errors.New("holding clients cannot use the payment and payout API")
	ErrIPNotAllowed         = errors.New("source IP is not on the client's allow-list")
	ErrTimestampWindow      = errors.New("Request timestamp outside valid window (5 minutes)")
	ErrMissingSignature     = errors.New("missing x-signature header")
	ErrInvalidSignature     = errors.New("invalid x-signature")
	ErrNoSigningSecret      = errors.New("no signing secret provisioned for this client")
	ErrContentEncoding      = errors.New("Content-Encoding is not supported; send the body uncompressed")
	ErrBodyTooLarge         = errors.New("request body exceeds 1 MiB")
	ErrRateLimited          = errors.New("rate limit exceeded; retry later")
	ErrWithdrawalsSuspended = errors.New("withdrawals are suspended for this client")

	// Resources.
	ErrNotFound       = errors.New("not found")
	ErrWalletNotFound = errors.New("wallet not found")
	ErrClientNotFound = errors.New("client not found")

	// Storage.
	ErrConflict = errors.New("conflicting concurrent change; retry")
)

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
