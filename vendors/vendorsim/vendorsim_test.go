package vendorsim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/signature"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/sandbox/sandboxtest"
	"github.com/payoutd/payoutd/vendors/vendorsim"
)

// The bearer token and the callback key: two secrets.
const (
	secret         = "4f1c0a7e2b9d8c6e5a3f1b0d9c8e7a6b5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c"
	callbackSecret = "0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e"
)

var secrets = vendorsim.Secrets{Token: secret, CallbackSecret: callbackSecret}

// newClient is vendorsim.NewClient that fails the test on an error.
func newClient(t *testing.T, base, vendor string, s vendorsim.Secrets, o vendorsim.ClientOptions) *vendorsim.Client {
	t.Helper()
	c, err := vendorsim.NewClient(base, vendor, s, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fast retries keep the tests quick; the timeout is the default's.
var clientOpts = vendorsim.ClientOptions{RetryBackoff: time.Millisecond}

// startServer serves a vendorsim Server on a real socket.
func startServer(t *testing.T, o vendorsim.ServerOptions) (*vendorsim.Server, *httptest.Server) {
	t.Helper()
	if o.Token == "" {
		o.Token, o.CallbackSecret = secret, callbackSecret
	}
	srv, err := vendorsim.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return srv, ts
}

// runLoop runs the callback loop until the test ends, and checks it stops.
func runLoop(t *testing.T, srv *vendorsim.Server) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

func pairOver(t *testing.T, o sandbox.Options) sandboxtest.Pair {
	_, ts := startServer(t, vendorsim.ServerOptions{Sandbox: o})
	reg, err := vendorsim.NewRegistry(ts.URL, secrets, clientOpts)
	if err != nil {
		t.Fatal(err)
	}
	bank, _ := reg.Get(sandbox.SimBank)
	wallet, _ := reg.Get(sandbox.SimWallet)
	return sandboxtest.Pair{SimBank: bank.(*vendorsim.Client), SimWallet: wallet.(*vendorsim.Client)}
}

// Every behaviour of the sandbox vendors, through the HTTP client: magic
// numbers, caps, e-wallet rules, idempotent submits counted, the lost answer
// of 1000000007 (a dropped connection), completion by hand.
func TestClientBehavesAsTheSandbox(t *testing.T) {
	t.Parallel()
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		sandboxtest.Run(t, pairOver)
	})
	t.Run("db", func(t *testing.T) {
		t.Parallel()
		sandboxtest.Run(t, func(t *testing.T, o sandbox.Options) sandboxtest.Pair {
			o.Store = sandbox.NewDBStore(testenv.DB(t))
			return pairOver(t, o)
		})
	})
}

func TestLostAnswerThenStatusShowsItAccepted(t *testing.T) {
	t.Parallel()
	p := pairOver(t, sandbox.Options{CompleteAfter: time.Hour})
	c := p.SimBank.(*vendorsim.Client)
	ctx := context.Background()
	_, err := c.Submit(ctx, vendors.Payout{HolderName: "Budi Santoso", Reference: "lost", BankCode: "bca", AccountNo: sandbox.AccountFirstSubmitLost, TransferType: models.BIFAST, Amount: models.Rupiah(97_500)})
	if !errors.Is(err, vendors.ErrUnavailable) || errors.Is(err, vendors.ErrRejected) {
		t.Fatalf("Submit = %v, want ErrUnavailable only", err)
	}
	st, err := c.Status(ctx, "lost")
	if err != nil || st.Status != vendors.PayoutPending || st.Reference != "lost" {
		t.Fatalf("Status = %+v, %v; want accepted (PENDING)", st, err)
	}
	if n, err := c.SubmitCalls(ctx, "lost"); err != nil || n != 1 {
		t.Errorf("SubmitCalls = %d, %v; want 1", n, err)
	}
}

