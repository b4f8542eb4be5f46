package client

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const (
	testKey    = "v3_test_0123456789abcdef0123456789abcdef0123456789abcdef"
	testSecret = "8d204018d2cd49f8a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718"
)

// t0 is the clients' clock in these tests; each reading advances it by a
// millisecond, so every attempt is signed with a fresh t.
var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func tickingClock() func() time.Time {
	var n atomic.Int64
	return func() time.Time { return t0.Add(time.Duration(n.Add(1)) * time.Millisecond) }
}

// received is one request as the fake service saw it.
type received struct {
	method, path, query string
	key                 string // Idempotency-Key
	signature           string
	t                   string
	body                []byte
	validSignature      bool   // re-verified over the exact bytes received
	version             string // "v1" or "v2": the scheme the signature used
	header              http.Header
}

// step is one scripted answer; drop closes the connection instead, after
// the request was read (the outcome is unknown to the client).
type step struct {
	status int
	body   string
	header map[string]string
	drop   bool
}

// fakeAPI stands in for the service: it verifies each request's signature
// itself (independently of the package's code) over the exact bytes
// received and answers the script in order, repeating the last step.
type fakeAPI struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	reqs   []received
	script []step
}

func newFakeAPI(t *testing.T, script ...step) *fakeAPI {
	t.Helper()
	f := &fakeAPI{t: t, script: script}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		f.t.Errorf("read body: %v", err)
	}
	rec := received{method: r.Method, path: r.URL.EscapedPath(), query: r.URL.RawQuery, key: r.Header.Get("Idempotency-Key"),
		signature: r.Header.Get("x-signature"), body: body, header: r.Header.Clone()}
	rec.t, rec.version, rec.validSignature = verifyIndependently(testSecret, rec.signature, r, body)
	f.mu.Lock()
	f.reqs = append(f.reqs, rec)
	n := len(f.reqs)
	s := step{status: 500, body: `{"error":"no script"}`}
	if len(f.script) > 0 {
		s = f.script[min(n, len(f.script))-1]
	}
	f.mu.Unlock()
	if s.drop {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			f.t.Errorf("hijack: %v", err)
			return
		}
		conn.Close()
		return
	}
	for k, v := range s.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", "req-"+strconv.Itoa(n)+"-abcdef")
	w.WriteHeader(s.status)
	io.WriteString(w, s.body)
}

func (f *fakeAPI) requests() []received {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]received(nil), f.reqs...)
}

// verifyIndependently checks "t=<ms>,v1=<hex>" the way the spec words it,
// and "t=<ms>,v2=<hex>" the way docs/api.md defines v2: over the method, the
// path and query as received, the Idempotency-Key and the body's SHA-256.
func verifyIndependently(secret, header string, r *http.Request, body []byte) (t, version string, ok bool) {
	var v1, v2 string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			t = v
		case "v1":
			v1 = v
		case "v2":
			v2 = v
		}
	}
	mac := hmac.New(sha256.New, []byte(secret))
	if v2 != "" {
		target := r.URL.EscapedPath()
		if r.URL.RawQuery != "" {
			target += "?" + r.URL.RawQuery
		}
		sum := sha256.Sum256(body)
		mac.Write([]byte(strings.Join([]string{"PAYOUTD-HMAC-SHA256-V2", t, r.Method, target,
			r.Header.Get("Idempotency-Key"), hex.EncodeToString(sum[:])}, "\n")))
		return t, "v2", t != "" && v2 == hex.EncodeToString(mac.Sum(nil))
	}
	mac.Write([]byte(t + "." + string(body)))
	return t, "v1", t != "" && v1 == hex.EncodeToString(mac.Sum(nil))
}

// testClient talks to f with a fresh connection per request (so the
// transport itself never replays one) and records the waits between
// attempts instead of sleeping.
func testClient(t *testing.T, f *fakeAPI, opts ...Option) (*Client, *[]time.Duration) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	opts = append([]Option{WithHTTPClient(hc), WithClock(tickingClock()), WithBackoff(time.Millisecond, 4*time.Millisecond)}, opts...)
	c, err := New(f.srv.URL, testKey, testSecret, opts...)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	waits := &[]time.Duration{}
	c.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		*waits = append(*waits, d)
		mu.Unlock()
		return ctx.Err()
	}
	return c, waits
}

const disbursementJSON = `{"id":"0f8e5a2c-3b1d-4e6f-9a7b-8c9d0e1f2a3b","client_id":"86652030-8c9e-410a-8242-8401ca26f00b",
"wallet_id":"b7cdcf99-5a3e-4f0a-9d5c-2f4a8e6b1c01","status":"REQUESTED","amount":"100000","platform_fee":"2500",
"net_amount":"97500","currency":"IDR","transfer_type":"BIFAST","bank_code":"bca","bank_name":"Bank Central Asia",
"account_no":"1234567890","account_holder_name":"SANDBOX 7890","memo":"Refund order 1042","reference_id":"inv-1",
"failed_reason":null,"created_at":"2026-11-22T10:00:00.123456Z","idempotency_key":"order-4711"}`

func createRequest() CreateDisbursementRequest {
	return CreateDisbursementRequest{ClientWalletID: "b7cdcf99-5a3e-4f0a-9d5c-2f4a8e6b1c01", Amount: "100000",
		BankCode: "bca", AccountNo: "1234567890", TransferType: BIFAST, Memo: "Refund order 1042", ReferenceID: "inv-1"}
}

