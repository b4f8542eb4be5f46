package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
)

// errorResponse is the body of every error answer: "error" is the message
// clients match on, word for word; "hint" says more to a person reading it
// (models.WithHint), and is left out when there is nothing to add.
type errorResponse struct {
	Error string `json:"error"`
	Hint  string `json:"hint,omitempty"`
}

// errorStatuses maps each domain error to its HTTP status. This table and
// statusOf are the only place where an error becomes a status; the message
// shown is the declared error's own text, which for these errors is written
// for the client (the spec's wording where the spec gives one).
var errorStatuses = []struct {
	err    error
	status int
}{
	{models.ErrMissingAPIKey, http.StatusUnauthorized},
	{models.ErrInvalidAPIKey, http.StatusUnauthorized},
	{models.ErrLegacyAPIKey, http.StatusUnauthorized},
	{models.ErrWrongEnvironmentKey, http.StatusUnauthorized},
	{models.ErrMissingSignature, http.StatusUnauthorized},
	{models.ErrInvalidSignature, http.StatusUnauthorized},
	{models.ErrNoSigningSecret, http.StatusUnauthorized},
	{models.ErrSigningSecretUnusable, http.StatusUnauthorized},
	{errSignatureOutsideWindow, http.StatusUnauthorized},
	{models.ErrSignatureReused, http.StatusUnauthorized},
	{models.ErrReplayCheckUnavailable, http.StatusServiceUnavailable},
	{models.ErrTimestampWindow, http.StatusBadRequest},
	{models.ErrHoldingClient, http.StatusForbidden},
	{models.ErrIPNotAllowed, http.StatusForbidden},
	{models.ErrWithdrawalsSuspended, http.StatusForbidden},
	{models.ErrNotFound, http.StatusNotFound},
	{models.ErrWalletNotFound, http.StatusNotFound},
	{models.ErrClientNotFound, http.StatusNotFound},
	{errMethodNotAllowed, http.StatusMethodNotAllowed},
	{models.ErrBodyTooLarge, http.StatusRequestEntityTooLarge},
	{models.ErrContentEncoding, http.StatusUnsupportedMediaType},
	{models.ErrRateLimited, http.StatusTooManyRequests},
	{models.ErrServerBusy, http.StatusServiceUnavailable},
	{models.ErrRequestTimeout, http.StatusServiceUnavailable},
	{errNotReady, http.StatusServiceUnavailable},
	{models.ErrDisbursementNotFound, http.StatusNotFound},
	{models.ErrInsufficientBalance, http.StatusPaymentRequired},
	{models.ErrVendorPayoutFailed, http.StatusServiceUnavailable},
	{models.ErrGatewayUnavailable, http.StatusServiceUnavailable},
	{models.ErrLockExpired, http.StatusGone},
	{models.ErrDisbursementCancelled, http.StatusConflict},
	{models.ErrIdempotencyInFlight, http.StatusConflict},
	{models.ErrIdempotencyMismatch, http.StatusUnprocessableEntity},
	{models.ErrUnsupportedBank, http.StatusUnprocessableEntity},
	{models.ErrAccountInactive, http.StatusUnprocessableEntity},
	{models.ErrAccountNotResolved, http.StatusUnprocessableEntity},
	{models.ErrHolderNameRequired, http.StatusUnprocessableEntity},
	{vendors.ErrInvalidCallback, http.StatusUnauthorized},
	{models.ErrPaymentNotFound, http.StatusNotFound},
	{models.ErrNoDefaultWallet, http.StatusUnprocessableEntity},
	{models.ErrPaymentNotPending, http.StatusConflict},
	{models.ErrCheckoutToken, http.StatusForbidden},
}

// Errors that only exist at the HTTP layer.
var (
	// A signed request's t outside the window is a 401 with the same
	// message an x-timestamp outside it gets as a 400: a bad signature is
	// an authentication failure, a bad x-timestamp a malformed request.
	errSignatureOutsideWindow = errors.New(models.ErrTimestampWindow.Error())
	errMethodNotAllowed       = errors.New("method not allowed")
	errNotReady               = errors.New("not ready")
	errDatabaseUnavailable    = errors.New("service temporarily unavailable; retry")
)

// databaseRetryAfter is the Retry-After of a 503 for an unavailable
// database, in seconds.
const databaseRetryAfter = "1"

// statusOf returns the status and client-facing message for err. Anything
// not in the table is an internal error: the client gets a generic message,
// the log gets the detail.
func statusOf(err error) (int, string, bool) {
	// A domain error that wraps a database failure would show the driver's
	// text: it stays in the log. A database that cannot take or keep a
	// connection now (too many clients, restarting) is a 503: nothing was
	// stored, and the client's retry succeeds once it is back.
	switch database.Classify(err) {
	case database.NotADatabaseError:
	case database.Unavailable:
		return http.StatusServiceUnavailable, errDatabaseUnavailable.Error(), false
	default:
		return http.StatusInternalServerError, "internal server error", false
	}
	var v *models.ValidationError
	if errors.As(err, &v) {
		return http.StatusBadRequest, v.Message, true
	}
	var rule *models.RuleError
	if errors.As(err, &rule) {
		return http.StatusUnprocessableEntity, rule.Message, true
	}
	for _, e := range errorStatuses {
		if errors.Is(err, e.err) {
			// The declared error's own text, never what a wrap added:
			// that is for the log, or for "hint" (models.WithHint).
			return e.status, e.err.Error(), true
		}
	}
	return http.StatusInternalServerError, "internal server error", false
}

// fail answers err as {"error": "...", "hint": "..."} (the hint of
// models.WithHint, when there is one) and stops the handler chain. A
// rate limit's answer, a busy server's, and a 503 of a vendor held back by
// its circuit breaker, also say in Retry-After when to try again.
func fail(c *gin.Context, err error) {
	if errors.Is(err, context.DeadlineExceeded) && errors.Is(c.Request.Context().Err(), context.DeadlineExceeded) {
		// The request's own deadline (requestDeadline), not a vendor's or
		// the database's timeout, which have domain errors of their own.
		err = models.ErrRequestTimeout
	}
	var limited *rateLimitedError
	var later interface{ RetryAfter() time.Duration }
	switch {
	case errors.As(err, &limited):
		c.Header("Retry-After", retryAfterSeconds(limited.retryAfter))
	case errors.Is(err, models.ErrServerBusy):
		c.Header("Retry-After", "1")
	case errors.As(err, &later):
		c.Header("Retry-After", retryAfterSeconds(later.RetryAfter()))
	}
	status, msg, known := statusOf(err)
	var hint string
	if known {
		hint = models.HintOf(err)
	}
	switch {
	case !known && status == http.StatusServiceUnavailable:
		c.Header("Retry-After", databaseRetryAfter)
		slog.WarnContext(c.Request.Context(), "database unavailable",
			slog.String("method", c.Request.Method), slog.String("route", c.FullPath()), slog.Any("error", err))
	case !known:
		slog.ErrorContext(c.Request.Context(), "internal error",
			slog.String("method", c.Request.Method), slog.String("route", c.FullPath()), slog.Any("error", err))
	}
	c.AbortWithStatusJSON(status, errorResponse{Error: msg, Hint: hint})
}