func TestWrongSecretIsRefused(t *testing.T) {
	t.Parallel()
	_, ts := startServer(t, vendorsim.ServerOptions{})
	for _, wrong := range []string{"nope", strings.ToUpper(secret), secret + "x", callbackSecret} {
		c := newClient(t, ts.URL, sandbox.SimBank, vendorsim.Secrets{Token: wrong, CallbackSecret: "cb"}, clientOpts)
		if _, err := c.Banks(context.Background()); !errors.Is(err, vendorsim.ErrUnauthorized) {
			t.Errorf("Banks with secret %q: %v, want ErrUnauthorized", wrong, err)
		}
		_, err := c.Submit(context.Background(), vendors.Payout{HolderName: "Budi Santoso", Reference: "r", BankCode: "bca", AccountNo: "1234567890", TransferType: models.BIFAST, Amount: 1})
		if !errors.Is(err, vendorsim.ErrUnauthorized) || errors.Is(err, vendors.ErrUnavailable) {
			t.Errorf("Submit with secret %q: %v, want ErrUnauthorized", wrong, err)
		}
	}
	good := newClient(t, ts.URL, sandbox.SimBank, secrets, clientOpts)
	if n, err := good.SubmitCalls(context.Background(), "r"); err != nil || n != 0 {
		t.Errorf("a refused submit was counted: %d, %v", n, err)
	}
}

type rawAnswer struct {
	status int
	body   map[string]any
}

func raw(t *testing.T, ts *httptest.Server, method, path, body string) rawAnswer {
	t.Helper()
	req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatalf("%s %s: answer is not JSON: %v", method, path, err)
	}
	return rawAnswer{resp.StatusCode, m}
}

// The wire format: statuses, codes and JSON shapes.
func TestWireFormat(t *testing.T) {
	t.Parallel()
	_, ts := startServer(t, vendorsim.ServerOptions{Sandbox: sandbox.Options{CompleteAfter: time.Hour}})
	payout := func(ref, account, amount string) string {
		return `{"reference":"` + ref + `","bank_code":"bca","account_no":"` + account + `","transfer_type":"BIFAST","amount":"` + amount + `","holder_name":"Budi Santoso"}`
	}
	tests := []struct {
		name, method, path, body string
		status                   int
		want                     map[string]any // fields that must match
	}{
		{"inactive", "POST", "/v1/simbank/inquiries", `{"bank_code":"bca","account_no":"1000000001","transfer_type":"BIFAST"}`, 422, map[string]any{"code": "account_inactive", "error": "bank account is inactive"}},
		{"not resolved", "POST", "/v1/simbank/inquiries", `{"bank_code":"bca","account_no":"1000000002","transfer_type":"BIFAST"}`, 422, map[string]any{"code": "account_not_resolved"}},
		{"gateway down", "POST", "/v1/simbank/inquiries", `{"bank_code":"bca","account_no":"1000000006","transfer_type":"BIFAST"}`, 503, map[string]any{"code": "unavailable"}},
		{"unsupported bank", "POST", "/v1/simwallet/inquiries", `{"bank_code":"cimb","account_no":"1234567890","transfer_type":"BIFAST"}`, 422, map[string]any{"code": "unsupported_bank"}},
		{"resolved", "POST", "/v1/simwallet/inquiries", `{"bank_code":"gopay","account_no":"081234567890","transfer_type":"BIFAST"}`, 200, map[string]any{"holder_name": "SANDBOX 7890"}},
		{"rejected", "POST", "/v1/simbank/payouts", payout("r1", "1000000003", "97500"), 422, map[string]any{"code": "rejected", "reason": "recipient account closed"}},
		{"accepted", "POST", "/v1/simbank/payouts", payout("r2", "1234567890", "97500.5"), 200, map[string]any{"reference": "r2", "status": "PENDING", "failure_reason": "", "submit_calls": 1.0}},
		{"replayed", "POST", "/v1/simbank/payouts", payout("r2", "1234567890", "97500.5"), 200, map[string]any{"reference": "r2", "status": "PENDING", "submit_calls": 2.0}},
		{"status", "GET", "/v1/simbank/payouts/r2", "", 200, map[string]any{"reference": "r2", "status": "PENDING", "submit_calls": 2.0}},
		{"other vendor", "GET", "/v1/simwallet/payouts/r2", "", 404, map[string]any{"code": "unknown_payout"}},
		{"complete", "POST", "/v1/simbank/payouts/r2/complete", `{"status":"FAILED","reason":"by hand"}`, 200, map[string]any{"status": "FAILED", "failure_reason": "by hand", "submit_calls": 2.0}},
		{"complete again otherwise", "POST", "/v1/simbank/payouts/r2/complete", `{"status":"SUCCESS"}`, 409, map[string]any{"code": "already_final"}},
		{"complete unknown", "POST", "/v1/simbank/payouts/zz/complete", `{"status":"SUCCESS"}`, 404, map[string]any{"code": "unknown_payout"}},
		{"complete as pending", "POST", "/v1/simbank/payouts/r2/complete", `{"status":"PENDING"}`, 400, map[string]any{"code": "bad_request"}},
		{"amount with exponent", "POST", "/v1/simbank/payouts", payout("r3", "1234567890", "1e5"), 400, map[string]any{"code": "bad_request"}},
		{"zero amount", "POST", "/v1/simbank/payouts", payout("r3", "1234567890", "0"), 400, map[string]any{"code": "bad_request"}},
		{"five fraction digits", "POST", "/v1/simbank/payouts", payout("r3", "1234567890", "1.00001"), 400, map[string]any{"code": "bad_request"}},
		{"unknown field", "POST", "/v1/simbank/payouts", `{"reference":"r3","amount":"1","extra":1}`, 400, map[string]any{"code": "bad_request"}},
		{"no reference", "POST", "/v1/simbank/payouts", payout("", "1234567890", "1"), 400, map[string]any{"code": "bad_request"}},
		{"unknown vendor", "GET", "/v1/paypal/banks", "", 404, map[string]any{"code": "unknown_vendor"}},
		{"no such route", "GET", "/v2/simbank/banks", "", 404, map[string]any{"code": "not_found"}},
	}
	for _, tt := range tests {
		got := raw(t, ts, tt.method, tt.path, tt.body)
		if got.status != tt.status {
			t.Errorf("%s: HTTP %d %v, want %d", tt.name, got.status, got.body, tt.status)
			continue
		}
		for k, v := range tt.want {
			if got.body[k] != v {
				t.Errorf("%s: %s = %#v, want %#v (body %v)", tt.name, k, got.body[k], v, got.body)
			}
		}
		if tt.status >= 400 && (got.body["error"] == "" || got.body["error"] == nil) {
			t.Errorf("%s: error body without a message: %v", tt.name, got.body)
		}
	}
	// Without the secret: 401 before anything else, in the same JSON shape.
	resp, err := http.Get(ts.URL + "/v1/paypal/banks")
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != 401 || body["code"] != "unauthorized" {
		t.Errorf("no Authorization: HTTP %d %v, want 401 unauthorized", resp.StatusCode, body)
	}
}