// Every method signs the exact bytes it sends: the fake service re-verifies
// each signature over the bytes it received.
func TestSigningIsOverTheExactBytesSent(t *testing.T) {
	f := newFakeAPI(t, step{status: 200, body: `{}`})
	c, _ := testClient(t, f)
	ctx := context.Background()
	oddBody := []byte("{\"hello\":  \"dunia ✓\",\n \"n\": 1.50}")

	c.ListWallets(ctx)
	c.WalletBalance(ctx, "b7cdcf99-5a3e-4f0a-9d5c-2f4a8e6b1c01")
	c.WalletBanks(ctx, "b7cdcf99-5a3e-4f0a-9d5c-2f4a8e6b1c01")
	c.QuoteDisbursement(ctx, QuoteRequest{ClientWalletID: "w", Amount: "100000.50", BankCode: "bca", AccountNo: "123", TransferType: RTOL})
	c.CreateDisbursement(ctx, createRequest(), "order-4711")
	c.GetDisbursement(ctx, "0f8e5a2c-3b1d-4e6f-9a7b-8c9d0e1f2a3b")
	c.SignatureCheck(ctx, oddBody)

	want := []struct{ method, path string }{
		{"GET", "/api/v3/wallets"},
		{"GET", "/api/v3/wallets/b7cdcf99-5a3e-4f0a-9d5c-2f4a8e6b1c01/balance"},
		{"GET", "/api/v3/wallets/b7cdcf99-5a3e-4f0a-9d5c-2f4a8e6b1c01/banks"},
		{"POST", "/api/v3/disbursements/quote"},
		{"POST", "/api/v3/disbursements"},
		{"GET", "/api/v3/disbursements/0f8e5a2c-3b1d-4e6f-9a7b-8c9d0e1f2a3b"},
		{"POST", "/api/v3/debug/signature-check"},
	}
	reqs := f.requests()
	if len(reqs) != len(want) {
		t.Fatalf("%d requests, want %d", len(reqs), len(want))
	}
	for i, r := range reqs {
		if r.method != want[i].method || r.path != want[i].path {
			t.Errorf("request %d: %s %s, want %s %s", i, r.method, r.path, want[i].method, want[i].path)
		}
		if !r.validSignature {
			t.Errorf("%s %s: signature %q does not verify over the %d bytes received", r.method, r.path, r.signature, len(r.body))
		}
		if r.version != "v2" {
			t.Errorf("%s %s: signed with %s, want v2 by default", r.method, r.path, r.version)
		}
		if r.header.Get("x-api-key") != testKey {
			t.Errorf("%s %s: x-api-key %q", r.method, r.path, r.header.Get("x-api-key"))
		}
		if r.header.Get("x-timestamp") != "" || r.header.Get("Content-Encoding") != "" {
			t.Errorf("%s %s: unexpected x-timestamp or Content-Encoding", r.method, r.path)
		}
		if ms, err := strconv.ParseInt(r.t, 10, 64); err != nil || time.UnixMilli(ms).Sub(t0) <= 0 || time.UnixMilli(ms).Sub(t0) > time.Second {
			t.Errorf("%s %s: t=%q is not the client's clock in ms", r.method, r.path, r.t)
		}
		if r.method == "GET" && len(r.body) != 0 {
			t.Errorf("GET %s sent a body", r.path)
		}
		if r.method == "POST" && r.header.Get("Content-Type") != "application/json" {
			t.Errorf("POST %s: Content-Type %q", r.path, r.header.Get("Content-Type"))
		}
	}
	if !bytes.Equal(reqs[6].body, oddBody) {
		t.Errorf("signature-check body %q, want the caller's bytes %q", reqs[6].body, oddBody)
	}
	if reqs[4].key != "order-4711" {
		t.Errorf("Idempotency-Key %q", reqs[4].key)
	}
	// The spec's field names, amounts as JSON strings.
	var create map[string]any
	if err := json.Unmarshal(reqs[4].body, &create); err != nil {
		t.Fatal(err)
	}
	wantCreate := map[string]any{"client_wallet_id": "b7cdcf99-5a3e-4f0a-9d5c-2f4a8e6b1c01", "amount": "100000", "bank_code": "bca",
		"account_no": "1234567890", "transfer_type": "BIFAST", "memo": "Refund order 1042", "reference_id": "inv-1"}
	if len(create) != len(wantCreate) {
		t.Errorf("create body %s, want the fields %v", reqs[4].body, wantCreate)
	}
	for k, v := range wantCreate {
		if create[k] != v {
			t.Errorf("create body field %s = %#v, want %#v", k, create[k], v)
		}
	}
	if got := string(reqs[3].body); got != `{"client_wallet_id":"w","amount":"100000.50","bank_code":"bca","account_no":"123","transfer_type":"RTOL"}` {
		t.Errorf("quote body %s", got)
	}
	// Memo and reference_id are left out when empty.
	c.CreateDisbursement(ctx, CreateDisbursementRequest{ClientWalletID: "w", Amount: "1", BankCode: "b", AccountNo: "1", TransferType: BIFAST}, "k")
	if got := string(f.requests()[7].body); strings.Contains(got, "memo") || strings.Contains(got, "reference_id") {
		t.Errorf("empty memo and reference_id sent: %s", got)
	}
}

// The signature helper agrees with the spec's example computation.
func TestSign(t *testing.T) {
	body := []byte(`{"hello":"dunia"}`)
	got := Sign(testSecret, body, time.UnixMilli(1795860000000))
	mac := hmac.New(sha256.New, []byte(testSecret))
	mac.Write([]byte(`1795860000000.{"hello":"dunia"}`))
	if want := "t=1795860000000,v1=" + hex.EncodeToString(mac.Sum(nil)); got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
	if !regexp.MustCompile(`^t=[0-9]+,v1=[0-9a-f]{64}$`).MatchString(got) {
		t.Fatalf("Sign = %s: not the header's pattern", got)
	}
}

