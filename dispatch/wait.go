package dispatch

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/internal/groupcommit"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payouts"
)

// Notifier tells the other processes that disbursements left VERIFIED, so
// that a create waiting for its submit there wakes (internal/app publishes
// on Redis). It is best effort: a lost message costs a waiter one re-check
// interval (Options.WaitRecheck), never a wrong answer.
type Notifier interface {
	Notify(ctx context.Context, ids []uuid.UUID)
}

// DefaultWaitRecheck is Options.WaitRecheck's default: how often a waiting
// create re-reads its row in case a wake-up was lost.
const DefaultWaitRecheck = 250 * time.Millisecond

// waiters are the creates of this process waiting for their submit, by
// disbursement id. A wake closes every channel registered for the id.
type waiters struct {
	mu   sync.Mutex
	byID map[uuid.UUID][]chan struct{}
}

// add registers a waiter for id; remove must be called once it is done.
func (w *waiters) add(id uuid.UUID) (woken <-chan struct{}, remove func()) {
	ch := make(chan struct{})
	w.mu.Lock()
	if w.byID == nil {
		w.byID = map[uuid.UUID][]chan struct{}{}
	}
	w.byID[id] = append(w.byID[id], ch)
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		list := w.byID[id]
		for i, c := range list {
			if c == ch {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(w.byID, id)
		} else {
			w.byID[id] = list
		}
	}
}

// wake closes and forgets the channels of the ids.
func (w *waiters) wake(ids []uuid.UUID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		for _, ch := range w.byID[id] {
			close(ch)
		}
		delete(w.byID, id)
	}
}

// Wake wakes the creates of this process waiting for the disbursements:
// the subscriber of the other processes' notifications calls it. Unknown
// ids are ignored.
func (x *Dispatcher) Wake(ids ...uuid.UUID) { x.waiting.wake(ids) }

// LeftVerified wakes the local waiters of the disbursements that a commit
// moved out of VERIFIED and tells the other processes (payouts.Handoff).
func (x *Dispatcher) LeftVerified(ctx context.Context, ids []uuid.UUID) {
	if len(ids) == 0 {
		return
	}
	x.waiting.wake(ids)
	if x.notifier != nil {
		x.notifier.Notify(ctx, ids)
	}
}

// SubmitAndWait is a fresh create's bounded wait (DISBURSEMENT_SUBMIT_WAIT)
// for its vendor's first answer. When Create submitted inline
// (payouts.Options.SubmitInline: the payout was handed to Claimed), the
// answer is that submit's, as committed, with no re-read. Otherwise, or
// when the inline submit left the payout to the worker, it waits to be
// woken by the commit that moves the payout out of VERIFIED, re-reading it
// every WaitRecheck in case a wake-up was lost. It returns the
// disbursement as then stored; a merchant who hangs up ends the wait,
// never the submit.
func (x *Dispatcher) SubmitAndWait(ctx context.Context, created *payouts.Created, wait time.Duration) (*models.Disbursement, error) {
	d := created.Disbursement
	if d.Status != models.StatusVerified || wait <= 0 {
		return d, nil
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	if sub, _ := created.Inline.(*inlineSubmit); sub != nil {
		select {
		case <-ctx.Done():
			return d, nil
		case <-deadline.C:
			return d, nil
		case <-sub.done:
			if sub.moved {
				answer := sub.d
				return &answer, nil
			}
		}
	}
	return x.waitForSubmit(ctx, d, deadline.C)
}

// waitForSubmit waits until d leaves VERIFIED (woken by the committing
// process, or seen by a re-read) or until the deadline or the merchant
// ends the wait.
func (x *Dispatcher) waitForSubmit(ctx context.Context, d *models.Disbursement, deadline <-chan time.Time) (*models.Disbursement, error) {
	woken, remove := x.waiting.add(d.ID)
	defer remove()
	recheck := time.NewTicker(x.waitRecheck)
	defer recheck.Stop()
	for {
		select {
		case <-ctx.Done():
			return d, nil
		case <-deadline:
			return d, nil
		case <-woken:
			current, err := x.svc.Get(ctx, d.ID)
			if err != nil && ctx.Err() != nil {
				return d, nil // the merchant hung up
			}
			return current, err
		case <-recheck.C:
			x.waitRechecks.Add(1)
			current, err := x.svc.Get(ctx, d.ID)
			if err != nil {
				if ctx.Err() != nil {
					return d, nil
				}
				return d, err
			}
			if current.Status != models.StatusVerified {
				return current, nil
			}
		}
	}
}

// inlineLoops is how many inline batches run at once in a process, and
// maxInlineBatch the most payouts one carries: while a batch is out, the
// creates that arrive meanwhile queue up and go together in the next
// (one vendor call per vendor, one transaction for all of them). Another
// loop starts when a full batch is queued (inlineBusyAt) or when a create
// has waited inlineBusyAfter for one: while batches are quick, one loop
// makes the largest batches, and so the fewest vendor calls and
// transactions per payout (two loops, each taking every other
// handful of creates, served the default wait 15% fewer creates a second
// on 2 cores); while a vendor takes its time to answer, a create waits
// about inlineBusyAfter for its own call to start instead of for the
// whole call before it (one loop and a vendor answering in 100 ms: the
// merchants waited 240 ms, p50, and 32 of them got 126 creates/s).
const (
	inlineLoops, maxInlineBatch, inlineBusyAt = 8, 64, 64
	inlineBusyAfter                           = 10 * time.Millisecond
)

// inlineSubmit is one payout submitted by the process that created it.
// Its batch owns it until done is closed; then d is the payout as the
// batch left it and moved says whether a committed move took it out of
// VERIFIED.
type inlineSubmit struct {
	d     models.Disbursement
	moved bool
	done  chan struct{}
}

// newInlineSubmitter returns the group commit of the inline submits.
func (x *Dispatcher) newInlineSubmitter() *groupcommit.Group[*inlineSubmit] {
	return &groupcommit.Group[*inlineSubmit]{MaxLeaders: inlineLoops, BusyAt: inlineBusyAt, BusyAfter: inlineBusyAfter,
		Next: groupcommit.First[*inlineSubmit](maxInlineBatch), Run: x.writeInlineBatch, Observe: x.svc.ObserveGroup("inline_submit")}
}

// Claimed queues a copy of d, stored with its attempt claimed, for an
// inline batch (payouts.Handoff); the create's SubmitAndWait waits for it.
func (x *Dispatcher) Claimed(d *models.Disbursement) any {
	sub := &inlineSubmit{d: *d, done: make(chan struct{})}
	x.inline.Start(sub)
	return sub
}

// writeInlineBatch submits one batch of inline submits
// (payouts.Service.SubmitClaimed) and answers each. A payout the batch
// does not finish (too late for its lease, outcome unknown, a failed
// write) is queued for the worker, which resolves it as any earlier
// attempt.
func (x *Dispatcher) writeInlineBatch(group []*groupcommit.Request[*inlineSubmit]) {
	ds := make([]*models.Disbursement, len(group))
	for i, r := range group {
		ds[i] = &r.Item.d
	}
	for _, d := range x.svc.SubmitClaimed(ds) {
		x.queueSubmitTask(context.Background(), d)
	}
	for _, r := range group {
		r.Item.moved = r.Item.d.Status != models.StatusVerified
		close(r.Item.done)
		r.Answer(nil)
	}
}

// WaitRechecks is how many times waiting creates re-read their row because
// no wake-up came (tests assert that a wake-up, not a re-check, answered).
func (x *Dispatcher) WaitRechecks() int64 { return x.waitRechecks.Load() }
