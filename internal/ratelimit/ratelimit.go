// Package ratelimit is what the service's limits counted in Redis (GCRA,
// github.com/go-redis/redis_rate) share: counting them in this process
// while Redis cannot answer, so that a limit that guards something (quotes
// and creates are account inquiries) does not vanish with Redis, and
// saying so in the log without flooding it. The API's rate limits and the
// inquiry budget (internal/inquirybudget) use it.
package ratelimit

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
)

// Local counts a limit in this process while Redis cannot answer,
// so that a limit that guards something (quotes are account inquiries)
// does not vanish with Redis. It is the GCRA of redis_rate over the same
// redis_rate.Limit and answers the same Result, so a limit means the same
// here as there; but each API instance counts alone, so N instances allow
// up to N times the limit between them while Redis is down.
//
// Its memory is bounded: at most maxKeys keys are tracked. A key not
// tracked yet when the table is full of live keys is refused for a second
// (failing closed), never let through, and the table never grows further.
type Local struct {
	mu   sync.Mutex
	tats ExpiringMap // a key's theoretical arrival time; past it the key holds nothing
	// Now is the clock, time.Now; set it before the first use (tests stop
	// it).
	Now func() time.Time
}

// LocalKeys bounds each local limiter: far more clients (or source
// addresses) than one instance serves in a minute, a few MiB at most.
const LocalKeys = 100_000

// NewLocal returns a local limiter tracking at most maxKeys keys.
func NewLocal(maxKeys int) *Local {
	return &Local{tats: NewExpiringMap(maxKeys), Now: time.Now}
}

// AllowN spends n of key's budget under limit (n 0 only looks), as
// redis_rate.Limiter.AllowN does in Redis.
func (l *Local) AllowN(key string, limit redis_rate.Limit, n int) *redis_rate.Result {
	now := l.Now()
	interval := limit.Period / time.Duration(limit.Rate)
	l.mu.Lock()
	defer l.mu.Unlock()
	tat, tracked := l.tats.Get(key, now)
	if !tracked {
		tat = now
	}
	newTAT := tat.Add(interval * time.Duration(n))
	diff := now.Sub(newTAT.Add(-interval * time.Duration(limit.Burst)))
	if diff < 0 {
		return &redis_rate.Result{Limit: limit, RetryAfter: -diff, ResetAfter: tat.Sub(now)}
	}
	if newTAT.After(now) && !l.tats.Set(key, newTAT, now) {
		return &redis_rate.Result{Limit: limit, RetryAfter: time.Second, ResetAfter: time.Second}
	}
	return &redis_rate.Result{Limit: limit, Allowed: n, Remaining: int(diff / interval), RetryAfter: -1, ResetAfter: newTAT.Sub(now)}
}

// UntilNextAllowed is how long after res, which left no Remaining, one
// more event fits: one emission interval past what the stored time is
// ahead of now beyond the burst.
func UntilNextAllowed(res *redis_rate.Result) time.Duration {
	interval := res.Limit.Period / time.Duration(res.Limit.Rate)
	return res.ResetAfter - time.Duration(res.Limit.Burst-1)*interval
}

// ExpiringMap maps keys to the moment they expire, holding at most max
// live keys. It does not lock: its owner does.
type ExpiringMap struct {
	entries map[string]time.Time
	max     int
	// swept is when expired entries were last dropped: a full table is
	// swept at most once a second, so a flood of new keys against a full
	// table costs a map lookup each, not a scan each.
	swept time.Time
}

// NewExpiringMap returns an empty map of at most max live keys.
func NewExpiringMap(max int) ExpiringMap {
	return ExpiringMap{entries: map[string]time.Time{}, max: max}
}

// Get returns key's expiry when it has not passed.
func (m *ExpiringMap) Get(key string, now time.Time) (time.Time, bool) {
	until, ok := m.entries[key]
	if !ok || !now.Before(until) {
		return time.Time{}, false
	}
	return until, true
}

// Set stores key until until; false when key is new and the table is
// full of live keys.
func (m *ExpiringMap) Set(key string, until, now time.Time) bool {
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

// DownWarning logs that Redis could not answer and what was done instead,
// at most once per DownWarningEvery for each place that falls back (each
// has a DownWarning of its own): while Redis is down every request would
// log it, and whoever sends the requests would decide how much the log
// holds. Its zero value is ready.
type DownWarning struct {
	last       atomic.Int64 // Unix ns of the last warning logged
	suppressed atomic.Int64 // warnings not logged since
}

// DownWarningEvery is how often one DownWarning logs at most.
const DownWarningEvery = 10 * time.Second

// Log logs msg at warn with err and attrs, and how many warnings were not
// logged since the last, unless one was logged within DownWarningEvery.
func (w *DownWarning) Log(ctx context.Context, msg string, err error, attrs ...slog.Attr) {
	now := time.Now().UnixNano()
	last := w.last.Load()
	if now-last < int64(DownWarningEvery) || !w.last.CompareAndSwap(last, now) {
		w.suppressed.Add(1)
		return
	}
	attrs = append(attrs, slog.Any("error", err), slog.Int64("suppressed", w.suppressed.Swap(0)))
	slog.LogAttrs(ctx, slog.LevelWarn, msg, attrs...)
}
