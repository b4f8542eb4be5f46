package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/webhooks"
)

// Task kinds, as the worker's handlers are named.
const (
	taskSubmit  = "payout:submit"
	taskPoll    = "payout:poll"
	taskWebhook = "webhook:deliver"
)

// retention is how long the queue remembers a finished task's id and
// refuses a duplicate of it (tasks' asynq.Retention).
const retention = 10 * time.Minute

// maxRetry is how many times a failing task is retried before it is
// archived (tasks' asynq.MaxRetry): the sweep must find its payout again.
const maxRetry = 25

// webhookMaxRetry is the webhook delivery task's (its schedule decides).
const webhookMaxRetry = 1000

// task is one queued task.
type task struct {
	id      string // kind:uuid[:slot], the queue's unique task id
	kind    string
	target  uuid.UUID
	runAt   time.Time
	retried int
	doneAt  time.Time // zero while pending
	// running is the operation running it: not handed out again while
	// that operation's worker lives (asynq's lease).
	running *op
}

// queue is the simulated Redis queue (asynq): unique task ids, delays,
// retries with asynq's backoff, retention, and loss of everything when
// Redis loses its state.
//
// Adds are locked, and everything the queue hands out is in a canonical
// order (due time, then task id), never the order of arrival: should a
// rule ever enqueue from several goroutines again, the history must not
// depend on which ran first.
type queue struct {
	w     *World
	mu    sync.Mutex
	tasks []*task
}

func (q *queue) EnqueueSubmit(ctx context.Context, id uuid.UUID, slot string) error {
	return q.add(taskSubmit, id, slot, 0)
}

func (q *queue) EnqueuePoll(ctx context.Context, id uuid.UUID, slot string, after time.Duration) error {
	return q.add(taskPoll, id, slot, after)
}

func (q *queue) EnqueueWebhook(ctx context.Context, id uuid.UUID, slot string) error {
	return q.add(taskWebhook, id, slot, 0)
}

func (q *queue) add(kind string, id uuid.UUID, slot string, after time.Duration) error {
	if o := q.w.sched.current(); o != nil && o.dead() {
		return fmt.Errorf("sim: redis: connection lost")
	}
	tid := kind + ":" + id.String()
	if slot != "" {
		tid += ":" + slot
	}
	now := q.w.clock.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, t := range q.tasks {
		if t.id == tid && (t.doneAt.IsZero() || now.Sub(t.doneAt) < retention) {
			return nil // a duplicate: asynq refuses it, tasks.Client ignores that
		}
	}
	q.tasks = append(q.tasks, &task{id: tid, kind: kind, target: id, runAt: now.Add(after)})
	q.w.logf("queue: %s %s in %s", kind, q.w.name(id.String()), after)
	return nil
}

// due lists the pending tasks whose time has come, oldest first.
func (q *queue) due(now time.Time) []*task {
	var out []*task
	for _, t := range q.tasks {
		if t.doneAt.IsZero() && !t.runAt.After(now) && (t.running == nil || t.running.dead()) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b *task) int {
		if c := a.runAt.Compare(b.runAt); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	return out
}

// next is when the earliest pending task runs (zero when none).
func (q *queue) next() time.Time {
	var at time.Time
	for _, t := range q.tasks {
		if t.doneAt.IsZero() && (at.IsZero() || t.runAt.Before(at)) {
			at = t.runAt
		}
	}
	return at
}

// finish records a task's run: done, or retried with asynq's backoff
// (n⁴ + 15 s, plus up to 30 s × (n+1)) or the delay a webhook delivery
// asks for, archived after its kind's retries (or at once when the
// delivery gave up).
func (q *queue) finish(t *task, err error) {
	now := q.w.clock.Now()
	t.running = nil
	var later *webhooks.RetryLater
	switch {
	case err == nil, errors.Is(err, webhooks.ErrGaveUp), errors.Is(err, models.ErrNotFound) && t.kind == taskWebhook:
		t.doneAt = now
		return
	case errors.As(err, &later) && t.retried < webhookMaxRetry:
		t.retried++
		t.runAt = now.Add(later.Delay)
		return
	}
	if t.retried >= maxRetry {
		t.doneAt = now
		q.w.logf("queue: %s archived after %d retries", t.kind, t.retried)
		return
	}
	t.retried++
	n := t.retried
	t.runAt = now.Add(time.Duration(n*n*n*n+15)*time.Second + time.Duration(q.w.rng.IntN(30*(n+1)))*time.Second)
}

// lose is Redis losing its state: every task and remembered id gone.
func (q *queue) lose() { q.tasks = nil }

// forget drops finished tasks past retention, to keep the list short.
func (q *queue) forget(now time.Time) {
	q.tasks = slices.DeleteFunc(q.tasks, func(t *task) bool {
		return !t.doneAt.IsZero() && now.Sub(t.doneAt) >= retention
	})
}
