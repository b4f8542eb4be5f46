package payouts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
)

// ErrOutcomeUnknown: the vendor could not say what happened to a submit or
// a status check. The caller retries later; the retry asks the vendor for
// the reference before it submits anything.
var ErrOutcomeUnknown = errors.New("payout outcome unknown; will ask the vendor again")

// PollDelay is the wait before status check n (0-based) of a REQUESTED
// payout: quick at first, then backing off to five minutes.
func PollDelay(n int) time.Duration {
	delays := []time.Duration{time.Second, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
		15 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute}
	if n < len(delays) {
		return delays[n]
	}
	return 5 * time.Minute
}

// Submit carries a VERIFIED disbursement to the vendor: the payout:submit
// task. It is idempotent: any other status is left alone, and a submit
// attempted before is resolved by asking the vendor for the reference; the
// vendor is asked to pay again only when it has never seen the reference
// and the earlier call is surely over (the submit lease). It returns
// ErrOutcomeUnknown (wrapped) when the task should be retried. While
// RunSubmitBatches runs, a first submit goes through a batch.
func (s *Service) Submit(ctx context.Context, id uuid.UUID) error {
	if handled, err := s.submitBatched(ctx, id); handled {
		return err
	}
	d, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	if d.Status != models.StatusVerified {
		return nil
	}
	vendor, err := s.vendors.Get(d.Vendor)
	if err != nil {
		return err
	}
	if d.SubmitAttempts > 0 {
		return s.resolveAttempted(ctx, vendor, d)
	}
	if !s.clock().Before(d.LockExpiresAt) {
		return s.expire(ctx, d, "lock expired before submission")
	}
	return s.claimAndSubmit(ctx, vendor, d)
}

// resolveAttempted asks the vendor what became of an earlier submit whose
// answer never arrived.
func (s *Service) resolveAttempted(ctx context.Context, vendor vendors.Vendor, d *models.Disbursement) error {
	result, err := vendor.Status(ctx, d.VendorReference)
	switch {
	case err == nil:
		return s.applyResult(ctx, d, result)
	case !errors.Is(err, vendors.ErrUnknownPayout):
		return s.unknownOutcome(ctx, d, "status", err)
	case s.clock().Sub(*d.SubmitAttemptedAt) < s.submitLease:
		// The earlier call may still be on its way to the vendor.
		return fmt.Errorf("%w: submit of %s may still be in flight", ErrOutcomeUnknown, d.VendorReference)
	case !s.clock().Before(d.LockExpiresAt):
		return s.expire(ctx, d, "lock expired; the vendor never received the payout")
	default:
		return s.claimAndSubmit(ctx, vendor, d)
	}
}

// expire moves d to EXPIRED unless a submit started since d was read.
func (s *Service) expire(ctx context.Context, d *models.Disbursement, reason string) error {
	attempts := d.SubmitAttempts
	err := s.move(ctx, d, Move{To: models.StatusExpired, Reason: reason, IfSubmitAttempts: &attempts})
	if errors.Is(err, models.ErrStaleStatus) {
		return fmt.Errorf("%w: %s changed while expiring", ErrOutcomeUnknown, d.VendorReference)
	}
	return err
}

// claimAndSubmit counts a submit attempt, guarded so that one task at a
// time asks and never for a row that moved or whose lock ran out, then
// asks the vendor to pay.
func (s *Service) claimAndSubmit(ctx context.Context, vendor vendors.Vendor, d *models.Disbursement) error {
	now := s.clock()
	res := s.db.WithContext(ctx).Model(&models.Disbursement{}).
		Where("id = ? AND status = ? AND submit_attempts = ? AND lock_expires_at > ?", d.ID, models.StatusVerified, d.SubmitAttempts, now).
		Updates(map[string]any{"submit_attempts": d.SubmitAttempts + 1, "submit_attempted_at": now,
			"next_check_at": now.Add(s.submitLease + sweepGrace), "updated_at": now})
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected != 1 {
		return fmt.Errorf("%w: %s changed before its submit", ErrOutcomeUnknown, d.VendorReference)
	}
	d.SubmitAttempts++
	d.SubmitAttemptedAt = &now
	result, err := vendor.Submit(ctx, vendors.Payout{
		Reference: d.VendorReference, BankCode: d.BankCode, AccountNo: d.AccountNo,
		TransferType: d.TransferType, Amount: d.NetAmount,
	})
	switch {
	case err == nil:
		return s.applyResult(ctx, d, result)
	case errors.Is(err, vendors.ErrRejected):
		return s.move(ctx, d, Move{To: models.StatusFailed, FailedReason: rejectionReason(err), Reason: "vendor rejected the payout"})
	default:
		return s.unknownOutcome(ctx, d, "submit", err)
	}
}

