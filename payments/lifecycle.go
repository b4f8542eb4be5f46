package payments

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
)

// Result statuses an acquirer reports.
const (
	ResultSuccess = "SUCCESS"
	ResultFailed  = "FAILED"
)

// Applied says what became of an acquirer's result.
type Applied string

const (
	// AppliedNow: the payment moved to the reported status.
	AppliedNow Applied = "applied"
	// AppliedAlready: the same result was applied before (a repeated
	// notification).
	AppliedAlready Applied = "duplicate"
	// RecordedLate: the payment was no longer PENDING (expired, say); the
	// result is kept for operators, the payment is unchanged.
	RecordedLate Applied = "recorded_late"
	// RecordedHeld: the acquirer reported a paid amount other than the
	// price. Not applied: the payment stays PENDING (the merchant is not
	// told it was paid, so no goods go out for the wrong amount) and the
	// reported amount and the reason are recorded on it for operators.
	RecordedHeld Applied = "held"
)

// ApplyResult applies what the acquirer reports about a payment: PENDING
// moves to SUCCESS or FAILED. A result arriving at or after expired_at
// finds the payment expired: it is moved to EXPIRED first (as the worker
// would have done at expired_at) and the result is late. A result for a
// payment no longer PENDING is recorded in payment_late_results and logged,
// never applied and never dropped; a repeat of the result already applied
// is acknowledged.
func (s *Service) ApplyResult(ctx context.Context, r vendors.AcquirerResult, source string) (Applied, error) {
	if r.Status != ResultSuccess && r.Status != ResultFailed {
		return "", fmt.Errorf("acquirer result status %q: want SUCCESS or FAILED", r.Status)
	}
	p, err := s.Get(ctx, r.PaymentID)
	if err != nil {
		return "", err
	}
	if p.Status == models.PaymentPending {
		now := s.clock()
		m := resultMove(p, r, source, now)
		if !now.Before(p.ExpiredAt) {
			// The expiry task may not have run yet; the payment is over all
			// the same, so the result must not revive it.
			m = expiryMove("expired_at passed before " + source + " reported a result")
		} else if r.Status == ResultSuccess && r.Amount != 0 && r.Amount != p.Amount {
			return s.hold(ctx, p, r, source, now)
		}
		err := s.move(ctx, p, m)
		switch {
		case errors.Is(err, models.ErrStaleStatus): // moved meanwhile: judge again
			if p, err = s.Get(ctx, r.PaymentID); err != nil {
				return "", err
			}
		case err != nil:
			return "", err
		case m.To != models.PaymentExpired:
			return AppliedNow, nil
		} // expired just now: the result is late, recorded below
	}
	if string(p.Status) == r.Status && (r.Status != ResultSuccess || sameRRN(p, r.RetrievalReferenceNo)) {
		return AppliedAlready, nil
	}
	return RecordedLate, s.recordLate(ctx, p, r, source)
}

// resultMove is the move a result asks for; now stands in for a missing
// paid time. The acquirer's paid time decides when the payment settles,
// so it is clamped to [created_at, now]: a time in the future would delay
// the settlement without end, one before the payment existed would skip
// the T+1 day. The reported time is kept beside it.
func resultMove(p *models.Payment, r vendors.AcquirerResult, source string, now time.Time) Move {
	if r.Status == ResultSuccess {
		paidAt := r.PaidAt
		if paidAt.IsZero() {
			paidAt = now
		}
		switch {
		case paidAt.After(now):
			paidAt = now
		case paidAt.Before(p.CreatedAt):
			paidAt = p.CreatedAt
		}
		return Move{To: models.PaymentSuccess, PaidAt: paidAt, PaidAtReported: r.PaidAt,
			RetrievalReferenceNo: r.RetrievalReferenceNo, Reason: source + " reports it paid"}
	}
	reason := r.FailureReason
	if reason == "" {
		reason = "the acquirer reports the payment failed"
	}
	return Move{To: models.PaymentFailed, FailedReason: reason, Reason: source + " reports it failed"}
}

