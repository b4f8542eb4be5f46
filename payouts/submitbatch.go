package payouts

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
)

// Submits in batches. A batch of submits is read, claimed, submitted and
// moved together: a handful of statements per batch instead of some twenty
// per payout. The rules here say what a batch does; package dispatch
// decides which submits make a batch and when it runs.

// ErrNotBatchable sends a disbursement back to the one-at-a-time path
// (Submit): a resubmit or an expiry, whose checks ask the vendor or race a
// claim, or a second request for a payout already in the batch.
var ErrNotBatchable = errors.New("disbursement needs the one-at-a-time submit")

// SubmitFresh is Submit for several disbursements: one read, then
// submitAll for the first submits among them. Each id gets the answer
// Submit would have given, or ErrNotBatchable when it needs Submit itself
// (after this batch).
func (s *Service) SubmitFresh(ctx context.Context, ids []uuid.UUID) []error {
	answers := make([]error, len(ids))
	fresh, err := s.freshForSubmit(ctx, ids, answers)
	if err != nil {
		for i := range answers {
			answers[i] = err
		}
		return answers
	}
	ds := make([]*models.Disbursement, len(fresh))
	for i, f := range fresh {
		ds[i] = f.d
	}
	for i, err := range s.submitAll(ctx, ds) {
		answers[fresh[i].index] = err
	}
	return answers
}

// pending is a disbursement of a batch with the index of its request.
type pending struct {
	index int
	d     *models.Disbursement
}

// freshForSubmit reads the batch's disbursements and answers every request
// that is not a first submit with a lock still running: nothing to do, not
// found, or ErrNotBatchable. It returns the first submits.
func (s *Service) freshForSubmit(ctx context.Context, ids []uuid.UUID, answers []error) ([]pending, error) {
	var rows []models.Disbursement
	if err := s.db.WithContext(ctx).Where("id IN ?", ids).Find(&rows).Error; err != nil {
		return nil, err
	}
	byID := make(map[uuid.UUID]*models.Disbursement, len(rows))
	for i := range rows {
		byID[rows[i].ID] = &rows[i]
	}
	now := s.clock()
	seen := make(map[uuid.UUID]bool, len(ids))
	var fresh []pending
	for i, id := range ids {
		d := byID[id]
		switch {
		case seen[id]:
			answers[i] = ErrNotBatchable // a duplicate task: after this batch, alone
		case d == nil:
			answers[i] = models.ErrDisbursementNotFound
		case d.Status != models.StatusVerified:
			answers[i] = nil
		case d.SubmitAttempts > 0 || !now.Before(d.LockExpiresAt):
			answers[i] = ErrNotBatchable
		default:
			fresh = append(fresh, pending{index: i, d: d})
		}
		seen[id] = true
	}
	return fresh, nil
}

// SubmitClaimed submits, as one batch, payouts stored with their first
// attempt claimed by this process (an inline create's, Handoff.Claimed),
// and returns those it leaves unfinished, for the worker to resolve as any
// earlier attempt: too late (half the claim's lease gone, or the lock run
// out), outcome unknown, a failed write. The disbursements are brought up
// to date. The batch's context is not a request's (a merchant hanging up
// must not cut a vendor call in half); it ends when the earliest claim's
// submit lease does, so that no call of the batch is still on its way
// once the worker may take the payout over.
func (s *Service) SubmitClaimed(batch []*models.Disbursement) (unfinished []*models.Disbursement) {
	now := s.clock()
	var ds []*models.Disbursement
	var leaseEnds time.Time
	for _, d := range batch {
		if d.SubmitAttemptedAt == nil || !now.Before(d.SubmitAttemptedAt.Add(s.submitLease/2)) || !now.Before(d.LockExpiresAt) {
			unfinished = append(unfinished, d)
			continue
		}
		if ends := d.SubmitAttemptedAt.Add(s.submitLease); leaseEnds.IsZero() || ends.Before(leaseEnds) {
			leaseEnds = ends
		}
		ds = append(ds, d)
	}
	if len(ds) > 0 {
		ctx, cancel := context.WithDeadline(context.Background(), leaseEnds)
		for i, err := range s.submitClaimed(ctx, ds) {
			if err != nil || ds[i].Status == models.StatusVerified {
				slog.InfoContext(ctx, "inline submit left to the worker", slog.String("disbursement_id", ds[i].ID.String()), slog.Any("error", err))
				unfinished = append(unfinished, ds[i])
			}
		}
		cancel()
	}
	return unfinished
}
