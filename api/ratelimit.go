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
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/payoutd/payoutd/payouts"
)

// rateLimitedError is errRateLimited with the wait fail announces in
// Retry-After.
type rateLimitedError struct{ retryAfter time.Duration }

func (e *rateLimitedError) Error() string { return errRateLimited.Error() }
func (e *rateLimitedError) Unwrap() error { return errRateLimited }

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
			s.limitsDown.log(c.Request.Context(), "rate limiter unavailable; counting in this process", err,
				slog.String("limit", name))
			res = s.localLimits.allowN(key, limit, 1)
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

// InquiryBudget returns the payouts.InquiryBudget the API answers for:
// its refusals are the API's 429s and its counters sit beside the API's
// other rate limits in rdb. nil when perMinute is not positive (no bound).
// The composition root gives it to the one payout service; only creates,
// which come through the API, consult it.
func InquiryBudget(rdb *redis.Client, perMinute int) payouts.InquiryBudget {
	if perMinute <= 0 || rdb == nil {
		return nil
	}
	return inquiryRefusals{limiter: redis_rate.NewLimiter(rdb), limit: redis_rate.PerMinute(perMinute),
		local: newLocalLimiter(localLimiterKeys), down: &redisDownWarning{}}
}

// inquiryRefusals is the payouts.InquiryBudget of the API: per client, at
// most limit creates per minute refused after their account inquiry
// (INQUIRY_REFUSAL_RATE_LIMIT), counted in Redis like rateLimit and, like
// it, counted in this process while Redis cannot answer.
type inquiryRefusals struct {
	limiter *redis_rate.Limiter
	limit   redis_rate.Limit
	local   *localLimiter
	down    *redisDownWarning
}

func (b inquiryRefusals) key(clientID uuid.UUID) string {
	return "ratelimit:inquiry-refusals:" + clientID.String()
}

// Check looks at the budget without spending it (GCRA with cost 0):
// Remaining is how many more refusals fit now; at 0 the next one would not,
// so the create is refused before its inquiry. It may then go on once one
// emission interval has passed over what the stored time is ahead of now.
func (b inquiryRefusals) Check(ctx context.Context, clientID uuid.UUID) error {
	res, err := b.limiter.AllowN(ctx, b.key(clientID), b.limit, 0)
	if err != nil {
		b.down.log(ctx, "inquiry refusal limiter unavailable; counting in this process", err)
		res = b.local.allowN(b.key(clientID), b.limit, 0)
	}
	if res.Remaining >= 1 {
		return nil
	}
	return &rateLimitedError{retryAfter: untilNextAllowed(res)}
}

// untilNextAllowed is how long after res, which left no Remaining, one
// more event fits: one emission interval past what the stored time is
// ahead of now beyond the burst.
func untilNextAllowed(res *redis_rate.Result) time.Duration {
	interval := res.Limit.Period / time.Duration(res.Limit.Rate)
	return res.ResetAfter - time.Duration(res.Limit.Burst-1)*interval
}

// Spend counts one refusal; one beyond the budget changes nothing. It is
// counted even when the caller hangs up meanwhile.
func (b inquiryRefusals) Spend(ctx context.Context, clientID uuid.UUID) {
	if _, err := b.limiter.AllowN(context.WithoutCancel(ctx), b.key(clientID), b.limit, 1); err != nil {
		b.down.log(ctx, "inquiry refusal limiter unavailable; refusal counted in this process", err)
		b.local.allowN(b.key(clientID), b.limit, 1)
	}
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
