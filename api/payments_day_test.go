package api

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payments"
)

// A scripted day: payments paid, one expired, one failed; a payout before
// settlement is refused (paid is not settled), after settlement it is paid;
// reconcile is clean at every step and the accounts add up.
func TestPaymentsSettleThenPayOut(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{funds: "none"})
	pay := func(price string) uuid.UUID {
		var created struct {
			Data struct {
				OrderID string `json:"orderId"`
			} `json:"data"`
		}
		r := e.do(request{method: http.MethodPost, path: "/api/v1/payments", body: []byte(`{"price": ` + price + `, "playerId": "player-1"}`),
			apiKey: e.m.apiKey, timestamp: true})
		r.expect(t, http.StatusCreated, "")
		r.decode(t, &created)
		return uuid.MustParse(created.Data.OrderID)
	}
	ctx := context.Background()
	svc := e.server.payments
	paid := []uuid.UUID{pay("150000"), pay("200000")}
	expired, failed := pay("50000"), pay("30000")
	for _, id := range paid {
		if applied, err := svc.Simulate(ctx, id, payments.ResultSuccess); err != nil || applied != payments.AppliedNow {
			t.Fatalf("simulate: %s %v", applied, err)
		}
	}
	if _, err := svc.Simulate(ctx, failed, payments.ResultFailed); err != nil {
		t.Fatal(err)
	}
	e.reconciled()

	// Paid but not settled: nothing to pay out.
	e.create("before-settlement", e.body("100000", "1234567890")).expect(t, http.StatusPaymentRequired, "Insufficient balance")
	e.quote(e.body("100000", "1234567890")).expect(t, http.StatusPaymentRequired, "Insufficient balance")

	// Past expiry and the next business day (at most four days away).
	e.clock.Advance(4 * 24 * time.Hour)
	report, err := svc.Sweep(ctx)
	if err != nil || report.Expired != 1 || report.Settled != 2 {
		t.Fatalf("sweep %+v %v", report, err)
	}
	if p, _ := svc.Get(ctx, expired); p.Status != models.PaymentExpired {
		t.Fatalf("the unpaid payment is %s", p.Status)
	}
	net := models.Rupiah(150_000-1_050) + models.Rupiah(200_000-1_400)
	if balance, locked := e.balance(e.wallet); balance != net || locked != 0 {
		t.Fatalf("after settlement: balance %s locked %s, want %s", balance, locked, net)
	}
	e.reconciled()

	r := e.create("after-settlement", e.body("100000", "1234567890"))
	r.expect(t, http.StatusCreated, "")
	e.drain()
	e.wantStatus(r.disbursement(t).ID, models.StatusSuccess)
	if balance, _ := e.balance(e.wallet); balance != net-models.Rupiah(100_000) {
		t.Fatalf("after the payout: balance %s", balance)
	}
	report2, err := ledger.Reconcile(ctx, e.db, e.clock.Now())
	if err != nil || !report2.OK {
		t.Fatalf("reconcile at the end of the day: %+v %v", report2, err)
	}
	for account, want := range map[string]string{
		models.AccountAcquirerClearing:          "-350000.0000",
		models.AccountPlatformFees:              "4950.0000", // 1,050 + 1,400 settlement fees + 2,500 payout fee
		models.VendorClearingAccount("simbank"): "97500.0000",
	} {
		if got := report2.SystemAccounts[account]; got != want {
			t.Errorf("%s = %s, want %s", account, got, want)
		}
	}
}
