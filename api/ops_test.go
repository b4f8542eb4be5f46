package api

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/internal/testenv"
)

// testAdminPassword is long enough for the configuration's rule.
const testAdminPassword = "correct-horse-battery"

func withOperators(c *config.Config) { c.AdminUser, c.AdminPassword = "ops", testAdminPassword }

// uniqueIP is a client address of this test alone: failed logins are
// counted per address in a Redis that tests may share.
func uniqueIP() string {
	var b [2]byte
	rand.Read(b[:])
	return fmt.Sprintf("198.18.%d.%d", b[0], b[1])
}

// dashboardQueue makes a queue of this test's own (prefixed) and returns
// its name and an inspector of it.
func dashboardQueue(t *testing.T, rdb *redis.Client) (string, *asynq.Inspector) {
	t.Helper()
	opt, prefix := testenv.Queue(t, rdb)
	queue := prefix + "critical"
	client := asynq.NewClient(opt)
	defer client.Close()
	if _, err := client.Enqueue(asynq.NewTask("test:noop", nil), asynq.Queue(queue)); err != nil {
		t.Fatal(err)
	}
	inspector := asynq.NewInspector(opt)
	t.Cleanup(func() {
		inspector.DeleteQueue(queue, true)
		inspector.Close()
	})
	return queue, inspector
}

func paused(t *testing.T, inspector *asynq.Inspector, queue string) bool {
	t.Helper()
	info, err := inspector.GetQueueInfo(queue)
	if err != nil {
		t.Fatal(err)
	}
	return info.Paused
}

// A browser sends the operator's basic credentials by itself, so a page of
// another site could pause payouts through the dashboard. State changes
// under /ops, /debug and /metrics that a browser marks as cross-site
// (Sec-Fetch-Site, or only Origin on older browsers) are refused with a
// JSON 403 and change nothing; scripts, which send neither header, and the
// dashboard's own same-origin calls keep working, and reads stay allowed.
func TestOpsRefuseCrossOriginStateChanges(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOptions{dashboard: true, configure: withOperators})
	queue, inspector := dashboardQueue(t, b.dashRedis)
	ip := uniqueIP()
	pause := "/ops/queues/api/queues/" + queue + ":pause"
	resume := "/ops/queues/api/queues/" + queue + ":resume"
	auth := basicAuth("ops", testAdminPassword)
	crossSite := []map[string]string{
		{"Authorization": auth, "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
		{"Authorization": auth, "Origin": "https://evil.example"},
		{"Authorization": auth, "Sec-Fetch-Site": "same-site", "Origin": "https://ops.evil.example"},
	}
	for _, h := range crossSite {
		b.do(request{method: http.MethodPost, path: pause, headers: h, remoteIP: ip}).expect(t, http.StatusForbidden, "cross-origin request refused")
		if paused(t, inspector, queue) {
			t.Fatalf("a cross-origin POST with %v paused the queue", h)
		}
		b.do(request{method: http.MethodPost, path: "/debug/pprof/symbol", headers: h, remoteIP: ip}).
			expect(t, http.StatusForbidden, "cross-origin request refused")
		// Reads are not state changes: a GET from anywhere is answered.
		b.do(request{path: "/ops/queues/api/queues", headers: h, remoteIP: ip}).expect(t, http.StatusOK, "")
		b.do(request{path: "/metrics", headers: h, remoteIP: ip}).expect(t, http.StatusOK, "")
	}

	// A script (curl) sends neither header; the dashboard's own page sends
	// Sec-Fetch-Site: same-origin.
	b.do(request{method: http.MethodPost, path: pause, headers: map[string]string{"Authorization": auth}, remoteIP: ip}).expect(t, http.StatusNoContent, "")
	if !paused(t, inspector, queue) {
		t.Fatal("a script's POST did not pause the queue")
	}
	b.do(request{method: http.MethodPost, path: resume, remoteIP: ip,
		headers: map[string]string{"Authorization": auth, "Sec-Fetch-Site": "same-origin", "Origin": "http://example.com"}}).expect(t, http.StatusNoContent, "")
	if paused(t, inspector, queue) {
		t.Fatal("the dashboard's same-origin POST did not resume the queue")
	}
}

// OPS_READ_ONLY mounts the dashboard read-only: it shows the queues but a
// pause, even with the operator's credentials, is refused.
func TestOpsReadOnlyDashboard(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOptions{dashboard: true, configure: func(c *config.Config) { withOperators(c); c.OpsReadOnly = true }})
	queue, inspector := dashboardQueue(t, b.dashRedis)
	auth := map[string]string{"Authorization": basicAuth("ops", testAdminPassword)}
	b.do(request{path: "/ops/queues/api/queues", headers: auth}).expect(t, http.StatusOK, "")
	b.do(request{method: http.MethodPost, path: "/ops/queues/api/queues/" + queue + ":pause", headers: auth}).
		expect(t, http.StatusForbidden, "the queue dashboard is read-only (OPS_READ_ONLY)")
	b.do(request{method: http.MethodDelete, path: "/ops/queues/api/queues/" + queue, headers: auth}).
		expect(t, http.StatusForbidden, "the queue dashboard is read-only (OPS_READ_ONLY)")
	if paused(t, inspector, queue) {
		t.Fatal("a read-only dashboard paused the queue")
	}
}