// A fake vendor answering as told, counting the requests per method.
type fakeVendor struct {
	gets, posts atomic.Int32
	answer      func(w http.ResponseWriter, r *http.Request, n int32)
}

func (f *fakeVendor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := f.gets.Add(1)
	if r.Method == http.MethodPost {
		f.gets.Add(-1)
		n = f.posts.Add(1)
	}
	f.answer(w, r, n)
}

func TestSubmitIsNeverRetriedReadsAre(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := vendors.Payout{HolderName: "Budi Santoso", Reference: "r", BankCode: "bca", AccountNo: "1234567890", TransferType: models.BIFAST, Amount: models.Rupiah(97_500)}
	pending := `{"reference":"r","status":"PENDING","failure_reason":"","submit_calls":1}`

	t.Run("5xx", func(t *testing.T) {
		t.Parallel()
		f := &fakeVendor{answer: func(w http.ResponseWriter, r *http.Request, n int32) {
			if n < 3 {
				w.WriteHeader(http.StatusBadGateway)
				io.WriteString(w, "<html>bad gateway</html>")
				return
			}
			io.WriteString(w, pending)
		}}
		ts := httptest.NewServer(f)
		defer ts.Close()
		c := newClient(t, ts.URL, "simbank", secrets, clientOpts)
		if _, err := c.Submit(ctx, p); !errors.Is(err, vendors.ErrUnavailable) {
			t.Errorf("Submit on 502 = %v, want ErrUnavailable", err)
		}
		if n := f.posts.Load(); n != 1 {
			t.Errorf("Submit sent %d times, want 1", n)
		}
		st, err := c.Status(ctx, "r")
		if err != nil || st.Status != vendors.PayoutPending {
			t.Errorf("Status after two 502s = %+v, %v; want the third attempt's PENDING", st, err)
		}
		if n := f.gets.Load(); n != 3 {
			t.Errorf("Status sent %d times, want 3", n)
		}
	})
	t.Run("5xx-every-time", func(t *testing.T) {
		t.Parallel()
		f := &fakeVendor{answer: func(w http.ResponseWriter, r *http.Request, n int32) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}}
		ts := httptest.NewServer(f)
		defer ts.Close()
		c := newClient(t, ts.URL, "simbank", secrets, clientOpts)
		if _, err := c.Banks(ctx); !errors.Is(err, vendors.ErrUnavailable) {
			t.Errorf("Banks = %v, want ErrUnavailable", err)
		}
		if n := f.gets.Load(); n != 3 {
			t.Errorf("Banks sent %d times, want 3", n)
		}
	})
	t.Run("4xx-not-retried", func(t *testing.T) {
		t.Parallel()
		f := &fakeVendor{answer: func(w http.ResponseWriter, r *http.Request, n int32) {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":"vendor does not know this payout","code":"unknown_payout"}`)
		}}
		ts := httptest.NewServer(f)
		defer ts.Close()
		c := newClient(t, ts.URL, "simbank", secrets, clientOpts)
		if _, err := c.Status(ctx, "r"); !errors.Is(err, vendors.ErrUnknownPayout) {
			t.Errorf("Status = %v, want ErrUnknownPayout", err)
		}
		if n := f.gets.Load(); n != 1 {
			t.Errorf("Status sent %d times, want 1", n)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		f := &fakeVendor{answer: func(w http.ResponseWriter, r *http.Request, n int32) {
			if r.Method == http.MethodGet && n == 2 {
				io.WriteString(w, pending)
				return
			}
			select { // never answers in time
			case <-r.Context().Done():
			case <-release:
			}
		}}
		ts := httptest.NewServer(f)
		defer ts.Close()
		defer close(release)
		c := newClient(t, ts.URL, "simbank", secrets, vendorsim.ClientOptions{Timeout: 50 * time.Millisecond, RetryBackoff: time.Millisecond})
		if _, err := c.Submit(ctx, p); !errors.Is(err, vendors.ErrUnavailable) {
			t.Errorf("Submit timing out = %v, want ErrUnavailable", err)
		}
		if n := f.posts.Load(); n != 1 {
			t.Errorf("Submit sent %d times, want 1", n)
		}
		if st, err := c.Status(ctx, "r"); err != nil || st.Status != vendors.PayoutPending {
			t.Errorf("Status after one timeout = %+v, %v; want PENDING from the retry", st, err)
		}
	})
	t.Run("garbled-status", func(t *testing.T) {
		t.Parallel()
		f := &fakeVendor{answer: func(w http.ResponseWriter, r *http.Request, n int32) {
			io.WriteString(w, `{"reference":"r","status":"DONE"}`)
		}}
		ts := httptest.NewServer(f)
		defer ts.Close()
		c := newClient(t, ts.URL, "simbank", secrets, clientOpts)
		if _, err := c.Submit(ctx, p); !errors.Is(err, vendors.ErrUnavailable) {
			t.Errorf("Submit answered with an unknown status = %v, want ErrUnavailable", err)
		}
	})
}

