package payouts

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
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
func (s *Service) Wake(ids ...uuid.UUID) { s.waiting.wake(ids) }

// leftVerified wakes the local waiters of the disbursements that a commit
// moved out of VERIFIED and tells the other processes.
func (s *Service) leftVerified(ctx context.Context, ids []uuid.UUID) {
	if len(ids) == 0 {
		return
	}
	s.waiting.wake(ids)
	if s.notifier != nil {
		s.notifier.Notify(ctx, ids)
	}
}

// SubmitAndWait is a fresh create's bounded wait (DISBURSEMENT_SUBMIT_WAIT)
// for its vendor's first answer. With Options.SubmitInline, this process
// submits d itself at once (the queued task stays as the fallback and
// finds the work done); otherwise, or when another process holds the
// submit, it waits to be woken by the commit that moves d out of
// VERIFIED, re-reading d every WaitRecheck in case a wake-up was lost. It
// returns d as then stored; a merchant who hangs up ends the wait, never
// the submit.
func (s *Service) SubmitAndWait(ctx context.Context, d *models.Disbursement, wait time.Duration) (*models.Disbursement, error) {
	if d.Status != models.StatusVerified || wait <= 0 {
		return d, nil
	}
	woken, remove := s.waiting.add(d.ID)
	defer remove()
	var inline <-chan error
	if s.submitInline {
		inline = s.startInlineSubmit(d)
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	recheck := time.NewTicker(s.waitRecheck)
	defer recheck.Stop()
	for {
		select {
		case <-ctx.Done():
			return d, nil
		case <-deadline.C:
			return d, nil
		case <-woken:
			current, err := s.Get(ctx, d.ID)
			if err != nil && ctx.Err() != nil {
				return d, nil // the merchant hung up
			}
			return current, err
		case <-inline:
			// Done without a commit that woke us (claim lost, outcome
			// unknown): wait for the holder of the submit.
			inline = nil
		case <-recheck.C:
			s.waitRechecks.Add(1)
			current, err := s.Get(ctx, d.ID)
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
// (one claim, one vendor call, one transaction for all of them).
const inlineLoops, maxInlineBatch = 2, 64

// newInlineSubmitter returns the group commit of the inline submits.
func (s *Service) newInlineSubmitter() *groupCommit[*models.Disbursement] {
	return &groupCommit[*models.Disbursement]{maxLeaders: inlineLoops, next: firstGroup[*models.Disbursement](maxInlineBatch),
		write: s.writeInlineBatch}
}

// startInlineSubmit queues a copy of d for an inline batch. The batches'
// context is not the request's (a merchant hanging up must not cut a
// vendor call in half); each is bounded by the submit lease, which
// outlasts any vendor timeout. The channel answers when d's batch is done.
func (s *Service) startInlineSubmit(d *models.Disbursement) <-chan error {
	own := *d
	return s.inline.start(&own)
}

// writeInlineBatch submits one batch of inline submits and answers each.
func (s *Service) writeInlineBatch(group []*groupRequest[*models.Disbursement]) {
	ctx, cancel := context.WithTimeout(context.Background(), s.submitLease)
	defer cancel()
	ds := make([]*models.Disbursement, len(group))
	for i, r := range group {
		ds[i] = r.item
	}
	s.submitFirsts(ctx, ds)
	for _, r := range group {
		r.done <- nil
	}
}

// submitFirsts submits the disbursements, read as created, that are still
// first submits: only submitAll's claim decides, so that when the worker's
// task got there first this does nothing (and counts no attempt), and the
// worker's task, when it runs after this, finds the status moved or the
// attempt counted and resolves it as any earlier attempt.
func (s *Service) submitFirsts(ctx context.Context, batch []*models.Disbursement) {
	now := s.clock()
	ds := make([]*models.Disbursement, 0, len(batch))
	for _, d := range batch {
		if d.Status == models.StatusVerified && d.SubmitAttempts == 0 && now.Before(d.LockExpiresAt) {
			ds = append(ds, d)
		}
	}
	if len(ds) == 0 {
		return
	}
	for i, err := range s.submitAll(ctx, ds) {
		if err != nil {
			slog.InfoContext(ctx, "inline submit left to the worker", slog.String("disbursement_id", ds[i].ID.String()), slog.Any("error", err))
		}
	}
}

// WaitRechecks is how many times waiting creates re-read their row because
// no wake-up came (tests assert that a wake-up, not a re-check, answered).
func (s *Service) WaitRechecks() int64 { return s.waitRechecks.Load() }
