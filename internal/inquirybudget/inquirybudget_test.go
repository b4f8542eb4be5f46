package inquirybudget

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/payoutd/payoutd/models"
)

// refusingRedis is a client of a Redis that refuses every connection at
// once.
func refusingRedis(t *testing.T) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond, DialerRetries: 1})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// The creates refused after their inquiry are counted in the process while
// Redis is down: once the budget is spent, Check refuses.
func TestInquiryBudgetWithRedisDown(t *testing.T) {
	t.Parallel()
	budget := New(refusingRedis(t), 2)
	ctx := context.Background()
	client, other := uuid.New(), uuid.New()
	for i := 0; i < 2; i++ {
		if err := budget.Check(ctx, client); err != nil {
			t.Fatalf("check %d: %v", i, err)
		}
		budget.Spend(ctx, client)
	}
	err := budget.Check(ctx, client)
	var limited *SpentError
	if !errors.As(err, &limited) || !errors.Is(err, models.ErrRateLimited) || limited.RetryAfter() <= 0 || limited.RetryAfter() > 30*time.Second {
		t.Fatalf("check after the budget: %v, want a rate limit within 30 s", err)
	}
	if err := budget.Check(ctx, other); err != nil {
		t.Fatalf("another client: %v", err)
	}
}
