package payouts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
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

// submitBatch is Submit for several disbursements: one read, one claim,
// one vendor call per vendor (vendors.SubmitAll) and one transaction for
// every move. Each request gets the answer Submit would have given.
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
	claimed, err := s.claimAll(ctx, fresh)
	if err != nil {
		for i := range fresh {
			answers[fresh[i].index] = err
		}
		return
	}
	for _, f := range fresh {
		if !claimed[f.d.ID] {
			answers[f.index] = fmt.Errorf("%w: %s changed before its submit", ErrOutcomeUnknown, f.d.VendorReference)
		}
	}
	var plans []plan
	var planned []int // the request index of each plan
	now := s.clock()
	byVendor := map[string][]pending{}
	for _, f := range fresh {
		if claimed[f.d.ID] {
			byVendor[f.d.Vendor] = append(byVendor[f.d.Vendor], f)
		}
	}
	for name, group := range byVendor {
		vendor, err := s.vendors.Get(name)
		if err != nil {
			for _, f := range group {
				answers[f.index] = err
			}
			continue
		}
		payouts := make([]vendors.Payout, len(group))
		for i, f := range group {
			payouts[i] = vendors.Payout{Reference: f.d.VendorReference, BankCode: f.d.BankCode, AccountNo: f.d.AccountNo,
				TransferType: f.d.TransferType, Amount: f.d.NetAmount}
		}
		for i, o := range vendors.SubmitAll(ctx, vendor, payouts) {
			f := group[i]
			switch {
			case o.Err == nil:
				if moves := s.resultMoves(f.d, o.Result, now); len(moves) > 0 {
					plans, planned = append(plans, plan{d: f.d, moves: moves}), append(planned, f.index)
				}
			case errors.Is(o.Err, vendors.ErrRejected):
				plans = append(plans, plan{d: f.d, moves: []Move{{To: models.StatusFailed, FailedReason: rejectionReason(o.Err), Reason: "vendor rejected the payout"}}})
				planned = append(planned, f.index)
			default:
				answers[f.index] = s.unknownOutcome(ctx, f.d, "submit", o.Err)
			}
		}
	}
	for i, err := range s.moveMany(ctx, plans) {
		answers[planned[i]] = err
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

// claimAll counts the first submit attempt of each disbursement with one
// guarded update, as claimAndSubmit does for one: only rows still VERIFIED,
// never attempted and with a running lock are claimed, so that a payout is
// asked for once however many tasks carry it.
func (s *Service) claimAll(ctx context.Context, fresh []pending) (map[uuid.UUID]bool, error) {
	if len(fresh) == 0 {
		return nil, nil
	}
	now := s.clock()
	next := now.Add(s.submitLease + sweepGrace)
	ids := make([]uuid.UUID, len(fresh))
	for i, f := range fresh {
		ids[i] = f.d.ID
	}
	var got []uuid.UUID
	err := s.db.WithContext(ctx).Raw(`UPDATE disbursements
		SET submit_attempts = 1, submit_attempted_at = ?, next_check_at = ?, updated_at = ?
		WHERE id IN ? AND status = ? AND submit_attempts = 0 AND lock_expires_at > ?
		RETURNING id`, now, next, now, ids, models.StatusVerified, now).Scan(&got).Error
	if err != nil {
		return nil, err
	}
	claimed := make(map[uuid.UUID]bool, len(got))
	for _, id := range got {
		claimed[id] = true
	}
	for _, f := range fresh {
		if claimed[f.d.ID] {
			f.d.SubmitAttempts, f.d.SubmitAttemptedAt, f.d.NextCheckAt, f.d.UpdatedAt = 1, &now, &next, now
		}
	}
	return claimed, nil
}

// moveMany applies the plans in one transaction; should it fail (a row a
// vendor callback moved meanwhile, a deadlock), each plan is applied on its
// own, so that one stale row does not hold up the others. It returns each
// plan's error.
func (s *Service) moveMany(ctx context.Context, plans []plan) []error {
	errs := make([]error, len(plans))
	if len(plans) == 0 {
		return errs
	}
	err := s.moveAll(ctx, plans)
	if err == nil || len(plans) == 1 {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	slog.InfoContext(ctx, "batched payout moves failed; applying them one by one", slog.Int("payouts", len(plans)), slog.Any("error", err))
	for i, p := range plans {
		errs[i] = s.moveAll(ctx, []plan{p})
	}
	return errs
}
