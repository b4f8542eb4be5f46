package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/api"
	"github.com/payoutd/payoutd/internal/app"
	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/internal/credentials"
	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/signature"
	"github.com/payoutd/payoutd/tasks"
	"github.com/payoutd/payoutd/vendors/breaker"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/vendorsim"
	"github.com/payoutd/payoutd/worker"
)

// The vendor goes down (every request to it hangs until the client's
// timeout). Creates fail with 503 after the vendor client's timeouts until
// the breaker opens; from then on they answer 503 at once, well within one
// vendor timeout, without reaching the vendor. Payouts committed before
// the outage wait: while the breaker is open the worker claims none of
// them (no submit attempt is counted, nothing reaches the vendor). When
// the vendor comes back, a probe closes the breaker and the worker pays
// every payout exactly once. The API's /ops/vendors shows the breaker.
func TestVendorDownCreatesAnswer503AndSubmitsResume(t *testing.T) {
	db, _ := testenv.DBWithURL(t)
	rdb, _ := testenv.Redis(t)
	opt, prefix := testenv.Queue(t, rdb)

	sim, err := vendorsim.NewServer(vendorsim.ServerOptions{Token: simSecret, CallbackSecret: simCallbackSecret,
		PollInterval: 50 * time.Millisecond, Sandbox: sandbox.Options{CompleteAfter: 100 * time.Millisecond},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	simCtx, stopSim := context.WithCancel(context.Background())
	t.Cleanup(stopSim)
	go sim.Run(simCtx)
	var down atomic.Bool
	var reached atomic.Int64
	release := make(chan struct{})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			select { // a vendor that is down: no answer until the caller gives up
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		reached.Add(1)
		sim.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { close(release); front.Close() })

	const vendorTimeout = time.Second
	unguarded, err := vendorsim.NewRegistry(front.URL, vendorsim.Secrets{Token: simSecret, CallbackSecret: simCallbackSecret},
		vendorsim.ClientOptions{Timeout: vendorTimeout, RetryBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	reg, guards := breaker.Wrap(unguarded, breaker.Options{Failures: 3, OpenFor: 2 * time.Second})

	key := make([]byte, 32)
	rand.Read(key)
	sealer, _ := credentials.NewSealer(key)
	deps := admin.Deps{DB: db, Sealer: sealer, Env: models.Staging, Vendors: reg}
	bg := context.Background()
	merchant, err := admin.CreateClient(bg, deps, admin.ClientOptions{Name: "Toko"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := admin.CreateWallet(bg, deps, admin.WalletOptions{ClientID: uuid.MustParse(merchant.ClientID), Name: "Main", Vendor: sandbox.SimBank})
	if err != nil {
		t.Fatal(err)
	}
	wallet := uuid.MustParse(w.WalletID)
	if _, err := admin.AdjustWallet(bg, deps, wallet, "100000000", "funding"); err != nil {
		t.Fatal(err)
	}

	queue := tasks.NewPrefixedClient(opt, prefix)
	t.Cleanup(func() { queue.Close() })
	cfg := config.Defaults()
	cfg.Env, cfg.SecretsKey, cfg.DisbursementSubmitWait, cfg.QuoteRateLimit = models.Staging, key, 0, 0
	cfg.DisbursementSubmitLease = 5 * time.Second
	cfg.AdminUser, cfg.AdminPassword = "ops", "breaker-test-password"
	svc, dispatcher, payments := app.NewServices(app.Parts{Config: cfg, DB: db, Redis: rdb, Vendors: reg, Queue: queue, Gate: guards})
	srv, err := api.New(api.Deps{Config: cfg, DB: db, Redis: rdb, Sealer: sealer, Vendors: reg, Breakers: guards, Queue: queue,
		Payouts: svc, Dispatch: dispatcher, Payments: payments})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	apiHTTP := httptest.NewServer(srv.Handler())
	t.Cleanup(apiHTTP.Close)

	var retryMu sync.Mutex
	var retryAfter string // the last answer's Retry-After, under retryMu
	create := func(key string) (int, time.Duration) {
		body, _ := json.Marshal(map[string]string{"client_wallet_id": wallet.String(), "amount": "20000",
			"bank_code": "bca", "account_no": "1234567890", "transfer_type": "BIFAST", "reference_id": key,
			"account_holder_name": "Budi Santoso"})
		req, _ := http.NewRequest(http.MethodPost, apiHTTP.URL+"/api/v3/disbursements", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-api-key", merchant.APIKey)
		req.Header.Set("x-signature", signature.Sign(*merchant.SigningSecret, body, time.Now()))
		req.Header.Set("Idempotency-Key", key)
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0, 0
		}
		defer resp.Body.Close()
		retryMu.Lock()
		retryAfter = resp.Header.Get("Retry-After")
		retryMu.Unlock()
		var e struct {
			Error string `json:"error"`
		}
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusServiceUnavailable && (json.Unmarshal(raw, &e) != nil || e.Error != models.ErrGatewayUnavailable.Error()) {
			t.Errorf("a 503 with body %s, want {\"error\": %q}", raw, models.ErrGatewayUnavailable)
		}
		return resp.StatusCode, time.Since(start)
	}

	// Up: five payouts committed, left VERIFIED (no worker yet).
	const waiting = 5
	for i := range waiting {
		if code, _ := create(fmt.Sprint("before-", i)); code != http.StatusCreated {
			t.Fatalf("create while the vendor is up: %d", code)
		}
	}

	// Down: the first creates wait out the client's timeouts, together;
	// their failures open the breaker.
	down.Store(true)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			if code, _ := create(fmt.Sprint("tripping-", i)); code != http.StatusServiceUnavailable {
				t.Errorf("create while the vendor is down: %d, want 503", code)
			}
		})
	}
	wg.Wait()
	if st := guards.Guard(sandbox.SimBank).State(); st != breaker.Open {
		t.Fatalf("breaker %v after three failed creates, want open", st)
	}
	for i := range 5 {
		code, took := create(fmt.Sprint("open-", i))
		if code != http.StatusServiceUnavailable || took >= vendorTimeout {
			t.Fatalf("create while the breaker is open: %d in %s; want 503 well within the vendor's %s timeout", code, took, vendorTimeout)
		}
		if retryAfter == "" {
			t.Fatal("a create refused by the open breaker has no Retry-After")
		}
	}
	opsReq, _ := http.NewRequest(http.MethodGet, apiHTTP.URL+"/ops/vendors", nil)
	opsReq.SetBasicAuth(cfg.AdminUser, cfg.AdminPassword)
	resp, err := http.DefaultClient.Do(opsReq)
	if err != nil {
		t.Fatal(err)
	}
	var ops struct {
		Vendors []breaker.Status `json:"vendors"`
	}
	json.NewDecoder(resp.Body).Decode(&ops)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(ops.Vendors) != 2 || ops.Vendors[0].Vendor != sandbox.SimBank || ops.Vendors[0].State != "open" {
		t.Fatalf("GET /ops/vendors: %d %+v, want simbank open", resp.StatusCode, ops.Vendors)
	}

	// The worker starts while the breaker is open: it claims nothing.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- worker.Run(ctx, worker.Deps{DB: db, Redis: opt, Dispatch: dispatcher, QueuePrefix: prefix, Concurrency: 4})
	}()
	t.Cleanup(func() { cancel(); <-done })
	time.Sleep(500 * time.Millisecond)
	var attempted int64
	db.Model(&models.Disbursement{}).Where("submit_attempts > 0").Count(&attempted)
	if attempted != 0 {
		t.Fatalf("%d payouts were claimed for a submit while the breaker was open", attempted)
	}

	// Back up: the probe closes the breaker and every payout is paid once.
	reachedBefore := reached.Load()
	down.Store(false)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var open int64
		db.Model(&models.Disbursement{}).Where("status <> ?", models.StatusSuccess).Count(&open)
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d payouts not paid 30 s after the vendor came back", open)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if reached.Load() == reachedBefore {
		t.Fatal("nothing reached the vendor after it came back")
	}
	var all []models.Disbursement
	if err := db.Find(&all).Error; err != nil {
		t.Fatal(err)
	}
	if len(all) != waiting {
		t.Fatalf("%d payouts stored, want the %d created before the outage (a create answered 503 stores nothing)", len(all), waiting)
	}
	for _, d := range all {
		calls, err := sim.Vendor(sandbox.SimBank).SubmitCalls(bg, d.VendorReference)
		if err != nil || calls != 1 || d.SubmitAttempts != 1 {
			t.Errorf("payout %s: the vendor was asked to pay it %d times (%v), %d attempts; want once", d.ID, calls, err, d.SubmitAttempts)
		}
	}
	if st := guards.Guard(sandbox.SimBank).State(); st != breaker.Closed {
		t.Errorf("breaker %v after the vendor came back, want closed", st)
	}
	report, err := ledger.Reconcile(bg, db, models.Now())
	if err != nil || !report.OK {
		t.Fatalf("reconcile: %v %v", err, report.Problems)
	}
}
