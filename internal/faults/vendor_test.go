package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payoutd/payoutd/signature"
)

// Vendor outages: a fault front stands between the payoutd processes and
// the vendor simulator (it adds latency, answers 503 itself, or holds
// every request unanswered as a vendor that is down does), while the
// vendors' guards (vendors/breaker: a bound on the calls under way and a
// circuit breaker per vendor and process) keep quotes and creates
// answering 503 at once instead of piling up, and submits and status
// checks wait for the vendor and resume by themselves.
//
// With PAYOUTD_FAULTS_UNGUARDED=1 the processes run with the guards
// turned off (a bound and a threshold no test reaches), which each
// scenario must fail: that is how each was seen to catch the protection
// missing.

// The guards of the scenarios' processes: a breaker that opens after 5
// consecutive failures (the default) and probes every 2 s, at most 4
// calls under way per vendor and process, waiting up to 200 ms for one.
var guardEnv = []string{"VENDOR_BREAKER_OPEN_FOR=2s", "VENDOR_MAX_CONCURRENCY=4", "VENDOR_QUEUE_WAIT=200ms", "QUOTE_RATE_LIMIT=0"}

// perProcessBound is VENDOR_MAX_CONCURRENCY above.
const perProcessBound = 4

func vendorGuardEnv() []string {
	if os.Getenv("PAYOUTD_FAULTS_UNGUARDED") != "" {
		return []string{"VENDOR_BREAKER_FAILURES=100000000", "VENDOR_MAX_CONCURRENCY=100000", "QUOTE_RATE_LIMIT=0"}
	}
	return guardEnv
}

// startRedis starts a Redis server of the scenario's own on a loopback
// port (nothing shared with other tests) and returns its URL.
func startRedis(t *testing.T) string {
	t.Helper()
	server, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server is not installed (apt-get install redis-server; make faults installs it)")
	}
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	startProc(t, "redis", server, []string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir()}, nil)
	waitFor(t, "redis on "+addr, 10*time.Second, func() bool {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			conn.Close()
		}
		return err == nil
	})
	return "redis://" + addr + "/0"
}

// frontMode is what the fault front does to a request.
type frontMode int

const (
	frontPass frontMode = iota // to the simulator
	frontSlow                  // to the simulator after the front's latency
	front5xx                   // answered 503 by the front, never reaching the simulator
	frontDown                  // held unanswered until the caller gives up: a vendor that is down
)

// vendorFront is the fault front. It counts the requests that reach it
// and, while it slows them, the most it holds at once.
type vendorFront struct {
	sim     http.Handler
	closing chan struct{}

	mu      sync.Mutex
	mode    frontMode
	latency time.Duration

	requests    atomic.Int64
	inFlight    atomic.Int64
	maxInFlight atomic.Int64
}

// frontVendor puts a fault front before the cluster's simulator: the
// processes started after it reach the vendor through it. It must be
// called before any process starts.
func (c *cluster) frontVendor() *vendorFront {
	c.t.Helper()
	f := &vendorFront{sim: c.sim, closing: make(chan struct{})}
	srv := httptest.NewServer(f)
	c.t.Cleanup(func() { close(f.closing); srv.Close() })
	replaced := false
	for i, kv := range c.env {
		if strings.HasPrefix(kv, "VENDORSIM_URL=") {
			c.env[i] = "VENDORSIM_URL=" + srv.URL
			replaced = true
		}
	}
	if !replaced {
		c.t.Fatal("the cluster has no VENDORSIM_URL to put a front before")
	}
	return f
}

// set changes what the front does from now on.
func (f *vendorFront) set(mode frontMode, latency time.Duration) {
	f.mu.Lock()
	f.mode, f.latency = mode, latency
	f.mu.Unlock()
}

