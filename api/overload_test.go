package api

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/payoutd/payoutd/internal/config"
)

// Per-client request rates on the merchant routes: reads and writes are
// counted apart, per client, against the service's default unless the
// operator gave the client a rate of its own (0: unlimited); a request
// that fails authentication spends nothing.
func TestClientRateLimits(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{configure: func(c *config.Config) {
		c.ClientReadRateLimit, c.ClientWriteRateLimit = 3, 2
	}})
	balance := func(m merchant, sign string) response {
		return e.do(request{path: "/api/v3/wallets/" + e.wallet.String() + "/balance", apiKey: m.apiKey, sign: sign})
	}
	// Forged signatures are refused before the count: they cannot use up
	// the merchant's budget.
	for range 5 {
		if r := balance(e.m, "not-the-secret"); r.status != http.StatusUnauthorized {
			t.Fatalf("a forged signature: %d %s", r.status, r.body)
		}
	}
	for i := range 3 {
		if r := balance(e.m, e.m.signingSecret); r.status != http.StatusOK {
			t.Fatalf("read %d within the default rate: %d %s", i+1, r.status, r.body)
		}
	}
	// The next read is refused, unless the machine is so slow that a
	// third of a second passed and a read's allowance came back: then one
	// of the few after it is.
	r := refusedWithin(t, 5, func() response { return balance(e.m, e.m.signingSecret) })
	if r.header.Get("X-RateLimit-Limit") != "3" {
		t.Fatalf("X-RateLimit-Limit %q, want 3", r.header.Get("X-RateLimit-Limit"))
	}
	// Writes have a count of their own (quotes: the quickest write).
	for i := range 2 {
		if r := e.quote(e.body("100000", "1234567890")); r.status != http.StatusOK {
			t.Fatalf("write %d after the reads ran out: %d %s", i+1, r.status, r.body)
		}
	}
	refusedWithin(t, 5, func() response { return e.quote(e.body("100000", "1234567890")) })

	// The count is per client.
	other := e.newMerchant()
	otherWallet := e.newWallet(other.id, "Main", "simbank", false)
	if r := e.do(request{path: "/api/v3/wallets/" + otherWallet.String() + "/balance", apiKey: other.apiKey, sign: other.signingSecret}); r.status != http.StatusOK {
		t.Fatalf("another client's read: %d %s", r.status, r.body)
	}

	// A rate of the client's own replaces the default: 0 is unlimited.
	e.update(map[string]string{"read-rate-limit": "0"})
	for i := range 10 {
		if r := balance(e.m, e.m.signingSecret); r.status != http.StatusOK {
			t.Fatalf("read %d with the client's rate unlimited: %d %s", i+1, r.status, r.body)
		}
	}
	e.update(map[string]string{"read-rate-limit": "default"})
	refusedWithin(t, 5, func() response { return balance(e.m, e.m.signingSecret) })
}

// refusedWithin sends up to n requests until one is rate limited
// (wantRateLimited checks it) and returns it; none is a failure. The rate
// is per second of wall clock: on a loaded machine an allowance can come
// back between two requests, so the first over the count may pass.
func refusedWithin(t *testing.T, n int, send func() response) response {
	t.Helper()
	for range n {
		if r := send(); r.status != http.StatusOK {
			wantRateLimited(t, r)
			return r
		}
	}
	t.Fatalf("%d requests over the rate, none refused", n)
	return response{}
}

// Beyond MAX_IN_FLIGHT requests at once, a request is answered 503 with
// Retry-After and the spec's error body at once; health, readiness,
// metrics and the operators' routes are always served.
func TestInFlightBound(t *testing.T) {
	t.Parallel()
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.Use(inFlight(1))
	entered, release := make(chan struct{}), make(chan struct{})
	e.GET("/api/v3/slow", func(c *gin.Context) {
		close(entered)
		<-release
		c.Status(http.StatusOK)
	})
	for _, path := range []string{"/api/v3/fast", "/healthz", "/readyz", "/metrics", "/ops/queues"} {
		e.GET(path, func(c *gin.Context) { c.Status(http.StatusOK) })
	}
	serve := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec
	}
	done := make(chan int)
	go func() { done <- serve("/api/v3/slow").Code }()
	<-entered

	busy := serve("/api/v3/fast")
	if busy.Code != http.StatusServiceUnavailable || busy.Header().Get("Retry-After") != "1" ||
		busy.Body.String() != `{"error":"`+errServerBusy.Error()+`"}` {
		t.Fatalf("a request beyond the bound: %d, Retry-After %q, %s", busy.Code, busy.Header().Get("Retry-After"), busy.Body)
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/ops/queues"} {
		if code := serve(path).Code; code != http.StatusOK {
			t.Errorf("%s while the bound is reached: %d, want 200", path, code)
		}
	}
	close(release)
	if code := <-done; code != http.StatusOK {
		t.Fatalf("the request in flight: %d", code)
	}
	if code := serve("/api/v3/fast").Code; code != http.StatusOK {
		t.Fatalf("a request once the slot is free: %d", code)
	}
}

// A request whose work outlives its deadline (a stuck database call) is
// answered 503 with the retry advice, never a 500, and gives its slot back.
func TestRequestDeadline(t *testing.T) {
	t.Parallel()
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.Use(requestDeadline(20 * time.Millisecond))
	e.GET("/api/v3/stuck", func(c *gin.Context) {
		<-c.Request.Context().Done() // a query waiting on a lock
		fail(c, fmt.Errorf("find wallet: %w", c.Request.Context().Err()))
	})
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v3/stuck", nil))
	if rec.Code != http.StatusServiceUnavailable || rec.Body.String() != `{"error":"`+errRequestTimeout.Error()+`"}` {
		t.Fatalf("a request past its deadline: %d %s", rec.Code, rec.Body)
	}
}
