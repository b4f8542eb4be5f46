package api

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/signature"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/vendorsim"
)

// vendorCallback posts a callback signed with the simulator's callback key.
func (e *payoutEnv) vendorCallback(vendor, ref string, status vendors.PayoutStatus, reason string) response {
	e.t.Helper()
	body, _ := json.Marshal(map[string]string{"reference": ref, "status": string(status), "failure_reason": reason})
	return e.do(request{method: http.MethodPost, path: "/vendor-callbacks/" + vendor, body: body,
		headers: map[string]string{vendorsim.SignatureHeader: signature.Sign(vendorSimCallbackSecret, body, e.now())}})
}

// A validly signed callback is only a hint: the service asks the vendor's
// status API and applies what that says. A callback saying SUCCESS for a
// payout the vendor still reports in flight finalises nothing (a forged or
// stale callback cannot pay out); while the status API cannot answer, the
// callback is answered 503 so that the vendor sends it again, and its
// resend is applied once the status API is back.
func TestDisbursementCallbackIsConfirmedWithTheVendor(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{vendorsim: true})
	d := e.create("k", e.body("100000", sandbox.AccountStaysRequested)).created(t, models.StatusRequested)
	ref := models.VendorReferenceFor(uuid.MustParse(d.ID))

	e.vendorCallback(sandbox.SimBank, ref, vendors.PayoutSuccess, "").expect(t, http.StatusOK, "")
	e.wantStatus(d.ID, models.StatusRequested)
	e.wantWallet(e.wallet, 1_000_000, 100_000)
	e.vendorCallback(sandbox.SimBank, ref, vendors.PayoutFailed, "forged").expect(t, http.StatusOK, "")
	e.wantStatus(d.ID, models.StatusRequested)
	e.wantWallet(e.wallet, 1_000_000, 100_000)

	e.statusDown.Store(true)
	if err := e.sim.Vendor(sandbox.SimBank).Complete(ctxb, ref, vendors.PayoutSuccess, ""); err != nil {
		t.Fatal(err)
	}
	e.vendorCallback(sandbox.SimBank, ref, vendors.PayoutSuccess, "").
		expect(t, http.StatusServiceUnavailable, models.ErrGatewayUnavailable.Error())
	e.wantStatus(d.ID, models.StatusRequested)
	e.statusDown.Store(false)
	// No poll runs here (inline queue): the simulator's own resend does it.
	e.eventually(d.ID, models.StatusSuccess)
	e.wantWallet(e.wallet, 900_000, 0)
	e.reconciled()
}

// 1000000008 over the simulator, with the real worker: paid, then returned
// by the bank. The payout ends RETURNED (GET, replay 200 with the current
// body), the net comes back to the wallet as its own ledger movement, the
// fee is kept unless the client's settings refund it, and the merchant
// gets disbursement.success then disbursement.returned.
func TestDisbursementReturnedAfterSuccess(t *testing.T) {
	t.Parallel()
	for name, refund := range map[string]bool{"fee kept": false, "fee refunded": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := workerSetup(t, payoutSetup{vendorsim: true, completeAfter: 200 * time.Millisecond})
			if refund {
				e.update(map[string]string{"refund-fee-on-return": "true"})
			}
			p := e.body("100000", sandbox.AccountReturnedLater)
			// REQUESTED, or already SUCCESS when the machine is slow enough
			// that the vendor paid it (200 ms) before the create's wait woke.
			d := e.create("k", p).created(t, models.StatusRequested, models.StatusSuccess)
			e.eventually(d.ID, models.StatusReturned)
			e.wantTrail(d.ID, "→VERIFIED", "VERIFIED→REQUESTED", "REQUESTED→SUCCESS", "SUCCESS→RETURNED")

			got := e.get(d.ID).fields(t)
			if got["status"] != "RETURNED" || got["returned_at"] == nil || got["completed_at"] == nil ||
				got["failed_reason"] != "recipient bank returned the transfer" {
				t.Fatalf("GET %v", got)
			}
			wantUTC(t, "returned_at", got["returned_at"])
			replay := e.create("k", p)
			replay.replayed(t, http.StatusOK, "")
			if r := replay.disbursement(t); r.Status != "RETURNED" {
				t.Fatalf("replay body %+v", r)
			}
			if refund {
				e.wantWallet(e.wallet, 1_000_000, 0)
			} else {
				e.wantWallet(e.wallet, 1_000_000-2_500, 0)
			}

			var events []models.WebhookEvent
			if err := e.db.Where("subject_id = ?", d.ID).Order("sequence").Find(&events).Error; err != nil {
				t.Fatal(err)
			}
			if len(events) != 2 || events[0].Event != "disbursement.success" || events[1].Event != "disbursement.returned" {
				t.Fatalf("webhook events %+v, want disbursement.success then disbursement.returned", events)
			}
			var returned struct {
				Event string         `json:"event"`
				Data  map[string]any `json:"data"`
			}
			if err := json.Unmarshal([]byte(events[1].Body), &returned); err != nil {
				t.Fatal(err)
			}
			if returned.Data["status"] != "RETURNED" || returned.Data["returnedAt"] != got["returned_at"] ||
				returned.Data["failedReason"] != "recipient bank returned the transfer" || returned.Data["netAmount"] != "97500" {
				t.Fatalf("disbursement.returned data %v", returned.Data)
			}
			e.reconciled()
		})
	}
}