// hold records a SUCCESS whose amount is not the price on the PENDING
// payment (RecordedHeld) without applying it.
func (s *Service) hold(ctx context.Context, p *models.Payment, r vendors.AcquirerResult, source string, now time.Time) (Applied, error) {
	reason := fmt.Sprintf("%s reported %s paid for a price of %s", source, r.Amount, p.Amount)
	res := s.db.WithContext(ctx).Model(&models.Payment{}).Where("id = ? AND status = ?", p.ID, models.PaymentPending).
		Updates(map[string]any{"reported_amount": r.Amount, "hold_reason": reason, "updated_at": now})
	if res.Error != nil {
		return "", res.Error
	}
	if res.RowsAffected != 1 {
		return "", fmt.Errorf("%w: payment %s is no longer %s", models.ErrStaleStatus, p.ID, models.PaymentPending)
	}
	slog.WarnContext(ctx, "acquirer reported an amount other than the price: held for operators, not applied",
		slog.String("payment_id", p.ID.String()), slog.String("price", p.Amount.String()),
		slog.String("reported", r.Amount.String()), slog.String("source", source))
	return RecordedHeld, nil
}

func sameRRN(p *models.Payment, rrn string) bool {
	return p.RetrievalReferenceNo != nil && *p.RetrievalReferenceNo == rrn
}

func (s *Service) recordLate(ctx context.Context, p *models.Payment, r vendors.AcquirerResult, source string) error {
	late := models.PaymentLateResult{PaymentID: p.ID, PaymentStatus: p.Status, ReportedStatus: r.Status, Source: source, ReceivedAt: s.clock()}
	if r.RetrievalReferenceNo != "" {
		late.RetrievalReferenceNo = &r.RetrievalReferenceNo
	}
	if err := s.db.WithContext(ctx).Create(&late).Error; err != nil {
		return err
	}
	slog.WarnContext(ctx, "acquirer result for a payment no longer pending: recorded for operators, not applied",
		slog.String("payment_id", p.ID.String()), slog.String("payment_status", string(p.Status)),
		slog.String("reported", r.Status), slog.String("source", source))
	return nil
}

// move applies m in one transaction, counts it, then hands the webhook
// event and, on SUCCESS, the settlement to the queue.
func (s *Service) move(ctx context.Context, p *models.Payment, m Move) error {
	now := s.clock()
	from := p.Status
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error { return s.transition(tx, p, m, now) })
	if err == nil {
		s.metrics.PaymentTransition(string(from), string(m.To))
	}
	if err != nil || s.queue == nil {
		return err
	}
	var events []uuid.UUID
	qerr := s.db.WithContext(ctx).Model(&models.WebhookEvent{}).
		Where("subject_id = ? AND state = ?", p.ID, models.WebhookPending).Pluck("id", &events).Error
	for _, id := range events {
		if qerr == nil {
			qerr = s.queue.EnqueueWebhook(ctx, id, "")
		}
	}
	if qerr == nil && p.Status == models.PaymentSuccess {
		qerr = s.queue.EnqueuePaymentSettle(ctx, p.ID, taskTime(*p.SettleAt))
	}
	if qerr != nil {
		slog.WarnContext(ctx, "enqueue after a payment move failed; the sweeps will catch up",
			slog.String("payment_id", p.ID.String()), slog.Any("error", qerr))
	}
	return nil
}

// Expire moves a PENDING payment past its expired_at to EXPIRED: the
// payment:expire task. A payment no longer PENDING is left alone; one not
// yet due is a *NotDueError, so that a task run early is retried on time
// instead of finishing with nothing done.
func (s *Service) Expire(ctx context.Context, id uuid.UUID) error {
	p, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	if p.Status != models.PaymentPending {
		return nil
	}
	if now := s.clock(); now.Before(p.ExpiredAt) {
		return notDue(p.ID, "expiry", p.ExpiredAt, now)
	}
	err = s.move(ctx, p, expiryMove("nobody paid before expired_at"))
	if errors.Is(err, models.ErrStaleStatus) {
		return nil // paid (or failed) at the last moment
	}
	return err
}

func expiryMove(reason string) Move { return Move{To: models.PaymentExpired, Reason: reason} }

// NotDueError is what Expire and Settle return when asked before the
// payment is due. asynq runs a scheduled task up to a second early (it
// keeps whole seconds), so the worker retries after RetryDelay, which
// tasks.RetryDelay honours.
type NotDueError struct {
	PaymentID uuid.UUID
	Step      string // "expiry" or "settlement"
	Due       time.Time
	Wait      time.Duration
}

