package api

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// 1000000004: accepted (REQUESTED), then the poll finds it FAILED with a
// reason; the lock is released and the balance is what it was.
func TestDisbursementAcceptedThenFailed(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{completeAfter: time.Hour})
	p := e.body("100000", sandbox.AccountFailsLater)
	d := e.create("k", p).created(t, models.StatusRequested)
	e.wantWallet(e.wallet, 1_000_000, 100_000)
	e.drain()
	e.wantStatus(d.ID, models.StatusRequested)

	e.clock.Advance(2 * time.Hour)
	e.inline.EnqueuePoll(context.Background(), uuid.MustParse(d.ID), "", 0)
	e.drain()
	rec := e.get(d.ID)
	rec.expect(t, http.StatusOK, "")
	got := rec.disbursement(t)
	if got.Status != "FAILED" || got.FailedReason == nil || *got.FailedReason != "recipient bank returned the transfer" ||
		got.RequestedAt == nil || got.CompletedAt == nil {
		t.Fatalf("record %s", rec.body)
	}
	e.wantWallet(e.wallet, 1_000_000, 0)
	e.create("k", p).replayed(t, http.StatusServiceUnavailable, "Vendor payout request failed")
	if n := e.submitCalls(d.ID); n != 1 {
		t.Fatalf("vendor asked to pay %d times", n)
	}
	e.reconciled()
}

// 1000000005: accepted and left REQUESTED by the vendor: polls keep it
// there, and so does the clock running past the lock TTL (REQUESTED never
// expires), until an operator completes it as SUCCESS or FAILED.
func TestDisbursementStaysRequestedUntilCompleted(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{})
	ctx := context.Background()
	paid := e.create("paid", e.body("100000", sandbox.AccountStaysRequested)).created(t, models.StatusRequested)
	failed := e.create("failed", e.body("200000", sandbox.AccountStaysRequested)).created(t, models.StatusRequested)
	e.drain()
	e.clock.Advance(31 * time.Minute)
	if n := e.expireLocks(); n != 0 {
		t.Fatalf("expired %d REQUESTED payouts", n)
	}
	for _, id := range []string{paid.ID, failed.ID} {
		e.inline.EnqueuePoll(ctx, uuid.MustParse(id), "", 0)
	}
	e.drain()
	for _, id := range []string{paid.ID, failed.ID} {
		rec := e.get(id).disbursement(t)
		if rec.Status != "REQUESTED" || rec.RequestedAt == nil || rec.CompletedAt != nil {
			t.Fatalf("record %+v", rec)
		}
	}
	e.wantWallet(e.wallet, 1_000_000, 300_000)
	e.create("paid", e.body("100000", sandbox.AccountStaysRequested)).replayed(t, http.StatusOK, "")

	d, err := e.svc.CompleteSandbox(ctx, uuid.MustParse(paid.ID), vendors.PayoutSuccess, "")
	if err != nil || d.Status != models.StatusSuccess {
		t.Fatalf("complete as SUCCESS: %v %v", d, err)
	}
	d, err = e.svc.CompleteSandbox(ctx, uuid.MustParse(failed.ID), vendors.PayoutFailed, "recipient name mismatch")
	if err != nil || d.Status != models.StatusFailed {
		t.Fatalf("complete as FAILED: %v %v", d, err)
	}
	e.wantWallet(e.wallet, 900_000, 0)
	rec := e.get(failed.ID).disbursement(t)
	if rec.FailedReason == nil || *rec.FailedReason != "recipient name mismatch" || rec.CompletedAt == nil {
		t.Fatalf("failed record %+v", rec)
	}
	if got := e.get(paid.ID).disbursement(t); got.Status != "SUCCESS" || got.FailedReason != nil || got.CompletedAt == nil {
		t.Fatalf("paid record %+v", got)
	}
	r := e.create("paid", e.body("100000", sandbox.AccountStaysRequested))
	r.replayed(t, http.StatusOK, "")
	if r.disbursement(t).Status != "SUCCESS" {
		t.Fatalf("replay %s", r.body)
	}
	e.create("failed", e.body("200000", sandbox.AccountStaysRequested)).replayed(t, http.StatusServiceUnavailable, "Vendor payout request failed")
	if _, err := e.svc.CompleteSandbox(ctx, uuid.MustParse(paid.ID), vendors.PayoutFailed, ""); !errors.Is(err, models.ErrTransitionRefused) {
		t.Fatalf("completing a final payout again: %v", err)
	}
	e.wantWallet(e.wallet, 900_000, 0)
	e.reconciled()
}

