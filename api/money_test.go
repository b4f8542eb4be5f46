package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payments"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// Audit point 3, the reproduction: 94 settled payments of the largest
// price (9,999,999,999,999 IDR) into one wallet overflowed int64. Now the
// wallet stops at its maximum balance: the settlements that would pass it
// are refused and recorded for operators, the sweep still settles another
// merchant's payment due after them, the balance read answers 200, and
// reconcile lists the refused settlements and exits non-zero without
// crashing. A second sweep does not retry them.
func TestSettlementOverflowIsRefusedNotA500(t *testing.T) {
	t.Parallel()
	clock := &testClock{}
	b := setup(t, setupOptions{now: clock.Now})
	ctx := context.Background()
	store := models.NewStore(b.db)
	rich, other := b.newMerchant(), b.newMerchant()
	richWallet := b.newWallet(rich.id, "Main", sandbox.SimBank, false)
	otherWallet := b.newWallet(other.id, "Main", sandbox.SimBank, false)
	pay := func(m merchant, price models.Amount) uuid.UUID {
		t.Helper()
		c, err := store.FindClient(ctx, m.id)
		if err != nil {
			t.Fatal(err)
		}
		p, err := b.server.payments.Create(ctx, c, payments.CreateRequest{Price: price, PayerID: "p", Flow: models.PaymentFlowEmbed, ExpiresIn: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.server.payments.Simulate(ctx, p.ID, payments.ResultSuccess); err != nil {
			t.Fatal(err)
		}
		return p.ID
	}
	const n = 94
	var richPayments []uuid.UUID
	for range n {
		richPayments = append(richPayments, pay(rich, payments.MaxPrice))
	}
	clock.Advance(time.Second) // settles after the rich merchant's, in the same sweep
	small := pay(other, models.Rupiah(150_000))
	clock.Advance(5 * 24 * time.Hour)

	report, err := b.server.payments.Sweep(ctx)
	if err != nil {
		t.Errorf("sweep: %v", err)
	}
	if p, _ := b.server.payments.Get(ctx, small); p == nil || p.SettledAt == nil {
		t.Errorf("the other merchant's payment, due after the failing ones, was not settled: %+v (sweep %+v)", p, report)
	}
	for _, w := range []struct {
		m  merchant
		id uuid.UUID
	}{{rich, richWallet}, {other, otherWallet}} {
		r := b.do(request{path: "/api/v3/wallets/" + w.id.String() + "/balance", apiKey: w.m.apiKey, sign: w.m.signingSecret})
		r.expect(t, http.StatusOK, "")
	}
	wallet, err := store.FindWallet(ctx, richWallet)
	if err != nil || wallet.Balance > models.MaxBalance || wallet.Balance <= 0 {
		t.Fatalf("rich wallet %+v %v", wallet, err)
	}
	settled := int(wallet.Balance / (payments.MaxPrice - payments.MaxPrice.PercentBps(models.DefaultPaymentFeeBps)))
	if report.Settled != settled+1 || report.Failed != n-settled {
		t.Errorf("sweep report %+v, want %d settled and %d refused", report, settled+1, n-settled)
	}
	var refused []uuid.UUID
	for _, id := range richPayments {
		p, _ := b.server.payments.Get(ctx, id)
		if p.SettledAt == nil {
			if p.SettlementError == nil || !strings.Contains(*p.SettlementError, "maximum") {
				t.Fatalf("refused settlement of %s recorded as %v", id, p.SettlementError)
			}
			refused = append(refused, id)
		}
	}
	if len(refused) != n-settled {
		t.Fatalf("%d refused settlements recorded, want %d", len(refused), n-settled)
	}
	if again, err := b.server.payments.Sweep(ctx); err != nil || again != (payments.SweepReport{}) {
		t.Errorf("second sweep %+v %v: a refused settlement must wait for an operator", again, err)
	}

	var out, errOut bytes.Buffer
	code := admin.Run(ctx, b.admin, []string{"reconcile"}, &out, &errOut)
	if code != admin.ExitInvariant || !strings.Contains(out.String(), refused[0].String()) {
		t.Errorf("reconcile exit %d, stdout %s, stderr %s", code, out.String(), errOut.String())
	}
	out.Reset()
	if code := admin.Run(ctx, b.admin, []string{"payment", "show", "--id", refused[0].String()}, &out, &errOut); code != 0 {
		t.Fatalf("payment show exit %d: %s", code, errOut.String())
	}
	var shown map[string]any
	if err := json.Unmarshal(out.Bytes(), &shown); err != nil || shown["settlement_error"] == nil || shown["settled_at"] != nil {
		t.Errorf("payment show: %s %v", out.String(), err)
	}
}

// Audit point 10: no Indonesian rail moves fractions of a rupiah, so a
// disbursement amount with one is refused on quote and create (400 naming
// amount); trailing zeros are still whole rupiah.
func TestDisbursementAmountIsWholeRupiah(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{})
	const msg = "amount must be a whole number of rupiah"
	for _, amount := range []string{"100000.0001", "100000.5", "12499.9999"} {
		e.quote(e.body(amount, "1234567890")).expect(t, http.StatusBadRequest, msg)
		e.create("fraction-"+amount, e.body(amount, "1234567890")).expect(t, http.StatusBadRequest, msg)
	}
	for i, amount := range []string{"100000.00", "100000.0000"} {
		r := e.quote(e.body(amount, "1234567890"))
		r.expect(t, http.StatusOK, "")
		if got := r.fields(t); got["net_amount"] != "97500" {
			t.Fatalf("quote of %s: %v", amount, got)
		}
		e.create("whole-"+string(rune('a'+i)), e.body(amount, "1234567890")).expect(t, http.StatusCreated, "")
	}
}
