package payouts

import (
	"context"
	"errors"
	"log/slog"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
)

// The claim of a submit pump (package dispatch): fresh payouts are taken
// straight from the disbursements table, the row being the outbox, with
// one statement for a batch (rows another pump holds are skipped, so
// several pumps and several workers share the work without waiting for
// each other), and submitted together.

// SubmitDue claims up to limit payouts waiting for their first submit
// (VERIFIED, no attempt yet, lock running, vendor configured in this
// process), oldest first, and submits them as one batch; it returns how
// many it claimed. A payout the batch does not finish (answer lost, a call
// cut at the lease, a failed write) is left to the sweep, which queues its
// submit task at next_check_at, the claim's lease plus sweepGrace: the
// task asks the vendor about the attempt, and only resubmits when the
// vendor does not know it. Resolving it at once would ask while a call cut
// at the lease may still sit in the vendor's queue, and resubmit it.
func (s *Service) SubmitDue(ctx context.Context, limit int) (int, error) {
	ds, err := s.claimDue(ctx, limit)
	if err != nil || len(ds) == 0 {
		return 0, err
	}
	// The vendor calls end with the claims' lease, whatever ctx does: a
	// batch is finished once its claims are made.
	runCtx, cancel := context.WithDeadline(context.WithoutCancel(ctx), ds[0].SubmitAttemptedAt.Add(s.submitLease))
	defer cancel()
	for i, err := range s.submitClaimed(runCtx, ds) {
		switch {
		case errors.Is(err, vendors.ErrNotSent):
			// Given back: the next pump takes it once the vendor is let through.
		case err != nil || ds[i].Status == models.StatusVerified:
			slog.InfoContext(ctx, "pumped submit unfinished; the sweep resolves it after the lease",
				slog.String("disbursement_id", ds[i].ID.String()), slog.Time("next_check_at", *ds[i].NextCheckAt), slog.Any("error", err))
		}
	}
	return len(ds), nil
}

// submitDue is what makes a payout due for its first submit, written out
// rather than bound so that the planner matches it to the partial index
// disbursements_submit_due (a bound status could not be proven to match,
// and a generic plan would fall back to scanning every open payout).
const submitDue = `status = '` + string(models.StatusVerified) + `' AND submit_attempts = 0`

// claimDue counts the first submit attempt of up to limit due payouts with
// one statement and returns them as stored after it. now is read before
// the statement runs, and a row may commit in between (SQLite's writer
// waits for the lock): rows created after now are left to the next round,
// so that no claim is dated before its payout, nor before its lock ran out. On PostgreSQL the
// rows are locked as they are chosen, skipping those another transaction
// holds (a pump never waits, so it cannot deadlock), and a row changed
// before its lock is taken is chosen only if it is still due (the lock
// re-reads it); SQLite has one writer. The update itself therefore names
// only the ids: repeating the due condition there let the planner drive
// the update from disbursements_submit_due and run the limited subquery
// once per due row (52 ms a claim behind a backlog of a few thousand).
func (s *Service) claimDue(ctx context.Context, limit int) ([]*models.Disbursement, error) {
	ready := s.readyVendors()
	if len(ready) == 0 {
		return nil, nil // every vendor held back by its breaker
	}
	db := s.db.WithContext(ctx)
	now := s.clock()
	rows, err := models.DriverOf(db).ClaimDueSubmits(db, now, now.Add(s.submitLease+sweepGrace), ready, limit)
	if err != nil {
		return nil, err
	}
	ds := make([]*models.Disbursement, len(rows))
	for i := range rows {
		ds[i] = &rows[i]
	}
	return ds, nil
}

// AnyDue reads whether a payout waits for its first submit on a vendor
// this process has, as SubmitDue would take it (an error counts as yes:
// the claim then says what is wrong). A payout of a vendor configured
// elsewhere must not make an idle pump write every recheck.
func (s *Service) AnyDue(ctx context.Context) bool {
	ready := s.readyVendors()
	if len(ready) == 0 {
		return false
	}
	var ids []string
	err := s.db.WithContext(ctx).Raw(`SELECT id FROM disbursements
		WHERE `+submitDue+` AND lock_expires_at > ? AND vendor IN ? LIMIT 1`,
		s.clock(), ready).Scan(&ids).Error
	return err != nil || len(ids) > 0
}
