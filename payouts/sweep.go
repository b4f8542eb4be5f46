package payouts

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
)

// sweepGrace is how long past its expected next step a row waits before
// the sweep (dispatch) decides its task was lost and enqueues another.
const sweepGrace = 15 * time.Second

// sweepBatch bounds the rows one sweep handles; the next sweep goes on.
const sweepBatch = 500

// SweepReport says what a sweep (ExpireLocks, dispatch's Sweep) did.
type SweepReport struct {
	Expired int `json:"expired"`
	Submits int `json:"submits_enqueued"`
	Polls   int `json:"polls_enqueued"`
	// ReturnChecks are polls of paid payouts under the return watch.
	ReturnChecks int `json:"return_checks_enqueued"`
	Unhandled    int `json:"errors"`
}

// ExpireLocks is the periodic payout:expire task: disbursements never
// submitted whose lock TTL passed move to EXPIRED, releasing their locks.
// (One whose submit was attempted is settled by the vendor's answer.)
func (s *Service) ExpireLocks(ctx context.Context) (SweepReport, error) {
	var report SweepReport
	return report, s.expireLocks(ctx, &report)
}

func (s *Service) expireLocks(ctx context.Context, report *SweepReport) error {
	var due []models.Disbursement
	err := s.db.WithContext(ctx).
		Where(lockRunOut, s.clock()).
		Order("lock_expires_at").Limit(sweepBatch).Find(&due).Error
	if err != nil {
		return err
	}
	for i := range due {
		err := s.expire(ctx, &due[i], "lock expired before submission")
		if err != nil && !errors.Is(err, ErrOutcomeUnknown) {
			report.Unhandled++
			slog.ErrorContext(ctx, "expire disbursement", slog.String("disbursement_id", due[i].ID.String()), slog.Any("error", err))
			continue
		}
		if err == nil {
			report.Expired++
		}
	}
	return nil
}

// The sweeps' conditions, each with one parameter (now), have their
// statuses written out rather than bound, as submitDue has: the planner
// can then prove them within a partial index (disbursements_open,
// disbursements_return_watch) in a generic plan too. With bound statuses a
// generic plan, which a prepared statement gets after its first few
// executions, scanned every payout ever made on each sweep.
const (
	// lockRunOut: never submitted, the lock's time over.
	lockRunOut = `status IN ('` + string(models.StatusPendingVerification) + `', '` + string(models.StatusVerified) +
		`') AND submit_attempts = 0 AND lock_expires_at <= ?`
	// openCheckDue: open, its submit or status check due.
	openCheckDue = `status IN ('` + string(models.StatusVerified) + `', '` + string(models.StatusRequested) + `') AND next_check_at <= ?`
	// returnCheckDue: paid and watched for a return, its check due.
	returnCheckDue = `status = '` + string(models.StatusSuccess) + `' AND next_check_at IS NOT NULL AND next_check_at <= ?`
)

// DueRow is a disbursement whose next check is due.
type DueRow struct {
	ID     uuid.UUID
	Status models.DisbursementStatus
}

// DueRows reads, for the sweep (dispatch), the open rows (VERIFIED,
// REQUESTED) and the paid rows watched for a return whose next check is
// due at now, oldest first, sweepBatch of each at most. It returns now,
// the time the rows were due at, for ClaimDueRow.
func (s *Service) DueRows(ctx context.Context) (time.Time, []DueRow, error) {
	now := s.clock()
	var due []DueRow
	err := s.db.WithContext(ctx).Model(&models.Disbursement{}).Select("id, status").
		Where(openCheckDue, now).
		Order("next_check_at").Limit(sweepBatch).Scan(&due).Error
	if err != nil {
		return now, nil, err
	}
	// A separate read, so that the index of each (open, watched) serves it.
	var watched []DueRow
	err = s.db.WithContext(ctx).Model(&models.Disbursement{}).Select("id, status").
		Where(returnCheckDue, now).
		Order("next_check_at").Limit(sweepBatch).Scan(&watched).Error
	if err != nil {
		return now, nil, err
	}
	return now, append(due, watched...), nil
}

// ClaimDueRow claims one due row for the sweep by pushing its
// next_check_at forward past the submit lease and the sweep's grace, so
// that concurrent sweeps hand it on once; false when another sweep claimed
// it (or it moved) first. The claim lapses by itself: should the hand-on
// fail, the next sweep takes the row again.
func (s *Service) ClaimDueRow(ctx context.Context, row DueRow, now time.Time) (bool, error) {
	res := s.db.WithContext(ctx).Model(&models.Disbursement{}).
		Where("id = ? AND status = ? AND next_check_at <= ?", row.ID, row.Status, now).
		Updates(map[string]any{"next_check_at": now.Add(sweepGrace + s.submitLease)})
	return res.RowsAffected == 1, res.Error
}
