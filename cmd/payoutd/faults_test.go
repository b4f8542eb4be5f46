package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/api"
	"github.com/payoutd/payoutd/dispatch"
	"github.com/payoutd/payoutd/internal/app"
	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/internal/credentials"
	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payouts"
	"github.com/payoutd/payoutd/signature"
	"github.com/payoutd/payoutd/tasks"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/worker"
)

// The simulator's two secrets: the bearer token and the callback key.
const simSecret, simCallbackSecret = "fault-test-vendorsim-token", "fault-test-vendorsim-callback-secret"

// stack is the service spread over real sockets: the simulator of a rail
// (a vendor: the sandbox's, Xendit's) and the API on loopback listeners,
// the database and Redis of the test.
type stack struct {
	t        *testing.T
	db       *gorm.DB
	dbURL    string
	redisURL string  // a Redis database of this test's own
	sim      railSim // the rail's simulator, served at simURL
	simURL   string
	simEnv   []string     // the worker's variables that reach the simulator
	timedOut atomic.Int64 // submit answers held past the client's timeout
	apiURL   string
	sealer   *credentials.Sealer
	// secretsKey is the sealer's key as SECRETS_KEY spells it, for the
	// admin CLI run against the stack's database.
	secretsKey string
	svc        *payouts.Service
	dispatch   *dispatch.Dispatcher // svc's
	merchant   *admin.IssuedCredentials
	wallet     uuid.UUID
	// lossy is the proxy the vendors reach the simulator through when
	// stackOptions.lose is set; nil otherwise.
	lossy *testenv.LostAnswers
}

type stackOptions struct {
	submitDelay time.Duration // the simulator answers each payout submit this late
	// oneSubmitAtATime makes the simulator take the submits one after the
	// other (a vendor that queues them): with a vendor that has no batch
	// call, a batch of submits is then on the wire over a while, not at once.
	oneSubmitAtATime bool
	redisURL         string // overrides: e.g. a proxy in front of Redis
	// apiRedisURL is the Redis of the API's own state (used signatures,
	// rate limits); default redisURL. The queues always use redisURL.
	apiRedisURL  string
	queuePrefix  string        // the in-process API's queues
	completeWait time.Duration // SANDBOX_COMPLETE_AFTER of the simulator
	callbacks    bool          // the simulator calls the API back
	store        sandbox.Store // the simulator's payouts; nil: its own MemoryStore
	rail         rail          // the vendor; default sandboxRail
	// timedOutAccount: the first submit to this account is carried out by
	// the simulator but its answer is held until the client gives up.
	timedOutAccount string
	// lose puts a LostAnswers between the vendors and the simulator,
	// which loses the answers it is told to.
	lose *testenv.LostAnswersOptions
}

func newStack(t *testing.T, o stackOptions) *stack {
	t.Helper()
	db, dbURL := testenv.DBWithURL(t)
	s := &stack{t: t, db: db, dbURL: dbURL, redisURL: o.redisURL}
	if s.redisURL == "" {
		s.redisURL = testenv.RedisDatabase(t) // a flushed database of its own
	}
	if o.completeWait == 0 {
		o.completeWait = 100 * time.Millisecond
	}
	// The API's listener first, so the simulator knows where to call back.
	var apiHandler http.Handler = http.NotFoundHandler()
	apiHTTP := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { apiHandler.ServeHTTP(w, r) }))
	t.Cleanup(apiHTTP.Close)
	s.apiURL = apiHTTP.URL
	callbackURL := ""
	if o.callbacks {
		callbackURL = s.apiURL + "/vendor-callbacks"
	}
	if o.rail.start == nil {
		o.rail = sandboxRail
	}
	s.serveSim(o, callbackURL)

	key := make([]byte, 32)
	rand.Read(key)
	s.sealer, _ = credentials.NewSealer(key)
	s.secretsKey = hex.EncodeToString(key)
	registry, simEnv := s.sim.connect(t, s.simURL)
	s.simEnv = simEnv
	var err error
	deps := admin.Deps{DB: db, Sealer: s.sealer, Env: models.Staging, Vendors: registry}
	if s.merchant, err = admin.CreateClient(context.Background(), deps, admin.ClientOptions{Name: "Toko"}); err != nil {
		t.Fatal(err)
	}
	w, err := admin.CreateWallet(context.Background(), deps, admin.WalletOptions{ClientID: uuid.MustParse(s.merchant.ClientID), Name: "Main", Vendor: o.rail.vendor})
	if err != nil {
		t.Fatal(err)
	}
	s.wallet = uuid.MustParse(w.WalletID)
	if _, err := admin.AdjustWallet(context.Background(), deps, s.wallet, "100000000", "funding"); err != nil {
		t.Fatal(err)
	}

	// The API in this process, enqueueing into the stack's Redis.
	opt := mustRedisOpt(t, s.redisURL)
	queue := tasks.NewPrefixedClient(opt, o.queuePrefix)
	t.Cleanup(func() { queue.Close() })
	apiRedis := s.redisURL
	if o.apiRedisURL != "" {
		apiRedis = o.apiRedisURL
	}
	rdb := redis.NewClient(mustParseRedis(t, apiRedis))
	t.Cleanup(func() { rdb.Close() })
	cfg := config.Defaults()
	cfg.Env, cfg.SecretsKey, cfg.DisbursementSubmitWait = models.Staging, key, 0
	cfg.ClientWriteRateLimit = 0 // batches of creates from one merchant, back to back
	cfg.DisbursementSubmitLease = time.Second
	srv, err := api.New(withServices(api.Deps{Config: cfg, DB: db, Redis: rdb, Sealer: s.sealer, Vendors: registry, Queue: queue}))
	if err != nil {
		t.Fatal(err)
	}
	apiHandler = srv.Handler()
	s.svc, s.dispatch = dispatch.New(payouts.Options{DB: db, Vendors: registry, Queue: queue, SubmitLease: time.Second}, dispatch.Options{Queue: queue})
	return s
}

