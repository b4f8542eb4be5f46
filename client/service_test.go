package client_test

// This file drives the real service in-process with the SDK: the API of
// package api on a test database (SQLite, or PostgreSQL with
// TEST_DATABASE_URL) behind an httptest server, and a real asynq worker on
// the test's Redis (miniredis, or TEST_REDIS_URL) submitting and polling
// payouts at the sandbox vendors. Only the tests import the service's
// packages; package client itself imports none of them.

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/api"
	"github.com/payoutd/payoutd/client"
	"github.com/payoutd/payoutd/dispatch"
	"github.com/payoutd/payoutd/internal/app"
	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/internal/conformance"
	"github.com/payoutd/payoutd/internal/credentials"
	"github.com/payoutd/payoutd/internal/logging"
	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payouts"
	"github.com/payoutd/payoutd/tasks"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/sandboxacquirer"
	"github.com/payoutd/payoutd/webhooks"
	"github.com/payoutd/payoutd/worker"
)

func TestMain(m *testing.M) {
	// The service's access logs would drown a failure; keep warnings.
	slog.SetDefault(logging.New(os.Stderr, slog.LevelWarn))
	os.Exit(m.Run())
}

// liveService is the service running in-process with one funded merchant
// whose payout webhook is a receiver of the test's own.
type liveService struct {
	url            string
	apiKey         string
	signingSecret  string
	callbackSecret string
	wallet         string // simbank, funded with 1,000,000
	webhooks       chan delivery
}

// delivery is one webhook request the merchant's backend received.
type delivery struct {
	header http.Header
	body   []byte
}

// checkAnswers wraps the service's handler so that every answer the SDK
// gets is checked against the OpenAPI document the service serves (as the
// api package's own tests check theirs): one it does not describe fails t.
func checkAnswers(t *testing.T, h http.Handler) http.Handler {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi.yaml", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /openapi.yaml: %d", rec.Code)
	}
	doc, err := conformance.Load(rec.Body.Bytes())
	if err != nil {
		t.Fatalf("the served OpenAPI document: %v", err)
	}
	c, err := conformance.New(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.Wrap(t, h)
}