func TestDecodesAnswers(t *testing.T) {
	f := newFakeAPI(t, step{status: 201, body: disbursementJSON})
	c, _ := testClient(t, f)
	d, err := c.CreateDisbursement(context.Background(), createRequest(), "order-4711")
	if err != nil {
		t.Fatal(err)
	}
	if d.Replayed || d.Status != StatusRequested || d.Amount != "100000" || d.PlatformFee != "2500" || d.NetAmount != "97500" ||
		d.ReferenceID != "inv-1" || d.Memo == nil || *d.Memo != "Refund order 1042" || d.FailedReason != nil ||
		d.IdempotencyKey != "order-4711" || !d.CreatedAt.Equal(time.Date(2026, 11, 22, 10, 0, 0, 123456000, time.UTC)) {
		t.Fatalf("decoded %+v", d)
	}
	if d.Status.Final() || !StatusSuccess.Final() || !StatusCancelled.Final() || StatusPendingVerification.Final() {
		t.Fatal("Final() is wrong")
	}

	f.script = []step{{status: 200, body: disbursementJSON, header: map[string]string{"Idempotent-Replayed": "true"}}}
	d, err = c.CreateDisbursement(context.Background(), createRequest(), "order-4711")
	if err != nil || !d.Replayed {
		t.Fatalf("replay: %+v, %v", d, err)
	}

	f.script = []step{{status: 200, body: `{"wallet_id":"w","name":"Main","balance":"-12.5000","available":"-12.5000","locked":"0.0000","currency":"IDR"}`}}
	b, err := c.WalletBalance(context.Background(), "w")
	if err != nil || b.Balance != "-12.5000" || b.Locked != "0.0000" || b.Currency != "IDR" {
		t.Fatalf("balance %+v, %v", b, err)
	}
	f.script = []step{{status: 200, body: `{"banks":[{"code":"bca","name":"Bank Central Asia","swift":"CENAIDJA","supported_transfer_types":["BIFAST","RTOL"]}],"total_count":1}`}}
	banks, err := c.WalletBanks(context.Background(), "w")
	if err != nil || banks.TotalCount != 1 || banks.Banks[0].SupportedTransferTypes[1] != RTOL || banks.Banks[0].Swift != "CENAIDJA" {
		t.Fatalf("banks %+v, %v", banks, err)
	}
}

