package payouts

import (
	"context"
	"errors"
	"sync"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
)

// Batched submits. Each payout:submit task still runs on its own and gets
// its own answer (retry, done), but the tasks that run at the same moment
// hand their disbursements to a batch loop, which reads, claims, submits
// and moves them together: a handful of statements per batch instead of
// some twenty per payout. It is group commit: a loop takes whatever has
// queued up while it was busy, so an idle worker submits a lone payout at
// once and a busy one in batches as large as its concurrency.

// errNotBatchable sends a disbursement back to the one-at-a-time path: a
// resubmit or an expiry, whose checks ask the vendor or race a claim.
var errNotBatchable = errors.New("disbursement needs the one-at-a-time submit")

// submitRequest is one task's disbursement waiting for a batch.
type submitRequest struct {
	id   uuid.UUID
	done chan error // buffered: the loop never waits for the task
}

// batcher is the running batch loops' intake.
type batcher struct {
	requests chan submitRequest // unbuffered: a request is taken or not
	stopped  chan struct{}      // closed when the loops have stopped
}

// RunSubmitBatches serves Submit calls in batches of up to maxBatch with
// loops batches in flight at once, until ctx ends; it returns once the
// loops have stopped. Submit calls made while it does not run, or after it
// stopped, take the one-at-a-time path. The worker runs it; cancel ctx
// only after the task server has shut down, so that no task waits on a
// batch that never comes.
func (s *Service) RunSubmitBatches(ctx context.Context, loops, maxBatch int) {
	b := &batcher{requests: make(chan submitRequest), stopped: make(chan struct{})}
	s.mu.Lock()
	s.batches = b
	s.mu.Unlock()
	var wg sync.WaitGroup
	for range max(loops, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.batchLoop(ctx, b, max(maxBatch, 1))
		}()
	}
	wg.Wait()
	s.mu.Lock()
	if s.batches == b {
		s.batches = nil
	}
	s.mu.Unlock()
	close(b.stopped)
}

// batchLoop takes the first request that comes, then every other one
// already waiting, up to maxBatch, and submits them together.
func (s *Service) batchLoop(ctx context.Context, b *batcher, maxBatch int) {
	for {
		var batch []submitRequest
		select {
		case <-ctx.Done():
			return
		case r := <-b.requests:
			batch = append(batch, r)
		}
	gather:
		for len(batch) < maxBatch {
			select {
			case r := <-b.requests:
				batch = append(batch, r)
			default:
				break gather
			}
		}
		// A batch is finished even when ctx ends meanwhile: its claims
		// are made and its vendor calls may be on their way.
		runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.submitLease)
		s.submitBatch(runCtx, batch)
		cancel()
	}
}

// submitBatched hands id to a batch loop and waits for its answer. handled is
// false when no loop runs or the disbursement needs the one-at-a-time path.
func (s *Service) submitBatched(ctx context.Context, id uuid.UUID) (handled bool, err error) {
	s.mu.Lock()
	b := s.batches
	s.mu.Unlock()
	if b == nil {
		return false, nil
	}
	r := submitRequest{id: id, done: make(chan error, 1)}
	select {
	case b.requests <- r:
	case <-b.stopped:
		return false, nil
	case <-ctx.Done():
		return true, ctx.Err()
	}
	select {
	case err = <-r.done:
	case <-ctx.Done():
		// The batch goes on; the retry of this task finds its outcome.
		return true, ctx.Err()
	}
	if errors.Is(err, errNotBatchable) {
		return false, nil
	}
	return true, err
}

// submitBatch is Submit for several disbursements: one read, then
// submitAll for the first submits among them. Each request gets the answer
// Submit would have given.
func (s *Service) submitBatch(ctx context.Context, batch []submitRequest) {
	answers := make([]error, len(batch))
	defer func() {
		for i, r := range batch {
			r.done <- answers[i]
		}
	}()
	fresh, err := s.freshForSubmit(ctx, batch, answers)
	if err != nil {
		for i := range answers {
			answers[i] = err
		}
		return
	}
	ds := make([]*models.Disbursement, len(fresh))
	for i, f := range fresh {
		ds[i] = f.d
	}
	for i, err := range s.submitAll(ctx, ds) {
		answers[fresh[i].index] = err
	}
}

// pending is a disbursement of a batch with the index of its request.
type pending struct {
	index int
	d     *models.Disbursement
}

// freshForSubmit reads the batch's disbursements and answers every request
// that is not a first submit with a lock still running: nothing to do, not
// found, or errNotBatchable. It returns the first submits.
func (s *Service) freshForSubmit(ctx context.Context, batch []submitRequest, answers []error) ([]pending, error) {
	ids := make([]uuid.UUID, len(batch))
	for i, r := range batch {
		ids[i] = r.id
	}
	var rows []models.Disbursement
	if err := s.db.WithContext(ctx).Where("id IN ?", ids).Find(&rows).Error; err != nil {
		return nil, err
	}
	byID := make(map[uuid.UUID]*models.Disbursement, len(rows))
	for i := range rows {
		byID[rows[i].ID] = &rows[i]
	}
	now := s.clock()
	seen := make(map[uuid.UUID]bool, len(batch))
	var fresh []pending
	for i, r := range batch {
		d := byID[r.id]
		switch {
		case seen[r.id]:
			answers[i] = errNotBatchable // a duplicate task: after this batch, alone
		case d == nil:
			answers[i] = models.ErrDisbursementNotFound
		case d.Status != models.StatusVerified:
			answers[i] = nil
		case d.SubmitAttempts > 0 || !now.Before(d.LockExpiresAt):
			answers[i] = errNotBatchable
		default:
			fresh = append(fresh, pending{index: i, d: d})
		}
		seen[r.id] = true
	}
	return fresh, nil
}
