package api

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/xendit"
	"github.com/payoutd/payoutd/vendors/xendit/xenditsim"
)

// Xendit end to end: the api and a real worker against xenditsim over
// HTTP, its webhooks reaching POST /vendor-callbacks/xendit on a real
// socket, on the test database.
func TestXenditOverHTTP(t *testing.T) {
	t.Parallel()
	e := workerSetup(t, payoutSetup{xendit: true, completeAfter: 300 * time.Millisecond})
	started := time.Now()
	xbody := func(amount, account string) payoutBody {
		return payoutBody{wallet: e.xwallet.String(), amount: amount, bank: "bca", account: account, transferType: "BIFAST", holderName: "Budi Santoso"}
	}
	ref := func(id string) string { return models.VendorReferenceFor(uuid.MustParse(id)) }
	balance0, _ := e.balance(e.xwallet)

	// Quote: no real-time inquiry at Xendit (no inquiry bank here): the
	// name is the merchant's, and without one the quote is refused.
	q := e.quote(xbody("100000", "1234567890"))
	if q.status != http.StatusOK {
		t.Fatalf("quote: %d %s", q.status, q.body)
	}
	if d := q.disbursement(t); d.AccountHolderName != "Budi Santoso" {
		t.Errorf("quote holder name %q, want the merchant's", d.AccountHolderName)
	}
	nameless := xbody("100000", "1234567890")
	nameless.holderName = ""
	e.quote(nameless).expect(t, http.StatusUnprocessableEntity, "account_holder_name is required for this recipient")

	// SUCCESS.
	ok := e.create("xnd-ok", xbody("100000", "1234567890"))
	if ok.status/100 != 2 {
		t.Fatalf("create: %d %s", ok.status, ok.body)
	}
	okID := ok.disbursement(t).ID
	e.eventually(okID, models.StatusSuccess)

	// FAILED (a magic account), money back.
	failed := e.create("xnd-fail", xbody("100000", sandbox.AccountFailsLater))
	if failed.status/100 != 2 {
		t.Fatalf("create: %d %s", failed.status, failed.body)
	}
	failedID := failed.disbursement(t).ID
	e.eventually(failedID, models.StatusFailed)

	// The first answer lost: resolved by a status query, paid once.
	lost := e.create("xnd-lost", xbody("100000", sandbox.AccountFirstSubmitLost))
	if lost.status/100 != 2 {
		t.Fatalf("create: %d %s", lost.status, lost.body)
	}
	lostID := lost.disbursement(t).ID
	e.eventually(lostID, models.StatusSuccess)
	if n := e.xsim.Payouts(ref(lostID)); n != 1 {
		t.Errorf("the lost-answer payout was created %d times at Xendit, want 1", n)
	}

	// Returned after success: REVERSED → RETURNED, money back.
	ret := e.create("xnd-ret", xbody("100000", sandbox.AccountReturnedLater))
	if ret.status/100 != 2 {
		t.Fatalf("create: %d %s", ret.status, ret.body)
	}
	retID := ret.disbursement(t).ID
	e.eventually(retID, models.StatusReturned)
	t.Logf("success, failure, lost answer and return done after %v", time.Since(started))

	// A payout that stays ACCEPTED at Xendit, for forged and unconfirmed
	// webhooks.
	stuck := e.create("xnd-stuck", xbody("100000", xenditsim.AccountStaysAccepted))
	if stuck.status/100 != 2 {
		t.Fatalf("create: %d %s", stuck.status, stuck.body)
	}
	stuckID := stuck.disbursement(t).ID
	deadline := time.Now().Add(20 * time.Second)
	for e.xsim.Payouts(ref(stuckID)) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	before := e.status(stuckID)
	hook, _ := json.Marshal(map[string]any{"event": "payout.succeeded", "business_id": "b", "created": "2026-01-01T00:00:00.000Z",
		"data": map[string]any{"id": "disb-forged", "reference_id": ref(stuckID), "status": "SUCCEEDED", "amount": 97500,
			"currency": "IDR", "channel_code": "ID_BCA", "created": "2026-01-01T00:00:00.000Z", "updated": "2026-01-01T00:00:00.000Z",
			"channel_properties": map[string]any{"account_number": xenditsim.AccountStaysAccepted}}})
	forged := e.do(request{method: http.MethodPost, path: "/vendor-callbacks/xendit", body: hook,
		headers: map[string]string{xendit.CallbackTokenHeader: "not-the-token", "Content-Type": "application/json"}})
	if forged.status != http.StatusUnauthorized {
		t.Errorf("forged webhook: %d %s, want 401", forged.status, forged.body)
	}
	genuine := e.do(request{method: http.MethodPost, path: "/vendor-callbacks/xendit", body: hook,
		headers: map[string]string{xendit.CallbackTokenHeader: xenditToken, "Content-Type": "application/json"}})
	t.Logf("genuine-token webhook Xendit does not confirm: %d %s", genuine.status, genuine.body)
	if got := e.status(stuckID); got != before || got == models.StatusSuccess {
		t.Errorf("after webhooks Xendit does not confirm: %s, was %s", got, before)
	}

	// Money: the success and the lost-answer payout are spent; the failure
	// came back whole, the return without its fee (refund-fee-on-return
	// is off by default); the stuck one is still held.
	balance, locked := e.balance(e.xwallet)
	t.Logf("xendit wallet %s → %s (locked %s)", balance0, balance, locked)
	if balance != models.Rupiah(797_500) || locked != models.Rupiah(100_000) {
		t.Errorf("xendit wallet: balance %s locked %s, want 797500 and 100000", balance, locked)
	}
	e.reconciled()
	t.Logf("done after %v", time.Since(started))
}