// The retry rules, each with the same key and the same body bytes on every
// attempt, every attempt signed afresh.
func TestRetries(t *testing.T) {
	ok201 := step{status: 201, body: disbursementJSON}
	err := func(status int, msg string) step {
		b, _ := json.Marshal(map[string]string{"error": msg})
		return step{status: status, body: string(b)}
	}
	cases := []struct {
		name     string
		script   []step
		netFails int // attempts the transport fails before reaching the service
		attempts int // requests the service receives
		wantErr  func(error) bool
		waits    []time.Duration // exact waits, when they are not backoffs
	}{
		{name: "network error before the service", netFails: 2, script: []step{ok201}, attempts: 1},
		{name: "connection dropped after the request", script: []step{{drop: true}, ok201}, attempts: 2},
		{name: "409 concurrent", script: []step{err(409, MessageConcurrentRequest), ok201}, attempts: 2},
		{name: "500 twice", script: []step{err(500, "internal server error"), err(500, "internal server error"), ok201}, attempts: 3},
		{name: "502 from a proxy, not JSON", script: []step{{status: 502, body: "<html>bad gateway</html>"}, ok201}, attempts: 2},
		{name: "503 gateway unavailable", script: []step{err(503, "payout gateway is temporarily unavailable; retry later"), ok201}, attempts: 2},
		{name: "429 with Retry-After", script: []step{{status: 429, body: `{"error":"rate limit exceeded; retry later"}`, header: map[string]string{"Retry-After": "7"}}, ok201},
			attempts: 2, waits: []time.Duration{7 * time.Second}},
		{name: "503 vendor failed is final", script: []step{err(503, MessageVendorPayoutFailed), ok201}, attempts: 1, wantErr: IsPayoutFailed},
		{name: "503 replay is final", script: []step{{status: 503, body: `{"error":"Vendor payout request failed"}`, header: map[string]string{"Idempotent-Replayed": "true"}}, ok201},
			attempts: 1, wantErr: func(e error) bool { a, ok := AsAPIError(e); return ok && a.Replayed && IsPayoutFailed(e) }},
		{name: "402 not retried", script: []step{err(402, MessageInsufficientBalance), ok201}, attempts: 1, wantErr: IsInsufficientBalance},
		{name: "409 cancelled not retried", script: []step{err(409, MessageCancelled), ok201}, attempts: 1,
			wantErr: func(e error) bool {
				a, ok := AsAPIError(e)
				return ok && a.StatusCode == 409 && a.Message == MessageCancelled
			}},
		{name: "410 not retried", script: []step{err(410, MessageLockExpired), ok201}, attempts: 1,
			wantErr: func(e error) bool { a, ok := AsAPIError(e); return ok && a.StatusCode == 410 }},
		{name: "422 below minimum not retried", script: []step{err(422, "withdrawal amount is below minimum: 12500"), ok201}, attempts: 1, wantErr: IsBelowMinimum},
		{name: "422 key reused not retried", script: []step{err(422, MessageKeyReused), ok201}, attempts: 1, wantErr: IsKeyReused},
		{name: "400 not retried", script: []step{err(400, "amount must be a decimal"), ok201}, attempts: 1,
			wantErr: func(e error) bool { a, ok := AsAPIError(e); return ok && a.StatusCode == 400 }},
		{name: "401 not retried", script: []step{err(401, "invalid API key"), ok201}, attempts: 1,
			wantErr: func(e error) bool { a, ok := AsAPIError(e); return ok && a.StatusCode == 401 }},
		{name: "500 until retries run out", script: []step{err(500, "internal server error")}, attempts: 1 + DefaultRetries,
			wantErr: func(e error) bool {
				a, ok := AsAPIError(e)
				return ok && a.StatusCode == 500 && a.RequestID == "req-4-abcdef"
			}},
		{name: "429 asking too long is returned", script: []step{{status: 429, body: `{"error":"slow down"}`, header: map[string]string{"Retry-After": "3600"}}},
			attempts: 1, wantErr: func(e error) bool { a, ok := AsAPIError(e); return ok && a.RetryAfter == time.Hour }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAPI(t, tc.script...)
			var opts []Option
			var flaky *flakyTransport
			if tc.netFails > 0 {
				flaky = &flakyTransport{fail: tc.netFails, next: &http.Transport{DisableKeepAlives: true}}
				opts = append(opts, WithHTTPClient(&http.Client{Transport: flaky}))
			}
			c, waits := testClient(t, f, opts...)
			d, err := c.CreateDisbursement(context.Background(), createRequest(), "order-4711")
			reqs := f.requests()
			if len(reqs) != tc.attempts {
				t.Fatalf("the service got %d attempts, want %d", len(reqs), tc.attempts)
			}
			if tc.wantErr == nil {
				if err != nil || d.ID == "" {
					t.Fatalf("got %+v, %v; want the disbursement", d, err)
				}
			} else if err == nil || !tc.wantErr(err) {
				t.Fatalf("got error %v (%#v)", err, err)
			}
			// Same key, same bytes, each attempt signed afresh.
			bodies := make([][]byte, 0, len(reqs))
			ts := map[string]bool{}
			for _, r := range reqs {
				if r.key != "order-4711" || !r.validSignature {
					t.Errorf("attempt with key %q, valid signature %v", r.key, r.validSignature)
				}
				bodies = append(bodies, r.body)
				ts[r.t] = true
			}
			if flaky != nil {
				bodies = append(bodies, flaky.bodies...)
				for _, s := range flaky.signatures {
					tv, _, _ := strings.Cut(strings.TrimPrefix(s, "t="), ",")
					ts[tv] = true
				}
			}
			for _, b := range bodies {
				if !bytes.Equal(b, bodies[0]) {
					t.Errorf("attempt sent %s, first sent %s", b, bodies[0])
				}
			}
			if len(ts) != len(bodies) {
				t.Errorf("%d attempts signed with %d distinct t", len(bodies), len(ts))
			}
			if want := len(bodies) - 1; len(*waits) != want {
				t.Errorf("waited %d times, want %d", len(*waits), want)
			}
			if tc.waits != nil {
				if len(*waits) != len(tc.waits) || (*waits)[0] != tc.waits[0] {
					t.Errorf("waits %v, want %v", *waits, tc.waits)
				}
			} else {
				for _, w := range *waits {
					if w <= 0 || w > 4*time.Millisecond {
						t.Errorf("wait %v outside the backoff bounds", w)
					}
				}
			}
		})
	}
}

// flakyTransport fails its first fail round trips after reading the
// request, as a connection refused or reset would, then passes through.
type flakyTransport struct {
	mu         sync.Mutex
	fail       int
	next       http.RoundTripper
	bodies     [][]byte
	signatures []string
}

func (f *flakyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	if f.fail > 0 {
		f.fail--
		var b []byte
		if r.Body != nil {
			b, _ = io.ReadAll(r.Body)
			r.Body.Close()
		}
		f.bodies = append(f.bodies, b)
		f.signatures = append(f.signatures, r.Header.Get("x-signature"))
		f.mu.Unlock()
		return nil, errors.New("connection reset by peer")
	}
	f.mu.Unlock()
	return f.next.RoundTrip(r)
}

func TestReadsAndQuotesRetry(t *testing.T) {
	f := newFakeAPI(t, step{status: 502, body: ""}, step{status: 429, body: `{"error":"x"}`}, step{status: 200, body: disbursementJSON})
	c, _ := testClient(t, f)
	if _, err := c.GetDisbursement(context.Background(), "0f8e5a2c-3b1d-4e6f-9a7b-8c9d0e1f2a3b"); err != nil {
		t.Fatal(err)
	}
	if n := len(f.requests()); n != 3 {
		t.Fatalf("GET made %d attempts, want 3", n)
	}

	f = newFakeAPI(t, step{status: 500, body: `{"error":"internal server error"}`},
		step{status: 200, body: `{"amount":"100000","platform_fee":"2500","net_amount":"97500","currency":"IDR","transfer_type":"BIFAST","bank_code":"bca","bank_name":"Bank Central Asia","account_no":"1234567890","account_holder_name":"SANDBOX 7890"}`})
	c, _ = testClient(t, f)
	q, err := c.QuoteDisbursement(context.Background(), QuoteRequest{ClientWalletID: "w", Amount: "100000", BankCode: "bca", AccountNo: "1234567890", TransferType: BIFAST})
	if err != nil || q.NetAmount != "97500" || q.AccountHolderName != "SANDBOX 7890" {
		t.Fatalf("quote %+v, %v", q, err)
	}
	reqs := f.requests()
	if len(reqs) != 2 || !bytes.Equal(reqs[0].body, reqs[1].body) || reqs[0].key != "" {
		t.Fatalf("quote attempts %d; bodies equal %v; key %q", len(reqs), len(reqs) == 2 && bytes.Equal(reqs[0].body, reqs[1].body), reqs[0].key)
	}

	f = newFakeAPI(t, step{status: 404, body: `{"error":"disbursement not found"}`})
	c, _ = testClient(t, f)
	_, err = c.GetDisbursement(context.Background(), "0f8e5a2c-3b1d-4e6f-9a7b-8c9d0e1f2a3b")
	if !IsNotFound(err) || len(f.requests()) != 1 {
		t.Fatalf("404: %v after %d attempts", err, len(f.requests()))
	}
}

