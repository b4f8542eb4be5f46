package ratelimit

import (
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
)

// The local limiter answers as redis_rate does: the burst, then one per
// interval; a full table refuses keys it does not track, never the ones it
// does.
func TestLocalLimiter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	l := NewLocal(2)
	l.Now = func() time.Time { return now }
	limit := redis_rate.PerMinute(3)
	for i := 3; i >= 1; i-- {
		if res := l.AllowN("a", limit, 1); res.Allowed != 1 || res.Remaining != i-1 {
			t.Fatalf("event %d: %+v", 4-i, res)
		}
	}
	res := l.AllowN("a", limit, 1)
	if res.Allowed != 0 || res.RetryAfter != 20*time.Second {
		t.Fatalf("beyond the burst: %+v, want refused for 20 s", res)
	}
	if res := l.AllowN("a", limit, 0); res.Remaining != 0 || UntilNextAllowed(res) != 20*time.Second {
		t.Fatalf("look: %+v", res)
	}
	now = now.Add(20 * time.Second)
	if res := l.AllowN("a", limit, 1); res.Allowed != 1 {
		t.Fatalf("after one interval: %+v", res)
	}
	l.AllowN("b", limit, 1)
	if res := l.AllowN("c", limit, 1); res.Allowed != 0 || res.RetryAfter <= 0 {
		t.Fatalf("a third key in a table of two: %+v, want refused", res)
	}
	if res := l.AllowN("b", limit, 1); res.Allowed != 1 {
		t.Fatalf("a tracked key in a full table: %+v", res)
	}
	// Once the keys' time has passed they free their place.
	now = now.Add(2 * time.Minute)
	if res := l.AllowN("c", limit, 1); res.Allowed != 1 {
		t.Fatalf("a new key once the others expired: %+v", res)
	}
}
