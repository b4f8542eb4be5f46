package api

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// With a submit wait, the API submits a create inline: the merchant gets
// the vendor's answer although no worker runs, no task is queued (the
// payout is done; the sweep stays the fallback), the answer is what a GET
// shows afterwards, the wait ends without a re-read of the row, and a
// payout the vendor leaves pending is answered as such (REQUESTED), one
// it refuses with the spec's error.
func TestCreateSubmitsInlineWhileTheMerchantWaits(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{noSubmit: true, inlineSubmit: true, submitWait: time.Minute})
	paidAnswer := e.create("paid", e.body("100000", "1234567890"))
	paid := paidAnswer.created(t, models.StatusSuccess)
	pending := e.create("pending", e.body("100000", sandbox.AccountStaysRequested)).created(t, models.StatusRequested)
	e.create("refused", e.body("100000", sandbox.AccountSubmitRejected)).expect(t, http.StatusServiceUnavailable, "Vendor payout request failed")
	if ids := e.runSubmits(); len(ids) != 0 {
		t.Fatalf("submit tasks queued for %v; every inline submit finished its payout", ids)
	}
	got := e.get(paid.ID).fields(t)
	for k, v := range paidAnswer.fields(t) {
		if k != "idempotency_key" && fmt.Sprint(got[k]) != fmt.Sprint(v) {
			t.Errorf("%s: the create answered %v, GET shows %v", k, v, got[k])
		}
	}
	e.wantStatus(paid.ID, models.StatusSuccess)
	e.wantStatus(pending.ID, models.StatusRequested)
	for _, id := range []string{paid.ID, pending.ID} {
		if n := e.submitCalls(id); n != 1 {
			t.Fatalf("%s asked of the vendor %d times, want once", id, n)
		}
	}
	if n := e.server.dispatch.WaitRechecks(); n != 0 {
		t.Fatalf("%d re-reads while waiting; the inline submit should have answered", n)
	}
	e.wantWallet(e.wallet, 1_000_000-100_000, 100_000)
	e.reconciled()
}

// An inline submit whose vendor answer is lost queues the task: the
// worker resolves the claimed attempt by asking the vendor, the merchant
// (woken by that commit) gets its result, and the vendor is asked to pay
// once.
func TestInlineSubmitLostAnswerGoesToTheWorker(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{noSubmit: true, inlineSubmit: true, submitWait: time.Minute})
	answer := make(chan response, 1)
	go func() { answer <- e.create("lost", e.body("100000", sandbox.AccountFirstSubmitLost)) }()
	var ran []uuid.UUID
	for deadline := time.Now().Add(30 * time.Second); len(ran) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no submit task was queued for the lost answer")
		}
		ran = e.runSubmits()
	}
	d := (<-answer).created(t, models.StatusSuccess)
	if len(ran) != 1 || ran[0].String() != d.ID {
		t.Fatalf("ran submit tasks %v, want %s once", ran, d.ID)
	}
	if n := e.submitCalls(d.ID); n != 1 {
		t.Fatalf("asked of the vendor %d times, want once", n)
	}
	e.reconciled()
}

// With a real worker running beside the inline submits, every payout is
// asked of the vendor once and every merchant gets the vendor's answer.
func TestInlineSubmitBesideTheWorkerPaysOnce(t *testing.T) {
	t.Parallel()
	e := workerSetup(t, payoutSetup{inlineSubmit: true, funds: "10000000"})
	answers := e.burst(16, func(i int) (string, payoutBody) {
		return fmt.Sprintf("race-%d", i), e.body("100000", "1234567890")
	})
	for _, r := range answers {
		d := r.created(t, models.StatusSuccess)
		if n := e.submitCalls(d.ID); n != 1 {
			t.Fatalf("%s asked of the vendor %d times, want once", d.ID, n)
		}
	}
	e.wantWallet(e.wallet, 10_000_000-16*100_000, 0)
	e.reconciled()
}
