package sim

import "time"

// epoch is where every simulation's clock starts.
var epoch = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// clock is the simulated time: it moves only when the simulation advances
// it.
type clock struct{ now time.Time }

// Now is the clock's reading, in UTC to the microsecond as stored.
func (c *clock) Now() time.Time { return c.now }

// since is the simulated time elapsed since the start, for the history.
func (c *clock) since() time.Duration { return c.now.Sub(epoch) }
