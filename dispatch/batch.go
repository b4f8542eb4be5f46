package dispatch

import (
	"context"
	"errors"
	"sync"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/payouts"
)

// Batched submits. Each payout:submit task still runs on its own and gets
// its own answer (retry, done), but the tasks that run at the same moment
// hand their disbursements to a batch loop, which reads, claims, submits
// and moves them together (payouts.Service.SubmitFresh): a handful of
// statements per batch instead of some twenty per payout. It is group
// commit: a loop takes whatever has queued up while it was busy, so an
// idle worker submits a lone payout at once and a busy one in batches as
// large as its concurrency.

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
// stopped, take the one-at-a-time path. The worker runs it (Run); cancel
// ctx only after the task server has shut down, so that no task waits on
// a batch that never comes.
func (x *Dispatcher) RunSubmitBatches(ctx context.Context, loops, maxBatch int) {
	b := &batcher{requests: make(chan submitRequest), stopped: make(chan struct{})}
	x.mu.Lock()
	x.batches = b
	x.mu.Unlock()
	var wg sync.WaitGroup
	for range max(loops, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x.batchLoop(ctx, b, max(maxBatch, 1))
		}()
	}
	wg.Wait()
	x.mu.Lock()
	if x.batches == b {
		x.batches = nil
	}
	x.mu.Unlock()
	close(b.stopped)
}

// batchLoop takes the first request that comes, then every other one
// already waiting, up to maxBatch, and submits them together.
func (x *Dispatcher) batchLoop(ctx context.Context, b *batcher, maxBatch int) {
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
		runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), x.svc.SubmitLease())
		x.submitBatch(runCtx, batch)
		cancel()
	}
}

// submitBatched hands id to a batch loop and waits for its answer. handled is
// false when no loop runs or the disbursement needs the one-at-a-time path.
func (x *Dispatcher) submitBatched(ctx context.Context, id uuid.UUID) (handled bool, err error) {
	x.mu.Lock()
	b := x.batches
	x.mu.Unlock()
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
	if errors.Is(err, payouts.ErrNotBatchable) {
		return false, nil
	}
	return true, err
}

// submitBatch submits the batch's disbursements together and answers each
// request with what Submit would have answered.
func (x *Dispatcher) submitBatch(ctx context.Context, batch []submitRequest) {
	ids := make([]uuid.UUID, len(batch))
	for i, r := range batch {
		ids[i] = r.id
	}
	for i, err := range x.svc.SubmitFresh(ctx, ids) {
		batch[i].done <- err
	}
}
