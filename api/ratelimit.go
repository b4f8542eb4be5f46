package api

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-redis/redis_rate/v10"

	"github.com/payoutd/payoutd/models"
)

// rateLimitedError is models.ErrRateLimited with the wait fail announces in
// Retry-After.
type rateLimitedError struct{ retryAfter time.Duration }

func (e *rateLimitedError) Error() string { return models.ErrRateLimited.Error() }
func (e *rateLimitedError) Unwrap() error { return models.ErrRateLimited }

// retryAfterSeconds is the Retry-After value of a wait: whole seconds, at
// least 1.
func retryAfterSeconds(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}

// rateLimit allows limit requests per client on a route, counted in Redis
// (GCRA), so that every API instance shares one count. Beyond it: 429 with
// Retry-After. If Redis cannot answer, this process counts the same limit
// on its own (localLimiter): a quote is an account inquiry that names the
// holder, so letting requests through unlimited would open the
// enumeration the limit exists to stop.
func (s *Server) rateLimit(name string, limit redis_rate.Limit) gin.HandlerFunc {
	return func(c *gin.Context) {
		key := "ratelimit:" + name + ":" + principalOf(c).Client.ID.String()
		res, err := s.limiter.Allow(c.Request.Context(), key, limit)
		if err != nil {
			s.limitsDown.Log(c.Request.Context(), "rate limiter unavailable; counting in this process", err,
				slog.String("limit", name))
			res = s.localLimits.AllowN(key, limit, 1)
		}
		c.Header("X-RateLimit-Limit", strconv.Itoa(limit.Rate))
		c.Header("X-RateLimit-Remaining", strconv.Itoa(res.Remaining))
		if res.Allowed == 0 {
			fail(c, &rateLimitedError{retryAfter: res.RetryAfter})
			return
		}
		c.Next()
	}
}

// perMinute is rateLimit at perMinute requests per minute, or nothing at 0
// (the limit turned off).
func (s *Server) perMinute(name string, perMinute int) gin.HandlerFunc {
	if perMinute <= 0 {
		return func(c *gin.Context) { c.Next() }
	}
	return s.rateLimit(name, redis_rate.PerMinute(perMinute))
}

// clientRate limits each client's requests per second on the merchant
// routes, writes (anything but GET and HEAD) and reads apart: the client's
// own limit when an operator set one, the service's default otherwise, 0
// unlimited. It runs after authentication, so the count is per client
// whichever API instance or address the requests come from.
func (s *Server) clientRate(c *gin.Context) {
	client := &principalOf(c).Client
	class, limit, own := "writes", s.cfg.ClientWriteRateLimit, client.WriteRateLimit
	if c.Request.Method == http.MethodGet || c.Request.Method == http.MethodHead {
		class, limit, own = "reads", s.cfg.ClientReadRateLimit, client.ReadRateLimit
	}
	if own != nil {
		limit = *own
	}
	if limit <= 0 {
		c.Next()
		return
	}
	s.rateLimit(class, redis_rate.PerSecond(limit))(c)
}

// inFlight bounds the requests this process serves at once (MAX_IN_FLIGHT):
// one beyond the bound is answered 503 with Retry-After at once, so that
// an overload sheds requests instead of making every one slow. Health,
// readiness, metrics and the operators' routes are never refused: they are
// how an overload is seen.
func inFlight(limit int) gin.HandlerFunc {
	if limit <= 0 {
		return func(c *gin.Context) { c.Next() }
	}
	slots := make(chan struct{}, limit)
	return func(c *gin.Context) {
		if exemptFromInFlight(c.Request.URL.Path) {
			c.Next()
			return
		}
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
			c.Next()
		default:
			fail(c, errServerBusy)
		}
	}
}

// requestDeadline ends the context of a request's work after limit, well
// inside the server's WriteTimeout, so that a stuck database or Redis call
// gives its slot back and the caller a 503 (errRequestTimeout)
// instead of holding both until the connection dies. The operators' routes
// (a CPU profile runs for up to 50 s) keep theirs.
func requestDeadline(limit time.Duration) gin.HandlerFunc {
	return func(c *gin.Context) {
		if exemptFromInFlight(c.Request.URL.Path) {
			c.Next()
			return
		}
		ctx, cancel := context.WithTimeout(c.Request.Context(), limit)
		defer cancel()
		c.Request = c.Request.WithContext(ctx)
		c.Next()
	}
}

func exemptFromInFlight(path string) bool {
	switch {
	case path == "/healthz", path == "/readyz", path == "/metrics":
		return true
	case strings.HasPrefix(path, "/ops/"), strings.HasPrefix(path, "/debug/"):
		return true
	}
	return false
}
