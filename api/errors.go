package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/models"
)

// errorResponse is the body of every error answer: "error" is the message
// clients match on, word for word; "hint" says more to a person reading it
// (models.WithHint), and is left out when there is nothing to add.
type errorResponse struct {
	Error string `json:"error"`
	Hint  string `json:"hint,omitempty"`
}

// Codes of conditions only the HTTP layer meets, beside the domain's
// (models.EINVALID and the others).
const (
	eMethodNotAllowed = "method_not_allowed"
	eBodyTooLarge     = "body_too_large"
	eEncoding         = "unsupported_encoding"
)

// codeStatuses maps each error code to its HTTP status. This table and
// statusOf are the only place where an error becomes a status: every error
// answer, the merchant API's and the operators', is written by fail or
// writeError from it.
var codeStatuses = map[string]int{
	models.EINVALID:       http.StatusBadRequest,
	models.EUNAUTHORIZED:  http.StatusUnauthorized,
	models.EINSUFFICIENT:  http.StatusPaymentRequired,
	models.EFORBIDDEN:     http.StatusForbidden,
	models.ENOTFOUND:      http.StatusNotFound,
	eMethodNotAllowed:     http.StatusMethodNotAllowed,
	models.ECONFLICT:      http.StatusConflict,
	models.EEXPIRED:       http.StatusGone,
	eBodyTooLarge:         http.StatusRequestEntityTooLarge,
	eEncoding:             http.StatusUnsupportedMediaType,
	models.EUNPROCESSABLE: http.StatusUnprocessableEntity,
	models.ERATELIMITED:   http.StatusTooManyRequests,
	models.EINTERNAL:      http.StatusInternalServerError,
	models.EUNAVAILABLE:   http.StatusServiceUnavailable,
}

// Errors that only the HTTP layer produces: the request's headers, body
// and pace, and this process's load. Their messages are the spec's words
// where it gives them, and clients match on them as on the domain's.
var (
	errMissingAPIKey = models.Errorf(models.EUNAUTHORIZED, "missing x-api-key header")
	errHoldingClient = models.Errorf(models.EFORBIDDEN, "holding clients cannot use the payment and payout API")
	errIPNotAllowed  = models.Errorf(models.EFORBIDDEN, "source IP is not on the client's allow-list")
	// errTimestampWindow: an x-timestamp outside the window is a malformed
	// request (400); errSignatureOutsideWindow, a signed request's t
	// outside it, says the same as an authentication failure (401).
	errTimestampWindow        = models.Errorf(models.EINVALID, "Request timestamp outside valid window (5 minutes)")
	errSignatureOutsideWindow = models.Errorf(models.EUNAUTHORIZED, "%s", errTimestampWindow.Message)
	errMissingSignature       = models.Errorf(models.EUNAUTHORIZED, "missing x-signature header")
	errInvalidSignature       = models.Errorf(models.EUNAUTHORIZED, "invalid x-signature")
	errNoSigningSecret        = models.Errorf(models.EUNAUTHORIZED, "no signing secret provisioned for this client")
	// errSigningSecretUnusable: the stored signing secret does not open
	// (moved from another client or field, altered, or under a key this
	// process lacks). The request is not authenticated; the operator's log
	// says why.
	errSigningSecretUnusable = models.Errorf(models.EUNAUTHORIZED, "the signing secret of this client cannot be used; ask the operator to rotate the credentials")
	// errReplayCheckUnavailable: the store that remembers used signatures
	// could not answer, so a signed request that changes state is refused
	// rather than risk running twice.
	errReplayCheckUnavailable = models.Errorf(models.EUNAVAILABLE, "signature replay check unavailable; retry shortly")
	errContentEncoding        = models.Errorf(eEncoding, "Content-Encoding is not supported; send the body uncompressed")
	errBodyTooLarge           = models.Errorf(eBodyTooLarge, "request body exceeds 1 MiB")
	// errServerBusy: this API process serves as many requests as it may
	// at once (MAX_IN_FLIGHT); another instance, or this one a moment
	// later, will take the request.
	errServerBusy = models.Errorf(models.EUNAVAILABLE, "server busy; retry shortly")
	// errRequestTimeout: the request's work passed its deadline
	// (requestDeadline) and was abandoned; what it wrote was committed
	// whole or not at all, so a retry with the same Idempotency-Key is
	// safe.
	errRequestTimeout      = models.Errorf(models.EUNAVAILABLE, "request took too long; retry with the same Idempotency-Key")
	errMethodNotAllowed    = models.Errorf(eMethodNotAllowed, "method not allowed")
	errNotReady            = models.Errorf(models.EUNAVAILABLE, "not ready")
	errDatabaseUnavailable = models.Errorf(models.EUNAVAILABLE, "service temporarily unavailable; retry")
)