// serveSim starts the rail's simulator on a loopback listener, behind a
// front that can keep submits on the wire (a delay, one at a time) and
// time out an answer.
func (s *stack) serveSim(o stackOptions, callbackURL string) {
	t := s.t
	s.sim = o.rail.start(t, railOptions{completeAfter: o.completeWait, callbackBase: callbackURL, store: o.store, db: s.db})
	var submitting sync.Mutex
	simHTTP := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o.rail.isSubmit(r) {
			if o.oneSubmitAtATime {
				// The body read first: only then does the server notice
				// a caller that hangs up (the request's context ends).
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				submitting.Lock()
				defer submitting.Unlock()
				if r.Context().Err() != nil {
					return // the caller left before its turn: never reached the vendor
				}
			}
			time.Sleep(o.submitDelay)
			if s.answerTimesOut(r, o.timedOutAccount) {
				return
			}
		}
		s.sim.handler.ServeHTTP(w, r)
	}))
	t.Cleanup(simHTTP.Close)
	s.simURL = simHTTP.URL
	if o.lose != nil {
		s.lossy = testenv.NewLostAnswers(t, simHTTP.URL, *o.lose)
		s.simURL = s.lossy.URL()
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go s.sim.run(ctx)
}

// answerTimesOut serves r, the first submit to account, to the simulator
// and holds its answer until the client gives up: the vendor pays, the
// caller times out. It reports whether it took r; any other request is
// left, its body intact, for the caller to serve.
func (s *stack) answerTimesOut(r *http.Request, account string) bool {
	if account == "" {
		return false
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if !bytes.Contains(body, []byte(`"`+account+`"`)) || !s.timedOut.CompareAndSwap(0, 1) {
		return false
	}
	s.sim.handler.ServeHTTP(httptest.NewRecorder(), r)
	select {
	case <-r.Context().Done(): // the client's timeout
	case <-time.After(30 * time.Second): // a guard against hanging
	}
	return true
}

// workerEnv is the environment of a `payoutd worker` process on the stack.
func (s *stack) workerEnv() []string {
	env := append(os.Environ(),
		subprocessEnv+"=worker",
		"DATABASE_URL="+s.dbURL, "REDIS_URL="+s.redisURL, "SECRETS_KEY="+hex.EncodeToString(make([]byte, 32)),
		"APP_ENV=staging", "LOG_LEVEL=warn", "DISBURSEMENT_SUBMIT_LEASE=1s")
	return append(env, s.simEnv...)
}

// startWorker runs `payoutd worker` as a child process.
func (s *stack) startWorker() *exec.Cmd {
	s.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = s.workerEnv()
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &lockedWriter{w: &logs}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if s.t.Failed() {
			s.t.Logf("worker log:\n%s", logs.String())
		}
	})
	return cmd
}

