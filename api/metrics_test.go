package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/internal/metrics/metricstest"
)

// Requests are counted by route pattern, never by raw path: two wallets'
// balances are one series, and a path no route matches is "unmatched".
func TestRequestsCountedByRoutePattern(t *testing.T) {
	b := setup(t)
	m := b.newMerchant()
	for _, id := range []string{"6f1c2a9e-8d4b-4c3e-9a7f-1b2c3d4e5f60", "0b7e7a52-3c1d-4f4e-8a55-2d9e1c0b7a11"} {
		b.do(request{path: "/api/v3/wallets/" + id + "/balance", apiKey: m.apiKey, timestamp: true}).expect(t, http.StatusNotFound, "")
	}
	b.do(request{path: "/no/such/route"}).expect(t, http.StatusNotFound, "")

	if n := metricstest.Value(t, b.metrics, "payoutd_http_requests_total",
		"method", "GET", "route", "/api/v3/wallets/:wallet_id/balance", "code", "404"); n != 2 {
		t.Errorf("balance requests counted %v times under the route pattern, want 2", n)
	}
	if n := metricstest.Value(t, b.metrics, "payoutd_http_request_duration_seconds",
		"method", "GET", "route", "/api/v3/wallets/:wallet_id/balance"); n != 2 {
		t.Errorf("balance requests timed %v times, want 2", n)
	}
	if n := metricstest.Value(t, b.metrics, "payoutd_http_requests_total", "method", "GET", "route", "unmatched", "code", "404"); n != 1 {
		t.Errorf("unmatched request counted %v times, want 1", n)
	}
	// Two wallets and one unknown path: two series, no raw path among them.
	if n, err := testutil.GatherAndCount(b.metrics.Registry(), "payoutd_http_requests_total"); err != nil || n != 2 {
		t.Errorf("payoutd_http_requests_total has %d series (%v), want 2", n, err)
	}
}

// /metrics answers operators only: 401 without or with wrong credentials,
// the registry with ADMIN_USER / ADMIN_PASSWORD.
func TestMetricsEndpointNeedsOperatorCredentials(t *testing.T) {
	b := setup(t, setupOptions{configure: func(c *config.Config) { withOperators(c) }})
	b.do(request{path: "/healthz"}).expect(t, http.StatusOK, "")

	resp := b.do(request{path: "/metrics"})
	resp.expect(t, http.StatusUnauthorized, "operator credentials required (ADMIN_USER / ADMIN_PASSWORD)")
	if !strings.HasPrefix(resp.header.Get("WWW-Authenticate"), "Basic ") {
		t.Errorf("WWW-Authenticate %q, want a Basic challenge", resp.header.Get("WWW-Authenticate"))
	}
	b.do(request{path: "/metrics", remoteIP: uniqueIP(), headers: map[string]string{"Authorization": basicAuth("ops", "wrong")}}).
		expect(t, http.StatusUnauthorized, "")

	resp = b.do(request{path: "/metrics", headers: map[string]string{"Authorization": basicAuth("ops", testAdminPassword)}})
	resp.expect(t, http.StatusOK, "")
	if ct := resp.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q, want text/plain; version=0.0.4", ct)
	}
	for _, want := range []string{`payoutd_http_requests_total{code="200",method="GET",route="/healthz"} 1`, "go_goroutines", "process_"} {
		if !strings.Contains(string(resp.body), want) {
			t.Errorf("/metrics does not show %q", want)
		}
	}
}