// receiver records the callbacks it gets; answer decides its status code
// for the n-th request (from 1).
type receiver struct {
	mu     sync.Mutex
	got    []callback
	notify chan struct{}
	answer func(n int) int
}

type callback struct {
	path   string
	header http.Header
	body   []byte
	status int
}

func newReceiver(t *testing.T, answer func(n int) int) (*receiver, *httptest.Server) {
	rc := &receiver{notify: make(chan struct{}, 1000), answer: answer}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		status := rc.answer(len(rc.got) + 1)
		rc.got = append(rc.got, callback{r.URL.Path, r.Header.Clone(), body, status})
		rc.mu.Unlock()
		w.WriteHeader(status)
		rc.notify <- struct{}{}
	}))
	t.Cleanup(ts.Close)
	return rc, ts
}

// waitFor waits until cond holds on the callbacks received; the deadline
// only stops a broken test from hanging.
func (rc *receiver) waitFor(t *testing.T, what string, cond func([]callback) bool) []callback {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		rc.mu.Lock()
		got := append([]callback(nil), rc.got...)
		rc.mu.Unlock()
		if cond(got) {
			return got
		}
		select {
		case <-rc.notify:
		case <-deadline:
			t.Fatalf("gave up waiting for %s; received %d callbacks", what, len(got))
		}
	}
}

