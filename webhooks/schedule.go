package webhooks

import (
	"hash/fnv"
	"time"

	"github.com/google/uuid"
)

// Schedule is the retry schedule of a delivery: the wait after attempt n
// doubles from Base up to Cap, with ±20 % jitter, and attempts stop once
// the waits add up to Window (about three days by default).
type Schedule struct {
	Base   time.Duration
	Cap    time.Duration
	Window time.Duration
}

// DefaultSchedule: 30 s, 1 min, 2 min, … capped at 6 h, over 72 hours
// (about 20 attempts).
var DefaultSchedule = Schedule{Base: 30 * time.Second, Cap: 6 * time.Hour, Window: 72 * time.Hour}

// After returns the wait after failed attempt n (1-based) of event id, and
// false when n was the last attempt. The jitter is derived from the event
// and the attempt, so the wait recorded for an attempt is the wait asynq
// applies.
func (s Schedule) After(id uuid.UUID, n int) (time.Duration, bool) {
	var total time.Duration
	for i := 1; i <= n; i++ {
		d := s.delay(id, i)
		if total+d > s.Window && i == n {
			return 0, false
		}
		total += d
	}
	return s.delay(id, n), true
}

// Attempts is how many attempts the schedule makes (for the docs and the
// queue's MaxRetry).
func (s Schedule) Attempts() int {
	var total time.Duration
	for n := 1; ; n++ {
		d := s.delay(uuid.Nil, n)
		if total+d > s.Window {
			return n
		}
		total += d
	}
}

func (s Schedule) delay(id uuid.UUID, n int) time.Duration {
	d := s.Base
	for i := 1; i < n && d < s.Cap; i++ {
		d *= 2
	}
	d = min(d, s.Cap)
	h := fnv.New32a()
	h.Write(id[:])
	h.Write([]byte{byte(n), byte(n >> 8)})
	jitter := float64(h.Sum32()%4001)/10000 - 0.2 // −20 % … +20 %
	return time.Duration(float64(d) * (1 + jitter))
}