// Without metrics the API serves no /metrics and counts nothing.
func TestNoMetricsWithoutRegistry(t *testing.T) {
	b := setup(t)
	srv, err := New(withServices(Deps{Config: b.server.cfg, DB: b.db, Redis: b.redis, Sealer: b.server.sealer, Vendors: b.server.vendors, Acquirer: b.server.acquirer}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	// Not checked against openapi.yaml: the service always runs with
	// metrics (internal/app), and the document describes it so.
	b.server = srv
	b.do(request{path: "/metrics"}).expect(t, http.StatusNotFound, "")
}

func basicAuth(user, password string) string {
	r, _ := http.NewRequest(http.MethodGet, "/", nil)
	r.SetBasicAuth(user, password)
	return r.Header.Get("Authorization")
}

// AdminOnly, the worker's /metrics guard, answers as requireAdmin does.
func TestAdminOnly(t *testing.T) {
	cfg := config.Defaults()
	h := AdminOnly(cfg, nil, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	serve := func(auth string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	if rec := serve(basicAuth("", "")); rec.Code != http.StatusUnauthorized {
		t.Errorf("without ADMIN_USER configured: %d, want 401", rec.Code)
	}
	cfg.AdminUser, cfg.AdminPassword = "ops", testAdminPassword
	h = AdminOnly(cfg, nil, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	for _, auth := range []string{"", basicAuth("ops", "wrong"), basicAuth("admin", testAdminPassword)} {
		rec := serve(auth)
		if rec.Code != http.StatusUnauthorized || !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Basic ") ||
			!strings.Contains(rec.Body.String(), "operator credentials required") {
			t.Errorf("Authorization %q: %d %q, want 401 with a Basic challenge", auth, rec.Code, rec.Body.String())
		}
	}
	if rec := serve(basicAuth("ops", testAdminPassword)); rec.Code != http.StatusTeapot {
		t.Errorf("with the credentials: %d, want the handler's answer", rec.Code)
	}
	// A browser's cross-site state change is refused before anything else.
	req := httptest.NewRequest(http.MethodPost, "/metrics", nil)
	req.Header.Set("Authorization", basicAuth("ops", testAdminPassword))
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden || rec.Body.String() != `{"error":"cross-origin request refused"}`+"\n" {
		t.Errorf("cross-site POST: %d %q, want 403 cross-origin request refused", rec.Code, rec.Body.String())
	}
	// Failed logins are throttled per address here too.
	for i := 0; i < adminLoginLimit.Burst; i++ {
		serve(basicAuth("ops", "wrong"))
	}
	if rec := serve(basicAuth("ops", testAdminPassword)); rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Errorf("after %d failures: %d (Retry-After %q), want 429 with Retry-After", adminLoginLimit.Burst, rec.Code, rec.Header().Get("Retry-After"))
	}
}

// The Go profiler answers operators only, like /metrics; an unknown
// profile is a JSON 404, not pprof's plain text.
func TestProfilerNeedsOperatorCredentials(t *testing.T) {
	b := setup(t, setupOptions{configure: func(c *config.Config) { withOperators(c) }})
	operator := map[string]string{"Authorization": basicAuth("ops", testAdminPassword)}
	ip := uniqueIP()
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/profile?seconds=1"} {
		b.do(request{path: path}).expect(t, http.StatusUnauthorized, "operator credentials required (ADMIN_USER / ADMIN_PASSWORD)")
		b.do(request{path: path, remoteIP: ip, headers: map[string]string{"Authorization": basicAuth("ops", "wrong")}}).
			expect(t, http.StatusUnauthorized, "")
	}
	resp := b.do(request{path: "/debug/pprof/", headers: operator})
	resp.expect(t, http.StatusOK, "")
	if !strings.Contains(string(resp.body), "goroutine") {
		t.Errorf("/debug/pprof/ does not list the goroutine profile: %.200s", resp.body)
	}
	resp = b.do(request{path: "/debug/pprof/goroutine?debug=1", headers: operator})
	resp.expect(t, http.StatusOK, "")
	if !strings.Contains(string(resp.body), "goroutine profile:") {
		t.Errorf("goroutine profile reads %.200s", resp.body)
	}
	b.do(request{path: "/debug/pprof/nosuch", headers: operator}).expect(t, http.StatusNotFound, "not found")
	// Durations the server cannot serve within its WriteTimeout, and a
	// second profile while one runs, are JSON errors, not pprof's text.
	for _, seconds := range []string{"0", "51", "abc", "-1"} {
		b.do(request{path: "/debug/pprof/profile?seconds=" + seconds, headers: operator}).
			expect(t, http.StatusBadRequest, "seconds must be an integer from 1 to 50")
	}
	b.server.profiling.Lock()
	b.do(request{path: "/debug/pprof/trace?seconds=1", headers: operator}).
		expect(t, http.StatusConflict, "another CPU profile or trace is being taken; retry when it ends")
	b.server.profiling.Unlock()
	b.do(request{path: "/debug/pprof/trace?seconds=1", headers: operator}).expect(t, http.StatusOK, "")
}