// 1000000007: the vendor accepts the first submit but the answer is lost.
// The create answers 201 VERIFIED; the payout may be paid, so it can be
// neither cancelled nor expired; the retry asks the vendor first and ends
// SUCCESS with the vendor asked to pay exactly once, whether it comes just
// after the submit lease or after the lock TTL.
func TestDisbursementLostSubmitAnswerPaysOnce(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{submitWait: time.Nanosecond, lockTTL: time.Minute})
	ctx := context.Background()
	soon := e.create("soon", e.body("100000", sandbox.AccountFirstSubmitLost)).created(t, models.StatusVerified)
	late := e.create("late", e.body("200000", sandbox.AccountFirstSubmitLost)).created(t, models.StatusVerified)
	e.wantWallet(e.wallet, 1_000_000, 300_000)
	e.create("soon", e.body("100000", sandbox.AccountFirstSubmitLost)).replayed(t, http.StatusOK, "")
	if _, err := e.svc.Cancel(ctx, uuid.MustParse(soon.ID), "ops"); !errors.Is(err, models.ErrTransitionRefused) {
		t.Fatalf("cancel of a submitted payout: %v", err)
	}

	e.clock.Advance(2 * time.Second) // past the 1 s submit lease
	if err := e.svc.Submit(ctx, uuid.MustParse(soon.ID)); err != nil {
		t.Fatalf("retried submit: %v", err)
	}
	e.wantStatus(soon.ID, models.StatusSuccess)

	e.clock.Advance(2 * time.Minute) // past the lock TTL
	if n := e.expireLocks(); n != 0 {
		t.Fatalf("expired %d payouts the vendor may have paid", n)
	}
	e.wantStatus(late.ID, models.StatusVerified)
	if err := e.svc.Submit(ctx, uuid.MustParse(late.ID)); err != nil {
		t.Fatalf("retried submit: %v", err)
	}
	e.wantStatus(late.ID, models.StatusSuccess)

	for _, id := range []string{soon.ID, late.ID} {
		if n := e.submitCalls(id); n != 1 {
			t.Fatalf("vendor asked to pay %s %d times", id, n)
		}
		if got := e.get(id).disbursement(t); got.Status != "SUCCESS" || got.CompletedAt == nil {
			t.Fatalf("record %+v", got)
		}
	}
	e.wantWallet(e.wallet, 700_000, 0)
	e.reconciled()
}

// E-wallet accounts on the simwallet wallet are local phone numbers: a
// leading 0 and 10 to 13 digits. Every other form fails the inquiry.
func TestDisbursementEWalletAccounts(t *testing.T) {
	t.Parallel()
	forEachQueue(t, payoutSetup{}, func(t *testing.T, e *payoutEnv) {
		ewallets := []string{"dana", "gopay", "ovo", "linkaja", "shopeepay"}
		refused := map[string]string{
			"9 digits":          "081234567",
			"14 digits":         "08123456789012",
			"no leading 0":      "812345678901",
			"country prefix 62": "6281234567890",
		}
		before := e.snapshot()
		t.Run("refused", func(t *testing.T) {
			for _, code := range ewallets {
				for name, account := range refused {
					t.Run(code+"/"+name, func(t *testing.T) {
						t.Parallel()
						e.sub(t).create("refused", e.ewalletBody("20000", code, account)).
							expect(t, http.StatusUnprocessableEntity, "bank account verification failed")
					})
				}
			}
		})
		if t.Failed() {
			return
		}
		e.unchanged(before)
		accepted := []string{"0812345678", "081234567890", "0812345678901"}
		t.Run("accepted", func(t *testing.T) {
			for _, code := range ewallets {
				for _, account := range accepted {
					t.Run(code+"/"+account, func(t *testing.T) {
						t.Parallel()
						d := e.sub(t).create(code+account, e.ewalletBody("20000", code, account)).created(t, models.StatusSuccess)
						if d.BankCode != code || d.AccountNo != account || d.AccountHolderName != "SANDBOX "+account[len(account)-4:] ||
							d.WalletID != e.ewallet.String() {
							t.Fatalf("created %+v", d)
						}
					})
				}
			}
		})
		e.wantWallet(e.ewallet, 1_000_000-15*20_000, 0)
		e.reconciled()
	})
}