// create posts a signed create through the API's socket. The key is also
// the reference_id, so that no two creates share a body and therefore a
// signature, which the service accepts once.
func (s *stack) create(key, account string) (int, map[string]any) {
	s.t.Helper()
	// Xendit cannot inquire the name: the merchant's is sent there.
	return s.createWith(key, map[string]string{"account_no": account, "account_holder_name": "Budi Santoso"})
}

// createWith is create with these fields of the body instead of the
// defaults (an empty value leaves the field out).
func (s *stack) createWith(key string, fields map[string]string) (int, map[string]any) {
	s.t.Helper()
	in := map[string]string{"client_wallet_id": s.wallet.String(), "amount": "20000",
		"bank_code": "bca", "account_no": "1234567890", "transfer_type": "BIFAST", "reference_id": key}
	for k, v := range fields {
		if in[k] = v; v == "" {
			delete(in, k)
		}
	}
	body, _ := json.Marshal(in)
	req, _ := http.NewRequest(http.MethodPost, s.apiURL+"/api/v3/disbursements", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", s.merchant.APIKey)
	req.Header.Set("x-signature", signature.Sign(*s.merchant.SigningSecret, body, time.Now()))
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// counts returns how many disbursements are in each status.
func (s *stack) counts() map[models.DisbursementStatus]int {
	var rows []struct {
		Status models.DisbursementStatus
		N      int
	}
	s.db.Model(&models.Disbursement{}).Select("status, COUNT(*) AS n").Group("status").Scan(&rows)
	out := map[models.DisbursementStatus]int{}
	for _, r := range rows {
		out[r.Status] = r.N
	}
	return out
}

// onTheWire counts the submits claimed whose answer is not recorded:
// VERIFIED rows with a submit attempt.
func (s *stack) onTheWire() int64 {
	var n int64
	s.db.Model(&models.Disbursement{}).Where("status = ? AND submit_attempts > 0", models.StatusVerified).Count(&n)
	return n
}

// waitFor polls until cond holds or the deadline passes.
func (s *stack) waitFor(what string, deadline time.Duration, cond func() bool) {
	s.t.Helper()
	end := time.Now().Add(deadline)
	for time.Now().Before(end) {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("%s: not within %s (statuses %v)", what, deadline, s.counts())
}

// paidOnce asserts every disbursement reached SUCCESS, the rail's vendor
// was asked to pay each exactly once, and reconcile is clean.
func (s *stack) paidOnce(n int) {
	s.t.Helper()
	var all []models.Disbursement
	if err := s.db.Find(&all).Error; err != nil {
		s.t.Fatal(err)
	}
	if len(all) != n {
		s.t.Fatalf("%d disbursements stored, want %d", len(all), n)
	}
	for _, d := range all {
		if d.Status != models.StatusSuccess {
			s.t.Errorf("disbursement %s is %s, want SUCCESS", d.ID, d.Status)
		}
		calls, err := s.sim.submits(d.VendorReference)
		if err != nil || calls != 1 {
			s.t.Errorf("disbursement %s: the vendor was asked to pay %d times (%v), want once", d.ID, calls, err)
		}
	}
	report, err := ledger.Reconcile(context.Background(), s.db, models.Now())
	if err != nil {
		s.t.Fatal(err)
	}
	if !report.OK {
		s.t.Fatalf("reconcile: %v", report.Problems)
	}
	if w, _ := models.NewStore(s.db).FindWallet(context.Background(), s.wallet); w.Locked != 0 ||
		w.Balance != models.Rupiah(100_000_000)-models.Rupiah(20_000)*models.Amount(n) {
		s.t.Fatalf("wallet balance %s locked %s after %d payouts of 20000", w.Balance, w.Locked, n)
	}
}

// The worker process is killed (SIGKILL, no clean shutdown) while a batch
// of payouts is being submitted, some of them with their submit on the
// wire; a new worker process finishes the batch. Every payout ends SUCCESS,
// the vendor is asked to pay each exactly once, reconcile is clean. On
// every rail: the worker process reaches the vendor as configured (the
// sandbox simulator, or Xendit's API served by xenditsim).
func TestWorkerKilledMidBatch(t *testing.T) {
	eachRail(t, func(t *testing.T, r rail) {
		// In parallel: most of each run is waiting for the dead worker's
		// tasks to be recovered, not work.
		t.Parallel()
		workerKilledMidBatch(t, r, killBatch[r.name])
	})
}

// killBatch is the batch per rail. The sandbox's is as it always was:
// simbank takes a batch in one call, answered late. Xendit and SNAP have no batch
// call: the worker sends every payout at once, so the simulator takes them
// one at a time, and a smaller batch keeps the test's point (a third
// submitted, some on the wire, the rest waiting) at a fraction of the time.
var killBatch = map[string]killSetup{
	"sandbox": {n: 120, delay: 150 * time.Millisecond},
	"xendit":  {n: 60, delay: 100 * time.Millisecond, oneAtATime: true},
	"snap":    {n: 60, delay: 100 * time.Millisecond, oneAtATime: true},
}

type killSetup struct {
	n          int
	delay      time.Duration // each submit's answer is this late
	oneAtATime bool          // stackOptions.oneSubmitAtATime
}

func workerKilledMidBatch(t *testing.T, r rail, k killSetup) {
	n := k.n
	s := newStack(t, stackOptions{submitDelay: k.delay, oneSubmitAtATime: k.oneAtATime, rail: r})
	for i := 0; i < n; i++ {
		if code, body := s.create(fmt.Sprintf("kill-%d", i), "1234567890"); code != http.StatusCreated {
			t.Fatalf("create %d: %d %v", i, code, body)
		}
	}
	first := s.startWorker()
	s.waitFor("a third of the batch submitted and more on the wire", 60*time.Second, func() bool {
		c := s.counts()
		return c[models.StatusRequested]+c[models.StatusSuccess] >= n/3 && s.onTheWire() > 0
	})
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	mid, wire := s.counts(), s.onTheWire()
	t.Logf("killed the worker with %v, %d submits on the wire", mid, wire)
	if mid[models.StatusVerified] == 0 {
		t.Fatalf("the worker finished the batch before it was killed: %v", mid)
	}
	// Claimed but unanswered when the process died: the vendor may or may
	// not have them; the restarted worker must ask before it resubmits.
	if wire == 0 {
		t.Fatal("no submit was on the wire when the worker was killed: the test shows nothing about them")
	}
	s.startWorker()
	s.waitFor("every payout final", 120*time.Second, func() bool { return s.counts()[models.StatusSuccess] == n })
	s.paidOnce(n)
}

// The queue's Redis is unreachable while merchants create payouts: every
// create is still answered 201 (the rows commit; the due signal fails and
// is logged), the worker's submit pumps, which take fresh payouts from the
// table and need no Redis, submit every one of them meanwhile, and once
// Redis is back their status checks run and every payout is paid once.
// The API's check of used signatures keeps its Redis here: without it a
// signed create is refused with 503 before anything is stored (api tests).
func TestRedisOutageDuringCreates(t *testing.T) {
	backend := testenv.RedisDatabase(t)
	proxy := newTCPProxy(t, mustParseRedis(t, backend).Addr)
	u, _ := url.Parse(backend)
	u.Host = proxy.addr
	s := newStack(t, stackOptions{redisURL: u.String(), apiRedisURL: backend, queuePrefix: ""})
	s.startWorker()

	proxy.down()
	const n = 15
	for i := 0; i < n; i++ {
		code, body := s.create(fmt.Sprintf("outage-%d", i), "1234567890")
		if code != http.StatusCreated || body["status"] != "VERIFIED" {
			t.Fatalf("create %d during the outage: %d %v", i, code, body)
		}
	}
	s.waitFor("every payout submitted during the outage", 90*time.Second, func() bool {
		return s.counts()[models.StatusVerified] == 0
	})
	proxy.up()
	s.waitFor("every payout submitted and paid after the outage", 90*time.Second, func() bool {
		return s.counts()[models.StatusSuccess] == n
	})
	s.paidOnce(n)
}

// Across real sockets, on every rail: the HTTP vendor adapter, the
// simulator's callbacks into /vendor-callbacks/<vendor>, and the two
// unknown outcomes of a submit, each paid once: 1000000007 (the vendor
// pays but answers the first submit with an error: the sandbox's lost
// answer, a 500 SERVER_ERROR at xenditsim) and an answer that never comes
// (the vendor pays, the client gives up waiting: a timeout).
func TestPayoutsAcrossRealSockets(t *testing.T) {
	t.Parallel()
	eachRail(t, func(t *testing.T, r rail) {
		t.Parallel()
		payoutsAcrossRealSockets(t, r)
	})
}

// accountAnswerTimesOut is an ordinary account whose first submit the
// stack answers only after the client gave up (timedOutAccount).
const accountAnswerTimesOut = "2000000007"

func payoutsAcrossRealSockets(t *testing.T, r rail) {
	rdb, _ := testenv.Redis(t)
	opt, prefix := testenv.Queue(t, rdb)
	ro := rdb.Options()
	s := newStack(t, stackOptions{redisURL: fmt.Sprintf("redis://%s/%d", ro.Addr, ro.DB), queuePrefix: prefix,
		completeWait: 200 * time.Millisecond, callbacks: true, rail: r, timedOutAccount: accountAnswerTimesOut})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- worker.Run(ctx, worker.Deps{DB: s.db, Redis: opt, Dispatch: s.dispatch, QueuePrefix: prefix, Concurrency: 4})
	}()
	t.Cleanup(func() { cancel(); <-done })

	ids := map[string]string{}
	for _, account := range []string{"1234567890", sandbox.AccountFirstSubmitLost, accountAnswerTimesOut, sandbox.AccountStaysRequested} {
		code, body := s.create("sock-"+account, account)
		if code != http.StatusCreated {
			t.Fatalf("create %s: %d %v", account, code, body)
		}
		ids[account] = body["id"].(string)
	}
	status := func(account string) models.DisbursementStatus {
		d, _ := s.svc.Get(context.Background(), uuid.MustParse(ids[account]))
		return d.Status
	}
	s.waitFor("ordinary, lost-answer and timed-out payouts paid", 30*time.Second, func() bool {
		return status("1234567890") == models.StatusSuccess && status(sandbox.AccountFirstSubmitLost) == models.StatusSuccess &&
			status(accountAnswerTimesOut) == models.StatusSuccess && status(sandbox.AccountStaysRequested) == models.StatusRequested
	})
	if n := s.timedOut.Load(); n != 1 {
		t.Fatalf("%d submit answers were held past the client's timeout, want 1: the test shows nothing about timeouts", n)
	}
	// Completed at the vendor: the simulator's callback, not a poll,
	// brings the news (polls of this payout are many seconds apart by now).
	ref := models.VendorReferenceFor(uuid.MustParse(ids[sandbox.AccountStaysRequested]))
	if err := s.sim.complete(ref, true); err != nil {
		t.Fatal(err)
	}
	s.waitFor("the callback applied", 10*time.Second, func() bool { return status(sandbox.AccountStaysRequested) == models.StatusSuccess })
	s.paidOnce(4)
}

func mustParseRedis(t *testing.T, raw string) *redis.Options {
	t.Helper()
	o, err := redis.ParseURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func mustRedisOpt(t *testing.T, raw string) asynq.RedisClientOpt {
	t.Helper()
	o := mustParseRedis(t, raw)
	return asynq.RedisClientOpt{Addr: o.Addr, DB: o.DB, Password: o.Password}
}

// tcpProxy forwards connections to a backend and can be cut and restored,
// like a network partition between the service and Redis.
type tcpProxy struct {
	t       *testing.T
	addr    string
	backend string
	mu      sync.Mutex
	ln      net.Listener
	conns   []net.Conn
}

func newTCPProxy(t *testing.T, backend string) *tcpProxy {
	p := &tcpProxy{t: t, backend: backend}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.down)
	return p
}

func (p *tcpProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", p.backend)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, b)
			p.mu.Unlock()
			go func() { io.Copy(b, c); b.Close() }()
			go func() { io.Copy(c, b); c.Close() }()
		}
	}()
}

// down refuses new connections and cuts the open ones.
func (p *tcpProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// up listens again on the same address.
func (p *tcpProxy) up() {
	var ln net.Listener
	var err error
	for i := 0; i < 50; i++ {
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		p.t.Fatalf("proxy up: %v", err)
	}
	p.serve(ln)
}

// lockedWriter lets a child's output be read while it writes.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// withServices gives d the services the composition root builds on d's
// handles, as `payoutd api` has them.
func withServices(d api.Deps) api.Deps {
	p := app.Parts{Config: d.Config, DB: d.DB, Redis: d.Redis, Vendors: d.Vendors, Acquirer: d.Acquirer, Metrics: d.Metrics, Now: d.Now}
	if d.Queue != nil {
		p.Queue = d.Queue
	}
	d.Payouts, d.Dispatch, d.Payments = app.NewServices(p)
	return d
}
