package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/signature"
	"github.com/payoutd/payoutd/tasks"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/vendorsim"
)

// The lifecycle's other moves with the real asynq worker in-process (on
// real Redis and PostgreSQL in CI): what the worker's tasks and schedule
// do, not what a test calls by hand.

// workerSetup is a worker-driven environment. The create waits long for
// the worker's first outcome: a slow machine must not turn REQUESTED
// answers into VERIFIED ones. (15 s was seen to run out on SQLite with both
// cores saturated; a passing create returns as soon as the outcome is in.)
func workerSetup(t *testing.T, o payoutSetup) *payoutEnv {
	o.worker = true
	if o.submitWait == 0 {
		o.submitWait = 45 * time.Second
	}
	return setupPayouts(t, o)
}

// trail returns a disbursement's audit trail as "FROM→TO" steps.
func (e *payoutEnv) trail(id string) []string {
	e.t.Helper()
	rows, err := e.svc.Transitions(context.Background(), uuid.MustParse(id))
	if err != nil {
		e.t.Fatal(err)
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = string(r.FromStatus) + "→" + string(r.ToStatus)
	}
	return out
}

func (e *payoutEnv) wantTrail(id string, want ...string) {
	e.t.Helper()
	if got := e.trail(id); strings.Join(got, " ") != strings.Join(want, " ") {
		e.t.Fatalf("trail of %s: %v, want %v", id, got, want)
	}
}

// A payout waiting for review is approved by an operator; the worker then
// submits it at once (not a sweep's 15 s later) and it is paid, once.
func TestDisbursementApprovedThenPaidThroughTheWorker(t *testing.T) {
	t.Parallel()
	e := workerSetup(t, payoutSetup{})
	e.update(map[string]string{"review-threshold": "500000"})
	p := e.body("500000", "1234567890")
	d := e.create("review", p).created(t, models.StatusPendingVerification)
	e.wantWallet(e.wallet, 1_000_000, 500_000)

	approvedAt := e.clock.Now()
	if _, err := e.svc.Approve(ctxb, uuid.MustParse(d.ID), "ops"); err != nil {
		t.Fatalf("approve: %v", err)
	}
	e.eventually(d.ID, models.StatusSuccess)
	if got, _ := e.svc.Get(ctxb, uuid.MustParse(d.ID)); got.RequestedAt.Sub(approvedAt) > 10*time.Second {
		t.Fatalf("sent %s after the approval, want at once", got.RequestedAt.Sub(approvedAt))
	}
	if n := e.submitCalls(d.ID); n != 1 {
		t.Fatalf("vendor asked to pay %d times", n)
	}
	e.wantTrail(d.ID, "→PENDING_VERIFICATION", "PENDING_VERIFICATION→VERIFIED", "VERIFIED→REQUESTED", "REQUESTED→SUCCESS")
	rec := e.get(d.ID).disbursement(t)
	if rec.Status != "SUCCESS" || rec.RequestedAt == nil || rec.CompletedAt == nil {
		t.Fatalf("record %+v", rec)
	}
	r := e.create("review", p)
	r.replayed(t, http.StatusOK, "")
	if r.disbursement(t).Status != "SUCCESS" {
		t.Fatalf("replay %s", r.body)
	}
	e.wantWallet(e.wallet, 500_000, 0)
	e.reconciled()
}