func TestWithRetriesZeroDisablesRetries(t *testing.T) {
	f := newFakeAPI(t, step{status: 500, body: `{"error":"internal server error"}`})
	c, _ := testClient(t, f, WithRetries(0))
	if _, err := c.ListWallets(context.Background()); err == nil || len(f.requests()) != 1 {
		t.Fatalf("%v after %d attempts", err, len(f.requests()))
	}
}

// A context that ends while waiting to retry stops the retries; the
// error says so and still carries the last answer.
func TestContextCancellationStopsRetries(t *testing.T) {
	f := newFakeAPI(t, step{status: 500, body: `{"error":"internal server error"}`})
	c, _ := testClient(t, f, WithBackoff(time.Hour, time.Hour))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.sleep = func(ctx context.Context, d time.Duration) error {
		cancel()
		return sleepContext(ctx, d) // the real wait, an hour unless ctx ends it
	}
	_, err := c.CreateDisbursement(ctx, createRequest(), "order-4711")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if a, ok := AsAPIError(err); !ok || a.StatusCode != 500 {
		t.Fatalf("error %v should carry the last answer", err)
	}
	if n := len(f.requests()); n != 1 {
		t.Fatalf("%d attempts after cancellation, want 1", n)
	}

	// Already cancelled: nothing is sent.
	f2 := newFakeAPI(t, step{status: 200, body: `{}`})
	c2, _ := testClient(t, f2)
	done, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := c2.ListWallets(done); !errors.Is(err, context.Canceled) || len(f2.requests()) != 0 {
		t.Fatalf("cancelled context: %v, %d requests", err, len(f2.requests()))
	}
}

func TestCreateNeedsAKey(t *testing.T) {
	f := newFakeAPI(t, step{status: 201, body: disbursementJSON})
	c, _ := testClient(t, f)
	if _, err := c.CreateDisbursement(context.Background(), createRequest(), ""); !errors.Is(err, ErrIdempotencyKeyRequired) {
		t.Fatalf("empty key: %v", err)
	}
	if _, err := c.CreateDisbursement(context.Background(), createRequest(), strings.Repeat("k", 65)); err == nil {
		t.Fatal("a 65-character key was accepted")
	}
	if n := len(f.requests()); n != 0 {
		t.Fatalf("%d requests sent for invalid keys", n)
	}
	if _, err := c.CreateDisbursement(context.Background(), createRequest(), strings.Repeat("k", 64)); err != nil {
		t.Fatalf("64-character key: %v", err)
	}
}

func TestNewIdempotencyKey(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		k := NewIdempotencyKey()
		if !re.MatchString(k) || seen[k] {
			t.Fatalf("key %q malformed or repeated", k)
		}
		seen[k] = true
	}
}

func TestNewValidates(t *testing.T) {
	bad := []struct {
		base, key, secret string
		opts              []Option
	}{
		{"", testKey, testSecret, nil},
		{"ftp://x", testKey, testSecret, nil},
		{"localhost:8080", testKey, testSecret, nil},
		{"http://x?a=b", testKey, testSecret, nil},
		{"http://x", "", testSecret, nil},
		{"http://x", testKey, "", nil},
		{"http://x", testKey, testSecret, []Option{WithRetries(-1)}},
		{"http://x", testKey, testSecret, []Option{WithBackoff(time.Second, time.Millisecond)}},
		{"http://x", testKey, testSecret, []Option{WithHTTPClient(nil)}},
		{"http://x", testKey, testSecret, []Option{WithClock(nil)}},
	}
	for _, b := range bad {
		if _, err := New(b.base, b.key, b.secret, b.opts...); err == nil {
			t.Errorf("New(%q, %q, %q) accepted", b.base, b.key, b.secret)
		}
	}
	c, err := New("https://api.payoutd.example/", testKey, testSecret)
	if err != nil || c.base.String() != "https://api.payoutd.example" {
		t.Fatalf("New: %v, base %v", err, c.base)
	}
}

