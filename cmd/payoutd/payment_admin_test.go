package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payments"
	"github.com/payoutd/payoutd/payouts"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/sandboxacquirer"
)

// openDB opens the CLI's database for the services a test drives
// beside the commands.
func (c *cli) openDB() *gorm.DB {
	c.t.Helper()
	db, err := database.Open(c.env["DATABASE_URL"])
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	})
	return db
}

// paymentsAt is the payment service on db with its clock at now() (the
// next business day calendar, as the worker runs it).
func paymentsAt(t *testing.T, db *gorm.DB, now func() time.Time) *payments.Service {
	t.Helper()
	acq, err := sandboxacquirer.New(sandboxacquirer.Options{Secret: "any"})
	if err != nil {
		t.Fatal(err)
	}
	return payments.New(payments.Options{DB: db, Acquirer: acq, Now: now})
}

func createPayment(t *testing.T, svc *payments.Service, client *models.Client, price int64, expiresIn time.Duration) uuid.UUID {
	t.Helper()
	p, err := svc.Create(context.Background(), client, payments.CreateRequest{Price: models.Rupiah(price), PayerID: "player-1",
		Flow: models.PaymentFlowEmbed, ExpiresIn: expiresIn})
	if err != nil {
		t.Fatal(err)
	}
	return p.ID
}

// `payment simulate` for a payment whose expired_at has passed, before the
// worker expired it, does not make it paid: the payment expires and the
// result is recorded late, for reconcile to name.
func TestAdminPaymentSimulateAfterExpiredAt(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	client := c.client(c.ok("client", "create", "--name", "Toko")["client_id"].(string))
	c.ok("wallet", "create", "--client", client.ID.String(), "--name", "Main", "--vendor", "simbank")
	minuteAgo := paymentsAt(t, c.openDB(), func() time.Time { return time.Now().Add(-2 * time.Minute) })
	id := createPayment(t, minuteAgo, client, 20_000, time.Minute) // expired a minute ago; nothing expired it

	out := c.ok("payment", "simulate", "--id", id.String(), "--status", "SUCCESS")
	if out["result"] != "recorded_late" || out["status"] != "EXPIRED" || out["paid_at"] != nil ||
		out["retrieval_reference_no"] != nil || out["settle_at"] != nil {
		t.Fatalf("simulate after expired_at printed %v", out)
	}
	report := c.ok("reconcile")
	warnings, _ := report["warnings"].([]any)
	if report["ok"] != true || len(warnings) != 1 || !strings.Contains(warnings[0].(string), id.String()) {
		t.Fatalf("reconcile does not name the late result: %v", report)
	}
}

