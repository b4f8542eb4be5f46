package payouts

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// batchFixture is a fixture whose service pays through a simbank that
// answers at once, so a batch shows every outcome in one submit.
func batchFixture(t *testing.T) (*fixture, *Service, *sandbox.Vendor) {
	f := newFixture(t, models.Rupiah(10_000_000))
	simbank := sandbox.NewSimBank(sandbox.Options{CompleteAfter: time.Nanosecond})
	svc := New(Options{DB: f.db, Vendors: vendors.NewRegistry(simbank), SubmitLease: time.Minute})
	return f, svc, simbank
}

// withAccount stores a VERIFIED disbursement to account.
func (f *fixture) withAccount(account string) *models.Disbursement {
	f.t.Helper()
	d := f.stored(models.StatusVerified, models.Rupiah(100_000))
	if err := f.db.Model(&models.Disbursement{}).Where("id = ?", d.ID).Update("account_no", account).Error; err != nil {
		f.t.Fatal(err)
	}
	d.AccountNo = account
	return d
}

// One batch holding every kind of request answers each as a lone Submit
// would: paid, rejected, accepted and still pending, answer lost (retry),
// already final (done), missing (not found), expired lock and duplicate
// (sent to the one-at-a-time path). The vendor is asked once per payout,
// the money adds up, and each move leaves its audit line.
func TestSubmitBatchAnswersEachAsSubmitWould(t *testing.T) {
	f, svc, simbank := batchFixture(t)
	ctx := context.Background()
	paid := f.withAccount("1234567890")
	paid2 := f.withAccount("9876543210")
	rejected := f.withAccount(sandbox.AccountSubmitRejected)
	failsLater := f.withAccount(sandbox.AccountFailsLater)
	staysRequested := f.withAccount(sandbox.AccountStaysRequested)
	lost := f.withAccount(sandbox.AccountFirstSubmitLost)
	done := f.stored(models.StatusFailed, models.Rupiah(100_000))
	expired := f.withAccount("1234567890")
	if err := f.db.Model(&models.Disbursement{}).Where("id = ?", expired.ID).Update("lock_expires_at", models.Now().Add(-time.Second)).Error; err != nil {
		t.Fatal(err)
	}
	missing := models.NewID()

	ids := []uuid.UUID{paid.ID, rejected.ID, failsLater.ID, staysRequested.ID, lost.ID, done.ID, missing, expired.ID, paid.ID, paid2.ID}
	answers := svc.SubmitFresh(ctx, ids)
	answer := func(i int) error { return answers[i] }

	want := []struct {
		name   string
		check  func(error) bool
		status models.DisbursementStatus
	}{
		{"paid", func(err error) bool { return err == nil }, models.StatusSuccess},
		{"rejected", func(err error) bool { return err == nil }, models.StatusFailed},
		{"fails later", func(err error) bool { return err == nil }, models.StatusFailed},
		{"stays requested", func(err error) bool { return err == nil }, models.StatusRequested},
		{"answer lost", func(err error) bool { return errors.Is(err, ErrOutcomeUnknown) }, models.StatusVerified},
		{"already final", func(err error) bool { return err == nil }, models.StatusFailed},
		{"missing", func(err error) bool { return errors.Is(err, models.ErrDisbursementNotFound) }, ""},
		{"expired lock", func(err error) bool { return errors.Is(err, ErrNotBatchable) }, models.StatusVerified},
		{"duplicate", func(err error) bool { return errors.Is(err, ErrNotBatchable) }, models.StatusSuccess},
		{"paid too", func(err error) bool { return err == nil }, models.StatusSuccess},
	}
	for i, w := range want {
		if err := answer(i); !w.check(err) {
			t.Errorf("%s: answer %v", w.name, err)
		}
		if w.status != "" {
			if got := f.statusOf(ids[i]); got != w.status {
				t.Errorf("%s: status %s, want %s", w.name, got, w.status)
			}
		}
	}
	for _, d := range []*models.Disbursement{paid, paid2, failsLater, staysRequested, lost} {
		if n, err := simbank.SubmitCalls(ctx, d.VendorReference); err != nil || n != 1 {
			t.Errorf("%s: vendor asked %d times (%v), want once", d.AccountNo, n, err)
		}
	}
	if n, _ := simbank.SubmitCalls(ctx, expired.VendorReference); n != 0 {
		t.Errorf("a payout whose lock expired was submitted %d times", n)
	}
	// The one-at-a-time path then expires the expired one.
	if err := svc.Submit(ctx, expired.ID); err != nil || f.statusOf(expired.ID) != models.StatusExpired {
		t.Errorf("lone submit of the expired lock: %v, status %s", err, f.statusOf(expired.ID))
	}
	if n := f.count("disbursement_transitions", "disbursement_id = ?", paid.ID); n != 2 {
		t.Errorf("paid payout has %d audit lines, want 2 (REQUESTED, SUCCESS)", n)
	}
	if n := f.count("webhook_events", "subject_id IN ?", []uuid.UUID{paid.ID, paid2.ID, rejected.ID, failsLater.ID}); n != 4 {
		t.Errorf("%d webhook events for 4 final payouts, want 4", n)
	}
	// Locked: the open ones (stays requested, answer lost). Balance: the
	// funds minus the two paid.
	w := f.walletNow()
	if w.Locked != models.Rupiah(200_000) {
		t.Errorf("locked %s, want 200000", w.Locked)
	}
	if w.Balance != models.Rupiah(10_000_000-200_000) {
		t.Errorf("balance %s, want 9800000", w.Balance)
	}
	f.reconciled()
}

// A batch's moves commit together; when one row was moved by someone else
// meanwhile, the others still commit, one by one, and the stale one is
// answered with ErrStaleStatus and left as the caller read it.
func TestMoveManyFallsBackPastAStaleRow(t *testing.T) {
	f, svc, _ := batchFixture(t)
	ctx := context.Background()
	a, stale, b := f.withAccount("1234567890"), f.withAccount("1234567891"), f.withAccount("1234567892")
	if _, err := svc.Cancel(ctx, stale.ID, "ops"); err != nil {
		t.Fatal(err)
	}
	success := []Move{{To: models.StatusRequested}, {To: models.StatusSuccess}}
	errs := svc.moveMany(ctx, []plan{{d: a, moves: success}, {d: stale, moves: success}, {d: b, moves: success}})
	if errs[0] != nil || errs[2] != nil {
		t.Fatalf("fresh rows: %v, %v", errs[0], errs[2])
	}
	if !errors.Is(errs[1], models.ErrStaleStatus) {
		t.Fatalf("stale row: %v, want ErrStaleStatus", errs[1])
	}
	if a.Status != models.StatusSuccess || b.Status != models.StatusSuccess || stale.Status != models.StatusVerified {
		t.Errorf("in memory: %s, %s, %s", a.Status, stale.Status, b.Status)
	}
	if got := f.statusOf(stale.ID); got != models.StatusCancelled {
		t.Errorf("stale row stored as %s, want CANCELLED", got)
	}
	f.reconciled()
}

// submitAs submits id as the worker would: batched, through SubmitFresh
// (as a batch of one, what dispatch's batch loops run), and through Submit
// when the batch sends it back; otherwise through Submit alone.
func submitAs(ctx context.Context, svc *Service, batched bool, id uuid.UUID) error {
	if batched {
		if err := svc.SubmitFresh(ctx, []uuid.UUID{id})[0]; !errors.Is(err, ErrNotBatchable) {
			return err
		}
	}
	return svc.Submit(ctx, id)
}
