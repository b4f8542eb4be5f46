package dispatch

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payouts"
)

// Sweep is the periodic payout:sweep task, the primary path: it enqueues
// the submit or the status check of every VERIFIED or REQUESTED row that
// is due (its next_check_at passed), and the return check of every paid
// payout under the return watch that is due. The disbursement row is its
// own outbox, so work lost with Redis, with a killed worker or with a
// process that died mid inline submit is picked up again. Each row is
// claimed first (payouts.Service.ClaimDueRow: its next_check_at pushed
// forward, so concurrent sweeps enqueue it once) and is independent: one
// that fails is logged and counted, and the sweep goes on with the rest
// (its claim lapses, so the next sweep takes it again).
func (x *Dispatcher) Sweep(ctx context.Context) (payouts.SweepReport, error) {
	var report payouts.SweepReport
	if x.queue == nil {
		return report, nil
	}
	now, due, err := x.svc.DueRows(ctx)
	if err != nil {
		return report, err
	}
	slot := fmt.Sprintf("sweep-%d", now.UnixMilli())
	for _, row := range due {
		x.enqueueDueRow(ctx, row, slot, now, &report)
	}
	return report, nil
}

// enqueueDueRow claims one due row and enqueues its submit (VERIFIED) or
// its status check (REQUESTED, or SUCCESS watched for a return).
func (x *Dispatcher) enqueueDueRow(ctx context.Context, row payouts.DueRow, slot string, now time.Time, report *payouts.SweepReport) {
	claimed, err := x.svc.ClaimDueRow(ctx, row, now)
	if err != nil {
		report.Unhandled++
		slog.ErrorContext(ctx, "payout sweep: claim failed", slog.String("disbursement_id", row.ID.String()), slog.Any("error", err))
		return
	}
	if !claimed {
		return // another sweep claimed it
	}
	if row.Status == models.StatusVerified {
		err = x.queue.EnqueueSubmit(ctx, row.ID, slot)
	} else {
		err = x.queue.EnqueuePoll(ctx, row.ID, slot, 0)
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
