package payouts

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/internal/metrics"
	"github.com/payoutd/payoutd/internal/metrics/metricstest"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// A payout created, submitted and completed counts each committed
// transition once (the create from ""), and its vendor calls through the
// counting registry, which still lets CompleteSandbox complete it.
func TestTransitionsCounted(t *testing.T) {
	f := newFixture(t, models.Rupiah(1_000_000))
	m := metrics.New()
	svc := New(Options{DB: f.db, Vendors: vendors.Observed(sandbox.Registry(sandbox.Options{}), m), Metrics: m})
	ctx := context.Background()

	created, err := svc.Create(ctx, f.client, CreateRequest{IdempotencyKey: uuid.NewString(), Params: Params{WalletID: f.wallet.ID,
		Amount: models.Rupiah(100_000), BankCode: "bca", AccountNo: sandbox.AccountStaysRequested, TransferType: models.BIFAST}})
	if err != nil {
		t.Fatal(err)
	}
	id := created.Disbursement.ID
	if err := svc.Submit(ctx, id); err != nil {
		t.Fatal(err)
	}
	if got := f.statusOf(id); got != models.StatusRequested {
		t.Fatalf("after submit %s, want REQUESTED", got)
	}
	d, err := svc.CompleteSandbox(ctx, id, vendors.PayoutSuccess, "")
	if err != nil {
		t.Fatalf("CompleteSandbox through the counting registry: %v", err)
	}
	if d.Status != models.StatusSuccess {
		t.Fatalf("after completion %s, want SUCCESS", d.Status)
	}

	for _, tr := range []struct {
		from, to models.DisbursementStatus
	}{{"", models.StatusVerified}, {models.StatusVerified, models.StatusRequested}, {models.StatusRequested, models.StatusSuccess}} {
		if n := metricstest.Value(t, m, "payoutd_disbursement_transitions_total", "from", string(tr.from), "to", string(tr.to)); n != 1 {
			t.Errorf("transition %q → %s counted %v times, want 1", tr.from, tr.to, n)
		}
	}
	for _, call := range []string{"inquire", "submit", "status"} {
		if n := metricstest.Value(t, m, "payoutd_vendor_calls_total", "vendor", "simbank", "call", call, "outcome", "ok"); n != 1 {
			t.Errorf("simbank %s ok counted %v times, want 1", call, n)
		}
	}

	// A refused move is not counted.
	if _, err := svc.Cancel(ctx, id, "ops"); err == nil {
		t.Fatal("cancelled a SUCCESS payout")
	}
	if n := metricstest.Value(t, m, "payoutd_disbursement_transitions_total", "from", "SUCCESS", "to", "CANCELLED"); n != 0 {
		t.Errorf("a refused move counted %v times", n)
	}
}
