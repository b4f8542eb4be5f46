package client

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Messages of the service that callers commonly branch on. The service
// sends them word for word in the error body.
const (
	MessageInsufficientBalance = "Insufficient balance"
	MessageVendorPayoutFailed  = "Vendor payout request failed"
	MessageConcurrentRequest   = "concurrent request with the same Idempotency-Key; retry"
	MessageCancelled           = "disbursement was cancelled"
	MessageLockExpired         = "Withdrawal lock has expired"
	MessageKeyReused           = "Idempotency-Key was already used with different parameters"
	// MessageSignatureUsed: the signature was accepted before for another
	// request; the Client signs again and resends once by itself.
	MessageSignatureUsed = "x-signature was already used; sign the request again"
	// MessageBelowMinimumPrefix is followed by the minimum gross amount,
	// as in "withdrawal amount is below minimum: 12500".
	MessageBelowMinimumPrefix = "withdrawal amount is below minimum: "
)

// APIError is an answer of the service with a status of 400 or above.
// Retrieve it with errors.As; the error returned after retries were
// exhausted or the context ended wraps the last one.
type APIError struct {
	// StatusCode is the HTTP status (402, 409, 503, ...).
	StatusCode int
	// Message is the "error" of the body {"error": "..."}, word for word;
	// when the body was not of that shape (a proxy's page, say), the
	// status text.
	Message string
	// Hint is the body's "hint", when the service had more to say to a
	// person (what exactly was wrong, how to fix it). For logs and
	// people; branch on StatusCode and Message, never on Hint.
	Hint string
	// RequestID is the X-Request-Id of the answer; quote it to support.
	RequestID string
	// Replayed is set when the answer carried Idempotent-Replayed: true:
	// the stored outcome of an earlier create with the same key (503 for
	// a FAILED payout, 410 EXPIRED, 409 CANCELLED).
	Replayed bool
	// RetryAfter is the Retry-After of the answer (429), zero without one.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("payoutd: %d %s", e.StatusCode, e.Message)
	if e.Hint != "" {
		s += " (" + e.Hint + ")"
	}
	if e.RequestID != "" {
		s += " (request " + e.RequestID + ")"
	}
	return s
}

// AsAPIError returns the *APIError in err's chain, if there is one.
func AsAPIError(err error) (*APIError, bool) {
	var e *APIError
	ok := errors.As(err, &e)
	return e, ok
}

func hasAPIError(err error, match func(*APIError) bool) bool {
	e, ok := AsAPIError(err)
	return ok && match(e)
}

// IsInsufficientBalance reports a 402 Insufficient balance: the wallet's
// available balance does not cover the gross amount. Nothing was stored.
func IsInsufficientBalance(err error) bool {
	return hasAPIError(err, func(e *APIError) bool { return e.StatusCode == http.StatusPaymentRequired })
}

// IsPayoutFailed reports a 503 Vendor payout request failed: the vendor
// rejected the payout, which is now FAILED (no money moved, the lock was
// released). It is the final outcome of that Idempotency-Key; pay again
// only with a new key.
func IsPayoutFailed(err error) bool {
	return hasAPIError(err, isVendorFailed)
}

// IsBelowMinimum reports a 422 withdrawal amount is below minimum.
func IsBelowMinimum(err error) bool {
	return hasAPIError(err, func(e *APIError) bool {
		return e.StatusCode == http.StatusUnprocessableEntity && strings.HasPrefix(e.Message, MessageBelowMinimumPrefix)
	})
}

// IsNotFound reports a 404 (wallet or disbursement not found, or not the
// caller's).
func IsNotFound(err error) bool {
	return hasAPIError(err, func(e *APIError) bool { return e.StatusCode == http.StatusNotFound })
}

// IsKeyReused reports a 422: the Idempotency-Key was already used with
// different parameters. Nothing was done.
func IsKeyReused(err error) bool {
	return hasAPIError(err, func(e *APIError) bool {
		return e.StatusCode == http.StatusUnprocessableEntity && e.Message == MessageKeyReused
	})
}

// IsSignatureUsed reports a 401 x-signature was already used; sign the
// request again: the service accepted that very signature before for
// another method, path or Idempotency-Key. Nothing was done by this
// request. With v1 signatures ([WithSignatureV1]) the Client re-signs a
// read or a quote once by itself, but never a create: a create's
// signature used already may mean a copy of it was sent by someone else
// under another key and created a payout; look the payout up by your
// reference before you create it again.
func IsSignatureUsed(err error) bool {
	return hasAPIError(err, func(e *APIError) bool {
		return e.StatusCode == http.StatusUnauthorized && e.Message == MessageSignatureUsed
	})
}

func isVendorFailed(e *APIError) bool {
	return e.StatusCode == http.StatusServiceUnavailable && (e.Message == MessageVendorPayoutFailed || e.Replayed)
}

func isConcurrent(e *APIError) bool {
	return e.StatusCode == http.StatusConflict && e.Message == MessageConcurrentRequest
}

// ErrIdempotencyKeyRequired is returned by CreateDisbursement for an empty
// key; nothing is sent.
var ErrIdempotencyKeyRequired = errors.New("payoutd: an Idempotency-Key is required to create a disbursement")
