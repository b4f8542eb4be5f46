package worker

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"github.com/payoutd/payoutd/tasks"
)

// scheduler enqueues the periodic tasks at the start of each of their
// periods, aligned to the wall clock (UTC multiples of the period), so
// that every worker's scheduler enqueues the same period under the same
// task id and the period runs once (tasks.Periodic.Task). asynq's own
// Scheduler fires at times of its own and gives every run a new id.
type scheduler struct {
	client *asynq.Client
	prefix string
	wg     sync.WaitGroup
}

// start runs one loop per periodic task until ctx ends; wait waits for them.
func (s *scheduler) start(ctx context.Context, periodic []tasks.Periodic) {
	for _, p := range periodic {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.loop(ctx, p)
		}()
	}
}

func (s *scheduler) wait() { s.wg.Wait() }

// firstSlot is the first period start at least one period after now: a
// worker that just started leaves the period under way to the workers
// already running, and the first run comes a period after the start at
// the earliest, as with asynq's "@every".
func firstSlot(now time.Time, every time.Duration) time.Time {
	slot := now.Truncate(every)
	for slot.Before(now.Add(every)) {
		slot = slot.Add(every)
	}
	return slot
}

func (s *scheduler) loop(ctx context.Context, p tasks.Periodic) {
	slot := firstSlot(time.Now(), p.Every)
	for {
		timer := time.NewTimer(time.Until(slot))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		s.enqueue(ctx, p, slot)
		slot = slot.Add(p.Every)
		// After a stall (a suspended machine) the periods missed are
		// skipped, not caught up all at once.
		if now := time.Now(); !slot.After(now) {
			slot = now.Truncate(p.Every).Add(p.Every)
		}
	}
}

// enqueue enqueues the run of slot's period. Another worker having
// enqueued it first is the normal case with several workers, not an error.
func (s *scheduler) enqueue(ctx context.Context, p tasks.Periodic, slot time.Time) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	task, opts := p.Task(slot)
	_, err := s.client.EnqueueContext(ctx, task, tasks.InQueue(s.prefix, opts)...)
	switch {
	case err == nil:
		slog.Debug("periodic task enqueued", slog.String("task", p.Type), slog.Time("slot", slot))
	case errors.Is(err, asynq.ErrTaskIDConflict):
		// Another worker's scheduler enqueued this period first.
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		// Shutting down.
	default:
		slog.Warn("periodic task not enqueued; the next period will run it", slog.String("task", p.Type),
			slog.Time("slot", slot), slog.Any("error", err))
	}
}