func forReference(ref string, n int) func([]callback) bool {
	return func(got []callback) bool {
		count := 0
		for _, c := range got {
			if bytes.Contains(c.body, []byte(`"reference":"`+ref+`"`)) {
				count++
			}
		}
		return count >= n
	}
}

func lastFor(got []callback, ref string) callback {
	for i := len(got) - 1; i >= 0; i-- {
		if bytes.Contains(got[i].body, []byte(`"reference":"`+ref+`"`)) {
			return got[i]
		}
	}
	return callback{}
}

func TestCallbacks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rc, recv := newReceiver(t, func(int) int { return http.StatusOK })
	clock := sandboxtest.NewClock()
	srv, ts := startServer(t, vendorsim.ServerOptions{
		Sandbox:     sandbox.Options{CompleteAfter: 2 * time.Second, Now: clock.Now},
		CallbackURL: recv.URL + "/vendor-callbacks/", PollInterval: 5 * time.Millisecond, RetryBackoff: 5 * time.Millisecond,
	})
	runLoop(t, srv)
	bank := newClient(t, ts.URL, sandbox.SimBank, secrets, clientOpts)
	wallet := newClient(t, ts.URL, sandbox.SimWallet, secrets, clientOpts)
	submit := func(c *vendorsim.Client, ref, code, account string) {
		t.Helper()
		_, err := c.Submit(ctx, vendors.Payout{HolderName: "Budi Santoso", Reference: ref, BankCode: code, AccountNo: account, TransferType: models.BIFAST, Amount: models.Rupiah(97_500)})
		if err != nil && account != sandbox.AccountFirstSubmitLost {
			t.Fatalf("Submit %s: %v", ref, err)
		}
	}
	submit(bank, "ok", "bca", "1234567890")
	submit(bank, "fails", "bca", sandbox.AccountFailsLater)
	submit(bank, "lost", "bca", sandbox.AccountFirstSubmitLost)
	submit(bank, "by-hand", "bca", sandbox.AccountStaysRequested)
	submit(wallet, "wallet-ok", "ovo", "081234567890")
	submit(bank, "returns", "bca", sandbox.AccountReturnedLater)

	if err := bank.Complete(ctx, "by-hand", vendors.PayoutFailed, "operator said so"); err != nil {
		t.Fatal(err)
	}
	got := rc.waitFor(t, "the by-hand callback", forReference("by-hand", 1))
	// Nothing else is final before the clock moves.
	if len(got) != 1 {
		t.Errorf("callbacks before CompleteAfter: %d, want only by-hand's", len(got))
	}
	clock.Advance(2 * time.Second)
	want := map[string]vendors.PayoutResult{
		"ok":        {Reference: "ok", Status: vendors.PayoutSuccess},
		"fails":     {Reference: "fails", Status: vendors.PayoutFailed, FailureReason: "recipient bank returned the transfer"},
		"lost":      {Reference: "lost", Status: vendors.PayoutSuccess},
		"by-hand":   {Reference: "by-hand", Status: vendors.PayoutFailed, FailureReason: "operator said so"},
		"wallet-ok": {Reference: "wallet-ok", Status: vendors.PayoutSuccess},
		"returns":   {Reference: "returns", Status: vendors.PayoutSuccess},
	}
	got = rc.waitFor(t, "every callback", func(got []callback) bool {
		for ref := range want {
			if !forReference(ref, 1)(got) {
				return false
			}
		}
		return true
	})
	for ref, w := range want {
		cb := lastFor(got, ref)
		vendor, client := sandbox.SimBank, bank
		if ref == "wallet-ok" {
			vendor, client = sandbox.SimWallet, wallet
		}
		if cb.path != "/vendor-callbacks/"+vendor {
			t.Errorf("%s: callback to %s, want /vendor-callbacks/%s", ref, cb.path, vendor)
		}
		if ct := cb.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", ref, ct)
		}
		res, err := client.ParseCallback("/vendor-callbacks/simbank", cb.header, cb.body, time.Now())
		if err != nil || res != w {
			t.Errorf("%s: ParseCallback = %+v, %v; want %+v", ref, res, err, w)
		}
		var fields map[string]any
		if err := json.Unmarshal(cb.body, &fields); err != nil || len(fields) != 3 {
			t.Errorf("%s: body %s, want exactly reference, status, failure_reason", ref, cb.body)
		}
	}
	// 1000000008 is returned by the bank CompleteAfter after it was paid:
	// a second callback, RETURNED with the reason; the status says so too.
	clock.Advance(2 * time.Second)
	got = rc.waitFor(t, "the return of 1000000008", forReference("returns", 2))
	wantReturn := vendors.PayoutResult{Reference: "returns", Status: vendors.PayoutReturned, FailureReason: sandbox.ReturnReason}
	if res, err := bank.ParseCallback("/vendor-callbacks/simbank", lastFor(got, "returns").header, lastFor(got, "returns").body, time.Now()); err != nil || res != wantReturn {
		t.Errorf("return callback: %+v, %v; want %+v", res, err, wantReturn)
	}
	if res, err := bank.Status(ctx, "returns"); err != nil || res != wantReturn {
		t.Errorf("Status after the return: %+v, %v", res, err)
	}
	// Completing 1000000005 by hand, however late, sends its callback.
	submit(wallet, "stays-5", "bri", sandbox.AccountStaysRequested)
	clock.Advance(24 * time.Hour)
	if err := wallet.Complete(ctx, "stays-5", vendors.PayoutSuccess, ""); err != nil {
		t.Fatal(err)
	}
	got = rc.waitFor(t, "the completion of stays-5", forReference("stays-5", 1))
	if res, err := wallet.ParseCallback("/vendor-callbacks/simbank", lastFor(got, "stays-5").header, lastFor(got, "stays-5").body, time.Now()); err != nil || res.Status != vendors.PayoutSuccess {
		t.Errorf("stays-5 callback: %+v, %v", res, err)
	}
}