func (e *NotDueError) Error() string {
	return fmt.Sprintf("payment %s: %s is due at %s, retry in %s", e.PaymentID, e.Step, models.FormatTime(e.Due), e.Wait)
}

// RetryDelay is the wait until the task may run again.
func (e *NotDueError) RetryDelay() time.Duration { return e.Wait }

func notDue(id uuid.UUID, step string, due, now time.Time) *NotDueError {
	return &NotDueError{PaymentID: id, Step: step, Due: due, Wait: taskTime(due).Sub(now)}
}

// taskTime is when to schedule a task due at due: asynq keeps only the
// whole second (processAt.Unix()) and runs the task from its start, so a
// task due at 12:00:00.7 is scheduled at 12:00:01, never before due.
func taskTime(due time.Time) time.Time {
	if t := due.Truncate(time.Second); t.Before(due) {
		return t.Add(time.Second)
	}
	return due
}

// Settle credits a SUCCESS payment whose settlement is due to its wallet:
// the payment:settle task. The net goes to the wallet, the fee to the
// platform, against the acquirer's clearing account, in the transaction
// that sets settled_at (guarded: a payment settles once). Before the
// payment's settle_at it is a *NotDueError, as Expire.
//
// A settlement the ledger refuses (the wallet would pass
// models.MaxBalance, a sum would overflow) is recorded on the payment
// (settlement_error), logged, and not retried: Settle returns nil, the
// sweep leaves the payment alone, reconcile reports it, and an operator
// settles it with RetrySettlement once the cause is resolved.
func (s *Service) Settle(ctx context.Context, id uuid.UUID) error {
	_, err := s.settleDue(ctx, id)
	return err
}

// settleDue is Settle, telling whether the settlement was refused.
func (s *Service) settleDue(ctx context.Context, id uuid.UUID) (refused bool, err error) {
	p, err := s.Get(ctx, id)
	if err != nil {
		return false, err
	}
	now := s.clock()
	if p.Status != models.PaymentSuccess || p.SettledAt != nil || p.SettleAt == nil || p.SettlementError != nil {
		return false, nil
	}
	if now.Before(*p.SettleAt) {
		return false, notDue(p.ID, "settlement", *p.SettleAt, now)
	}
	err = s.settle(ctx, p, now)
	if !refusal(err) {
		return false, err
	}
	return true, s.recordRefusal(ctx, p, err, now)
}

// settle posts p's settlement at now.
func (s *Service) settle(ctx context.Context, p *models.Payment, now time.Time) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Model(&models.Payment{}).Where("id = ? AND status = ? AND settled_at IS NULL", p.ID, models.PaymentSuccess).
			Updates(map[string]any{"settled_at": now, "updated_at": now})
		if res.Error != nil || res.RowsAffected != 1 {
			return res.Error // settled by a twin task: nothing to do
		}
		price, err := p.Amount.Neg()
		if err != nil {
			return err
		}
		entries := []ledger.Entry{{Account: models.AccountAcquirerClearing, Amount: price}}
		if p.NetAmount > 0 {
			entries = append(entries, ledger.Entry{Account: models.WalletAccount(p.WalletID), Amount: p.NetAmount})
		}
		if p.PlatformFee > 0 {
			entries = append(entries, ledger.Entry{Account: models.AccountPlatformFees, Amount: p.PlatformFee})
		}
		_, err = ledger.Post(tx, now, ledger.Posting{Kind: "settlement", Memo: "payment " + p.PayerID, Reference: p.ID.String(), Entries: entries})
		return err
	})
}

// refusal reports whether err means the settlement can never be applied as
// it is (so retrying it is pointless), rather than a passing failure.
func refusal(err error) bool {
	return errors.Is(err, models.ErrBalanceLimit) || errors.Is(err, models.ErrAmountOverflow) ||
		errors.Is(err, gorm.ErrCheckConstraintViolated)
}

// recordRefusal stores why p's settlement was refused, for operators.
func (s *Service) recordRefusal(ctx context.Context, p *models.Payment, cause error, now time.Time) error {
	msg := cause.Error()
	err := s.db.WithContext(ctx).Model(&models.Payment{}).Where("id = ? AND settled_at IS NULL", p.ID).
		Updates(map[string]any{"settlement_error": msg, "updated_at": now}).Error
	if err != nil {
		return fmt.Errorf("record the refused settlement of %s (%s): %w", p.ID, msg, err)
	}
	slog.ErrorContext(ctx, "settlement refused: recorded for operators, not retried",
		slog.String("payment_id", p.ID.String()), slog.String("wallet_id", p.WalletID.String()), slog.String("error", msg))
	return nil
}