// A payout waiting for review is cancelled by an operator: its lock is
// released and the running worker never sends it, while it carries a
// payout created afterwards through to SUCCESS.
func TestDisbursementCancelledWhileTheWorkerRuns(t *testing.T) {
	t.Parallel()
	e := workerSetup(t, payoutSetup{})
	e.update(map[string]string{"review-threshold": "500000"})
	p := e.body("600000", "1234567890")
	d := e.create("review", p).created(t, models.StatusPendingVerification)
	if _, err := e.svc.Cancel(ctxb, uuid.MustParse(d.ID), "ops"); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	e.wantWallet(e.wallet, 1_000_000, 0)

	after := e.create("after", e.body("100000", "1234567890")).disbursement(t)
	e.eventually(after.ID, models.StatusSuccess)
	e.wantStatus(d.ID, models.StatusCancelled)
	if n := e.submitCalls(d.ID); n != 0 {
		t.Fatalf("cancelled payout sent %d times", n)
	}
	e.wantTrail(d.ID, "→PENDING_VERIFICATION", "PENDING_VERIFICATION→CANCELLED")
	e.create("review", p).replayed(t, http.StatusConflict, "disbursement was cancelled")
	e.wantWallet(e.wallet, 900_000, 0)
	e.reconciled()
}

// A payout nobody reviews within DISBURSEMENT_LOCK_TTL is expired by the
// worker's scheduled payout:expire (every 10 s; nothing here calls the
// expiry): the lock is released, a replay answers 410, nothing was sent.
func TestDisbursementLockExpiresOnTheWorkersSchedule(t *testing.T) {
	t.Parallel()
	e := workerSetup(t, payoutSetup{lockTTL: time.Second})
	e.update(map[string]string{"review-threshold": "500000"})
	p := e.body("500000", "1234567890")
	d := e.create("review", p).created(t, models.StatusPendingVerification)
	e.wantWallet(e.wallet, 1_000_000, 500_000)

	e.eventually(d.ID, models.StatusExpired)
	e.wantTrail(d.ID, "→PENDING_VERIFICATION", "PENDING_VERIFICATION→EXPIRED")
	if rec := e.get(d.ID).disbursement(t); rec.CompletedAt == nil || rec.RequestedAt != nil {
		t.Fatalf("record %+v", rec)
	}
	e.create("review", p).replayed(t, http.StatusGone, "Withdrawal lock has expired")
	if n := e.submitCalls(d.ID); n != 0 {
		t.Fatalf("expired payout sent %d times", n)
	}
	e.wantWallet(e.wallet, 1_000_000, 0)
	e.reconciled()
}

// 1000000004 through the worker: the vendor accepts it (the create answers
// REQUESTED), and a later scheduled status check finds it returned: FAILED
// with the vendor's reason, the lock released, no money moved.
func TestDisbursementFailedByPollThroughTheWorker(t *testing.T) {
	t.Parallel()
	e := workerSetup(t, payoutSetup{completeAfter: 300 * time.Millisecond})
	p := e.body("100000", sandbox.AccountFailsLater)
	d := e.create("k", p).created(t, models.StatusRequested)
	e.wantWallet(e.wallet, 1_000_000, 100_000)

	e.eventually(d.ID, models.StatusFailed)
	e.wantTrail(d.ID, "→VERIFIED", "VERIFIED→REQUESTED", "REQUESTED→FAILED")
	rec := e.get(d.ID).disbursement(t)
	if rec.FailedReason == nil || *rec.FailedReason != "recipient bank returned the transfer" || rec.RequestedAt == nil || rec.CompletedAt == nil {
		t.Fatalf("record %+v", rec)
	}
	e.create("k", p).replayed(t, http.StatusServiceUnavailable, "Vendor payout request failed")
	if n := e.submitCalls(d.ID); n != 1 {
		t.Fatalf("vendor asked to pay %d times", n)
	}
	e.wantWallet(e.wallet, 1_000_000, 0)
	e.reconciled()
}

