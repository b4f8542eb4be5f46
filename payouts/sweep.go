package payouts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
)

// sweepGrace is how long past its expected next step a row waits before
// the sweep decides its task was lost and enqueues another.
const sweepGrace = 15 * time.Second

// sweepBatch bounds the rows one sweep handles; the next sweep goes on.
const sweepBatch = 500

// SweepReport says what a sweep did.
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

// Sweep is the periodic payout:sweep task: it enqueues the submit or the
// status check of every VERIFIED or REQUESTED row that is due (its
// next_check_at passed), and the return check of every paid payout under
// the return watch that is due. The disbursement row is its own outbox, so work
// lost with Redis or with a killed worker is picked up again.
func (s *Service) Sweep(ctx context.Context) (SweepReport, error) {
	var report SweepReport
	if s.queue == nil {
		return report, nil
	}
	return report, s.enqueueDue(ctx, &report)
}

func (s *Service) expireLocks(ctx context.Context, report *SweepReport) error {
	var due []models.Disbursement
	err := s.db.WithContext(ctx).
		Where("status IN ? AND submit_attempts = 0 AND lock_expires_at <= ?",
			[]models.DisbursementStatus{models.StatusPendingVerification, models.StatusVerified}, s.clock()).
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

// dueRow is a disbursement whose next check is due.
type dueRow struct {
	ID     uuid.UUID
	Status models.DisbursementStatus
}

// enqueueDue claims each due row (pushing its next_check_at forward, so
// concurrent sweeps enqueue it once) and enqueues its next step. Each row
// is independent: one that fails is logged and counted, and the sweep goes
// on with the rest (its claim lapses, so the next sweep takes it again).
func (s *Service) enqueueDue(ctx context.Context, report *SweepReport) error {
	now := s.clock()
	due, err := s.dueRows(ctx, now)
	if err != nil {
		return err
	}
	slot := fmt.Sprintf("sweep-%d", now.UnixMilli())
	for _, row := range due {
		s.enqueueDueRow(ctx, row, slot, now, report)
	}
	return nil
}

// dueRows reads the open rows (VERIFIED, REQUESTED) and the paid rows
// watched for a return whose next check is due, oldest first.
func (s *Service) dueRows(ctx context.Context, now time.Time) ([]dueRow, error) {
	var due []dueRow
	err := s.db.WithContext(ctx).Model(&models.Disbursement{}).Select("id, status").
		Where("status IN ? AND next_check_at <= ?", []models.DisbursementStatus{models.StatusVerified, models.StatusRequested}, now).
		Order("next_check_at").Limit(sweepBatch).Scan(&due).Error
	if err != nil {
		return nil, err
	}
	// A separate read, so that the index of each (open, watched) serves it.
	var watched []dueRow
	err = s.db.WithContext(ctx).Model(&models.Disbursement{}).Select("id, status").
		Where("status = ? AND next_check_at IS NOT NULL AND next_check_at <= ?", models.StatusSuccess, now).
		Order("next_check_at").Limit(sweepBatch).Scan(&watched).Error
	if err != nil {
		return nil, err
	}
	return append(due, watched...), nil
}

// enqueueDueRow claims one due row and enqueues its submit (VERIFIED) or
// its status check (REQUESTED, or SUCCESS watched for a return).
func (s *Service) enqueueDueRow(ctx context.Context, row dueRow, slot string, now time.Time, report *SweepReport) {
	res := s.db.WithContext(ctx).Model(&models.Disbursement{}).
		Where("id = ? AND status = ? AND next_check_at <= ?", row.ID, row.Status, now).
		Updates(map[string]any{"next_check_at": now.Add(sweepGrace + s.submitLease)})
	if res.Error != nil {
		report.Unhandled++
		slog.ErrorContext(ctx, "payout sweep: claim failed", slog.String("disbursement_id", row.ID.String()), slog.Any("error", res.Error))
		return
	}
	if res.RowsAffected != 1 {
		return // another sweep claimed it
	}
	var err error
	if row.Status == models.StatusVerified {
		err = s.queue.EnqueueSubmit(ctx, row.ID, slot)
	} else {
		err = s.queue.EnqueuePoll(ctx, row.ID, slot, 0)
	}
	switch {
	case err != nil:
		report.Unhandled++
		slog.ErrorContext(ctx, "payout sweep: enqueue failed; the next sweep tries again",
			slog.String("disbursement_id", row.ID.String()), slog.Any("error", err))
	case row.Status == models.StatusVerified:
		report.Submits++
	case row.Status == models.StatusSuccess:
		report.ReturnChecks++
	default:
		report.Polls++
	}
}