func TestBackoffIsBoundedAndJittered(t *testing.T) {
	c, err := New("http://x", testKey, testSecret, WithBackoff(100*time.Millisecond, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for attempt, ceiling := range []time.Duration{100, 200, 400, 800, 1000, 1000, 1000} {
		ceiling *= time.Millisecond
		for i := 0; i < 50; i++ {
			if d := c.backoff(attempt); d < ceiling/2 || d > ceiling {
				t.Fatalf("backoff(%d) = %v, want within [%v, %v]", attempt, d, ceiling/2, ceiling)
			}
		}
	}
	if d := c.backoff(1000); d > time.Second {
		t.Fatalf("backoff(1000) = %v", d)
	}
}

func TestAPIErrorText(t *testing.T) {
	e := &APIError{StatusCode: 402, Message: MessageInsufficientBalance, RequestID: "abc12345"}
	if got := e.Error(); got != "payoutd: 402 Insufficient balance (request abc12345)" {
		t.Fatalf("Error() = %q", got)
	}
	wrapped := errors.Join(errors.New("context"), e)
	if !IsInsufficientBalance(wrapped) || IsPayoutFailed(wrapped) || IsNotFound(nil) {
		t.Fatal("helpers do not follow the chain")
	}
}

// The service's "hint" reaches APIError.Hint and its text; Message stays
// the "error" alone, word for word, so matching on it keeps working.
func TestAPIErrorCarriesTheHint(t *testing.T) {
	f := newFakeAPI(t, step{status: 401, body: `{"error":"invalid API key","hint":"the key begins \"v3_test_\""}`})
	c, _ := testClient(t, f)
	_, err := c.ListWallets(context.Background())
	e, ok := AsAPIError(err)
	if !ok || e.Message != "invalid API key" || e.Hint != `the key begins "v3_test_"` {
		t.Fatalf("error %#v, want Message \"invalid API key\" and the hint", err)
	}
	if want := `payoutd: 401 invalid API key (the key begins "v3_test_") (request req-1-abcdef)`; e.Error() != want {
		t.Fatalf("Error() = %q, want %q", e.Error(), want)
	}
}

// webhookSecret is a client's Callback Secret.
const webhookSecret = "56aa9078ddcb59df0123456789abcdef0123456789abcdef0123456789abcdef"

const webhookBody = `{"eventId":"6f1c2a9e-8d4b-4c3e-9a7f-1b2c3d4e5f60","event":"disbursement.success","createdAt":"2026-01-01T00:00:00Z",
 "data":{"disbursementId":"0f8e5a2c-3b1d-4e6f-9a7b-8c9d0e1f2a3b","walletId":"b7cdcf99-5a3e-4f0a-9d5c-2f4a8e6b1c01","status":"SUCCESS","amount":"100000",
         "platformFee":"2500","netAmount":"97500","currency":"IDR","bankCode":"bca",
         "accountNo":"1234567890","accountHolderName":"SANDBOX 7890","referenceId":"inv-1",
         "failedReason":null,"completedAt":"2026-01-01T00:00:02Z"}}`

func webhookHeader(value string) http.Header {
	h := http.Header{}
	if value != "" {
		h.Set("x-callback-signature", value)
	}
	return h
}

func TestVerifyWebhook(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 3, 0, time.UTC)
	body := []byte(webhookBody)
	valid := Sign(webhookSecret, body, now)
	tv, v1, _ := strings.Cut(strings.TrimPrefix(valid, "t="), ",v1=")
	at := func(when time.Time) string { return Sign(webhookSecret, body, when) }
	cases := []struct {
		name   string
		secret string
		header string
		body   string
		want   error
	}{
		{"valid", webhookSecret, valid, webhookBody, nil},
		{"valid, parts reordered and spaced", webhookSecret, " v1=" + v1 + " , t=" + tv, webhookBody, nil},
		{"valid, unknown part ignored", webhookSecret, valid + ",v2=abc", webhookBody, nil},
		{"valid at exactly 5 minutes old", webhookSecret, at(now.Add(-5 * time.Minute)), webhookBody, nil},
		{"valid at exactly 5 minutes ahead", webhookSecret, at(now.Add(5 * time.Minute)), webhookBody, nil},
		{"tampered body", webhookSecret, valid, strings.Replace(webhookBody, "100000", "900000", 1), ErrWebhookSignature},
		{"body re-encoded", webhookSecret, valid, strings.Join(strings.Fields(webhookBody), ""), ErrWebhookSignature},
		{"wrong secret", strings.Repeat("0", 64), valid, webhookBody, ErrWebhookSignature},
		{"uppercase hex", webhookSecret, "t=" + tv + ",v1=" + strings.ToUpper(v1), webhookBody, ErrWebhookSignature},
		{"other t than signed", webhookSecret, "t=" + strconv.FormatInt(now.UnixMilli()+1, 10) + ",v1=" + v1, webhookBody, ErrWebhookSignature},
		{"stale t", webhookSecret, at(now.Add(-5*time.Minute - time.Millisecond)), webhookBody, ErrWebhookTimestamp},
		{"future t", webhookSecret, at(now.Add(5*time.Minute + time.Millisecond)), webhookBody, ErrWebhookTimestamp},
		{"missing header", webhookSecret, "", webhookBody, ErrWebhookMalformed},
		{"blank header", webhookSecret, "   ", webhookBody, ErrWebhookMalformed},
		{"no v1", webhookSecret, "t=" + tv, webhookBody, ErrWebhookMalformed},
		{"no t", webhookSecret, "v1=" + v1, webhookBody, ErrWebhookMalformed},
		{"short v1", webhookSecret, "t=" + tv + ",v1=" + v1[:63], webhookBody, ErrWebhookMalformed},
		{"v1 not hex", webhookSecret, "t=" + tv + ",v1=" + strings.Repeat("z", 64), webhookBody, ErrWebhookMalformed},
		{"t not a number", webhookSecret, "t=soon,v1=" + v1, webhookBody, ErrWebhookMalformed},
		{"t in seconds with fraction", webhookSecret, "t=1767225603.5,v1=" + v1, webhookBody, ErrWebhookMalformed},
		{"t twice", webhookSecret, valid + ",t=" + tv, webhookBody, ErrWebhookMalformed},
		{"not key=value", webhookSecret, "sha256=" + v1, webhookBody, ErrWebhookMalformed},
		{"garbage", webhookSecret, "garbage", webhookBody, ErrWebhookMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := VerifyWebhook(tc.secret, webhookHeader(tc.header), []byte(tc.body), now)
			if tc.want == nil && err != nil {
				t.Fatalf("VerifyWebhook: %v", err)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("VerifyWebhook = %v, want %v", err, tc.want)
			}
			if tc.header != "" {
				if err2 := VerifyWebhookSignature(tc.secret, tc.header, []byte(tc.body), now); (err2 == nil) != (err == nil) {
					t.Fatalf("VerifyWebhookSignature %v disagrees with VerifyWebhook %v", err2, err)
				}
			}
		})
	}
	if err := VerifyWebhook("", webhookHeader(valid), body, now); err == nil {
		t.Fatal("an empty secret verified")
	}
}