// The vendor (the HTTP simulator) fails a REQUESTED payout and says so in
// its signed callback to POST /vendor-callbacks/simbank. Its status API is
// down meanwhile: the callback cannot be confirmed, so it is answered 503
// and the payout stays REQUESTED (the callback alone never decides); once
// the status API answers again, the simulator's resend (or a poll) moves
// the payout to FAILED.
func TestDisbursementFailedByVendorCallbackThroughTheWorker(t *testing.T) {
	t.Parallel()
	e := workerSetup(t, payoutSetup{vendorsim: true})
	p := e.body("100000", sandbox.AccountStaysRequested)
	d := e.create("k", p).created(t, models.StatusRequested)
	e.statusDown.Store(true)

	ref := models.VendorReferenceFor(uuid.MustParse(d.ID))
	if err := e.sim.Vendor(sandbox.SimBank).Complete(ctxb, ref, vendors.PayoutFailed, "recipient name mismatch"); err != nil {
		t.Fatal(err)
	}
	e.vendorCallback(sandbox.SimBank, ref, vendors.PayoutFailed, "recipient name mismatch").
		expect(t, http.StatusServiceUnavailable, models.ErrGatewayUnavailable.Error())
	e.wantStatus(d.ID, models.StatusRequested)
	e.wantWallet(e.wallet, 1_000_000, 100_000)
	e.statusDown.Store(false)
	e.eventually(d.ID, models.StatusFailed)
	e.wantTrail(d.ID, "→VERIFIED", "VERIFIED→REQUESTED", "REQUESTED→FAILED")
	rec := e.get(d.ID).disbursement(t)
	if rec.FailedReason == nil || *rec.FailedReason != "recipient name mismatch" || rec.CompletedAt == nil {
		t.Fatalf("record %+v", rec)
	}
	e.create("k", p).replayed(t, http.StatusServiceUnavailable, "Vendor payout request failed")
	e.wantWallet(e.wallet, 1_000_000, 0)
	e.reconciled()
}

// A callback to POST /vendor-callbacks/{vendor} that the vendor did not
// sign is answered 401 and changes nothing: not the payout, the wallet,
// nor what was stored. The same body signed with the vendor's secret is
// then applied, so the refusals were for the signature alone.
func TestDisbursementForgedVendorCallbackIsRefused(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{vendorsim: true})
	d := e.create("k", e.body("100000", sandbox.AccountStaysRequested)).created(t, models.StatusRequested)
	ref := models.VendorReferenceFor(uuid.MustParse(d.ID))
	body, _ := json.Marshal(map[string]string{"reference": ref, "status": "SUCCESS", "failure_reason": ""})
	other, _ := json.Marshal(map[string]string{"reference": ref, "status": "FAILED", "failure_reason": "forged"})
	callback := func(body []byte, sig string) response {
		t.Helper()
		headers := map[string]string{}
		if sig != "" {
			headers[vendorsim.SignatureHeader] = sig
		}
		return e.do(request{method: http.MethodPost, path: "/vendor-callbacks/" + sandbox.SimBank, body: body, headers: headers})
	}
	before, trail := e.snapshot(), e.trail(d.ID)
	// The message is the same for all; the hint names the diagnosis.
	for _, tc := range []struct {
		name, hint string
		r          response
	}{
		{"unsigned", "missing_signature_header", callback(body, "")},
		{"signed with another key", "signature_mismatch", callback(body, signature.Sign("not-the-vendor-secret", body, e.now()))},
		{"signature of other bytes", "signature_mismatch", callback(body, signature.Sign(vendorSimCallbackSecret, other, e.now()))},
		{"signed 6 minutes ago", "timestamp_out_of_window", callback(body, signature.Sign(vendorSimCallbackSecret, body, e.now().Add(-6*time.Minute)))},
	} {
		tc.r.expect(t, http.StatusUnauthorized, vendors.ErrInvalidCallback.Error())
		if tc.r.hint != tc.hint {
			t.Fatalf("%s: hint %q, want %q", tc.name, tc.r.hint, tc.hint)
		}
	}
	e.wantStatus(d.ID, models.StatusRequested)
	if got := e.trail(d.ID); strings.Join(got, " ") != strings.Join(trail, " ") {
		t.Fatalf("trail changed: %v, was %v", got, trail)
	}
	e.unchanged(before)

	if err := e.sim.Vendor(sandbox.SimBank).Complete(ctxb, ref, vendors.PayoutFailed, "forged"); err != nil {
		t.Fatal(err)
	}
	callback(other, signature.Sign(vendorSimCallbackSecret, other, e.now())).expect(t, http.StatusOK, "")
	e.wantStatus(d.ID, models.StatusFailed)
	e.wantWallet(e.wallet, 1_000_000, 0)
	e.reconciled()
}

