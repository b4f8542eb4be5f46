package sim

import (
	"context"
	"time"
)

// epoch is where every simulation's clock starts: a Monday far ahead of
// the real one, so that a context deadline the service computes from the
// simulated clock never passes in real time. The simulation judges those
// deadlines against its own clock instead (pastDeadline, callDeadline).
var epoch = time.Date(2099, 1, 5, 9, 0, 0, 0, time.UTC)

// clock is the simulated time: it moves only when the simulation advances
// it.
type clock struct{ now time.Time }

// Now is the clock's reading, in UTC to the microsecond as stored.
func (c *clock) Now() time.Time { return c.now }

// since is the simulated time elapsed since the start, for the history.
func (c *clock) since() time.Duration { return c.now.Sub(epoch) }

// simDeadline is ctx's deadline when it was set on the simulated clock.
// The service sets two kinds: a submit's lease end, read on its clock (the
// simulated one), and timeouts from the wall clock (a group commit's, a
// vendor client's), which a run never lasts long enough to reach. The
// epoch tells them apart: a wall-clock deadline falls decades before it.
func simDeadline(ctx context.Context) (time.Time, bool) {
	d, ok := ctx.Deadline()
	return d, ok && !d.Before(epoch)
}

// pastDeadline says whether ctx's deadline on the simulated clock has
// come: a statement or a call made under it fails as it would in real
// time.
func (c *clock) pastDeadline(ctx context.Context) bool {
	d, ok := simDeadline(ctx)
	return ok && !c.now.Before(d)
}

// callDeadline is when a call made now under ctx gives up: the client's
// timeout, or ctx's deadline on the simulated clock when that comes first.
func (c *clock) callDeadline(ctx context.Context, timeout time.Duration) time.Time {
	at := c.now.Add(timeout)
	if d, ok := simDeadline(ctx); ok && d.Before(at) {
		at = d
	}
	return at
}