func TestParseWebhook(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 3, 0, time.UTC)
	parse := func(body string) (*WebhookEvent, error) {
		return ParseWebhook(webhookSecret, webhookHeader(Sign(webhookSecret, []byte(body), now)), []byte(body), now)
	}
	ev, err := parse(webhookBody)
	if err != nil {
		t.Fatal(err)
	}
	d := ev.Disbursement
	if ev.EventID != "6f1c2a9e-8d4b-4c3e-9a7f-1b2c3d4e5f60" || ev.Event != EventDisbursementSuccess || ev.Payment != nil || d == nil ||
		!ev.CreatedAt.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("event %+v", ev)
	}
	if d.DisbursementID != "0f8e5a2c-3b1d-4e6f-9a7b-8c9d0e1f2a3b" || d.Status != StatusSuccess || d.Amount != "100000" ||
		d.PlatformFee != "2500" || d.NetAmount != "97500" || d.BankCode != "bca" || d.AccountHolderName != "SANDBOX 7890" ||
		d.ReferenceID != "inv-1" || d.FailedReason != nil || d.CompletedAt == nil || d.WalletID == "" || d.AccountNo != "1234567890" {
		t.Fatalf("data %+v", d)
	}

	failed := `{"eventId":"e2","event":"disbursement.failed","createdAt":"2026-01-01T00:00:00Z","data":{"disbursementId":"d","walletId":"w",` +
		`"status":"FAILED","amount":"100000","platformFee":"2500","netAmount":"97500","currency":"IDR","bankCode":"bca","accountNo":"1000000004",` +
		`"accountHolderName":"SANDBOX 0004","failedReason":"account closed","completedAt":"2026-01-01T00:00:02Z"}}`
	ev, err = parse(failed)
	if err != nil || ev.Disbursement.ReferenceID != "" || ev.Disbursement.FailedReason == nil || *ev.Disbursement.FailedReason != "account closed" {
		t.Fatalf("failed event %+v, %v", ev, err)
	}

	payment := `{"eventId":"e3","event":"payment.success","createdAt":"2026-01-01T00:00:00Z","data":{"paymentId":"p","playerId":"player-8812",` +
		`"status":"SUCCESS","amount":"50000","platformFee":"350","netAmount":"49650","currency":"IDR","paidAt":"2026-01-01T00:00:01Z",` +
		`"expiredAt":"2026-01-01T00:15:00Z","settledAt":null,"retrievalReferenceNo":"123456789012"}}`
	ev, err = parse(payment)
	if err != nil || ev.Disbursement != nil || ev.Payment == nil {
		t.Fatalf("payment event %+v, %v", ev, err)
	}
	p := ev.Payment
	if p.PlayerID != "player-8812" || p.Status != PaymentStatusSuccess || p.NetAmount != "49650" || p.PaidAt == nil || p.SettledAt != nil ||
		p.RetrievalReferenceNo == nil || *p.RetrievalReferenceNo != "123456789012" || p.ExpiredAt.IsZero() {
		t.Fatalf("payment data %+v", p)
	}

	ev, err = parse(`{"eventId":"e4","event":"refund.created","createdAt":"2026-01-01T00:00:00Z","data":{"x":1}}`)
	if err != nil || ev.Disbursement != nil || ev.Payment != nil || string(ev.Data) != `{"x":1}` {
		t.Fatalf("unknown event %+v, %v", ev, err)
	}

	// Verification comes first: a forged body is never decoded.
	if _, err := ParseWebhook(webhookSecret, webhookHeader(Sign("other", []byte(webhookBody), now)), []byte(webhookBody), now); !errors.Is(err, ErrWebhookSignature) {
		t.Fatalf("forged: %v", err)
	}
	if _, err := parse(`not json`); err == nil || errors.Is(err, ErrWebhookSignature) {
		t.Fatalf("signed garbage: %v", err)
	}
}

// sigUsedStep is the service's answer to a signature it accepted before
// for another request.
var sigUsedStep = step{status: 401, body: `{"error":"x-signature was already used; sign the request again"}`}