// Vendors deliver callbacks at least once: a repeated result, or a later
// callback contradicting a final payout that the vendor's status query
// does not confirm, is acknowledged (200, so the vendor stops retrying)
// and changes nothing: not the status, the trail, the wallet, the
// merchant's webhook events, nor the late results (the vendor itself says
// nothing new). A callback names its payout
// by the vendor's own reference: an unknown one, or one of another
// vendor's payouts, is 404 and touches nothing. Both sandbox vendors'
// callbacks are applied.
func TestDisbursementVendorCallbacksAreIdempotent(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{vendorsim: true})
	callback := func(vendor, ref, status, reason string) response {
		t.Helper()
		body, _ := json.Marshal(map[string]string{"reference": ref, "status": status, "failure_reason": reason})
		return e.do(request{method: http.MethodPost, path: "/vendor-callbacks/" + vendor, body: body,
			headers: map[string]string{vendorsim.SignatureHeader: signature.Sign(vendorSimCallbackSecret, body, e.now())}})
	}
	events := func(id string) int64 {
		t.Helper()
		var n int64
		if err := e.db.Model(&models.WebhookEvent{}).Where("subject_id = ?", id).Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}

	bank := e.create("bank", e.body("100000", sandbox.AccountStaysRequested)).created(t, models.StatusRequested)
	bankRef := models.VendorReferenceFor(uuid.MustParse(bank.ID))
	e.create("wallet", e.ewalletBody("50000", "gopay", "081234567890")).created(t, models.StatusSuccess)
	ew := e.create("ewallet", e.ewalletBody("60000", "bca", sandbox.AccountStaysRequested)).created(t, models.StatusRequested)
	ewRef := models.VendorReferenceFor(uuid.MustParse(ew.ID))

	// Unknown reference, and simbank's payout reported by simwallet.
	before := e.snapshot()
	callback(sandbox.SimBank, "pd-"+uuid.NewString(), "SUCCESS", "").expect(t, http.StatusNotFound, "disbursement not found")
	callback(sandbox.SimWallet, bankRef, "SUCCESS", "").expect(t, http.StatusNotFound, "disbursement not found")
	e.wantStatus(bank.ID, models.StatusRequested)
	e.unchanged(before)

	// Final at the vendor first: a callback is applied as the vendor's
	// status query confirms it.
	if err := e.sim.Vendor(sandbox.SimBank).Complete(ctxb, bankRef, vendors.PayoutSuccess, ""); err != nil {
		t.Fatal(err)
	}
	if err := e.sim.Vendor(sandbox.SimWallet).Complete(ctxb, ewRef, vendors.PayoutFailed, "recipient wallet closed"); err != nil {
		t.Fatal(err)
	}
	callback(sandbox.SimBank, bankRef, "SUCCESS", "").expect(t, http.StatusOK, "")
	e.wantStatus(bank.ID, models.StatusSuccess)
	callback(sandbox.SimWallet, ewRef, "FAILED", "recipient wallet closed").expect(t, http.StatusOK, "")
	e.wantStatus(ew.ID, models.StatusFailed)
	paid, failed := e.snapshot(), [2]int64{events(bank.ID), events(ew.ID)}
	trails := [2][]string{e.trail(bank.ID), e.trail(ew.ID)}
	if failed != [2]int64{1, 1} {
		t.Fatalf("webhook events %v, want one per final payout", failed)
	}

	for _, again := range []struct{ vendor, ref, status, reason string }{
		{sandbox.SimBank, bankRef, "SUCCESS", ""},
		{sandbox.SimBank, bankRef, "FAILED", "late contradiction"},
		{sandbox.SimWallet, ewRef, "FAILED", "recipient wallet closed"},
		{sandbox.SimWallet, ewRef, "SUCCESS", ""},
	} {
		callback(again.vendor, again.ref, again.status, again.reason).expect(t, http.StatusOK, "")
	}
	e.wantStatus(bank.ID, models.StatusSuccess)
	e.wantStatus(ew.ID, models.StatusFailed)
	if got := [2]int64{events(bank.ID), events(ew.ID)}; got != failed {
		t.Fatalf("webhook events %v after repeated callbacks, were %v", got, failed)
	}
	if got := [2][]string{e.trail(bank.ID), e.trail(ew.ID)}; strings.Join(got[0], " ") != strings.Join(trails[0], " ") ||
		strings.Join(got[1], " ") != strings.Join(trails[1], " ") {
		t.Fatalf("trails changed: %v, were %v", got, trails)
	}
	e.unchanged(paid)
	var late int64
	e.db.Model(&models.DisbursementLateResult{}).Count(&late)
	if late != 0 {
		t.Fatalf("%d late results recorded for callbacks the vendor's status does not confirm", late)
	}
	e.wantWallet(e.wallet, 900_000, 0)
	e.wantWallet(e.ewallet, 1_000_000-50_000, 0)
}

