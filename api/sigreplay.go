package api

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/payoutd/payoutd/models"
)

// signatureMemory is how long an accepted signature is remembered. A t may
// lie up to signature.Window in the future and as far in the past, so a
// signature verifies for at most twice the window; the rest is margin for
// clocks that disagree between API instances.
const signatureMemory = 15 * time.Minute

// createRoute is the one route whose Idempotency-Key is part of what a
// signature is bound to.
const createRoute = "/api/v3/disbursements"

// rememberSignature records the first use of a valid signature (v1 or v2,
// lowercase hex) and refuses its use for anything else: signatures are
// used once. A v2 signature covers all of what the record holds, so only
// the same request can carry it again; a v1 signature covers t and the
// body only, and this record is what binds it to one route and key.
//
// This is the fast first check, not the last word: the creates that move
// money also store their signature in PostgreSQL, unique per client, in
// the statement that writes them, so a record lost by Redis (an eviction,
// a failover) cannot let one signature create twice.
//
// The record is "<method> <path>[?<query>][ <Idempotency-Key>]" under
// sigused:<client>:<signature>, written with SET NX GET so that all API
// instances agree in one round trip (shared with concurrent requests:
// sigrecords.go): nothing there, or the same request (a retry, which then
// gets today's answer), proceeds; another request is
// ErrSignatureReused. The path is the request's own, not the route
// pattern, so a signed read of one wallet does not open another.
//
// If Redis cannot answer, a request that may change state is refused
// (errReplayCheckUnavailable: money must not move twice); a read, which
// has no side effects, is let through with a warning; a quote, which names
// an account's holder, is checked against this process's own record
// (localrecords.go).
func (s *Server) rememberSignature(c *gin.Context, p *principal, sig string) error {
	key := "sigused:" + p.Client.ID.String() + ":" + sig
	use := signatureUse(c)
	ctx := c.Request.Context()
	first, err := s.signatures.record(ctx, key, use)
	switch {
	case errors.Is(err, redis.Nil):
		return nil // first use: recorded
	case err != nil:
		if isQuote(c) {
			return s.rememberQuoteLocally(c, p.Client.ID, key, err)
		}
		if sideEffectFree(c) {
			// The route is logged, never the signature: with its body it
			// would be a request anyone reading the logs could send.
			slog.WarnContext(ctx, "signature replay check unavailable; read let through",
				slog.String("method", c.Request.Method), slog.String("route", c.FullPath()), slog.Any("error", err))
			return nil
		}
		slog.ErrorContext(ctx, "signature replay check unavailable; request refused",
			slog.String("method", c.Request.Method), slog.String("route", c.FullPath()), slog.Any("error", err))
		return errReplayCheckUnavailable
	case first == use:
		return nil // the same request again: a retry
	default:
		return models.ErrSignatureReused
	}
}

// signatureUse is what a signature is bound to: the method, the path with
// its query, and on a create the Idempotency-Key.
func signatureUse(c *gin.Context) string {
	r := c.Request
	use := r.Method + " " + r.URL.Path
	if r.URL.RawQuery != "" {
		use += "?" + r.URL.RawQuery
	}
	if r.Method == http.MethodPost && c.FullPath() == createRoute {
		use += " " + strings.TrimSpace(r.Header.Get("Idempotency-Key"))
	}
	return use
}

// sideEffectFree reports whether the request only reads: a GET, or the
// quote, which stores and locks nothing. Every other signed route fails
// closed when used signatures cannot be checked.
func sideEffectFree(c *gin.Context) bool {
	m := c.Request.Method
	return m == http.MethodGet || m == http.MethodHead ||
		(m == http.MethodPost && c.FullPath() == createRoute+"/quote")
}