// A scripted day through the commands and the services the worker runs:
// payments paid (by `payment simulate`), failed, expired and one paid too
// late; settlement on the next business day; payouts from the settled
// money, paid, rejected, failed later and one still in flight. Then
// `payoutd admin reconcile` exits 0 with ok, no problems, the late result
// as its only warning, and system accounts that add up to the day.
func TestAdminReconcileCleanAfterADay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCLI(t)
	client := c.client(c.ok("client", "create", "--name", "Toko Harian")["client_id"].(string))
	wallet := c.ok("wallet", "create", "--client", client.ID.String(), "--name", "Main", "--vendor", "simbank")["wallet_id"].(string)
	c.ok("wallet", "create", "--client", client.ID.String(), "--name", "E-wallets", "--vendor", "simwallet")
	db := c.openDB()
	today := paymentsAt(t, db, time.Now)

	paid := []uuid.UUID{createPayment(t, today, client, 150_000, time.Hour), createPayment(t, today, client, 200_000, time.Hour),
		createPayment(t, today, client, 75_000, time.Hour)}
	failed := createPayment(t, today, client, 50_000, time.Hour)
	unpaid := createPayment(t, today, client, 30_000, time.Hour)
	tooLate := createPayment(t, paymentsAt(t, db, func() time.Time { return time.Now().Add(-2 * time.Minute) }), client, 40_000, time.Minute)
	for _, id := range paid {
		if out := c.ok("payment", "simulate", "--id", id.String(), "--status", "SUCCESS"); out["result"] != "applied" {
			t.Fatalf("simulate: %v", out)
		}
	}
	c.ok("payment", "simulate", "--id", failed.String(), "--status", "FAILED")
	if out := c.ok("payment", "simulate", "--id", tooLate.String(), "--status", "SUCCESS"); out["result"] != "recorded_late" {
		t.Fatalf("simulate after expired_at: %v", out)
	}
	if r := c.ok("reconcile"); r["ok"] != true {
		t.Fatalf("reconcile before settlement: %v", r)
	}

	// The next business day is at most four days away.
	later := paymentsAt(t, db, func() time.Time { return time.Now().Add(4 * 24 * time.Hour) })
	if report, err := later.Sweep(ctx); err != nil || report.Settled != 3 || report.Expired != 1 {
		t.Fatalf("sweep %+v %v", report, err)
	}
	if p, _ := later.Get(ctx, unpaid); p.Status != models.PaymentExpired {
		t.Fatalf("the unpaid payment is %s", p.Status)
	}

	svc := payouts.New(payouts.Options{DB: db, Vendors: sandbox.Registry(sandbox.Options{Store: sandbox.NewDBStore(db), CompleteAfter: time.Nanosecond})})
	for _, p := range []struct {
		account string
		amount  int64
		network models.TransferType
		want    models.DisbursementStatus
	}{
		{"1234567890", 100_000, models.BIFAST, models.StatusSuccess},
		{"1234567891", 100_000, models.RTOL, models.StatusSuccess},
		{sandbox.AccountSubmitRejected, 100_000, models.BIFAST, models.StatusFailed},
		{sandbox.AccountFailsLater, 50_000, models.BIFAST, models.StatusFailed},
		{sandbox.AccountStaysRequested, 60_000, models.BIFAST, models.StatusRequested},
	} {
		created, err := svc.Create(ctx, client, payouts.CreateRequest{IdempotencyKey: uuid.NewString(), Params: payouts.Params{
			WalletID: uuid.MustParse(wallet), Amount: models.Rupiah(p.amount), BankCode: "bca", AccountNo: p.account, TransferType: p.network}})
		if err != nil {
			t.Fatalf("payout to %s: %v", p.account, err)
		}
		id := created.Disbursement.ID
		if err := svc.Submit(ctx, id); err != nil {
			t.Fatalf("submit to %s: %v", p.account, err)
		}
		if err := svc.Poll(ctx, id); err != nil && p.want != models.StatusFailed {
			t.Fatalf("poll of %s: %v", p.account, err)
		}
		if d, _ := svc.Get(ctx, id); d.Status != p.want {
			t.Fatalf("payout to %s is %s, want %s", p.account, d.Status, p.want)
		}
	}

	r := c.run("reconcile")
	if r.code != 0 || r.json["ok"] != true {
		t.Fatalf("reconcile at the end of the day: exit %d, %s", r.code, r.stdout)
	}
	problems, _ := r.json["problems"].([]any)
	warnings, _ := r.json["warnings"].([]any)
	if len(problems) != 0 || len(warnings) != 1 || !strings.Contains(warnings[0].(string), tooLate.String()) {
		t.Fatalf("reconcile problems %v, warnings %v: want none, and the late result", problems, warnings)
	}
	if r.json["wallets_checked"] != float64(2) {
		t.Errorf("wallets_checked %v, want 2", r.json["wallets_checked"])
	}
	settledFees := 1_050 + 1_400 + 525 // 0.7 % of each settled price
	for account, want := range map[string]string{
		models.AccountAcquirerClearing:          "-425000.0000", // the prices of the settled payments
		models.AccountPlatformFees:              models.Rupiah(int64(settledFees) + 2_500 + 6_500).Fixed4(),
		models.VendorClearingAccount("simbank"): "191000.0000", // 97,500 + 93,500 paid out
	} {
		if got := r.json["system_accounts"].(map[string]any)[account]; got != want {
			t.Errorf("%s = %v, want %s", account, got, want)
		}
	}
	w, err := models.NewStore(db).FindWallet(ctx, uuid.MustParse(wallet))
	if err != nil {
		t.Fatal(err)
	}
	if net := models.Rupiah(425_000 - int64(settledFees) - 200_000); w.Balance != net || w.Locked != models.Rupiah(60_000) {
		t.Errorf("wallet balance %s locked %s, want %s and the 60000 in flight", w.Balance, w.Locked, net)
	}
}