// Every magic account number of the sandbox vendors, on both of them,
// through the API and the real worker: refusals at inquiry store nothing;
// a rejected submit fails at once; the rest are paid by the worker's
// status checks (the vendor pays 300 ms after accepting), fail later with
// a reason, wait for an operator, or survive a lost submit answer paid
// once. Each replay then answers by the stored status.
func TestDisbursementMagicAccountsThroughTheWorker(t *testing.T) {
	t.Parallel()
	e := workerSetup(t, payoutSetup{completeAfter: 300 * time.Millisecond})
	for _, v := range []struct {
		vendor string
		wallet uuid.UUID
	}{{sandbox.SimBank, e.wallet}, {sandbox.SimWallet, e.ewallet}} {
		t.Run(v.vendor, func(t *testing.T) {
			e := e.sub(t)
			body := func(account string) payoutBody {
				return payoutBody{wallet: v.wallet.String(), amount: "100000", bank: "bca", account: account, transferType: "BIFAST"}
			}
			key := func(account string) string { return v.vendor + "-" + account }

			before := e.snapshot()
			for account, want := range map[string]struct {
				status int
				msg    string
			}{
				sandbox.AccountInactive:    {http.StatusUnprocessableEntity, "bank account is inactive"},
				sandbox.AccountUnresolved:  {http.StatusUnprocessableEntity, "bank account verification failed"},
				sandbox.AccountInquiryDown: {http.StatusServiceUnavailable, gatewayDownMsg},
			} {
				e.quote(body(account)).expect(t, want.status, want.msg)
				e.create(key(account), body(account)).expect(t, want.status, want.msg)
			}
			e.unchanged(before)

			e.create(key(sandbox.AccountSubmitRejected), body(sandbox.AccountSubmitRejected)).
				expect(t, http.StatusServiceUnavailable, "Vendor payout request failed")
			rejected := e.byKey(key(sandbox.AccountSubmitRejected))
			e.wantStatus(rejected.ID.String(), models.StatusFailed)

			accepted := map[string]string{} // account → id
			for _, account := range []string{sandbox.AccountFailsLater, sandbox.AccountStaysRequested, sandbox.AccountFirstSubmitLost, "1234567890"} {
				r := e.create(key(account), body(account))
				r.expect(t, http.StatusCreated, "")
				d := r.disbursement(t)
				if account != sandbox.AccountFirstSubmitLost && d.Status != string(models.StatusRequested) {
					t.Fatalf("%s created as %s, want REQUESTED (the vendor pays after 300 ms)", account, d.Status)
				}
				accepted[account] = d.ID
			}
			e.eventually(accepted[sandbox.AccountFailsLater], models.StatusFailed)
			e.eventually(accepted[sandbox.AccountFirstSubmitLost], models.StatusSuccess)
			e.eventually(accepted["1234567890"], models.StatusSuccess)
			if rec := e.get(accepted[sandbox.AccountFailsLater]).disbursement(t); rec.FailedReason == nil || *rec.FailedReason == "" {
				t.Fatalf("failed later without a reason: %+v", rec)
			}
			if n := e.submitCalls(accepted[sandbox.AccountFirstSubmitLost]); n != 1 {
				t.Fatalf("the payout whose answer was lost was submitted %d times", n)
			}

			// Stays REQUESTED through the worker's checks until completed by hand.
			stays := accepted[sandbox.AccountStaysRequested]
			time.Sleep(1500 * time.Millisecond) // past the first status checks
			e.wantStatus(stays, models.StatusRequested)
			if _, err := e.svc.CompleteSandbox(ctxb, uuid.MustParse(stays), vendors.PayoutSuccess, ""); err != nil {
				t.Fatal(err)
			}
			e.wantStatus(stays, models.StatusSuccess)

			for account, want := range map[string]int{
				sandbox.AccountSubmitRejected: http.StatusServiceUnavailable, sandbox.AccountFailsLater: http.StatusServiceUnavailable,
				sandbox.AccountStaysRequested: http.StatusOK, sandbox.AccountFirstSubmitLost: http.StatusOK, "1234567890": http.StatusOK,
			} {
				msg := ""
				if want == http.StatusServiceUnavailable {
					msg = "Vendor payout request failed"
				}
				e.create(key(account), body(account)).replayed(t, want, msg)
			}
			// Three paid, two failed with their locks released.
			e.wantWallet(v.wallet, 700_000, 0)
			e.reconciled()
		})
	}
}

