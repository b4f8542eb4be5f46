package payments

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/tasks"
	"github.com/payoutd/payoutd/vendors"
)

// asynq keeps whole seconds: a task is scheduled at the first whole second
// at or after the payment is due, never before.
func TestTaskTime(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	for _, tt := range []struct{ due, want time.Time }{
		{base, base},
		{base.Add(time.Microsecond), base.Add(time.Second)},
		{base.Add(700 * time.Millisecond), base.Add(time.Second)},
		{base.Add(999_999 * time.Microsecond), base.Add(time.Second)},
		{base.Add(time.Second), base.Add(time.Second)},
	} {
		got := taskTime(tt.due)
		if !got.Equal(tt.want) || got.Unix() < tt.due.Unix() || got.Before(tt.due) {
			t.Errorf("taskTime(%s) = %s, want %s", tt.due.Format(time.RFC3339Nano), got.Format(time.RFC3339Nano), tt.want.Format(time.RFC3339Nano))
		}
	}
}

// recordingQueue keeps what the service schedules.
type recordingQueue struct{ expire, settle []time.Time }

func (q *recordingQueue) EnqueuePaymentExpire(_ context.Context, _ uuid.UUID, at time.Time) error {
	q.expire = append(q.expire, at)
	return nil
}

func (q *recordingQueue) EnqueuePaymentSettle(_ context.Context, _ uuid.UUID, at time.Time) error {
	q.settle = append(q.settle, at)
	return nil
}

func (q *recordingQueue) EnqueueWebhook(context.Context, uuid.UUID, string) error { return nil }

// Expiry and settlement are scheduled for the whole second after they are
// due (expired_at and settle_at carry microseconds).
func TestPaymentTasksScheduledNotBeforeDue(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	q := &recordingQueue{}
	f.svc.queue = q
	f.svc.calendar = Calendar{Delay: 2 * time.Second}
	f.now = f.now.Add(250_500 * time.Microsecond)
	p := f.create(20_000)
	if _, err := f.svc.Simulate(context.Background(), p.ID, ResultSuccess); err != nil {
		t.Fatal(err)
	}
	paid := f.get(p.ID)
	if len(q.expire) != 1 || len(q.settle) != 1 {
		t.Fatalf("scheduled %d expiries and %d settlements, want one each", len(q.expire), len(q.settle))
	}
	for _, c := range []struct {
		name    string
		at, due time.Time
	}{{"expiry", q.expire[0], p.ExpiredAt}, {"settlement", q.settle[0], *paid.SettleAt}} {
		if c.at.Unix() < c.due.Unix() || c.at.Before(c.due) || c.at.Sub(c.due) >= time.Second || c.at.Nanosecond() != 0 {
			t.Errorf("%s due at %s scheduled at %s: want the next whole second", c.name, c.due.Format(time.RFC3339Nano), c.at.Format(time.RFC3339Nano))
		}
	}
}

// A task run early (asynq runs it up to a second before its time) is not
// done: it asks to be retried at the whole second after the payment is
// due, and the worker's retry delay is that wait.
func TestPaymentTaskRunEarlyIsRetried(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.svc.calendar = Calendar{Delay: 5 * time.Second}
	f.now = f.now.Add(123_456 * time.Microsecond)
	pending := f.create(20_000)
	paid := f.create(20_000)
	if _, err := f.svc.Simulate(context.Background(), paid.ID, ResultSuccess); err != nil {
		t.Fatal(err)
	}
	settleAt := *f.get(paid.ID).SettleAt
	for _, c := range []struct {
		name string
		run  func(context.Context, uuid.UUID) error
		id   uuid.UUID
		due  time.Time
	}{{"expire", f.svc.Expire, pending.ID, pending.ExpiredAt}, {"settle", f.svc.Settle, paid.ID, settleAt}} {
		f.now = c.due.Add(-700 * time.Millisecond)
		err := c.run(context.Background(), c.id)
		var notDue *NotDueError
		if !errors.As(err, &notDue) {
			t.Fatalf("%s 0.7 s early: %v, want a NotDueError", c.name, err)
		}
		retryAt := f.now.Add(tasks.RetryDelay(3, err, nil))
		if retryAt.Before(c.due) || retryAt.Sub(c.due) >= time.Second || retryAt.Nanosecond() != 0 {
			t.Errorf("%s due at %s retried at %s, want the next whole second", c.name, c.due.Format(time.RFC3339Nano), retryAt.Format(time.RFC3339Nano))
		}
		f.now = retryAt
		if err := c.run(context.Background(), c.id); err != nil {
			t.Fatalf("%s on time: %v", c.name, err)
		}
	}
	if got := f.get(pending.ID).Status; got != models.PaymentExpired {
		t.Errorf("after the retried expiry: %s", got)
	}
	if f.get(paid.ID).SettledAt == nil || f.balance() != models.Rupiah(20_000-140) {
		t.Errorf("after the retried settlement: settled_at %v, balance %s", f.get(paid.ID).SettledAt, f.balance())
	}
	f.reconciled()
}

