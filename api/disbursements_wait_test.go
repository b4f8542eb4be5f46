package api

import (
	"fmt"
	"testing"
	"time"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// With a submit wait, the API submits a create inline: the merchant gets
// the vendor's answer although no worker picked the task up, the task then
// does nothing (the vendor is asked to pay once), the wait ends on the
// commit rather than on a re-read of the row, and a payout the vendor
// leaves pending is answered as such (REQUESTED).
func TestCreateSubmitsInlineWhileTheMerchantWaits(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{noSubmit: true, inlineSubmit: true, submitWait: time.Minute})
	paid := e.create("paid", e.body("100000", "1234567890")).created(t, models.StatusSuccess)
	pending := e.create("pending", e.body("100000", sandbox.AccountStaysRequested)).created(t, models.StatusRequested)
	if n := len(e.runSubmits()); n != 2 {
		t.Fatalf("%d submit tasks queued, want 2 (the fallback stays)", n)
	}
	e.wantStatus(paid.ID, models.StatusSuccess)
	e.wantStatus(pending.ID, models.StatusRequested)
	for _, id := range []string{paid.ID, pending.ID} {
		if n := e.submitCalls(id); n != 1 {
			t.Fatalf("%s asked of the vendor %d times, want once", id, n)
		}
	}
	if n := e.server.payouts.WaitRechecks(); n != 0 {
		t.Fatalf("%d re-reads while waiting; the commit should have answered", n)
	}
	e.wantWallet(e.wallet, 1_000_000-100_000, 100_000)
	e.reconciled()
}

// With a real worker racing the inline submits for the same payouts (its
// tasks are queued at create), every payout is asked of the vendor once
// and every merchant gets the vendor's answer, woken by whichever commit
// came first.
func TestInlineSubmitRacingTheWorkerPaysOnce(t *testing.T) {
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