// VERIFIED → CANCELLED with the worker running: an operator cancels a
// payout whose submit task is queued but not yet run (its queue paused);
// when the task runs it finds the payout cancelled and leaves it: the
// vendor is never asked, the lock is released, and a replay is 409.
func TestDisbursementCancelledBeforeTheWorkerSubmits(t *testing.T) {
	t.Parallel()
	e := workerSetup(t, payoutSetup{submitWait: time.Millisecond})
	inspector := asynq.NewInspector(e.queueOpt)
	t.Cleanup(func() { inspector.Close() })
	queue := e.queuePrefix + tasks.QueueCritical
	if err := inspector.PauseQueue(queue); err != nil {
		t.Fatal(err)
	}
	p := e.body("100000", "1234567890")
	d := e.create("k", p).created(t, models.StatusVerified)
	e.wantWallet(e.wallet, 1_000_000, 100_000)

	if _, err := e.svc.Cancel(ctxb, uuid.MustParse(d.ID), "ops@example"); err != nil {
		t.Fatal(err)
	}
	if err := inspector.UnpauseQueue(queue); err != nil {
		t.Fatal(err)
	}
	taskID := tasks.TypePayoutSubmit + ":" + d.ID
	deadline := time.Now().Add(20 * time.Second)
	for {
		info, err := inspector.GetTaskInfo(queue, taskID)
		if err == nil && info.State == asynq.TaskStateCompleted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the submit task did not complete: %+v, %v", info, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.wantStatus(d.ID, models.StatusCancelled)
	e.wantTrail(d.ID, "→VERIFIED", "VERIFIED→CANCELLED")
	if n := e.submitCalls(d.ID); n != 0 {
		t.Fatalf("the vendor was asked to pay a cancelled payout %d times", n)
	}
	e.create("k", p).replayed(t, http.StatusConflict, "disbursement was cancelled")
	e.wantWallet(e.wallet, 1_000_000, 0)
	e.reconciled()
}
