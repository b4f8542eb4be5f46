package sim

import (
	"context"
	"fmt"
	"time"
)

// stuckAfter is how long, in wall time, the scheduler waits for the
// running operation to park or finish before it calls the operation stuck:
// blocked somewhere other than a park point (a lock held by a parked
// operation, a timer, a goroutine the simulation does not know).
const stuckAfter = 20 * time.Second

// op is one operation of a process: a create, a sweep, a task, a
// callback. Its code runs on a goroutine of its own.
type op struct {
	id    int
	name  string
	proc  *proc
	epoch int    // proc.epoch when it started: a crash makes it stale
	at    string // where it is parked
	// deadline is when the vendor call it is parked in times out: the
	// clock never passes it with the call still parked.
	deadline time.Time
	// resume is how the scheduler hands the baton back.
	resume chan wake
}

// wake is why a parked operation gets the baton back.
type wake int

const (
	goOn     wake = iota
	died          // its process died meanwhile: it hears nothing back
	timedOut      // its vendor call's deadline came: the client gave up
)

// dead reports whether the op's process died since the op started.
func (o *op) dead() bool { return o.proc.epoch != o.epoch }

// event is what the running operation's goroutines tell the scheduler:
// it parked (done false) or it finished.
type event struct {
	op       *op
	done     bool
	err      error
	panicked any
}

// scheduler runs operations one at a time (the baton).
type scheduler struct {
	running *op
	parked  []*op
	events  chan event
	nextID  int
}

func newScheduler() *scheduler { return &scheduler{events: make(chan event)} }

// start runs fn as a new operation of p until it parks or finishes, and
// reports which.
func (s *scheduler) start(p *proc, name string, fn func(ctx context.Context) error) event {
	s.nextID++
	o := &op{id: s.nextID, name: name, proc: p, epoch: p.epoch, resume: make(chan wake)}
	s.running = o
	go func() {
		ev := event{op: o, done: true}
		defer func() {
			ev.panicked = recover()
			s.events <- ev
		}()
		ev.err = fn(context.Background())
	}()
	return s.wait(o)
}

// resume hands the baton to the parked o until it parks again or
// finishes.
func (s *scheduler) resume(o *op, why wake) event {
	for i, p := range s.parked {
		if p == o {
			s.parked = append(s.parked[:i], s.parked[i+1:]...)
			break
		}
	}
	s.running = o
	o.resume <- why
	return s.wait(o)
}

func (s *scheduler) wait(o *op) event {
	select {
	case ev := <-s.events:
		s.running = nil
		if !ev.done {
			s.parked = append(s.parked, ev.op)
		}
		return ev
	case <-time.After(stuckAfter):
		panic(fmt.Sprintf("operation %d (%s) neither parked nor finished within %s: it blocks outside a park point", o.id, o.name, stuckAfter))
	}
}

// park gives the baton back from inside the running operation (any of its
// goroutines) and waits for it, and says why it got it back.
func (s *scheduler) park(at string) (o *op, why wake) {
	o = s.running
	if o == nil {
		panic("park outside an operation")
	}
	o.at = at
	s.events <- event{op: o}
	return o, <-o.resume
}

// nextDeadline is the parked operation whose vendor call times out first
// (nil when none has a deadline).
func (s *scheduler) nextDeadline() *op {
	var first *op
	for _, o := range s.parked {
		if !o.deadline.IsZero() && (first == nil || o.deadline.Before(first.deadline)) {
			first = o
		}
	}
	return first
}

// current is the operation holding the baton (nil between steps: set-up
// and checks).
func (s *scheduler) current() *op { return s.running }