// RetrySettlement is an operator's answer to a refused settlement (payoutd
// admin payment settle), once its cause is resolved: it clears
// settlement_error and settles the payment now if it is due. Refused
// again, the new reason is recorded and the error wraps
// models.ErrSettlementRefused.
func (s *Service) RetrySettlement(ctx context.Context, id uuid.UUID) (*models.Payment, error) {
	p, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if p.SettlementError == nil {
		return nil, fmt.Errorf("payment %s has no refused settlement", id)
	}
	err = s.db.WithContext(ctx).Model(&models.Payment{}).Where("id = ? AND settled_at IS NULL", id).
		Update("settlement_error", nil).Error
	if err != nil {
		return nil, err
	}
	refused, err := s.settleDue(ctx, id)
	if err != nil {
		return nil, err
	}
	if p, err = s.Get(ctx, id); err != nil {
		return nil, err
	}
	if refused {
		return p, fmt.Errorf("%w: %s", models.ErrSettlementRefused, *p.SettlementError)
	}
	return p, nil
}

// SweepReport says what a sweep did. Failed counts the items that could
// not be handled (each logged); a refused settlement is one of them.
type SweepReport struct {
	Expired int `json:"expired"`
	Settled int `json:"settled"`
	Failed  int `json:"failed"`
}

// Sweep expires every overdue PENDING payment and settles every SUCCESS
// payment whose settlement is due: the periodic payment:sweep task, which
// makes the lifecycle independent of individual tasks surviving. Each
// item is independent: one that fails is logged and counted, and the
// sweep goes on with the rest. A refused settlement leaves the due set
// (settlement_error) until an operator acts.
func (s *Service) Sweep(ctx context.Context) (SweepReport, error) {
	var report SweepReport
	now := s.clock()
	var overdue, due []uuid.UUID
	if err := s.db.WithContext(ctx).Model(&models.Payment{}).Where("status = ? AND expired_at <= ?", models.PaymentPending, now).
		Order("expired_at").Limit(500).Pluck("id", &overdue).Error; err != nil {
		return report, err
	}
	for _, id := range overdue {
		if err := s.Expire(ctx, id); err != nil {
			report.Failed++
			slog.ErrorContext(ctx, "payment sweep: expiry failed; the next sweep tries again",
				slog.String("payment_id", id.String()), slog.Any("error", err))
			continue
		}
		report.Expired++
	}
	if err := s.db.WithContext(ctx).Model(&models.Payment{}).
		Where("status = ? AND settled_at IS NULL AND settlement_error IS NULL AND settle_at <= ?", models.PaymentSuccess, now).
		Order("settle_at").Limit(500).Pluck("id", &due).Error; err != nil {
		return report, err
	}
	for _, id := range due {
		refused, err := s.settleDue(ctx, id)
		switch {
		case err != nil:
			report.Failed++
			slog.ErrorContext(ctx, "payment sweep: settlement failed; the next sweep tries again",
				slog.String("payment_id", id.String()), slog.Any("error", err))
		case refused:
			report.Failed++
		default:
			report.Settled++
		}
	}
	return report, nil
}

// Simulate reports a payment paid (SUCCESS) or failed as the sandbox
// acquirer would: payoutd admin payment simulate, and the checkout page's
// button in staging.
func (s *Service) Simulate(ctx context.Context, id uuid.UUID, status string) (Applied, error) {
	r := vendors.AcquirerResult{PaymentID: id, Status: status, PaidAt: s.clock()}
	switch status {
	case ResultSuccess:
		r.RetrievalReferenceNo = newRRN()
	case ResultFailed:
		r.FailureReason = "payment failed (simulated)"
	default:
		return "", fmt.Errorf("--status must be SUCCESS or FAILED")
	}
	return s.ApplyResult(ctx, r, "simulation")
}

// newRRN returns a 12-digit retrieval reference number.
func newRRN() string {
	n, _ := rand.Int(rand.Reader, big.NewInt(1_000_000_000_000))
	return fmt.Sprintf("%012d", n)
}