func TestParseCallbackRejectsForgeries(t *testing.T) {
	t.Parallel()
	c := newClient(t, "http://127.0.0.1:1", sandbox.SimBank, secrets, clientOpts)
	body := []byte(`{"reference":"r","status":"SUCCESS","failure_reason":""}`)
	now := time.Now()
	signed := func(b []byte, at time.Time, key string) http.Header {
		h := http.Header{}
		h.Set(vendorsim.SignatureHeader, signature.Sign(key, b, at))
		return h
	}
	if res, err := c.ParseCallback("/vendor-callbacks/simbank", signed(body, now, callbackSecret), body, now); err != nil || res.Status != vendors.PayoutSuccess || res.Reference != "r" {
		t.Fatalf("genuine callback: %+v, %v", res, err)
	}
	hv := signature.Sign(callbackSecret, body, now)
	i := strings.Index(hv, "v1=") + len("v1=")
	header := func(v string) http.Header {
		h := http.Header{}
		h.Set(vendorsim.SignatureHeader, v)
		return h
	}
	upper := header(hv[:i] + strings.ToUpper(hv[i:]))
	tests := []struct {
		name   string
		header http.Header
		body   []byte
		now    time.Time
	}{
		{"tampered body", signed(body, now, callbackSecret), []byte(`{"reference":"r","status":"FAILED","failure_reason":""}`), now},
		{"body with a byte added", signed(body, now, callbackSecret), append(append([]byte(nil), body...), ' '), now},
		{"stale timestamp", signed(body, now.Add(-5*time.Minute-time.Second), callbackSecret), body, now},
		{"future timestamp", signed(body, now.Add(5*time.Minute+time.Second), callbackSecret), body, now},
		{"checked later than 5 minutes", signed(body, now, callbackSecret), body, now.Add(6 * time.Minute)},
		{"other secret", signed(body, now, strings.Repeat("0", 64)), body, now},
		// The bearer token is not the callback key: a client of the vendor
		// cannot forge its callbacks.
		{"signed with the bearer token", signed(body, now, secret), body, now},
		{"no header", http.Header{}, body, now},
		{"garbage header", header("sig"), body, now},
		{"v1 only", header(hv[i-len("v1="):]), body, now},
		{"uppercase hex", upper, body, now},
	}
	for _, tt := range tests {
		if res, err := c.ParseCallback("/vendor-callbacks/simbank", tt.header, tt.body, tt.now); !errors.Is(err, vendors.ErrInvalidCallback) {
			t.Errorf("%s: ParseCallback = %+v, %v; want ErrInvalidCallback", tt.name, res, err)
		}
	}
	// Within the window either side is fine.
	if _, err := c.ParseCallback("/vendor-callbacks/simbank", signed(body, now.Add(-4*time.Minute), callbackSecret), body, now); err != nil {
		t.Errorf("4 minutes old: %v", err)
	}
	// A NUL in the failure reason (which PostgreSQL could not store) is
	// replaced; one in the reference makes the callback malformed.
	nul := []byte(`{"reference":"r","status":"FAILED","failure_reason":"closed\u0000account"}`)
	if res, err := c.ParseCallback("/vendor-callbacks/simbank", signed(nul, now, callbackSecret), nul, now); err != nil || res.FailureReason != "closed\uFFFDaccount" {
		t.Errorf("failure reason with NUL: %+v, %v", res, err)
	}
	// Signed but not a payout result: an error, though not a forgery.
	for _, b := range []string{`{"reference":"r","status":"PENDING","failure_reason":""}`, `{"reference":"","status":"SUCCESS"}`, `[]`,
		`{"reference":"r\u0000","status":"SUCCESS"}`} {
		_, err := c.ParseCallback("/vendor-callbacks/simbank", signed([]byte(b), now, callbackSecret), []byte(b), now)
		if err == nil || errors.Is(err, vendors.ErrInvalidCallback) {
			t.Errorf("signed %s: %v, want a malformed-callback error", b, err)
		}
	}
}

