package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payments"
	"github.com/payoutd/payoutd/payouts"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/sandboxacquirer"
)

// payoutsOn opens the CLI's database with the service the api and worker
// would run on it (sandbox payouts shared through the database).
func (c *cli) payoutsOn() *payouts.Service {
	c.t.Helper()
	db := c.openDB()
	return payouts.New(payouts.Options{DB: db, Vendors: sandbox.Registry(sandbox.Options{Store: sandbox.NewDBStore(db)})})
}

func (c *cli) merchantWithFunds() (*models.Client, string) {
	c.t.Helper()
	client := c.ok("client", "create", "--name", "Toko")["client_id"].(string)
	wallet := c.ok("wallet", "create", "--client", client, "--name", "Main", "--vendor", "simbank")["wallet_id"].(string)
	c.ok("wallet", "adjust", "--wallet", wallet, "--amount", "1000000", "--memo", "funding")
	return c.client(client), wallet
}

func (c *cli) client(id string) *models.Client {
	c.t.Helper()
	db, err := database.Open(c.env["DATABASE_URL"])
	if err != nil {
		c.t.Fatal(err)
	}
	defer func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	}()
	got, err := models.NewStore(db).FindClient(context.Background(), uuid.MustParse(id))
	if err != nil {
		c.t.Fatal(err)
	}
	return got
}

func createPayout(t *testing.T, svc *payouts.Service, client *models.Client, wallet, account, key string) *models.Disbursement {
	t.Helper()
	created, err := svc.Create(context.Background(), client, payouts.CreateRequest{IdempotencyKey: key, Params: payouts.Params{
		WalletID: uuid.MustParse(wallet), Amount: models.Rupiah(100_000), BankCode: "bca", AccountNo: account, TransferType: models.BIFAST}})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	return created.Disbursement
}

// An operator approves a payout waiting for review, and cancels another;
// each command prints the disbursement record.
func TestAdminDisbursementApproveAndCancel(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	client, wallet := c.merchantWithFunds()
	c.ok("client", "update", "--client", client.ID.String(), "--review-threshold", "50000")
	svc := c.payoutsOn()
	client = c.client(client.ID.String())

	waiting := createPayout(t, svc, client, wallet, "1234567890", "k1")
	if waiting.Status != models.StatusPendingVerification {
		t.Fatalf("created %s above the review threshold, want PENDING_VERIFICATION", waiting.Status)
	}
	approved := c.ok("disbursement", "approve", "--id", waiting.ID.String())
	if approved["status"] != "VERIFIED" || approved["id"] != waiting.ID.String() || approved["amount"] != "100000" {
		t.Fatalf("approve printed %v", approved)
	}
	wantRecordKeys(t, "approve", approved)
	msg := c.fails(1, "disbursement", "approve", "--id", waiting.ID.String())
	if msg == "" {
		t.Fatal("approving twice must fail")
	}

	other := createPayout(t, svc, client, wallet, "1234567891", "k2")
	cancelled := c.ok("disbursement", "cancel", "--id", other.ID.String())
	if cancelled["status"] != "CANCELLED" || cancelled["completed_at"] == nil {
		t.Fatalf("cancel printed %v", cancelled)
	}
	wantRecordKeys(t, "cancel", cancelled)
	c.fails(1, "disbursement", "cancel", "--id", uuid.NewString())
	c.fails(2, "disbursement", "cancel", "--id", "not-a-uuid")
	c.fails(2, "disbursement", "approve")
	if r := c.run("reconcile"); r.code != 0 {
		t.Fatalf("reconcile after approve and cancel: exit %d %s", r.code, r.stdout)
	}
}

// wantRecordKeys fails unless printed has exactly the fields of the
// disbursement record GET /api/v3/disbursements/{id} answers (the operator
// commands print the disbursement record: docs/design.md, Admin CLI
// contract); reference_id
// is left out when none was given.
func wantRecordKeys(t *testing.T, command string, printed map[string]any) {
	t.Helper()
	want := []string{"id", "client_id", "wallet_id", "status", "amount", "platform_fee", "net_amount", "currency",
		"transfer_type", "bank_code", "bank_name", "account_no", "account_holder_name", "memo", "failed_reason",
		"created_at", "requested_at", "completed_at", "returned_at"}
	got := make([]string, 0, len(printed))
	for k := range printed {
		got = append(got, k)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%s printed the fields %v, want %v", command, got, want)
	}
}