// Review threshold: a create at or above it waits in PENDING_VERIFICATION
// with its funds locked and nothing sent to the vendor, the sweep leaves it
// alone, and an operator approves it (submitted) or cancels it (released).
func TestDisbursementReviewThreshold(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{completeAfter: time.Hour, funds: "2000000"})
	ctx := context.Background()
	e.update(map[string]string{"review-threshold": "500000"})
	below := e.create("below", e.body("499999", "1234567890")).created(t, models.StatusRequested)
	at := e.create("at", e.body("500000", "1234567890")).created(t, models.StatusPendingVerification)
	cancel := e.create("cancel", e.body("600000", "1234567890")).created(t, models.StatusPendingVerification)
	if b, l := e.balance(e.wallet); b != models.Rupiah(2_000_000) || l != models.Rupiah(1_599_999) {
		t.Fatalf("balance %s locked %s", b, l)
	}
	for _, id := range []string{at.ID, cancel.ID} {
		if n := e.submitCalls(id); n != 0 {
			t.Fatalf("a payout waiting for review was sent to the vendor %d times", n)
		}
	}
	e.create("at", e.body("500000", "1234567890")).replayed(t, http.StatusOK, "")
	if rec := e.get(at.ID).disbursement(t); rec.Status != "PENDING_VERIFICATION" || rec.RequestedAt != nil {
		t.Fatalf("record %+v", rec)
	}
	e.clock.Advance(20 * time.Second)
	if report, err := e.dispatch.Sweep(ctx); err != nil || report.Submits != 0 {
		t.Fatalf("sweep %+v %v", report, err)
	}
	e.wantStatus(at.ID, models.StatusPendingVerification)

	approved, err := e.svc.Approve(ctx, uuid.MustParse(at.ID), "ops")
	if err != nil || approved.Status != models.StatusVerified {
		t.Fatalf("approve: %v %v", approved, err)
	}
	e.wantStatus(at.ID, models.StatusRequested) // submitted on approval
	if n := e.submitCalls(at.ID); n != 1 {
		t.Fatalf("approved payout sent %d times", n)
	}
	if _, err := e.svc.Approve(ctx, uuid.MustParse(at.ID), "ops"); !errors.Is(err, models.ErrTransitionRefused) {
		t.Fatalf("second approve: %v", err)
	}

	cancelled, err := e.svc.Cancel(ctx, uuid.MustParse(cancel.ID), "ops")
	if err != nil || cancelled.Status != models.StatusCancelled {
		t.Fatalf("cancel: %v %v", cancelled, err)
	}
	if b, l := e.balance(e.wallet); b != models.Rupiah(2_000_000) || l != models.Rupiah(999_999) {
		t.Fatalf("after cancel: balance %s locked %s", b, l)
	}
	e.create("cancel", e.body("600000", "1234567890")).replayed(t, http.StatusConflict, "disbursement was cancelled")
	if rec := e.get(cancel.ID).disbursement(t); rec.Status != "CANCELLED" || rec.CompletedAt == nil || rec.RequestedAt != nil {
		t.Fatalf("record %+v", rec)
	}
	if _, err := e.svc.Approve(ctx, uuid.MustParse(cancel.ID), "ops"); !errors.Is(err, models.ErrTransitionRefused) {
		t.Fatalf("approve of a cancelled payout: %v", err)
	}
	if n := e.submitCalls(cancel.ID); n != 0 {
		t.Fatalf("cancelled payout sent %d times", n)
	}
	e.wantStatus(below.ID, models.StatusRequested)
	e.reconciled()
}