// A result arriving at or after expired_at, before anything expired the
// payment, expires it (with its payment.expired event) and is recorded as
// late: it never turns an expired payment into a paid one. Just before
// expired_at it is applied.
func TestPaymentResultAfterExpiredAt(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	late := f.create(20_000)
	onTime := f.create(20_000)
	simulated := f.create(20_000)

	f.now = onTime.ExpiredAt.Add(-time.Microsecond)
	if applied, err := f.svc.ApplyResult(context.Background(), vendors.AcquirerResult{PaymentID: onTime.ID, Status: ResultSuccess,
		RetrievalReferenceNo: "000000000001", PaidAt: f.now}, "sandboxpay"); err != nil || applied != AppliedNow {
		t.Fatalf("a result a microsecond before expired_at: %s %v", applied, err)
	}

	f.now = late.ExpiredAt
	applied, err := f.svc.ApplyResult(context.Background(), vendors.AcquirerResult{PaymentID: late.ID, Status: ResultSuccess,
		RetrievalReferenceNo: "000000000002", PaidAt: late.ExpiredAt.Add(-time.Minute)}, "sandboxpay")
	if err != nil || applied != RecordedLate {
		t.Fatalf("a result at expired_at: %s %v, want %s", applied, err, RecordedLate)
	}
	f.now = late.ExpiredAt.Add(time.Hour)
	if applied, err := f.svc.Simulate(context.Background(), simulated.ID, ResultSuccess); err != nil || applied != RecordedLate {
		t.Fatalf("a simulation an hour after expired_at: %s %v, want %s", applied, err, RecordedLate)
	}
	for _, id := range []uuid.UUID{late.ID, simulated.ID} {
		p := f.get(id)
		if p.Status != models.PaymentExpired || p.PaidAt != nil || p.RetrievalReferenceNo != nil || p.SettleAt != nil {
			t.Errorf("payment %s after a late result: %s, paid_at %v", id, p.Status, p.PaidAt)
		}
		var events []models.WebhookEvent
		f.db.Where("subject_id = ?", id).Find(&events)
		if len(events) != 1 || events[0].Event != "payment.expired" {
			t.Errorf("payment %s: events %+v, want one payment.expired", id, events)
		}
		var lates []models.PaymentLateResult
		f.db.Where("payment_id = ?", id).Find(&lates)
		if len(lates) != 1 || lates[0].PaymentStatus != models.PaymentExpired || lates[0].ReportedStatus != ResultSuccess {
			t.Errorf("payment %s: late results %+v, want the SUCCESS recorded against EXPIRED", id, lates)
		}
	}
	if got := f.get(onTime.ID).Status; got != models.PaymentSuccess {
		t.Errorf("the payment paid in time is %s", got)
	}
	// Only the payment paid in time settles.
	f.now = f.now.Add(7 * 24 * time.Hour)
	if report, err := f.svc.Sweep(context.Background()); err != nil || report.Settled != 1 {
		t.Fatalf("sweep %+v %v", report, err)
	}
	if f.balance() != models.Rupiah(20_000-140) {
		t.Fatalf("balance %s, want only the payment paid in time", f.balance())
	}
	f.reconciled()
}

// A SUCCESS without a paid time is paid at the service's clock, not the
// machine's.
func TestPaymentResultWithoutPaidAtUsesTheClock(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	p := f.create(20_000)
	f.now = f.now.Add(90 * time.Second)
	if _, err := f.svc.ApplyResult(context.Background(), vendors.AcquirerResult{PaymentID: p.ID, Status: ResultSuccess,
		RetrievalReferenceNo: "000000000003"}, "sandboxpay"); err != nil {
		t.Fatal(err)
	}
	if got := f.get(p.ID).PaidAt; got == nil || !got.Equal(f.now) {
		t.Fatalf("paid_at %v, want the service's clock %s", got, f.now)
	}
}