// Operators' answers: the routes under /ops, /debug and /metrics are not
// the merchant API (and not in its document), but they are answered from
// the same table.
var (
	errAdminRequired  = models.Errorf(models.EUNAUTHORIZED, "operator credentials required (ADMIN_USER / ADMIN_PASSWORD)")
	errAdminThrottled = models.Errorf(models.ERATELIMITED, "too many failed operator logins; retry later")
	errCrossOrigin    = models.Errorf(models.EFORBIDDEN, "cross-origin request refused")
	errOpsReadOnly    = models.Errorf(models.EFORBIDDEN, "the queue dashboard is read-only (OPS_READ_ONLY)")
	errProfiling      = models.Errorf(models.ECONFLICT, "another CPU profile or trace is being taken; retry when it ends")
)

// databaseRetryAfter is the Retry-After of a 503 for an unavailable
// database, in seconds.
const databaseRetryAfter = "1"

// statusOf returns the status and client-facing message for err, and
// whether err is one a client is told about. An EINTERNAL error, or one
// whose code has no status, is an internal error: the client gets a
// generic message, the log gets the detail.
func statusOf(err error) (int, string, bool) {
	// A domain error that wraps a database failure would show the driver's
	// text: it stays in the log. A database that cannot take or keep a
	// connection now (too many clients, restarting) is a 503: nothing was
	// stored, and the client's retry succeeds once it is back.
	switch database.Classify(err) {
	case database.NotADatabaseError:
	case database.Unavailable:
		return codeStatuses[models.ErrorCode(errDatabaseUnavailable)], errDatabaseUnavailable.Message, false
	default:
		return codeStatuses[models.EINTERNAL], models.InternalMessage, false
	}
	code := models.ErrorCode(err)
	status, ok := codeStatuses[code]
	if !ok || code == models.EINTERNAL {
		return codeStatuses[models.EINTERNAL], models.InternalMessage, false
	}
	// The declared error's own text, never what a wrap added: that is
	// for the log, or for "hint" (models.WithHint).
	return status, models.ErrorMessage(err), true
}

// answerOf is the status and body of err's answer, and whether err is one
// a client is told about (else the answer names nothing, and the caller
// logs err).
func answerOf(err error) (int, errorResponse, bool) {
	status, msg, known := statusOf(err)
	body := errorResponse{Error: msg}
	if known {
		body.Hint = models.HintOf(err)
	}
	return status, body, known
}

// fail answers err as {"error": "...", "hint": "..."} (the hint of
// models.WithHint, when there is one) and stops the handler chain. A
// rate limit's answer, a busy server's, and a 503 of a vendor held back by
// its circuit breaker, also say in Retry-After when to try again.
func fail(c *gin.Context, err error) {
	if errors.Is(err, context.DeadlineExceeded) && errors.Is(c.Request.Context().Err(), context.DeadlineExceeded) {
		// The request's own deadline (requestDeadline), not a vendor's or
		// the database's timeout, which have domain errors of their own.
		err = errRequestTimeout
	}
	var limited *rateLimitedError
	var later interface{ RetryAfter() time.Duration }
	switch {
	case errors.As(err, &limited):
		c.Header("Retry-After", retryAfterSeconds(limited.retryAfter))
	case errors.Is(err, errServerBusy):
		c.Header("Retry-After", "1")
	case errors.As(err, &later):
		c.Header("Retry-After", retryAfterSeconds(later.RetryAfter()))
	}
	status, body, known := answerOf(err)
	switch {
	case !known && status == http.StatusServiceUnavailable:
		c.Header("Retry-After", databaseRetryAfter)
		slog.WarnContext(c.Request.Context(), "database unavailable",
			slog.String("method", c.Request.Method), slog.String("route", c.FullPath()), slog.Any("error", err))
	case !known:
		slog.ErrorContext(c.Request.Context(), "internal error",
			slog.String("method", c.Request.Method), slog.String("route", c.FullPath()), slog.Any("error", err))
	}
	c.AbortWithStatusJSON(status, body)
}

// failLogged answers err as fail does, for a caller that has logged it
// already (the panic handler, with the stack): nothing more is logged.
func failLogged(c *gin.Context, err error) {
	status, body, _ := answerOf(err)
	c.AbortWithStatusJSON(status, body)
}

// writeError answers err as fail does, on a handler outside gin (the
// worker's metrics server, the cross-origin guard's refusal); err is one
// of the declared errors, so nothing is logged.
func writeError(w http.ResponseWriter, err error) {
	status, body, _ := answerOf(err)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}
