// Package inquirybudget bounds, per client, the creates refused after
// their account inquiry (INQUIRY_REFUSAL_RATE_LIMIT): the
// payouts.InquiryBudget the composition root gives the payout service.
// Every create asks the vendor about the recipient before it checks the
// balance, so a client could otherwise tell accounts apart by the
// refusals it gets, at full speed.
//
// The refusals are counted in Redis (GCRA, beside the API's other rate
// limits), so that every API instance shares one count, and in this
// process while Redis cannot answer (internal/ratelimit). Its refusal is
// models.ErrRateLimited, with the wait the API announces in Retry-After.
package inquirybudget

import (
	"context"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/payoutd/payoutd/internal/ratelimit"
	"github.com/payoutd/payoutd/models"
)

// Budget is the inquiry budget: per client, at most limit creates per
// minute refused after their account inquiry. Safe for concurrent use.
type Budget struct {
	limiter *redis_rate.Limiter
	limit   redis_rate.Limit
	local   *ratelimit.Local
	down    *ratelimit.DownWarning
}

// New returns the budget of perMinute refusals a minute per client,
// counted in rdb; perMinute must be positive (0, no bound, is no budget at
// all: the caller gives the service none).
func New(rdb *redis.Client, perMinute int) *Budget {
	return &Budget{limiter: redis_rate.NewLimiter(rdb), limit: redis_rate.PerMinute(perMinute),
		local: ratelimit.NewLocal(ratelimit.LocalKeys), down: &ratelimit.DownWarning{}}
}

func (b *Budget) key(clientID uuid.UUID) string {
	return "ratelimit:inquiry-refusals:" + clientID.String()
}

// Check looks at the budget without spending it (GCRA with cost 0):
// Remaining is how many more refusals fit now; at 0 the next one would not,
// so the create is refused before its inquiry. It may then go on once one
// emission interval has passed over what the stored time is ahead of now.
func (b *Budget) Check(ctx context.Context, clientID uuid.UUID) error {
	res, err := b.limiter.AllowN(ctx, b.key(clientID), b.limit, 0)
	if err != nil {
		b.down.Log(ctx, "inquiry refusal limiter unavailable; counting in this process", err)
		res = b.local.AllowN(b.key(clientID), b.limit, 0)
	}
	if res.Remaining >= 1 {
		return nil
	}
	return &SpentError{Wait: ratelimit.UntilNextAllowed(res)}
}

// Spend counts one refusal; one beyond the budget changes nothing. It is
// counted even when the caller hangs up meanwhile.
func (b *Budget) Spend(ctx context.Context, clientID uuid.UUID) {
	if _, err := b.limiter.AllowN(context.WithoutCancel(ctx), b.key(clientID), b.limit, 1); err != nil {
		b.down.Log(ctx, "inquiry refusal limiter unavailable; refusal counted in this process", err)
		b.local.AllowN(b.key(clientID), b.limit, 1)
	}
}

// SpentError is Check's refusal: models.ErrRateLimited, to the client a
// rate limit like the API's own, with how long until another refusal fits
// (RetryAfter, which the API announces in Retry-After).
type SpentError struct{ Wait time.Duration }

func (e *SpentError) Error() string { return models.ErrRateLimited.Error() }
func (e *SpentError) Unwrap() error { return models.ErrRateLimited }

// RetryAfter is Wait.
func (e *SpentError) RetryAfter() time.Duration { return e.Wait }