// A sandbox payout that stays REQUESTED (1000000005) is finished by hand.
func TestAdminSandboxComplete(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	client, wallet := c.merchantWithFunds()
	svc := c.payoutsOn()
	for _, tc := range []struct{ status, want string }{{"SUCCESS", "SUCCESS"}, {"FAILED", "FAILED"}} {
		d := createPayout(t, svc, client, wallet, "1000000005", "k-"+tc.status)
		if err := svc.Submit(context.Background(), d.ID); err != nil {
			t.Fatal(err)
		}
		if err := svc.Poll(context.Background(), d.ID); err != nil {
			t.Fatal(err)
		}
		c.fails(2, "sandbox", "complete", "--id", d.ID.String(), "--status", "PAID")
		done := c.ok("sandbox", "complete", "--id", d.ID.String(), "--status", tc.status)
		if done["status"] != tc.want {
			t.Fatalf("sandbox complete %s printed %v", tc.status, done)
		}
		wantRecordKeys(t, "sandbox complete", done)
		c.fails(1, "sandbox", "complete", "--id", d.ID.String(), "--status", tc.status)
	}
	report := c.ok("reconcile")
	if report["ok"] != true {
		t.Fatalf("reconcile: %v", report)
	}
	if got := report["system_accounts"].(map[string]any)["system:vendor_clearing:simbank"]; got != "97500.0000" {
		t.Fatalf("vendor clearing %v, want the one paid net 97500.0000", got)
	}
}

// Operators list a client's webhook events with their last attempt, and
// redeliver one; each command prints one JSON object.
func TestAdminWebhookListAndRedeliver(t *testing.T) {
	t.Parallel()
	received := make(chan string, 4)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received <- r.Header.Get("x-event-id")
	}))
	defer backend.Close()
	c := newCLI(t)
	client := c.ok("client", "create", "--name", "Toko", "--payout-webhook-url", backend.URL+"/hooks")["client_id"].(string)
	wallet := c.ok("wallet", "create", "--client", client, "--name", "Main", "--vendor", "simbank")["wallet_id"].(string)
	c.ok("wallet", "adjust", "--wallet", wallet, "--amount", "1000000", "--memo", "funding")
	svc := c.payoutsOn()
	d := createPayout(t, svc, c.client(client), wallet, "1000000003", "k1") // rejected: disbursement.failed
	if err := svc.Submit(context.Background(), d.ID); err != nil {
		t.Fatal(err)
	}

	list := c.ok("webhook", "list", "--client", client)
	events := list["events"].([]any)
	if list["client_id"] != client || len(events) != 1 {
		t.Fatalf("webhook list %v", list)
	}
	ev := events[0].(map[string]any)
	if ev["event"] != "disbursement.failed" || ev["subject_id"] != d.ID.String() || ev["state"] != "pending" || ev["last_attempt"] != nil {
		t.Fatalf("event listed as %v", ev)
	}
	done := c.ok("webhook", "redeliver", "--event", ev["event_id"].(string))
	last, _ := done["last_attempt"].(map[string]any)
	if done["state"] != "delivered" || last == nil || last["status_code"] != float64(200) || last["attempt"] != float64(1) {
		t.Fatalf("redeliver printed %v", done)
	}
	if got := <-received; got != ev["event_id"] {
		t.Fatalf("the backend got event %q", got)
	}
	c.fails(1, "webhook", "redeliver", "--event", uuid.NewString())
	c.fails(2, "webhook", "redeliver")
	c.fails(2, "webhook", "list", "--client", client, "--limit", "0")
	c.fails(1, "webhook", "list", "--client", uuid.NewString())
}

// payment simulate reports a payment paid as the sandbox acquirer would;
// for a payment no longer pending it is recorded late, not applied.
func TestAdminPaymentSimulate(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	client, _ := c.merchantWithFunds()
	db, err := database.Open(c.env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	})
	acq, _ := sandboxacquirer.New(sandboxacquirer.Options{Secret: "any"})
	svc := payments.New(payments.Options{DB: db, Acquirer: acq})
	p, err := svc.Create(context.Background(), client, payments.CreateRequest{Price: models.Rupiah(20_000), PayerID: "p", Flow: "embed", ExpiresIn: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	out := c.ok("payment", "simulate", "--id", p.ID.String(), "--status", "SUCCESS")
	if out["payment_id"] != p.ID.String() || out["result"] != "applied" || out["status"] != "SUCCESS" ||
		out["paid_at"] == nil || len(out["retrieval_reference_no"].(string)) != 12 || out["settle_at"] == nil {
		t.Fatalf("simulate printed %v", out)
	}
	again := c.ok("payment", "simulate", "--id", p.ID.String(), "--status", "FAILED")
	if again["result"] != "recorded_late" || again["status"] != "SUCCESS" {
		t.Fatalf("a contradicting second simulation printed %v", again)
	}
	c.fails(2, "payment", "simulate", "--id", p.ID.String(), "--status", "PAID")
	c.fails(1, "payment", "simulate", "--id", uuid.NewString(), "--status", "SUCCESS")
}