func startService(t *testing.T) *liveService {
	t.Helper()
	db := testenv.DB(t)
	rdb, _ := testenv.Redis(t)
	key := make([]byte, 32)
	rand.Read(key)
	sealer, err := credentials.NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Defaults()
	cfg.Env = models.Staging
	cfg.ClientWriteRateLimit, cfg.ClientReadRateLimit = 0, 0 // the SDK's tests poll and create in bursts
	cfg.SecretsKey = key
	cfg.DisbursementSubmitWait = 3 * time.Second
	// Paid 100 ms after the vendor accepted: a create answers REQUESTED,
	// and the worker's status poll then finds SUCCESS.
	registry := sandbox.Registry(sandbox.Options{CompleteAfter: 100 * time.Millisecond})

	opt, prefix := testenv.Queue(t, rdb)
	queue := tasks.NewPrefixedClient(opt, prefix)
	t.Cleanup(func() { queue.Close() })
	_, dispatcher := dispatch.New(payouts.Options{DB: db, Vendors: registry, Queue: queue, SubmitLease: time.Second}, dispatch.Options{Queue: queue})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	deliverer := webhooks.New(webhooks.Options{DB: db, Sealer: sealer, Queue: queue})
	go func() {
		done <- worker.Run(ctx, worker.Deps{DB: db, Redis: opt, Dispatch: dispatcher, Webhooks: deliverer, QueuePrefix: prefix, Concurrency: 4})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("worker: %v", err)
		}
	})

	acq, err := sandboxacquirer.New(sandboxacquirer.Options{Secret: "sdk-test-acquirer-secret"})
	if err != nil {
		t.Fatal(err)
	}
	payoutSvc, apiDispatch, paymentSvc := app.NewServices(app.Parts{Config: cfg, DB: db, Redis: rdb, Vendors: registry, Queue: queue, Acquirer: acq})
	srv, err := api.New(api.Deps{Config: cfg, DB: db, Redis: rdb, Sealer: sealer, Vendors: registry, Queue: queue,
		Payouts: payoutSvc, Dispatch: apiDispatch, Payments: paymentSvc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	httpSrv := httptest.NewServer(checkAnswers(t, srv.Handler()))
	t.Cleanup(httpSrv.Close)

	received := make(chan delivery, 16)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		received <- delivery{r.Header.Clone(), body}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(backend.Close)

	ops := admin.Deps{DB: db, Sealer: sealer, Env: cfg.Env, Vendors: registry}
	creds, err := admin.CreateClient(context.Background(), ops, admin.ClientOptions{Name: "SDK Test", PayoutWebhookURL: backend.URL + "/payouts"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := admin.CreateWallet(context.Background(), ops, admin.WalletOptions{
		ClientID: mustUUID(t, creds.ClientID), Name: "Main", Vendor: sandbox.SimBank})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.AdjustWallet(context.Background(), ops, mustUUID(t, w.WalletID), "1000000", "SDK test funding"); err != nil {
		t.Fatal(err)
	}
	return &liveService{url: httpSrv.URL, apiKey: creds.APIKey, signingSecret: *creds.SigningSecret,
		callbackSecret: creds.CallbackSecret, wallet: w.WalletID, webhooks: received}
}

// countingTransport counts the requests that left the client.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

func TestAgainstTheService(t *testing.T) {
	live := startService(t)
	counter := &countingTransport{}
	c, err := client.New(live.url, live.apiKey, live.signingSecret,
		client.WithHTTPClient(&http.Client{Transport: counter, Timeout: 30 * time.Second}),
		client.WithBackoff(10*time.Millisecond, 100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sent := func() int64 { return counter.n.Load() }

	// The service's own verifier accepts the SDK's signature over its bytes.
	check, err := c.SignatureCheck(ctx, []byte(`{"hello": "dunia ✓"}`))
	if err != nil || !check.Valid || check.Diagnostics.Diagnosis != "ok" || check.Diagnostics.ReceivedBody != `{"hello": "dunia ✓"}` {
		t.Fatalf("signature check %+v, %v", check, err)
	}

	wallets, err := c.ListWallets(ctx)
	if err != nil || wallets.TotalCount != 1 || len(wallets.Wallets) != 1 || wallets.Wallets[0].WalletID != live.wallet || wallets.Wallets[0].Name != "Main" {
		t.Fatalf("wallets %+v, %v", wallets, err)
	}
	bal, err := c.WalletBalance(ctx, live.wallet)
	if err != nil || bal.Balance != "1000000.0000" || bal.Available != "1000000.0000" || bal.Locked != "0.0000" || bal.Currency != "IDR" {
		t.Fatalf("balance %+v, %v", bal, err)
	}
	banks, err := c.WalletBanks(ctx, live.wallet)
	if err != nil || banks.TotalCount == 0 || banks.TotalCount != len(banks.Banks) {
		t.Fatalf("banks %+v, %v", banks, err)
	}
	var bca *client.Bank
	for i := range banks.Banks {
		if banks.Banks[i].Code == "bca" {
			bca = &banks.Banks[i]
		}
	}
	if bca == nil || bca.Name == "" || len(bca.SupportedTransferTypes) != 2 {
		t.Fatalf("bca in the bank list: %+v", bca)
	}

	q, err := c.QuoteDisbursement(ctx, client.QuoteRequest{ClientWalletID: live.wallet, Amount: "100000", BankCode: "bca",
		AccountNo: "1234567890", TransferType: client.BIFAST})
	if err != nil || q.Amount != "100000" || q.PlatformFee != "2500" || q.NetAmount != "97500" || q.AccountHolderName != "SANDBOX 7890" ||
		q.BankName != bca.Name || q.TransferType != client.BIFAST {
		t.Fatalf("quote %+v, %v", q, err)
	}

	// Create (201), then the same key again: a replay of the same payout.
	req := client.CreateDisbursementRequest{ClientWalletID: live.wallet, Amount: "100000", BankCode: "BCA",
		AccountNo: "1234567890", TransferType: client.BIFAST, Memo: "SDK test", ReferenceID: "inv-1"}
	key := client.NewIdempotencyKey()
	before := sent()
	d, err := c.CreateDisbursement(ctx, req, key)
	if err != nil {
		t.Fatal(err)
	}
	if sent()-before != 1 {
		t.Fatalf("the create took %d requests", sent()-before)
	}
	if d.Replayed || d.ID == "" || d.IdempotencyKey != key || d.Amount != "100000" || d.NetAmount != "97500" ||
		d.ReferenceID != "inv-1" || d.Memo == nil || *d.Memo != "SDK test" || d.WalletID != live.wallet || d.BankCode != "bca" {
		t.Fatalf("created %+v", d)
	}
	if d.Status != client.StatusRequested && d.Status != client.StatusVerified && d.Status != client.StatusSuccess {
		t.Fatalf("fresh create status %s", d.Status)
	}
	again, err := c.CreateDisbursement(ctx, req, key)
	if err != nil || !again.Replayed || again.ID != d.ID {
		t.Fatalf("replay %+v, %v", again, err)
	}
	bal, err = c.WalletBalance(ctx, live.wallet)
	if err != nil || bal.Available != "900000.0000" {
		t.Fatalf("after one payout (replayed) the wallet shows %+v, %v", bal, err)
	}

	got := pollUntilFinal(t, c, d.ID)
	if got.Status != client.StatusSuccess || got.CompletedAt == nil || got.RequestedAt == nil || got.ReferenceID != "inv-1" || got.FailedReason != nil {
		t.Fatalf("final %+v", got)
	}
	bal, err = c.WalletBalance(ctx, live.wallet)
	if err != nil || bal.Balance != "900000.0000" || bal.Locked != "0.0000" {
		t.Fatalf("after SUCCESS the wallet shows %+v, %v", bal, err)
	}
	// The merchant's backend got the outcome as a signed webhook, which
	// the SDK verifies; a tampered body or a stale timestamp it refuses.
	var hook delivery
	select {
	case hook = <-live.webhooks:
	case <-time.After(20 * time.Second):
		t.Fatal("no webhook for the paid disbursement")
	}
	event, err := client.ParseWebhook(live.callbackSecret, hook.header, hook.body, time.Now())
	if err != nil {
		t.Fatalf("ParseWebhook: %v (body %s)", err, hook.body)
	}
	if event.Event != "disbursement.success" || event.Disbursement == nil || event.Disbursement.DisbursementID != d.ID ||
		event.Disbursement.Status != client.StatusSuccess || event.Disbursement.ReferenceID != "inv-1" ||
		event.Disbursement.NetAmount != "97500" || hook.header.Get("x-event-id") != event.EventID {
		t.Fatalf("webhook event %+v (body %s)", event, hook.body)
	}
	tampered := bytes.Replace(hook.body, []byte(`"97500"`), []byte(`"975000"`), 1)
	if err := client.VerifyWebhook(live.callbackSecret, hook.header, tampered, time.Now()); !errors.Is(err, client.ErrWebhookSignature) {
		t.Fatalf("a tampered body: %v, want ErrWebhookSignature", err)
	}
	if err := client.VerifyWebhook(live.callbackSecret, hook.header, hook.body, time.Now().Add(6*time.Minute)); !errors.Is(err, client.ErrWebhookTimestamp) {
		t.Fatalf("a stale delivery: %v, want ErrWebhookTimestamp", err)
	}

	// 402: more than the wallet holds. Final: sent once, not retried.
	before = sent()
	_, err = c.CreateDisbursement(ctx, client.CreateDisbursementRequest{ClientWalletID: live.wallet, Amount: "5000000",
		BankCode: "bca", AccountNo: "1234567890", TransferType: client.BIFAST}, client.NewIdempotencyKey())
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusPaymentRequired || apiErr.Message != "Insufficient balance" ||
		apiErr.RequestID == "" || !client.IsInsufficientBalance(err) {
		t.Fatalf("402: %v", err)
	}
	if sent()-before != 1 {
		t.Fatalf("the 402 took %d requests", sent()-before)
	}

	// 422 below the minimum, for quote and create.
	small := client.CreateDisbursementRequest{ClientWalletID: live.wallet, Amount: "10000", BankCode: "bca",
		AccountNo: "1234567890", TransferType: client.BIFAST}
	_, err = c.CreateDisbursement(ctx, small, client.NewIdempotencyKey())
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnprocessableEntity ||
		apiErr.Message != "withdrawal amount is below minimum: 12500" || !client.IsBelowMinimum(err) {
		t.Fatalf("422: %v", err)
	}
	_, err = c.QuoteDisbursement(ctx, client.QuoteRequest{ClientWalletID: small.ClientWalletID, Amount: small.Amount,
		BankCode: small.BankCode, AccountNo: small.AccountNo, TransferType: small.TransferType})
	if !client.IsBelowMinimum(err) {
		t.Fatalf("quote below minimum: %v", err)
	}

	// The vendor rejects the payout: 503 Vendor payout request failed is
	// the key's final outcome, returned at once; the replay says the same.
	rejected := client.CreateDisbursementRequest{ClientWalletID: live.wallet, Amount: "50000", BankCode: "bca",
		AccountNo: "1000000003", TransferType: client.BIFAST}
	rejectKey := client.NewIdempotencyKey()
	before = sent()
	_, err = c.CreateDisbursement(ctx, rejected, rejectKey)
	if !client.IsPayoutFailed(err) || sent()-before != 1 {
		t.Fatalf("vendor rejection: %v after %d requests", err, sent()-before)
	}
	_, err = c.CreateDisbursement(ctx, rejected, rejectKey)
	if !errors.As(err, &apiErr) || !apiErr.Replayed || !client.IsPayoutFailed(err) {
		t.Fatalf("replay of the rejection: %v", err)
	}
	// The same key with other parameters: 422, nothing done.
	rejected.Amount = "60000"
	if _, err = c.CreateDisbursement(ctx, rejected, rejectKey); !client.IsKeyReused(err) {
		t.Fatalf("key reused: %v", err)
	}

	if _, err := c.GetDisbursement(ctx, "6f1c2a9e-8d4b-4c3e-9a7f-1b2c3d4e5f60"); !client.IsNotFound(err) {
		t.Fatalf("unknown disbursement: %v", err)
	}
	if _, err := c.WalletBalance(ctx, "6f1c2a9e-8d4b-4c3e-9a7f-1b2c3d4e5f60"); !client.IsNotFound(err) {
		t.Fatalf("unknown wallet: %v", err)
	}

	// Wrong credentials are a final 401.
	wrong, _ := client.New(live.url, live.apiKey, "0000000000000000000000000000000000000000000000000000000000000000")
	if _, err := wrong.ListWallets(ctx); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong signing secret: %v", err)
	}
}

// Two different creates with identical bodies signed in the same
// millisecond: with v2 their signatures differ (each covers its own
// Idempotency-Key), so both are created, neither refused as used.
func TestIdenticalCreatesInOneMillisecond(t *testing.T) {
	live := startService(t)
	at := time.Now()
	c, err := client.New(live.url, live.apiKey, live.signingSecret, client.WithClock(func() time.Time { return at }))
	if err != nil {
		t.Fatal(err)
	}
	req := client.CreateDisbursementRequest{ClientWalletID: live.wallet, Amount: "100000", BankCode: "bca",
		AccountNo: "1234567890", TransferType: client.BIFAST}
	ctx := context.Background()
	first, err := c.CreateDisbursement(ctx, req, client.NewIdempotencyKey())
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.CreateDisbursement(ctx, req, client.NewIdempotencyKey())
	if err != nil {
		t.Fatal(err)
	}
	if first.ID == second.ID || first.Replayed || second.Replayed {
		t.Fatalf("two creates: %s and %s (replayed %v, %v)", first.ID, second.ID, first.Replayed, second.Replayed)
	}
}

// frontRunner is someone on the path who can see and delay traffic but has
// no secret: before the merchant's first create reaches the service, it
// sends a copy of it under another Idempotency-Key.
type frontRunner struct {
	done   atomic.Bool
	copies atomic.Int64
}

func (f *frontRunner) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && r.URL.Path == "/api/v3/disbursements" && f.done.CompareAndSwap(false, true) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		copied := r.Clone(r.Context())
		copied.Body = io.NopCloser(bytes.NewReader(body))
		copied.Header.Set("Idempotency-Key", "attacker-"+client.NewIdempotencyKey())
		if resp, err := http.DefaultTransport.RoundTrip(copied); err == nil {
			if resp.StatusCode == http.StatusCreated {
				f.copies.Add(1)
			}
			resp.Body.Close()
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// The second audit's first reproduction: a copy of a signed create sent
// first under another key created a payout, the merchant's own request got
// "already used", and the SDK re-signed it by itself and created a second:
// two payouts, 200,000 gone. Now, with v2 (the default) the copy fails
// verification and the merchant's create is the one payout; with v1 the
// copy may be the one payout, and the SDK reports "already used" instead
// of paying again.
func TestFrontRunCreatePaysOnce(t *testing.T) {
	for _, scheme := range []string{"v2", "v1"} {
		t.Run(scheme, func(t *testing.T) {
			live := startService(t)
			runner := &frontRunner{}
			opts := []client.Option{client.WithHTTPClient(&http.Client{Transport: runner})}
			if scheme == "v1" {
				opts = append(opts, client.WithSignatureV1())
			}
			c, err := client.New(live.url, live.apiKey, live.signingSecret, opts...)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			_, err = c.CreateDisbursement(ctx, client.CreateDisbursementRequest{ClientWalletID: live.wallet, Amount: "100000",
				BankCode: "bca", AccountNo: "1234567890", TransferType: client.BIFAST}, client.NewIdempotencyKey())
			switch scheme {
			case "v2":
				if err != nil || runner.copies.Load() != 0 {
					t.Fatalf("v2: create %v, the attacker's copies created %d", err, runner.copies.Load())
				}
			case "v1":
				if !client.IsSignatureUsed(err) || runner.copies.Load() != 1 {
					t.Fatalf("v1: create answered %v (want the signature-used error), copies created %d", err, runner.copies.Load())
				}
			}
			bal, err := c.WalletBalance(ctx, live.wallet)
			if err != nil {
				t.Fatal(err)
			}
			if bal.Available != "900000.0000" && bal.Available != "900000" {
				t.Fatalf("available %s after one payout of 100,000 from 1,000,000: paid more than once", bal.Available)
			}
		})
	}
}

func pollUntilFinal(t *testing.T, c *client.Client, id string) *client.Disbursement {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		d, err := c.GetDisbursement(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if d.Status.Final() {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("disbursement %s still %s", id, d.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func mustUUID(t *testing.T, s string) uuid.UUID {
	t.Helper()
	id, err := uuid.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