// Cancel: a VERIFIED payout never submitted is cancelled and its lock
// released, and its queued submit then does nothing; a REQUESTED payout
// cannot be cancelled.
func TestDisbursementCancel(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{noSubmit: true, submitWait: time.Nanosecond})
	ctx := context.Background()
	requested := e.create("requested", e.body("100000", sandbox.AccountStaysRequested)).created(t, models.StatusVerified)
	e.runSubmits()
	e.wantStatus(requested.ID, models.StatusRequested)
	verified := e.create("verified", e.body("200000", "1234567890")).created(t, models.StatusVerified)
	e.wantWallet(e.wallet, 1_000_000, 300_000)

	d, err := e.svc.Cancel(ctx, uuid.MustParse(verified.ID), "ops")
	if err != nil || d.Status != models.StatusCancelled {
		t.Fatalf("cancel VERIFIED: %v %v", d, err)
	}
	e.wantWallet(e.wallet, 1_000_000, 100_000)
	e.runSubmits() // the submit queued at create
	e.wantStatus(verified.ID, models.StatusCancelled)
	if n := e.submitCalls(verified.ID); n != 0 {
		t.Fatalf("cancelled payout sent %d times", n)
	}
	e.create("verified", e.body("200000", "1234567890")).replayed(t, http.StatusConflict, "disbursement was cancelled")

	if _, err := e.svc.Cancel(ctx, uuid.MustParse(requested.ID), "ops"); !errors.Is(err, models.ErrTransitionRefused) {
		t.Fatalf("cancel REQUESTED: %v", err)
	}
	e.wantStatus(requested.ID, models.StatusRequested)
	if _, err := e.svc.Cancel(ctx, uuid.MustParse(verified.ID), "ops"); !errors.Is(err, models.ErrTransitionRefused) {
		t.Fatalf("cancel CANCELLED again: %v", err)
	}
	e.wantWallet(e.wallet, 1_000_000, 100_000)
	e.reconciled()
}

// Lock expiry: disbursements never submitted whose lock TTL passed expire
// (VERIFIED and PENDING_VERIFICATION), releasing the lock; a replay is 410;
// a submit that comes after the TTL expires the payout instead of sending
// it.
func TestDisbursementLockExpiry(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{noSubmit: true, submitWait: time.Nanosecond, lockTTL: time.Minute})
	verified := e.create("verified", e.body("100000", "1234567890")).created(t, models.StatusVerified)
	e.update(map[string]string{"review-threshold": "500000"})
	pending := e.create("pending", e.body("500000", "1234567890")).created(t, models.StatusPendingVerification)
	e.wantWallet(e.wallet, 1_000_000, 600_000)

	e.clock.Advance(59 * time.Second)
	if n := e.expireLocks(); n != 0 {
		t.Fatalf("expired %d before the TTL", n)
	}
	e.clock.Advance(2 * time.Second)
	if n := e.expireLocks(); n != 2 {
		t.Fatalf("expired %d, want 2", n)
	}
	e.wantWallet(e.wallet, 1_000_000, 0)
	e.runSubmits() // the submit queued at create finds it EXPIRED
	for key, id := range map[string]string{"verified": verified.ID, "pending": pending.ID} {
		e.wantStatus(id, models.StatusExpired)
		rec := e.get(id).disbursement(t)
		if rec.Status != "EXPIRED" || rec.CompletedAt == nil || rec.RequestedAt != nil {
			t.Fatalf("%s record %+v", key, rec)
		}
	}
	e.create("verified", e.body("100000", "1234567890")).replayed(t, http.StatusGone, "Withdrawal lock has expired")
	e.create("pending", e.body("500000", "1234567890")).replayed(t, http.StatusGone, "Withdrawal lock has expired")

	late := e.create("late", e.body("100000", "1234567890")).created(t, models.StatusVerified)
	e.clock.Advance(61 * time.Second)
	e.runSubmits()
	e.wantStatus(late.ID, models.StatusExpired)
	e.create("late", e.body("100000", "1234567890")).replayed(t, http.StatusGone, "Withdrawal lock has expired")
	if n := e.vendor.submitsAccepted(); n != 0 {
		t.Fatalf("vendor asked to pay %d expired payouts", n)
	}
	e.wantWallet(e.wallet, 1_000_000, 0)
	e.reconciled()
}