// With v1 signatures two reads signed in the same millisecond carry the
// same signature (a GET's body is empty): the second is refused with 401
// "x-signature was already used". The Client waits a millisecond, signs
// again with a later t and resends once, besides its retries; a second
// collision or any other 401 is returned.
func TestResignsOnceWhenTheSignatureWasUsed(t *testing.T) {
	frozen := func() time.Time { return t0 } // a clock that does not move
	for _, tt := range []struct {
		name     string
		script   []step
		opts     []Option
		attempts int
		wantErr  func(error) bool
	}{
		{"re-signed and read", []step{sigUsedStep, {status: 200, body: disbursementJSON}}, nil, 2, nil},
		{"also without retries", []step{sigUsedStep, {status: 200, body: disbursementJSON}}, []Option{WithRetries(0)}, 2, nil},
		{"twice used: returned", []step{sigUsedStep, sigUsedStep}, nil, 2, IsSignatureUsed},
		{"another 401: returned at once", []step{{status: 401, body: `{"error":"invalid API key"}`}}, nil, 1,
			func(err error) bool {
				e, ok := AsAPIError(err)
				return ok && e.StatusCode == 401 && !IsSignatureUsed(err)
			}},
		{"then retried as ever", []step{sigUsedStep, {status: 503, body: `{"error":"service temporarily unavailable; retry"}`},
			{status: 200, body: disbursementJSON}}, []Option{WithRetries(1)}, 3, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t, tt.script...)
			c, waits := testClient(t, f, append([]Option{WithClock(frozen), WithSignatureV1()}, tt.opts...)...)
			_, err := c.GetDisbursement(context.Background(), "0f8e5a2c-3b1d-4e6f-9a7b-8c9d0e1f2a3b")
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("create: %v", err)
			case tt.wantErr != nil && !tt.wantErr(err):
				t.Fatalf("create: %v", err)
			}
			reqs := f.requests()
			if len(reqs) != tt.attempts {
				t.Fatalf("%d attempts, want %d", len(reqs), tt.attempts)
			}
			for i, r := range reqs {
				if !r.validSignature || r.version != "v1" {
					t.Fatalf("attempt %d: valid signature %v (%s)", i, r.validSignature, r.version)
				}
			}
			if len(reqs) >= 2 {
				first, _ := strconv.ParseInt(reqs[0].t, 10, 64)
				second, _ := strconv.ParseInt(reqs[1].t, 10, 64)
				if second <= first {
					t.Fatalf("re-signed with t %d after %d: want a later millisecond", second, first)
				}
				if (*waits)[0] != time.Millisecond {
					t.Fatalf("waited %v before re-signing, want 1ms", (*waits)[0])
				}
			}
		})
	}
}

// A create whose signature the service says was used already is never
// re-signed and resent by the Client: with v1, the signature may have been
// used by a copy of this create that someone else sent first under another
// key, and a second signature would then pay twice. The error is returned
// for the caller to look the payout up.
func TestNeverResignsACreateOrAPayment(t *testing.T) {
	for _, v1 := range []bool{false, true} {
		f := newFakeAPI(t, sigUsedStep, step{status: 201, body: disbursementJSON})
		opts := []Option{WithClock(func() time.Time { return t0 })}
		if v1 {
			opts = append(opts, WithSignatureV1())
		}
		c, _ := testClient(t, f, opts...)
		if _, err := c.CreateDisbursement(context.Background(), createRequest(), "order-4711"); !IsSignatureUsed(err) {
			t.Errorf("v1=%v: create answered %v, want the signature-used error returned", v1, err)
		}
		if n := len(f.requests()); n != 1 {
			t.Errorf("v1=%v: the create was sent %d times, want once", v1, n)
		}
		g := newFakeAPI(t, sigUsedStep, step{status: 201, body: `{"success":true,"data":{}}`})
		c, _ = testClient(t, g, opts...)
		if _, err := c.CreatePayment(context.Background(), CreatePaymentRequest{Price: 50000, PlayerID: "p-1"}); !IsSignatureUsed(err) {
			t.Errorf("v1=%v: payment create answered %v, want the signature-used error returned", v1, err)
		}
		if n := len(g.requests()); n != 1 {
			t.Errorf("v1=%v: the payment create was sent %d times, want once", v1, n)
		}
	}
}

// SignV2 agrees with the known answers in the repository, computed from
// the scheme's definition by someone who had not read this code.
func TestSignV2KnownAnswers(t *testing.T) {
	raw, err := os.ReadFile("../signature/testdata/v2_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vs []struct {
		Name           string `json:"name"`
		T              string `json:"t"`
		Method         string `json:"method"`
		PathWithQuery  string `json:"path_with_query"`
		IdempotencyKey string `json:"idempotency_key"`
		Body           string `json:"body"`
		Header         string `json:"header"`
	}
	if err := json.Unmarshal(raw, &vs); err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		ms, _ := strconv.ParseInt(v.T, 10, 64)
		if got := SignV2(testVectorSecret, v.Method, v.PathWithQuery, v.IdempotencyKey, []byte(v.Body), time.UnixMilli(ms)); got != v.Header {
			t.Errorf("%s: SignV2 = %s, want %s", v.Name, got, v.Header)
		}
	}
	if len(vs) == 0 {
		t.Fatal("no vectors")
	}
}

const testVectorSecret = "3f9a1c0b7d2e4f5a6b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c"

// The Client never follows a redirect: it would carry x-api-key and the
// signature to another host. The 3xx is returned as the answer.
func TestRedirectsAreNotFollowed(t *testing.T) {
	var reached atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		w.Write([]byte(`{}`))
	}))
	defer other.Close()
	f := newFakeAPI(t, step{status: http.StatusTemporaryRedirect, body: `{"error":"moved"}`, header: map[string]string{"Location": other.URL + "/api/v3/wallets"}})
	for _, hc := range []*http.Client{nil, {}} {
		opts := []Option{WithRetries(0)}
		if hc != nil {
			opts = append(opts, WithHTTPClient(hc))
		}
		c, err := New(f.srv.URL, testKey, testSecret, opts...)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.ListWallets(context.Background())
		if e, ok := AsAPIError(err); !ok || e.StatusCode != http.StatusTemporaryRedirect {
			t.Errorf("list wallets: %v, want the 307 returned", err)
		}
	}
	if n := reached.Load(); n != 0 {
		t.Fatalf("the redirect's target was called %d times", n)
	}
}