// Failed operator logins are throttled per client address: after 10 in a
// minute the address gets 429 with Retry-After, before its password is
// even compared (so the right one does not get through either), while
// another address still logs in. Successful logins are not counted.
func TestOpsFailedLoginsThrottled(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOptions{dashboard: true, configure: withOperators})
	attacker, operator := uniqueIP(), uniqueIP()
	good := map[string]string{"Authorization": basicAuth("ops", testAdminPassword)}
	for i := 0; i < 20; i++ {
		b.do(request{path: "/metrics", headers: good, remoteIP: operator}).expect(t, http.StatusOK, "")
	}
	for i := 0; i < 10; i++ {
		b.do(request{path: "/ops/queues/api/queues", remoteIP: attacker,
			headers: map[string]string{"Authorization": basicAuth("ops", fmt.Sprintf("guess-%d", i))}}).expect(t, http.StatusUnauthorized, "")
	}
	for _, path := range []string{"/ops/queues/api/queues", "/metrics", "/debug/pprof/"} {
		for _, h := range []map[string]string{{"Authorization": basicAuth("ops", "guess-10")}, good} {
			r := b.do(request{path: path, headers: h, remoteIP: attacker})
			r.expect(t, http.StatusTooManyRequests, "too many failed operator logins; retry later")
			if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 || s > 60 {
				t.Fatalf("%s: Retry-After %q, want 1-60 seconds", path, r.header.Get("Retry-After"))
			}
		}
	}
	b.do(request{path: "/ops/queues/api/queues", headers: good, remoteIP: operator}).expect(t, http.StatusOK, "")
}

// Behind a trusted proxy the address counted is the client's, not the
// proxy's: one client's failures do not lock out the others.
func TestOpsFailedLoginsCountedPerForwardedClient(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOptions{trustedProxies: "10.0.0.0/8", configure: withOperators})
	attacker, operator := uniqueIP(), uniqueIP()
	for i := 0; i < 11; i++ {
		b.do(request{path: "/metrics", remoteIP: "10.0.0.2",
			headers: map[string]string{"Authorization": basicAuth("ops", "nope"), "X-Forwarded-For": attacker}})
	}
	b.do(request{path: "/metrics", remoteIP: "10.0.0.2", headers: map[string]string{"Authorization": basicAuth("ops", "nope"), "X-Forwarded-For": attacker}}).
		expect(t, http.StatusTooManyRequests, "")
	b.do(request{path: "/metrics", remoteIP: "10.0.0.2",
		headers: map[string]string{"Authorization": basicAuth("ops", testAdminPassword), "X-Forwarded-For": operator}}).expect(t, http.StatusOK, "")
}

// Without Redis the throttle still holds, counted in the process.
func TestLoginThrottleWithoutRedis(t *testing.T) {
	t.Parallel()
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 50 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { dead.Close() })
	th := newLoginThrottle(dead)
	ctx := context.Background()
	for i := 0; i < adminLoginLimit.Burst; i++ {
		if wait := th.blocked(ctx, "192.0.2.7"); wait > 0 {
			t.Fatalf("blocked after %d failures", i)
		}
		th.failed(ctx, "192.0.2.7")
	}
	if wait := th.blocked(ctx, "192.0.2.7"); wait <= 0 || wait > time.Minute {
		t.Fatalf("after %d failures without Redis: wait %s, want up to a minute", adminLoginLimit.Burst, wait)
	}
	if wait := th.blocked(ctx, "192.0.2.8"); wait > 0 {
		t.Fatal("another address is blocked too")
	}
}

// The dashboard works on an operator network without internet access: its
// page loads no font from Google, but the icon font payoutd serves itself.
func TestDashboardFontsAreServedLocally(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOptions{dashboard: true, configure: withOperators})
	auth := map[string]string{"Authorization": basicAuth("ops", testAdminPassword)}
	ip := uniqueIP()
	page := b.do(request{path: "/ops/queues", headers: auth, remoteIP: ip})
	page.expect(t, http.StatusOK, "")
	if strings.Contains(string(page.body), "fonts.googleapis.com") || !strings.Contains(string(page.body), `href="/ops/dashboard-fonts/fonts.css"`) {
		t.Fatalf("the dashboard page loads fonts from the internet or not from payoutd:\n%s", page.body)
	}
	css := b.do(request{path: "/ops/dashboard-fonts/fonts.css", headers: auth, remoteIP: ip})
	css.expect(t, http.StatusOK, "")
	if !strings.HasPrefix(css.header.Get("Content-Type"), "text/css") || !strings.Contains(string(css.body), "MaterialIcons-Regular.woff2") {
		t.Fatalf("fonts.css: %s %q", css.header.Get("Content-Type"), css.body)
	}
	font := b.do(request{path: "/ops/dashboard-fonts/MaterialIcons-Regular.woff2", headers: auth, remoteIP: ip})
	font.expect(t, http.StatusOK, "")
	if len(font.body) < 100_000 || string(font.body[:4]) != "wOF2" {
		t.Fatalf("the icon font: %d bytes starting %q", len(font.body), font.body[:min(4, len(font.body))])
	}
	// Like the page, the fonts are for operators only.
	b.do(request{path: "/ops/dashboard-fonts/fonts.css", remoteIP: ip}).expect(t, http.StatusUnauthorized, "")
}

// GET /ops/vendors lists the vendors' breakers to operators only (here
// none: a server built without vendor guards lists an empty array).
func TestOpsVendorsForOperatorsOnly(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOptions{configure: withOperators})
	b.do(request{path: "/ops/vendors"}).expect(t, http.StatusUnauthorized, "")
	r := b.do(request{path: "/ops/vendors", headers: map[string]string{"Authorization": basicAuth("ops", testAdminPassword)}})
	r.expect(t, http.StatusOK, "")
	var body struct {
		Vendors []map[string]any `json:"vendors"`
	}
	r.decode(t, &body)
	if body.Vendors == nil || len(body.Vendors) != 0 {
		t.Fatalf("vendors %v, want an empty list", body.Vendors)
	}
}