// The disbursement row is its own outbox: a create committed while the
// queue was down answers 201 VERIFIED, and the sweep submits it once its
// first check is due (15 s); a poll lost the same way is enqueued again.
func TestDisbursementSweepCarriesWhatTheQueueLost(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{submitWait: time.Nanosecond, completeAfter: time.Hour})
	ctx := context.Background()
	e.inline.setDown(true)
	d := e.create("k", e.body("100000", "1234567890")).created(t, models.StatusVerified)
	e.inline.setDown(false)
	e.wantWallet(e.wallet, 1_000_000, 100_000)

	sweep := func() (submits, polls int) {
		t.Helper()
		report, err := e.dispatch.Sweep(ctx)
		if err != nil || report.Unhandled != 0 {
			t.Fatalf("sweep %+v %v", report, err)
		}
		return report.Submits, report.Polls
	}
	if s, _ := sweep(); s != 0 || e.submitCalls(d.ID) != 0 {
		t.Fatalf("sweep submitted %d before the row was due", s)
	}
	e.clock.Advance(16 * time.Second)
	if s, _ := sweep(); s != 1 {
		t.Fatalf("sweep submitted %d, want 1", s)
	}
	e.wantStatus(d.ID, models.StatusRequested)
	if n := e.submitCalls(d.ID); n != 1 {
		t.Fatalf("vendor asked to pay %d times", n)
	}
	if s, p := sweep(); s != 0 || p != 0 {
		t.Fatalf("an immediate second sweep enqueued %d submits and %d polls", s, p)
	}

	e.inline.mu.Lock()
	e.inline.polls = nil // the first poll is lost with Redis
	e.inline.mu.Unlock()
	e.clock.Advance(2 * time.Hour)
	if _, p := sweep(); p != 1 {
		t.Fatalf("sweep enqueued %d polls, want 1", p)
	}
	e.drain()
	e.wantStatus(d.ID, models.StatusSuccess)
	if n := e.submitCalls(d.ID); n != 1 {
		t.Fatalf("vendor asked to pay %d times", n)
	}
	e.wantWallet(e.wallet, 900_000, 0)
	e.reconciled()
}

// A lock that runs out before the first submit: the submit expires the
// payout instead of sending it, and the fresh create answers what the spec
// gives for an expired lock, 410, with nothing moved.
func TestDisbursementLockExpiredBeforeFirstSubmit(t *testing.T) {
	t.Parallel()
	forEachQueue(t, payoutSetup{lockTTL: time.Microsecond}, func(t *testing.T, e *payoutEnv) {
		p := e.body("100000", "1234567890")
		r := e.create("k", p)
		r.expect(t, http.StatusGone, "Withdrawal lock has expired")
		if r.header.Get("Idempotent-Replayed") != "" {
			t.Fatal("a fresh create carries Idempotent-Replayed")
		}
		d := e.byKey("k")
		if d.Status != models.StatusExpired || e.submitCalls(d.ID.String()) != 0 {
			t.Fatalf("stored %s, vendor asked %d times", d.Status, e.submitCalls(d.ID.String()))
		}
		e.wantWallet(e.wallet, 1_000_000, 0)
		e.create("k", p).replayed(t, http.StatusGone, "Withdrawal lock has expired")
		e.reconciled()
	})
}
