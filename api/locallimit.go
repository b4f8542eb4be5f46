package api

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
)

// localLimiter counts a limit in this process while Redis cannot answer,
// so that a limit that guards something (quotes are account inquiries)
// does not vanish with Redis. It is the GCRA of redis_rate over the same
// redis_rate.Limit and answers the same Result, so a limit means the same
// here as there; but each API instance counts alone, so N instances allow
// up to N times the limit between them while Redis is down.
//
// Its memory is bounded: at most maxKeys keys are tracked. A key not
// tracked yet when the table is full of live keys is refused for a second
// (failing closed), never let through, and the table never grows further.
type localLimiter struct {
	mu   sync.Mutex
	tats expiringMap // a key's theoretical arrival time; past it the key holds nothing
	now  func() time.Time
}

// localLimiterKeys bounds each local limiter: far more clients (or source
// addresses) than one instance serves in a minute, a few MiB at most.
const localLimiterKeys = 100_000

func newLocalLimiter(maxKeys int) *localLimiter {
	return &localLimiter{tats: newExpiringMap(maxKeys), now: time.Now}
}

// allowN spends n of key's budget under limit (n 0 only looks), as
// redis_rate.Limiter.AllowN does in Redis.
func (l *localLimiter) allowN(key string, limit redis_rate.Limit, n int) *redis_rate.Result {
	now := l.now()
	interval := limit.Period / time.Duration(limit.Rate)
	l.mu.Lock()
	defer l.mu.Unlock()
	tat, tracked := l.tats.get(key, now)
	if !tracked {
		tat = now
	}
	newTAT := tat.Add(interval * time.Duration(n))
	diff := now.Sub(newTAT.Add(-interval * time.Duration(limit.Burst)))
	if diff < 0 {
		return &redis_rate.Result{Limit: limit, RetryAfter: -diff, ResetAfter: tat.Sub(now)}
	}
	if newTAT.After(now) && !l.tats.set(key, newTAT, now) {
		return &redis_rate.Result{Limit: limit, RetryAfter: time.Second, ResetAfter: time.Second}
	}
	return &redis_rate.Result{Limit: limit, Allowed: n, Remaining: int(diff / interval), RetryAfter: -1, ResetAfter: newTAT.Sub(now)}
}

// expiringMap maps keys to the moment they expire, holding at most max
// live keys. It does not lock: its owner does.
type expiringMap struct {
	entries map[string]time.Time
	max     int
	// swept is when expired entries were last dropped: a full table is
	// swept at most once a second, so a flood of new keys against a full
	// table costs a map lookup each, not a scan each.
	swept time.Time
}

func newExpiringMap(max int) expiringMap {
	return expiringMap{entries: map[string]time.Time{}, max: max}
}

// get returns key's expiry when it has not passed.
func (m *expiringMap) get(key string, now time.Time) (time.Time, bool) {
	until, ok := m.entries[key]
	if !ok || !now.Before(until) {
		return time.Time{}, false
	}
	return until, true
}

// set stores key until until; false when key is new and the table is
// full of live keys.
func (m *expiringMap) set(key string, until, now time.Time) bool {
	if _, ok := m.entries[key]; !ok && len(m.entries) >= m.max {
		if now.Sub(m.swept) < time.Second {
			return false
		}
		m.swept = now
		for k, u := range m.entries {
			if !now.Before(u) {
				delete(m.entries, k)
			}
		}
		if len(m.entries) >= m.max {
			return false
		}
	}
	m.entries[key] = until
	return true
}

// redisDownWarning logs that Redis could not answer and what was done
// instead, at most once per redisDownWarningEvery for each place that
// falls back: while Redis is down every request would log it, and
// whoever sends the requests would decide how much the log holds.
type redisDownWarning struct {
	last       atomic.Int64 // Unix ns of the last warning logged
	suppressed atomic.Int64 // warnings not logged since
}

const redisDownWarningEvery = 10 * time.Second

func (w *redisDownWarning) log(ctx context.Context, msg string, err error, attrs ...slog.Attr) {
	now := time.Now().UnixNano()
	last := w.last.Load()
	if now-last < int64(redisDownWarningEvery) || !w.last.CompareAndSwap(last, now) {
		w.suppressed.Add(1)
		return
	}
	attrs = append(attrs, slog.Any("error", err), slog.Int64("suppressed", w.suppressed.Swap(0)))
	slog.LogAttrs(ctx, slog.LevelWarn, msg, attrs...)
}