// unknownOutcome records when to look again and asks for a retry.
func (s *Service) unknownOutcome(ctx context.Context, d *models.Disbursement, call string, cause error) error {
	slog.WarnContext(ctx, "vendor outcome unknown", slog.String("disbursement_id", d.ID.String()),
		slog.String("call", call), slog.Any("error", cause))
	return fmt.Errorf("%w: %s %s: %v", ErrOutcomeUnknown, call, d.VendorReference, cause)
}

// applyResult moves d to what the vendor reports: accepted (REQUESTED),
// paid (SUCCESS, through REQUESTED when needed) or failed.
func (s *Service) applyResult(ctx context.Context, d *models.Disbursement, r vendors.PayoutResult) error {
	moves := resultMoves(d, r, s.clock())
	if len(moves) == 0 {
		return nil
	}
	return s.move(ctx, d, moves...)
}

// resultMoves are the moves that bring d to what the vendor reports at now
// (one now for a whole batch, so that its moves group together).
func resultMoves(d *models.Disbursement, r vendors.PayoutResult, now time.Time) []Move {
	var moves []Move
	if d.Status == models.StatusVerified && r.Status != vendors.PayoutFailed {
		moves = append(moves, Move{To: models.StatusRequested, Reason: "vendor accepted the payout", NextCheckAt: now.Add(PollDelay(0) + sweepGrace)})
	}
	switch r.Status {
	case vendors.PayoutSuccess:
		moves = append(moves, Move{To: models.StatusSuccess, Reason: "vendor reports the payout paid"})
	case vendors.PayoutFailed:
		moves = append(moves, Move{To: models.StatusFailed, FailedReason: orDefault(r.FailureReason, "vendor reports the payout failed"), Reason: "vendor reports the payout failed"})
	}
	return moves
}

// Poll asks the vendor for the status of a REQUESTED payout: the
// payout:poll task. A payout still in flight gets its next poll enqueued
// with a growing delay; one the vendor reports final is moved there.
func (s *Service) Poll(ctx context.Context, id uuid.UUID) error {
	d, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	if d.Status == models.StatusVerified {
		return s.Submit(ctx, id)
	}
	if d.Status != models.StatusRequested {
		return nil
	}
	vendor, err := s.vendors.Get(d.Vendor)
	if err != nil {
		return err
	}
	result, err := vendor.Status(ctx, d.VendorReference)
	if errors.Is(err, vendors.ErrUnknownPayout) {
		// The vendor accepted it once: an operator must look.
		slog.ErrorContext(ctx, "vendor no longer knows a requested payout", slog.String("disbursement_id", d.ID.String()))
	} else if err != nil {
		slog.WarnContext(ctx, "payout status check failed", slog.String("disbursement_id", d.ID.String()), slog.Any("error", err))
	}
	if err == nil && result.Status != vendors.PayoutPending {
		return s.applyResult(ctx, d, result)
	}
	return s.schedulePoll(ctx, d)
}

// schedulePoll counts a status check, sets when the next is due, and
// enqueues it. Should the enqueue fail, the sweep enqueues it when due.
func (s *Service) schedulePoll(ctx context.Context, d *models.Disbursement) error {
	now := s.clock()
	delay := PollDelay(d.Checks + 1)
	err := s.db.WithContext(ctx).Model(&models.Disbursement{}).
		Where("id = ? AND status = ?", d.ID, models.StatusRequested).
		Updates(map[string]any{"checks": gorm.Expr("checks + 1"), "next_check_at": now.Add(delay + sweepGrace), "updated_at": now}).Error
	if err != nil || s.queue == nil {
		return err
	}
	return s.queue.EnqueuePoll(ctx, d.ID, strconv.Itoa(d.Checks+1), delay)
}

