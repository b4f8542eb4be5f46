package api

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors/xendit/xenditsim"
)

// A Xendit webhook, not a poll, moves a payout. The payout stays ACCEPTED
// at Xendit (xenditsim.AccountStaysAccepted), so the service holds it
// REQUESTED; every poll is put off by an hour, far past the test. Then
// Xendit completes it: its webhook reaches /vendor-callbacks/xendit over a
// real socket with the callback token, the service confirms it with a get
// by reference_id, and the payout is final, no poll having run. Both ways:
// SUCCEEDED → SUCCESS (the money spent), FAILED → FAILED (the money back).
func TestXenditWebhookMovesPayout(t *testing.T) {
	t.Parallel()
	e := workerSetup(t, payoutSetup{xendit: true, completeAfter: 300 * time.Millisecond, pollsLater: time.Hour})
	for _, tt := range []struct {
		name, status, failureCode string
		want                      models.DisbursementStatus
		spent                     models.Amount // of the wallet, in the end
	}{
		{"succeeded", "SUCCEEDED", "", models.StatusSuccess, models.Rupiah(100_000)},
		{"failed", "FAILED", xenditsim.FailureRejectedByChannel, models.StatusFailed, 0},
	} {
		balance0, _ := e.balance(e.xwallet)
		id := e.requestedAtXendit(t, "xnd-hook-"+tt.name, "100000")
		ref := models.VendorReferenceFor(uuid.MustParse(id))

		checks := e.statusChecks.Load()
		if err := e.xsim.Complete(ref, tt.status, tt.failureCode); err != nil {
			t.Fatal(err)
		}
		e.eventually(id, tt.want)
		d, err := e.svc.Get(context.Background(), uuid.MustParse(id))
		if err != nil {
			t.Fatal(err)
		}
		if d.Checks != 0 {
			t.Errorf("%s: %d polls ran, want none: the webhook alone should move it", tt.name, d.Checks)
		}
		if e.statusChecks.Load() == checks {
			t.Errorf("%s: the webhook was applied without asking Xendit for the payout", tt.name)
		}
		if e.xsim.SubmitCalls(ref) != 1 {
			t.Errorf("%s: Xendit was asked to pay %d times, want once", tt.name, e.xsim.SubmitCalls(ref))
		}
		if tt.want == models.StatusFailed && (d.FailedReason == nil || *d.FailedReason == "") {
			t.Errorf("%s: no failed_reason", tt.name)
		}
		if balance, locked := e.balance(e.xwallet); balance != balance0-tt.spent || locked != 0 {
			t.Errorf("%s: wallet %s → %s (locked %s), want %s spent", tt.name, balance0, balance, locked, tt.spent)
		}
	}
	e.reconciled()
}

// requestedAtXendit creates a payout to the account that stays ACCEPTED at
// Xendit and waits until the service holds it REQUESTED, Xendit having
// accepted it. It returns the disbursement's id.
func (e *payoutEnv) requestedAtXendit(t *testing.T, key, amount string) string {
	t.Helper()
	r := e.create(key, payoutBody{wallet: e.xwallet.String(), amount: amount, bank: "bca",
		account: xenditsim.AccountStaysAccepted, transferType: "BIFAST", holderName: "Budi Santoso"})
	if r.status/100 != 2 {
		t.Fatalf("create %s: %d %s", key, r.status, r.body)
	}
	id := r.disbursement(t).ID
	e.eventually(id, models.StatusRequested)
	return id
}