func (f *vendorFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	f.mu.Lock()
	mode, latency := f.mode, f.latency
	f.mu.Unlock()
	switch mode {
	case frontSlow:
		// Counted while held only: a request is surely unanswered then,
		// so its caller surely holds one of its process's slots.
		n := f.inFlight.Add(1)
		for {
			m := f.maxInFlight.Load()
			if n <= m || f.maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		select {
		case <-time.After(latency):
		case <-r.Context().Done():
		case <-f.closing:
		}
		f.inFlight.Add(-1)
		if r.Context().Err() != nil {
			return
		}
	case front5xx:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error":"payout gateway unavailable","code":"unavailable"}`)
		return
	case frontDown:
		select {
		case <-r.Context().Done():
		case <-f.closing:
		}
		return
	}
	f.sim.ServeHTTP(w, r)
}

// quoteProbe is one quote a probe sent: when, its status (0: no answer)
// and how long it took.
type quoteProbe struct {
	sent   time.Time
	status int
	took   time.Duration
}

// probeQuotes sends quotes to the first API one after another until ctx
// ends and returns them.
func (c *cluster) probeQuotes(ctx context.Context) <-chan []quoteProbe {
	out := make(chan []quoteProbe, 1)
	go func() {
		var probes []quoteProbe
		client := &http.Client{Timeout: 30 * time.Second}
		body, _ := json.Marshal(map[string]string{"client_wallet_id": c.wallet.String(), "amount": fmt.Sprint(payoutAmount),
			"bank_code": "bca", "account_no": "1234567890", "transfer_type": "BIFAST"})
		for ctx.Err() == nil {
			req, _ := http.NewRequest(http.MethodPost, "http://"+c.apiAddr+"/api/v3/disbursements/quote", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("x-api-key", c.merchant.APIKey)
			req.Header.Set("x-signature", signature.Sign(*c.merchant.SigningSecret, body, time.Now()))
			p := quoteProbe{sent: time.Now()}
			resp, err := client.Do(req)
			p.took = time.Since(p.sent)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				p.status = resp.StatusCode
			}
			probes = append(probes, p)
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
		out <- probes
	}()
	return out
}

// quotesBetween counts the quotes sent in [from, to): how many, how many
// were answered 503, and how many took longer than slow.
func quotesBetween(probes []quoteProbe, from, to time.Time, slow time.Duration) (n, unavailable, slower int) {
	for _, p := range probes {
		if p.sent.Before(from) || !p.sent.Before(to) {
			continue
		}
		n++
		if p.status == http.StatusServiceUnavailable {
			unavailable++
		}
		if p.took > slow {
			slower++
		}
	}
	return n, unavailable, slower
}

// The vendor slows down to 1.5 s an answer for 8 s (under its 5 s client
// timeout: nothing fails, every call just takes long) while sixteen
// merchants create payouts. Each process keeps at most
// VENDOR_MAX_CONCURRENCY calls under way to it; the calls beyond wait
// 200 ms for a slot and are refused (a create answers 503, a submit is
// given back and taken again). The vendor never sees more than the
// bound of the api and the worker together, and every payout is paid
// once. Unguarded, the api alone has every merchant's call under way.
func TestVendorLatencySpike(t *testing.T) {
	scenario(t, quick)
	c := newCluster(t, startRedis(t))
	front := c.frontVendor()
	c.startAPI(vendorGuardEnv()...)
	c.startPayoutd("worker", []string{"worker"}, vendorGuardEnv()...)

	ctx, stop := context.WithTimeout(context.Background(), 16*time.Second)
	defer stop()
	d := c.drive(ctx, 16, 30*time.Second)
	time.Sleep(3 * time.Second)
	front.set(frontSlow, 1500*time.Millisecond)
	d.markFault()
	time.Sleep(8 * time.Second)
	front.set(frontPass, 0)
	spikeMax := front.maxInFlight.Load()
	d.wait()

	s := c.settle("vendor-latency-spike", d, 2*time.Minute)
	t.Logf("at most %d vendor calls under way during the spike (bound %d per process, 2 processes)", spikeMax, perProcessBound)
	if s.succeeded == 0 {
		t.Fatalf("nothing was paid: %s", s)
	}
	if spikeMax > 2*perProcessBound {
		t.Errorf("%d vendor calls were under way at once during the spike; the api and the worker may have %d together", spikeMax, 2*perProcessBound)
	}
	d.mu.Lock()
	resumed := !d.resumedAt.IsZero()
	d.mu.Unlock()
	if !resumed {
		t.Error("no create was accepted after the spike began")
	}
}

// The vendor answers 503 to everything for 6 s. The breaker of each
// process opens after 5 consecutive failures: from then on quotes and
// creates answer 503 without calling the vendor, and submits and polls
// wait; one probe per process every 2 s finds the vendor back, and every
// payout committed is paid once. The vendor is asked little after the
// first seconds of the burst; unguarded, every create's retries keep
// hammering it.
func TestVendor5xxBurst(t *testing.T) {
	scenario(t, quick)
	c := newCluster(t, startRedis(t))
	front := c.frontVendor()
	c.startAPI(vendorGuardEnv()...)
	c.startPayoutd("worker", []string{"worker"}, vendorGuardEnv()...)

	ctx, stop := context.WithTimeout(context.Background(), 16*time.Second)
	defer stop()
	d := c.drive(ctx, 8, 30*time.Second)
	time.Sleep(3 * time.Second)
	front.set(front5xx, 0)
	d.markFault()
	time.Sleep(2 * time.Second) // the breakers open
	before := front.requests.Load()
	time.Sleep(4 * time.Second)
	during := front.requests.Load() - before
	front.set(frontPass, 0)
	d.wait()

	s := c.settle("vendor-5xx-burst", d, 2*time.Minute)
	// Two processes, a probe each every 2 s (up to 3 in 4 s with the
	// edges, and a spare for timing), each probe up to 3 tries.
	const allowed = 2 * 4 * 3
	t.Logf("%d vendor requests in the last 4 s of the burst (at most %d: the breakers' probes)", during, allowed)
	if s.succeeded == 0 {
		t.Fatalf("nothing was paid: %s", s)
	}
	if during > allowed {
		t.Errorf("the vendor got %d requests in 4 s of its 5xx burst after the breakers should have opened, want at most %d", during, allowed)
	}
	d.mu.Lock()
	resumed := !d.resumedAt.IsZero()
	d.mu.Unlock()
	if !resumed {
		t.Error("no create was accepted after the burst")
	}
}

// The vendor is down for a minute: every request to it hangs until the
// caller's 5 s timeout. Payouts committed before keep their money locked
// and wait; once the breakers have opened (the first failures take the
// client's three 5 s tries), quotes answer 503 at once, the vendor gets
// only the probes, and when it comes back the probes close the breakers
// and every payout is paid once. Unguarded, every quote waits for the
// vendor's timeouts. (A quote that is a breaker's half-open probe waits
// for them too: the breaker learns the vendor is back from a real call.)
func TestVendorDownAMinute(t *testing.T) {
	scenario(t, slow)
	c := newCluster(t, startRedis(t))
	front := c.frontVendor()
	c.startAPI(vendorGuardEnv()...)
	c.startPayoutd("worker", []string{"worker"}, vendorGuardEnv()...)

	ctx, stop := context.WithTimeout(context.Background(), 75*time.Second)
	defer stop()
	d := c.drive(ctx, 8, 30*time.Second)
	time.Sleep(5 * time.Second)
	front.set(frontDown, 0)
	d.markFault()
	down := time.Now()
	probeCtx, stopProbes := context.WithCancel(ctx)
	probed := c.probeQuotes(probeCtx)
	time.Sleep(25 * time.Second) // the first failures take 3 × 5 s
	before := front.requests.Load()
	steady := time.Now()
	time.Sleep(time.Until(down.Add(60 * time.Second)))
	during := front.requests.Load() - before
	front.set(frontPass, 0)
	up := time.Now()
	stopProbes()
	probes := <-probed
	d.wait()

	s := c.settle("vendor-down-a-minute", d, 2*time.Minute)
	if s.succeeded == 0 {
		t.Fatalf("nothing was paid: %s", s)
	}
	n, unavailable, slower := quotesBetween(probes, steady, up.Add(-6*time.Second), 2*time.Second)
	t.Logf("%d quotes while the breakers were open: %d answered 503, %d took over 2 s; %d vendor requests in %.0f s",
		n, unavailable, slower, during, up.Sub(steady).Seconds())
	// While open, a quote answers 503 at once: well within the vendor
	// client's 5 s timeout, let alone its three tries. The quote that
	// happens to be the half-open probe waits them out (the vendor is
	// still down): one every open period plus 15 s at most.
	if n == 0 || unavailable != n || slower > n/5 {
		t.Errorf("quotes during the outage: %d sent, %d answered 503, %d took over 2 s; want every one 503, and at most one in five (the probes) slow", n, unavailable, slower)
	}
	// A probe every 2 s per process at most, each holding its call up to
	// three 5 s tries: a few requests, not one per merchant retry.
	if allowed := int64(2 * 3 * up.Sub(steady).Seconds() / 2); during > allowed {
		t.Errorf("the vendor got %d requests in %.0f s while down and the breakers open, want at most %d", during, up.Sub(steady).Seconds(), allowed)
	}
}