func (s *Service) enqueuePoll(ctx context.Context, d *models.Disbursement) {
	if s.queue == nil {
		return
	}
	if err := s.queue.EnqueuePoll(ctx, d.ID, "0", PollDelay(0)); err != nil {
		slog.WarnContext(ctx, "enqueue payout:poll failed; the sweep will retry",
			slog.String("disbursement_id", d.ID.String()), slog.Any("error", err))
	}
}

// move applies one or more moves to d in one transaction: moveAll of one.
func (s *Service) move(ctx context.Context, d *models.Disbursement, moves ...Move) error {
	return s.moveAll(ctx, []plan{{d: d, moves: moves}})
}

// plan is the moves one disbursement makes, in order.
type plan struct {
	d     *models.Disbursement
	moves []Move
}

// moveAll applies every plan in one transaction, alike plans (same status,
// same moves) together, so that a batch costs a few statements whatever
// its size; either all plans commit or none. The transaction works on
// copies: the callers' disbursements change only once it committed. Then
// it counts the transitions, enqueues the webhook events of the ones that
// reached SUCCESS or FAILED, and the first status check of those that
// reached REQUESTED.
func (s *Service) moveAll(ctx context.Context, plans []plan) error {
	now := s.clock()
	work := make([]models.Disbursement, len(plans))
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		groups := map[string][]*models.Disbursement{}
		paths := map[string][]Move{}
		var order []string
		for i, p := range plans {
			work[i] = *p.d
			key := fmt.Sprintf("%s %v", work[i].Status, p.moves)
			if groups[key] == nil {
				order = append(order, key)
				paths[key] = p.moves
			}
			groups[key] = append(groups[key], &work[i])
		}
		for _, key := range order {
			if err := transition(tx, groups[key], paths[key], now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	var final []uuid.UUID
	for i, p := range plans {
		from := p.d.Status
		*p.d = work[i]
		for _, m := range p.moves {
			s.metrics.DisbursementTransition(string(from), string(m.To))
			from = m.To
		}
		switch p.d.Status {
		case models.StatusSuccess, models.StatusFailed:
			final = append(final, p.d.ID)
		case models.StatusRequested:
			if len(p.moves) > 0 && p.moves[len(p.moves)-1].To == models.StatusRequested {
				s.enqueuePoll(ctx, p.d)
			}
		}
	}
	s.enqueueEvents(ctx, final)
	return nil
}

// enqueueEvents enqueues the pending webhook events of the disbursements.
// A failure is only logged: the webhook sweep enqueues them later.
func (s *Service) enqueueEvents(ctx context.Context, subjects []uuid.UUID) {
	if s.queue == nil || len(subjects) == 0 {
		return
	}
	var ids []uuid.UUID
	err := s.db.WithContext(ctx).Model(&models.WebhookEvent{}).
		Where("subject_id IN ? AND state = ?", subjects, models.WebhookPending).Pluck("id", &ids).Error
	for _, id := range ids {
		if err == nil {
			err = s.queue.EnqueueWebhook(ctx, id, "")
		}
	}
	if err != nil {
		slog.WarnContext(ctx, "enqueue webhook:deliver failed; the sweep will retry",
			slog.Int("disbursements", len(subjects)), slog.Any("error", err))
	}
}

// ApplyVendorResult records a result the vendor pushed (its callback). The
// reference must be one of this vendor's; a result for a payout already
// final is acknowledged and ignored.
func (s *Service) ApplyVendorResult(ctx context.Context, vendor string, r vendors.PayoutResult) error {
	var d models.Disbursement
	err := s.db.WithContext(ctx).Where("vendor = ? AND vendor_reference = ?", vendor, r.Reference).Take(&d).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return models.ErrDisbursementNotFound
	}
	if err != nil {
		return err
	}
	if d.Status.Terminal() || d.Status == models.StatusPendingVerification {
		return nil
	}
	err = s.applyResult(ctx, &d, r)
	if errors.Is(err, models.ErrStaleStatus) {
		return nil // a poll applied it first
	}
	return err
}

func rejectionReason(err error) string {
	msg := err.Error()
	prefix := vendors.ErrRejected.Error() + ": "
	if len(msg) > len(prefix) && msg[:len(prefix)] == prefix {
		return msg[len(prefix):]
	}
	return msg
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
