package api

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/payoutd/payoutd/internal/ratelimit"
	"github.com/payoutd/payoutd/models"
)

// authFailures limits failed authentications per source address
// (AUTH_FAILURE_RATE_LIMIT a minute, GCRA with a burst of as many): an
// unknown, malformed, legacy or other-environment API key, or a wrong
// x-signature. Each unknown key costs a database lookup, and nothing else
// stops a source from guessing keys at full speed. Missing headers, stale
// timestamps and reused signatures are mistakes, not guesses, and do not
// count.
//
// Failures are counted in Redis, so that every API instance shares the
// count, and in this process while Redis cannot answer. A source whose
// budget is spent is remembered here until it may try again: its requests
// are then answered 429 with Retry-After before their key is looked up,
// whether the key is right or not (answering a right key would tell a
// guesser it guessed right). The check costs a successful request no
// Redis call, only a look at that local memory; the Redis call is made
// for failures only.
type authFailures struct {
	limiter *redis_rate.Limiter // nil: counted in this process only
	limit   redis_rate.Limit
	local   *ratelimit.Local
	down    ratelimit.DownWarning

	mu     sync.Mutex
	blocks ratelimit.ExpiringMap // sources whose budget is spent, until they may try again
	// blockedUntil is the latest moment any source is blocked until (Unix
	// ns): past it, no request needs to take mu.
	blockedUntil atomic.Int64
	now          func() time.Time
}

// newAuthFailures returns the limit at perMinute failures a minute per
// source; nil (unlimited) when perMinute is not positive.
func newAuthFailures(rdb *redis.Client, perMinute int) *authFailures {
	if perMinute <= 0 {
		return nil
	}
	a := &authFailures{limit: redis_rate.PerMinute(perMinute), local: ratelimit.NewLocal(ratelimit.LocalKeys),
		blocks: ratelimit.NewExpiringMap(ratelimit.LocalKeys), now: time.Now}
	if rdb != nil {
		a.limiter = redis_rate.NewLimiter(rdb)
	}
	return a
}

// authSource is whom failures are counted against: the client address
// (gin's ClientIP, so TRUSTED_PROXIES decides whose address counts), an
// IPv6 address by its /64, which one host usually holds whole.
func authSource(c *gin.Context) string {
	ip := c.ClientIP()
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	if addr = addr.Unmap(); addr.Is6() {
		if p, err := addr.WithZone("").Prefix(64); err == nil {
			return p.String()
		}
	}
	return addr.String()
}

// blocked returns the refusal of a request from a source whose budget is
// spent; nil otherwise.
func (a *authFailures) blocked(c *gin.Context) error {
	if a == nil {
		return nil
	}
	now := a.now()
	if now.UnixNano() >= a.blockedUntil.Load() {
		return nil
	}
	source := authSource(c)
	a.mu.Lock()
	until, ok := a.blocks.Get(source, now)
	a.mu.Unlock()
	if !ok {
		return nil
	}
	return &rateLimitedError{retryAfter: until.Sub(now)}
}

// failed answers a request that failed authentication with err: err
// itself, counted when it is a failure that counts, or the rate limit's
// refusal once the source's budget is spent.
func (a *authFailures) failed(c *gin.Context, err error) error {
	if a == nil || !countsAsAuthFailure(err) {
		return err
	}
	source := authSource(c)
	key := "authfail:" + source
	// Counted even when the caller hangs up meanwhile.
	ctx := context.WithoutCancel(c.Request.Context())
	var res *redis_rate.Result
	if a.limiter != nil {
		var rerr error
		if res, rerr = a.limiter.Allow(ctx, key, a.limit); rerr != nil {
			a.down.Log(ctx, "failed authentication limiter unavailable; counting in this process", rerr)
			res = nil
		}
	}
	if res == nil {
		res = a.local.AllowN(key, a.limit, 1)
	}
	switch {
	case res.Allowed == 0:
		a.block(source, res.RetryAfter)
		return &rateLimitedError{retryAfter: res.RetryAfter}
	case res.Remaining == 0:
		// This failure spent the budget: the source's next request, on
		// this instance, is refused without a lookup.
		a.block(source, ratelimit.UntilNextAllowed(res))
	}
	return err
}

func (a *authFailures) block(source string, wait time.Duration) {
	if wait <= 0 {
		return
	}
	now := a.now()
	until := now.Add(wait)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.blocks.Set(source, until, now) && until.UnixNano() > a.blockedUntil.Load() {
		a.blockedUntil.Store(until.UnixNano())
	}
}

// countsAsAuthFailure reports whether err is a failed authentication that
// a guesser makes: a key that is not one, or a signature that does not
// verify.
func countsAsAuthFailure(err error) bool {
	for _, e := range []error{models.ErrInvalidAPIKey, models.ErrLegacyAPIKey, models.ErrWrongEnvironmentKey, errInvalidSignature} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
