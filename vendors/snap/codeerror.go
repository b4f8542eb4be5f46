package snap

import "fmt"

// CodeError is a bank's answer that is not a success, as the adapter's
// errors carry it: what it means to the adapter (Kind, one of the
// vendors.Err* or ErrAuth, ErrSourceInsufficientFunds) and the answer's
// responseCode and responseMessage, so that a caller can tell which call
// was refused (the service code: 73 the access token, 36 the status
// inquiry, ...) and why, without parsing the text. It holds no secret and
// no account number.
type CodeError struct {
	Kind error
	Code Code
}

// Error names the kind, the responseCode and the message.
func (e *CodeError) Error() string {
	return fmt.Sprintf("%v: SNAP %s %q", e.Kind, e.Code, e.Code.Message)
}

// Unwrap is the kind, for errors.Is.
func (e *CodeError) Unwrap() error { return e.Kind }
