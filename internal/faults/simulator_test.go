package faults

import (
	"bytes"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/vendorsim"
)

// clusterOptions choose a scenario's simulator (newClusterWith). The zero
// value is newCluster's: the simulator served by the test, answering at
// once.
type clusterOptions struct {
	// submitDelay puts a front before the simulator (c.front) that holds
	// each payout submit this long before the vendor takes it, so that a
	// process killed mid-batch dies with submits on the wire. The vendor
	// takes a submit even when its caller has gone meanwhile, as a real
	// one does: the payout is made, the answer is lost.
	submitDelay time.Duration
	// simProcess runs the simulator as a `payoutd vendorsim` process
	// (c.simProc), which the scenario may kill and restart, keeping its
	// payouts in a database of its own (VENDORSIM_DATABASE_URL, an SQLite
	// file) as a real vendor keeps them across restarts. Submits are then
	// counted from what that process stored (its status API), not by the
	// test: use c.submitCalls, c.sim being then an in-test simulator left
	// idle.
	simProcess bool
	// noCallbacks: the simulator never calls back (a vendor whose
	// notifications are off or lost), so the service learns every outcome
	// by asking: a submit left unanswered by a dead process is resolved
	// only by the sweep's status check.
	noCallbacks bool
	// simAnswerDelay (with simProcess) makes the simulator process a slow
	// vendor (VENDORSIM_ANSWER_DELAY): each submit recorded at once and
	// answered this late, so that when it is killed some payouts are made
	// and unanswered.
	simAnswerDelay time.Duration
	// simInMemory (with simProcess) leaves out VENDORSIM_DATABASE_URL:
	// the simulator forgets every payout when it dies.
	simInMemory bool
	// completeAfter is how long the in-test simulator's payouts stay
	// pending before it pays them (200 ms when zero).
	completeAfter time.Duration
}

// simCompleteAfter is the in-test simulator's CompleteAfter.
func (o clusterOptions) simCompleteAfter() time.Duration {
	if o.completeAfter > 0 {
		return o.completeAfter
	}
	return 200 * time.Millisecond
}

// submitCalls is how many times the vendor was asked to pay reference
// (0 when it never was), as the vendor itself counted it.
func (c *cluster) submitCalls(ctx context.Context, reference string) (int, error) {
	if c.simCalls != nil {
		return c.simCalls(ctx, reference)
	}
	return c.sim.Vendor(sandbox.SimBank).SubmitCalls(ctx, reference)
}

// simFront stands before the simulator and holds every payout submit for
// delay before passing it on, counting the submits on the wire and those
// whose caller had hung up (or died) by the time the vendor answered.
type simFront struct {
	delay   time.Duration
	next    http.Handler
	onWire  atomic.Int64
	unheard atomic.Int64
}

// callbackURL is where the simulator calls back: the first API's
// /vendor-callbacks, or nowhere with noCallbacks.
func (o clusterOptions) callbackURL(apiAddr string) string {
	if o.noCallbacks {
		return ""
	}
	return "http://" + apiAddr + "/vendor-callbacks"
}

// frontFor returns the in-test simulator next, or a simFront before it
// when o asks for one (kept as c.front). A simulator process gets its
// front from startSimProcess.
func (c *cluster) frontFor(o clusterOptions, next http.Handler) http.Handler {
	if o.submitDelay <= 0 || o.simProcess {
		return next
	}
	c.front = &simFront{delay: o.submitDelay, next: next}
	return c.front
}

func (f *simFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// POST /v1/{vendor}/payouts: a submit (not /complete).
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if r.Method != http.MethodPost || len(parts) != 3 || parts[2] != "payouts" {
		f.next.ServeHTTP(w, r)
		return
	}
	f.onWire.Add(1)
	defer f.onWire.Add(-1)
	// The whole request is in hand: the vendor takes it whatever the
	// caller does next.
	body, _ := io.ReadAll(r.Body)
	caller := r.Context()
	r = r.WithContext(context.WithoutCancel(caller))
	r.Body = io.NopCloser(bytes.NewReader(body))
	time.Sleep(f.delay)
	f.next.ServeHTTP(w, r)
	if caller.Err() != nil {
		f.unheard.Add(1)
	}
}

// startSimProcess starts `payoutd vendorsim` on an address of its own,
// calling back to the first API, waits until it answers and returns the
// URL the service reaches it at: its own, or with a submitDelay its
// front's.
func (c *cluster) startSimProcess(o clusterOptions) string {
	t := c.t
	t.Helper()
	addr := freeAddr(t)
	env := []string{"VENDORSIM_ADDR=" + addr, "VENDORSIM_TOKEN=" + simToken, "VENDORSIM_CALLBACK_SECRET=" + simCallbackSecret,
		"VENDORSIM_CALLBACK_URL=" + o.callbackURL(c.apiAddr), "SANDBOX_COMPLETE_AFTER=200ms",
		"VENDORSIM_ANSWER_DELAY=" + o.simAnswerDelay.String()}
	if !o.simInMemory {
		// The vendor's own database: an SQLite file, so that the shared
		// PostgreSQL's connections are left to the service's processes.
		env = append(env, "VENDORSIM_DATABASE_URL=sqlite://"+filepath.Join(t.TempDir(), "vendorsim.db"))
	}
	c.simProc = startProc(t, "vendorsim", payoutdBin, []string{"vendorsim"}, env)
	direct := "http://" + addr
	client, err := vendorsim.NewClient(direct, sandbox.SimBank, vendorsim.Secrets{Token: simToken, CallbackSecret: simCallbackSecret}, vendorsim.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.simCalls = client.SubmitCalls
	c.waitSimReady(30 * time.Second)
	if o.submitDelay <= 0 {
		return direct
	}
	target, _ := url.Parse(direct)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ErrorLog = log.New(io.Discard, "", 0)
	c.front = &simFront{delay: o.submitDelay, next: proxy}
	front := httptest.NewServer(c.front)
	t.Cleanup(front.Close)
	return front.URL
}

// waitSimReady waits until the simulator process answers.
func (c *cluster) waitSimReady(within time.Duration) {
	c.t.Helper()
	_, port, _ := strings.Cut(c.simProc.envValue("VENDORSIM_ADDR"), ":")
	waitFor(c.t, "the vendor simulator answering", within, func() bool {
		req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+port+"/v1/simbank/banks", nil)
		req.Header.Set("Authorization", "Bearer "+simToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// envValue is the value of the process's variable k ("" if unset).
func (p *proc) envValue(k string) string {
	for _, kv := range p.env {
		if v, ok := strings.CutPrefix(kv, k+"="); ok {
			return v
		}
	}
	return ""
}

// privateRedis starts a redis-server of the scenario's own on a loopback
// port (no persistence) and returns its URL. The scenario's processes use
// asynq's queues unprefixed: on a shared server they would need a
// database no other run uses at the same time, and runs whose
// TEST_REDIS_URL names different databases do not see each other's
// leases (internal/testenv), so a worker of another run could take this
// scenario's tasks and find none of its payouts.
func privateRedis(t *testing.T) string {
	t.Helper()
	server, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server is not installed (apt-get install redis-server; make faults installs it)")
	}
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	startProc(t, "redis", server, []string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir()}, nil)
	waitFor(t, "the scenario's redis-server answering", 30*time.Second, func() bool {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(time.Second))
		if _, err := conn.Write([]byte("PING\r\n")); err != nil {
			return false
		}
		buf := make([]byte, 7)
		n, _ := io.ReadFull(conn, buf)
		return string(buf[:n]) == "+PONG\r\n"
	})
	return "redis://" + addr + "/0"
}
