package api

import (
	"log/slog"
	"math"
	"strconv"

	"github.com/gin-gonic/gin"
	"github.com/go-redis/redis_rate/v10"

	"github.com/payoutd/payoutd/models"
)

// rateLimit allows limit requests per client on a route, counted in Redis
// (GCRA), so that every API instance shares one count. Beyond it: 429 with
// Retry-After. If Redis cannot answer, the request is let through and a
// warning logged: the limit protects the service, it does not guard money.
func (s *Server) rateLimit(name string, limit redis_rate.Limit) gin.HandlerFunc {
	return func(c *gin.Context) {
		key := "ratelimit:" + name + ":" + principalOf(c).Client.ID.String()
		res, err := s.limiter.Allow(c.Request.Context(), key, limit)
		if err != nil {
			slog.WarnContext(c.Request.Context(), "rate limiter unavailable; request allowed", slog.Any("error", err))
			c.Next()
			return
		}
		c.Header("X-RateLimit-Limit", strconv.Itoa(limit.Rate))
		c.Header("X-RateLimit-Remaining", strconv.Itoa(res.Remaining))
		if res.Allowed == 0 {
			c.Header("Retry-After", strconv.Itoa(max(1, int(math.Ceil(res.RetryAfter.Seconds())))))
			fail(c, models.ErrRateLimited)
			return
		}
		c.Next()
	}
}
