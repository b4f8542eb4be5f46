package dispatch

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// The submit pump is how the worker takes fresh payouts: straight from the
// disbursements table, the row being the outbox, instead of one queued task
// per payout. A queued task costs the API an enqueue and the worker a
// dequeue and an acknowledgement, each a Redis round trip, and asynq takes
// tasks off Redis one at a time: on a busy machine that bounded the
// payouts a worker finished per second, not the database. A pump claims a
// batch of due payouts with one statement (payouts.Service.SubmitDue),
// submits them together and takes the next batch at once while there are
// more. It is woken when payouts become due (DueSignal, published by the
// API after its commit) and otherwise looks every PumpRecheck. asynq keeps
// the rest: status checks, retries of unknown outcomes, webhooks and the
// periodic tasks.

// DueSignal tells the worker's pumps that payouts became due for their
// first submit (internal/app publishes it on Redis). Best effort: a lost
// signal costs a payout one PumpRecheck.
type DueSignal interface {
	SubmitsDue(ctx context.Context)
}

// PumpRecheck is how often an idle pump looks for due payouts without
// being woken.
const PumpRecheck = 250 * time.Millisecond

// Paused reports whether an operator paused payout submits (the worker:
// the dashboard's pause of the queue submits go through); a pump takes
// nothing while it does.
type Paused func(ctx context.Context) bool

// RunSubmitPump runs loops pumps, each taking up to limit payouts at a
// time, until ctx ends; it returns once they have stopped (a batch under
// way is finished first). Wake (SubmitsDue's subscriber calls it) starts
// every idle pump. paused may be nil.
func (x *Dispatcher) RunSubmitPump(ctx context.Context, loops, limit int, paused Paused) {
	wakes := make([]chan struct{}, max(loops, 1))
	for i := range wakes {
		wakes[i] = make(chan struct{}, 1)
	}
	x.mu.Lock()
	x.pumpWakes = wakes
	x.mu.Unlock()
	var wg sync.WaitGroup
	for _, wake := range wakes {
		wg.Go(func() { x.pump(ctx, wake, max(limit, 1), paused) })
	}
	wg.Wait()
	x.mu.Lock()
	x.pumpWakes = nil
	x.mu.Unlock()
}

// WakePumps starts this process's idle pumps at once.
func (x *Dispatcher) WakePumps() {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, w := range x.pumpWakes {
		select {
		case w <- struct{}{}:
		default: // already woken
		}
	}
}

// pump takes batches while full ones come, then waits to be woken or for
// the recheck. A recheck first reads whether anything is due, so that an
// idle pump writes nothing (on SQLite a write waits for the one writer).
func (x *Dispatcher) pump(ctx context.Context, wake <-chan struct{}, limit int, paused Paused) {
	recheck := time.NewTicker(PumpRecheck)
	defer recheck.Stop()
	probe := false
	for ctx.Err() == nil {
		n, err := 0, error(nil)
		switch {
		case paused != nil && paused(ctx):
		case probe && !x.svc.AnyDue(ctx):
		default:
			n, err = x.svc.SubmitDue(ctx, limit)
		}
		if err != nil && ctx.Err() == nil {
			slog.WarnContext(ctx, "submit pump: claiming due payouts failed", slog.Any("error", err))
		}
		if err == nil && n == limit {
			continue
		}
		select {
		case <-ctx.Done():
		case <-wake:
			probe = false
		case <-recheck.C:
			probe = true
		}
	}
}
