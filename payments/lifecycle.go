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
		m := resultMove(r, source, now)
		if !now.Before(p.ExpiredAt) {
			// The expiry task may not have run yet; the payment is over all
			// the same, so the result must not revive it.
			m = expiryMove("expired_at passed before " + source + " reported a result")
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
// paid time.
func resultMove(r vendors.AcquirerResult, source string, now time.Time) Move {
	if r.Status == ResultSuccess {
		paidAt := r.PaidAt
		if paidAt.IsZero() {
			paidAt = now
		}
		return Move{To: models.PaymentSuccess, PaidAt: paidAt, RetrievalReferenceNo: r.RetrievalReferenceNo, Reason: source + " reports it paid"}
	}
	reason := r.FailureReason
	if reason == "" {
		reason = "the acquirer reports the payment failed"
	}
	return Move{To: models.PaymentFailed, FailedReason: reason, Reason: source + " reports it failed"}
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
func (s *Service) Settle(ctx context.Context, id uuid.UUID) error {
	p, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	now := s.clock()
	if p.Status != models.PaymentSuccess || p.SettledAt != nil || p.SettleAt == nil {
		return nil
	}
	if now.Before(*p.SettleAt) {
		return notDue(p.ID, "settlement", *p.SettleAt, now)
	}
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Model(&models.Payment{}).Where("id = ? AND status = ? AND settled_at IS NULL", p.ID, models.PaymentSuccess).
			Updates(map[string]any{"settled_at": now, "updated_at": now})
		if res.Error != nil || res.RowsAffected != 1 {
			return res.Error // settled by a twin task: nothing to do
		}
		entries := []ledger.Entry{{Account: models.AccountAcquirerClearing, Amount: -p.Amount}}
		if p.NetAmount > 0 {
			entries = append(entries, ledger.Entry{Account: models.WalletAccount(p.WalletID), Amount: p.NetAmount})
		}
		if p.PlatformFee > 0 {
			entries = append(entries, ledger.Entry{Account: models.AccountPlatformFees, Amount: p.PlatformFee})
		}
		_, err := ledger.Post(tx, ledger.Posting{Kind: "settlement", Memo: "payment " + p.PayerID, Reference: p.ID.String(), Entries: entries})
		return err
	})
}

// SweepReport says what a sweep did.
type SweepReport struct {
	Expired int `json:"expired"`
	Settled int `json:"settled"`
}

// Sweep expires every overdue PENDING payment and settles every SUCCESS
// payment whose settlement is due: the periodic payment:sweep task, which
// makes the lifecycle independent of individual tasks surviving.
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
			return report, err
		}
		report.Expired++
	}
	if err := s.db.WithContext(ctx).Model(&models.Payment{}).
		Where("status = ? AND settled_at IS NULL AND settle_at <= ?", models.PaymentSuccess, now).
		Order("settle_at").Limit(500).Pluck("id", &due).Error; err != nil {
		return report, err
	}
	for _, id := range due {
		if err := s.Settle(ctx, id); err != nil {
			return report, err
		}
		report.Settled++
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