// logSink collects log lines and signals each.
type logSink struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines chan struct{}
}

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	select {
	case l.lines <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (l *logSink) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		l.mu.Lock()
		found := strings.Contains(l.buf.String(), s)
		l.mu.Unlock()
		if found {
			return
		}
		select {
		case <-l.lines:
		case <-deadline:
			t.Fatalf("no log line with %q", s)
		}
	}
}

func TestCallbackRetriedUntilAccepted(t *testing.T) {
	t.Parallel()
	rc, recv := newReceiver(t, func(n int) int {
		if n == 1 {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	sink := &logSink{lines: make(chan struct{}, 1)}
	srv, ts := startServer(t, vendorsim.ServerOptions{
		Sandbox:     sandbox.Options{CompleteAfter: time.Hour},
		CallbackURL: recv.URL, PollInterval: 5 * time.Millisecond, RetryBackoff: 5 * time.Millisecond,
		Logger: slog.New(slog.NewJSONHandler(sink, nil)),
	})
	runLoop(t, srv)
	c := newClient(t, ts.URL, sandbox.SimBank, secrets, clientOpts)
	if _, err := c.Submit(context.Background(), vendors.Payout{HolderName: "Budi Santoso", Reference: "r", BankCode: "bca", AccountNo: sandbox.AccountStaysRequested, TransferType: models.BIFAST, Amount: 1}); err != nil {
		t.Fatal(err)
	}
	if err := c.Complete(context.Background(), "r", vendors.PayoutSuccess, ""); err != nil {
		t.Fatal(err)
	}
	got := rc.waitFor(t, "the second attempt", forReference("r", 2))
	sink.waitFor(t, "vendorsim callback delivered")
	if got[0].status != 500 || got[1].status != 204 || !bytes.Equal(got[0].body, got[1].body) {
		t.Errorf("attempts answered %d then %d, bodies %s / %s; want 500 then 204, same body", got[0].status, got[1].status, got[0].body, got[1].body)
	}
	for i, cb := range got[:2] {
		if _, err := c.ParseCallback("/vendor-callbacks/simbank", cb.header, cb.body, time.Now()); err != nil {
			t.Errorf("attempt %d: %v", i+1, err)
		}
	}
	rc.mu.Lock()
	n := len(rc.got)
	rc.mu.Unlock()
	if n != 2 {
		t.Errorf("%d deliveries after the receiver accepted, want 2", n)
	}
}

func TestCallbackGivesUpAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	rc, recv := newReceiver(t, func(int) int { return http.StatusBadGateway })
	sink := &logSink{lines: make(chan struct{}, 1)}
	srv, ts := startServer(t, vendorsim.ServerOptions{
		Sandbox:     sandbox.Options{CompleteAfter: time.Hour},
		CallbackURL: recv.URL, PollInterval: 2 * time.Millisecond, RetryBackoff: time.Millisecond, MaxAttempts: 4,
		Logger: slog.New(slog.NewJSONHandler(sink, nil)),
	})
	runLoop(t, srv)
	c := newClient(t, ts.URL, sandbox.SimBank, secrets, clientOpts)
	if _, err := c.Submit(context.Background(), vendors.Payout{HolderName: "Budi Santoso", Reference: "r", BankCode: "bca", AccountNo: sandbox.AccountStaysRequested, TransferType: models.BIFAST, Amount: 1}); err != nil {
		t.Fatal(err)
	}
	if err := c.Complete(context.Background(), "r", vendors.PayoutFailed, "x"); err != nil {
		t.Fatal(err)
	}
	sink.waitFor(t, "vendorsim gave up delivering a callback")
	rc.mu.Lock()
	n := len(rc.got)
	rc.mu.Unlock()
	if n != 4 {
		t.Errorf("%d deliveries before giving up, want 4", n)
	}
}

func TestNoCallbackURLNoLoop(t *testing.T) {
	t.Parallel()
	srv, _ := startServer(t, vendorsim.ServerOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := srv.Run(ctx); err != nil {
		t.Errorf("Run = %v", err)
	}
	if _, err := vendorsim.NewServer(vendorsim.ServerOptions{}); err == nil {
		t.Error("NewServer without a secret succeeded")
	}
}

// The bearer token and the callback key are two secrets: the simulator and
// the adapter refuse to start without either, or with one secret for both;
// the token does not open the simulator to a client holding only the
// callback key.
func TestTokenAndCallbackSecretAreSeparate(t *testing.T) {
	t.Parallel()
	for _, s := range []vendorsim.Secrets{{}, {Token: "t"}, {CallbackSecret: "c"}, {Token: "same", CallbackSecret: "same"}} {
		if _, err := vendorsim.NewServer(vendorsim.ServerOptions{Token: s.Token, CallbackSecret: s.CallbackSecret}); err == nil {
			t.Errorf("NewServer with %+v succeeded", s)
		}
		if _, err := vendorsim.NewClient("http://127.0.0.1:1", sandbox.SimBank, s, clientOpts); err == nil {
			t.Errorf("NewClient with %+v succeeded", s)
		}
		if _, err := vendorsim.NewRegistry("http://127.0.0.1:1", s, clientOpts); err == nil {
			t.Errorf("NewRegistry with %+v succeeded", s)
		}
	}
	_, ts := startServer(t, vendorsim.ServerOptions{})
	swapped := newClient(t, ts.URL, sandbox.SimBank, vendorsim.Secrets{Token: callbackSecret, CallbackSecret: secret}, clientOpts)
	if _, err := swapped.Banks(context.Background()); !errors.Is(err, vendorsim.ErrUnauthorized) {
		t.Errorf("the callback key as bearer token: %v, want ErrUnauthorized", err)
	}
}
