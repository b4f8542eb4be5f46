package faults

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/internal/credentials"
	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/signature"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/vendorsim"
)

// payoutdBin is the payoutd binary the scenarios run, built once by
// TestMain when PAYOUTD_FAULTS is set.
var payoutdBin string

func TestMain(m *testing.M) {
	if os.Getenv("PAYOUTD_FAULTS") == "" && os.Getenv("PAYOUTD_SOAK") == "" {
		os.Exit(m.Run()) // every scenario and the soak skip themselves
	}
	dir, err := os.MkdirTemp("", "payoutd-faults-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	payoutdBin = filepath.Join(dir, "payoutd")
	build := exec.Command("go", "build", "-o", payoutdBin, "github.com/payoutd/payoutd/cmd/payoutd")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "faults: building payoutd:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Scenario lengths: quick ones run in CI (PAYOUTD_FAULTS=quick), slow ones
// only with PAYOUTD_FAULTS=all (make faults).
const (
	quick = "quick"
	slow  = "slow"
)

// scenario skips t unless PAYOUTD_FAULTS asks for scenarios of its length.
func scenario(t *testing.T, length string) {
	t.Helper()
	switch os.Getenv("PAYOUTD_FAULTS") {
	case "all":
	case quick:
		if length != quick {
			t.Skip("a slow fault scenario: PAYOUTD_FAULTS=all (make faults) runs it")
		}
	default:
		t.Skip("fault scenarios run with PAYOUTD_FAULTS=quick or all (make faults)")
	}
}

// The simulator's two secrets.
const simToken, simCallbackSecret = "faults-vendorsim-token", "faults-vendorsim-callback-secret"

// funding is each scenario wallet's starting balance (enough for the
// soak's half hour at hundreds of creates a second), and payoutAmount
// each create's gross.
const (
	funding      = 1_000_000_000_000
	payoutAmount = 20_000
)

// cluster is one scenario's service: its database, a sandbox vendor
// simulator served by the test (so that it counts every submit), a
// merchant with a funded wallet, and the payoutd processes it starts.
type cluster struct {
	t          *testing.T
	db         *gorm.DB
	dbURL      string
	secretsKey string
	sim        *vendorsim.Server
	// apiAddr is where the first `payoutd api` listens, chosen before it
	// starts (the simulator calls back there); apis are the addresses of
	// every API started, which merchants spread their creates over.
	apiAddr  string
	apisMu   sync.Mutex
	apis     []string
	env      []string
	merchant *admin.IssuedCredentials
	wallet   uuid.UUID
	// front is what stands before the simulator when clusterOptions ask
	// for one (nil otherwise); simProc is the simulator's process with
	// clusterOptions.simProcess (nil otherwise), and simCalls then counts
	// the submits of a reference from what that process stored.
	front    *simFront
	simProc  *proc
	simCalls func(ctx context.Context, reference string) (int, error)
}

// newCluster provisions a scenario on a fresh database; the processes it
// starts use redisURL.
func newCluster(t *testing.T, redisURL string) *cluster {
	t.Helper()
	return newClusterWith(t, redisURL, clusterOptions{})
}

// newClusterWith is newCluster with options for the simulator (see
// clusterOptions; the zero value is newCluster's simulator).
func newClusterWith(t *testing.T, redisURL string, o clusterOptions) *cluster {
	t.Helper()
	db, dbURL := testenv.DBWithURL(t)
	return provisionCluster(t, redisURL, db, dbURL, o)
}

// newClusterOn provisions a scenario on the migrated database at dbURL
// (a PostgreSQL of the scenario's own).
func newClusterOn(t *testing.T, redisURL, dbURL string, o clusterOptions) *cluster {
	t.Helper()
	return provisionCluster(t, redisURL, openSmall(t, dbURL), dbURL, o)
}

// openSmall is the test's own handle on the database at dbURL: a small
// pool, closed at the end.
func openSmall(t *testing.T, dbURL string) *gorm.DB {
	t.Helper()
	db, err := database.Open(dbURL)
	if err != nil {
		t.Fatalf("open %s: %v", dbURL, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	sqlDB.SetMaxOpenConns(4)
	sqlDB.SetMaxIdleConns(4)
	t.Cleanup(func() { sqlDB.Close() })
	return db
}

// provisionCluster provisions a scenario on db, whose URL is dbURL, with
// the simulator o describes.
func provisionCluster(t *testing.T, redisURL string, db *gorm.DB, dbURL string, o clusterOptions) *cluster {
	t.Helper()
	key := make([]byte, 32)
	rand.Read(key)
	c := &cluster{t: t, db: db, dbURL: dbURL, secretsKey: hex.EncodeToString(key), apiAddr: freeAddr(t)}

	sim, err := vendorsim.NewServer(vendorsim.ServerOptions{Token: simToken, CallbackSecret: simCallbackSecret,
		CallbackURL: o.callbackURL(c.apiAddr), PollInterval: 100 * time.Millisecond,
		Sandbox: sandbox.Options{CompleteAfter: o.simCompleteAfter()},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	c.sim = sim
	simHTTP := httptest.NewServer(c.frontFor(o, sim))
	t.Cleanup(simHTTP.Close)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go sim.Run(ctx)
	simURL := simHTTP.URL
	if o.simProcess {
		simURL = c.startSimProcess(o) // the in-test simulator idles
	}

	c.env = append(os.Environ(),
		"DATABASE_URL="+dbURL, "REDIS_URL="+redisURL, "SECRETS_KEY="+c.secretsKey,
		"APP_ENV=staging", "LOG_LEVEL=warn",
		"VENDORSIM_URL="+simURL, "VENDORSIM_TOKEN="+simToken, "VENDORSIM_CALLBACK_SECRET="+simCallbackSecret,
		"DISBURSEMENT_SUBMIT_WAIT=0", "DISBURSEMENT_SUBMIT_LEASE=2s",
		// One merchant sends every create: the faults are measured, not
		// the per-client rate limits (the overload scenario sets them).
		"CLIENT_WRITE_RATE_LIMIT=0", "CLIENT_READ_RATE_LIMIT=0",
		// Up to six processes beside the other packages' tests on one
		// PostgreSQL (CI's max_connections is 100).
		"DATABASE_MAX_CONNS=6")

	sealer, err := credentials.NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	registry, err := vendorsim.NewRegistry(simURL, vendorsim.Secrets{Token: simToken, CallbackSecret: simCallbackSecret}, vendorsim.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deps := admin.Deps{DB: db, Sealer: sealer, Env: models.Staging, Vendors: registry}
	bg := context.Background()
	if c.merchant, err = admin.CreateClient(bg, deps, admin.ClientOptions{Name: "Toko Fault"}); err != nil {
		t.Fatal(err)
	}
	w, err := admin.CreateWallet(bg, deps, admin.WalletOptions{ClientID: uuid.MustParse(c.merchant.ClientID), Name: "Main", Vendor: sandbox.SimBank})
	if err != nil {
		t.Fatal(err)
	}
	c.wallet = uuid.MustParse(w.WalletID)
	if _, err := admin.AdjustWallet(bg, deps, c.wallet, fmt.Sprint(funding), "funding"); err != nil {
		t.Fatal(err)
	}
	return c
}

// freeAddr returns a loopback address no one listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// proc is a process a scenario started, which it may kill and restart.
type proc struct {
	t    *testing.T
	name string
	path string
	args []string
	env  []string
	cmd  *exec.Cmd
	logs *testenv.SyncBuffer
}

// startPayoutd starts `payoutd <args>` with the cluster's environment and
// extra variables.
func (c *cluster) startPayoutd(name string, args []string, extraEnv ...string) *proc {
	c.t.Helper()
	return startProc(c.t, name, payoutdBin, args, append(append([]string{}, c.env...), extraEnv...))
}

// startProc starts a process; the test's end kills it, and a failed test
// shows the end of its output.
func startProc(t *testing.T, name, path string, args, env []string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, path: path, args: args, env: env, logs: &testenv.SyncBuffer{}}
	p.start()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("%s output (last 4 kB):\n%s", name, tail(p.logs, 4096))
		}
	})
	return p
}

// restart starts a killed process again, with the same arguments and
// environment.
func (p *proc) restart() {
	p.t.Helper()
	p.kill()
	p.start()
}

func (p *proc) start() {
	p.t.Helper()
	p.cmd = exec.Command(p.path, p.args...)
	p.cmd.Env = p.env
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		p.t.Fatalf("start %s: %v", p.name, err)
	}
}

// kill ends the process with SIGKILL (no clean shutdown) and reaps it.
func (p *proc) kill() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	p.cmd.Process.Kill()
	p.cmd.Wait()
	p.cmd = nil
}

// startAPI starts a `payoutd api` (the first on apiAddr, each further one
// on an address of its own), waits until it answers /readyz and adds it to
// the APIs merchants use.
func (c *cluster) startAPI(extraEnv ...string) *proc {
	c.t.Helper()
	c.apisMu.Lock()
	addr := c.apiAddr
	if len(c.apis) > 0 {
		addr = freeAddr(c.t)
	}
	name := fmt.Sprintf("api %d", len(c.apis)+1)
	c.apisMu.Unlock()
	p := c.startPayoutd(name, []string{"api"}, append([]string{"HTTP_ADDR=" + addr}, extraEnv...)...)
	waitReady(c.t, addr, 30*time.Second)
	c.apisMu.Lock()
	c.apis = append(c.apis, addr)
	c.apisMu.Unlock()
	return p
}

// apiFor is the API merchant i sends to: the merchants are spread over
// every API started.
func (c *cluster) apiFor(i int) string {
	c.apisMu.Lock()
	defer c.apisMu.Unlock()
	if len(c.apis) == 0 {
		return c.apiAddr
	}
	return c.apis[i%len(c.apis)]
}

// waitReady waits for the API at addr to answer /readyz with 200.
func waitReady(t *testing.T, addr string, within time.Duration) {
	t.Helper()
	waitFor(t, "the API on "+addr+" ready", within, func() bool {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// waitFor polls cond every 50 ms until it holds, or fails the test.
func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	end := time.Now().Add(within)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// tail is the last n bytes of what logs holds.
func tail(logs *testenv.SyncBuffer, n int) string {
	s := logs.String()
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return s
}

// answer is how one create ended for the merchant.
type answer int

const (
	unanswered answer = iota // no definite answer before the merchant gave up
	accepted                 // 2xx: committed
	refused                  // a clean 4xx: nothing stored
)

// driver is merchants creating payouts back to back, as a merchant's
// backend does: each create has its own Idempotency-Key and is retried
// with it (and a fresh signature) after a transport error, a 503 or a 429,
// until it gets a definite answer.
type driver struct {
	c *cluster

	done chan struct{} // closed once every loop has stopped

	mu        sync.Mutex
	answers   map[string]answer // by Idempotency-Key
	status500 int               // answers that are never acceptable
	badBodies int               // error answers that are not {"error": "..."}
	faultAt   time.Time         // markFault
	resumedAt time.Time         // first create sent after faultAt and accepted

	hist *history // every create attempt and balance read, for checkHistory
}

// drive runs clients merchants' loops until ctx ends; each loop's last
// create is still retried for up to giveUp after that.
func (c *cluster) drive(ctx context.Context, clients int, giveUp time.Duration) *driver {
	d := &driver{c: c, done: make(chan struct{}), answers: map[string]answer{}}
	d.hist = c.recordHistory(d.done)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				d.createUntilAnswered(ctx, i, fmt.Sprintf("fault-%d-%d", i, n), giveUp)
			}
		})
	}
	go func() { wg.Wait(); close(d.done) }()
	return d
}

// wait returns once every loop has stopped.
func (d *driver) wait() { <-d.done }

// markFault notes when the fault was injected: recovery is measured from
// here to the first create sent afterwards that is accepted.
func (d *driver) markFault() {
	d.mu.Lock()
	d.faultAt = time.Now()
	d.mu.Unlock()
}

var httpClient = &http.Client{Timeout: 10 * time.Second}

// createUntilAnswered sends one create to the merchant's API (apiFor) and
// retries it until a definite answer, or until giveUp after ctx ended.
func (d *driver) createUntilAnswered(ctx context.Context, merchant int, key string, giveUp time.Duration) {
	body, _ := json.Marshal(map[string]string{"client_wallet_id": d.c.wallet.String(), "amount": fmt.Sprint(payoutAmount),
		"bank_code": "bca", "account_no": "1234567890", "transfer_type": "BIFAST", "reference_id": key})
	var deadline time.Time
	for {
		if ctx.Err() != nil && deadline.IsZero() {
			deadline = time.Now().Add(giveUp)
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			d.record(key, unanswered, time.Time{})
			return
		}
		sent := time.Now()
		code, errBody, err := d.post(d.c.apiFor(merchant), body, key)
		switch {
		case err == nil && code/100 == 2:
			d.record(key, accepted, sent)
			return
		case err == nil && code == http.StatusInternalServerError:
			d.mu.Lock()
			d.status500++
			d.mu.Unlock()
		case err == nil && code != http.StatusServiceUnavailable && code != http.StatusTooManyRequests && code/100 == 4:
			if !errBody {
				d.mu.Lock()
				d.badBodies++
				d.mu.Unlock()
			}
			d.record(key, refused, time.Time{})
			return
		}
		time.Sleep(100 * time.Millisecond) // a merchant's retry backoff
	}
}

// post sends a signed create and says whether an error answer had the
// spec's {"error": "..."} body.
func (d *driver) post(api string, body []byte, key string) (code int, errorBody bool, err error) {
	req, _ := http.NewRequest(http.MethodPost, "http://"+api+"/api/v3/disbursements", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", d.c.merchant.APIKey)
	req.Header.Set("x-signature", signature.Sign(*d.c.merchant.SigningSecret, body, time.Now()))
	req.Header.Set("Idempotency-Key", key)
	sent := time.Now()
	resp, err := httpClient.Do(req)
	if err != nil {
		d.hist.create(req, body, sent, nil, nil)
		return 0, false, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	d.hist.create(req, body, sent, resp, raw)
	var e struct {
		Error string `json:"error"`
	}
	return resp.StatusCode, json.Unmarshal(raw, &e) == nil && e.Error != "", nil
}

func (d *driver) record(key string, a answer, sent time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.answers[key] = a
	if a == accepted && !d.faultAt.IsZero() && sent.After(d.faultAt) && d.resumedAt.IsZero() {
		d.resumedAt = time.Now()
	}
}

// summary is a scenario's outcome, counted from the merchant's answers,
// the stored payouts and the vendor's submits.
type summary struct {
	fault                                                   string
	sent, committed, succeeded, failedCleanly, lost, double int
	recovery                                                time.Duration
}

func (s summary) String() string {
	return fmt.Sprintf("fault=%s sent=%d committed=%d succeeded=%d failed_cleanly=%d lost=%d double_paid=%d recovery_s=%.1f",
		s.fault, s.sent, s.committed, s.succeeded, s.failedCleanly, s.lost, s.double, s.recovery.Seconds())
}

// settle waits (up to within) for every stored payout to be final, then
// counts the outcome of every create, checks the wallet's balance against
// the payouts paid and runs `payoutd admin reconcile`, and prints the
// summary line. It fails the test on a lost payout, a payout the vendor
// was asked to pay twice, a 500 or an error body off the spec, a wrong
// balance or a reconcile problem; then it checks the history
// (checkHistory).
func (c *cluster) settle(name string, d *driver, within time.Duration) summary {
	c.t.Helper()
	end := time.Now().Add(within)
	for c.openPayouts() > 0 && time.Now().Before(end) {
		time.Sleep(250 * time.Millisecond)
	}
	var rows []models.Disbursement
	if err := c.db.Find(&rows).Error; err != nil {
		c.t.Fatal(err)
	}
	byKey := map[string]models.Disbursement{}
	for _, r := range rows {
		byKey[r.IdempotencyKey] = r
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	s := summary{fault: name, sent: len(d.answers), committed: len(rows), recovery: d.recovery()}
	var paid models.Amount
	for key, a := range d.answers {
		row, stored := byKey[key]
		switch {
		case !stored && a == accepted:
			s.lost++
			c.t.Errorf("create %s was answered 2xx but nothing is stored", key)
		case !stored:
			s.failedCleanly++
		case a == refused:
			// Told "refused", yet a payout is stored (and may be paid): a
			// retry with the key must replay it, never deny it.
			s.lost++
			c.t.Errorf("create %s was refused with a 4xx but payout %s (%s) is stored under its key", key, row.ID, row.Status)
		case row.Status == models.StatusSuccess:
			s.succeeded++
			paid += row.Amount
		case row.Status.Terminal():
			s.failedCleanly++
		default:
			s.lost++
			c.t.Errorf("payout %s (%s) is still %s after %s", row.ID, key, row.Status, within)
		}
	}
	for _, r := range rows {
		if _, asked := d.answers[r.IdempotencyKey]; !asked {
			c.t.Errorf("payout %s stored under key %q no create sent", r.ID, r.IdempotencyKey)
		}
		calls, err := c.submitCalls(context.Background(), r.VendorReference)
		switch {
		case err == nil && calls > 1:
			s.double++
			c.t.Errorf("payout %s: the vendor was asked to pay it %d times", r.ID, calls)
		case r.Status == models.StatusSuccess && (err != nil || calls != 1):
			c.t.Errorf("payout %s is SUCCESS but the vendor was asked %d times (%v)", r.ID, calls, err)
		}
	}
	if d.status500 > 0 || d.badBodies > 0 {
		c.t.Errorf("%d answers were 500 and %d error answers had no {\"error\": \"...\"} body", d.status500, d.badBodies)
	}
	w, err := models.NewStore(c.db).FindWallet(context.Background(), c.wallet)
	if err != nil {
		c.t.Fatal(err)
	}
	if w.Locked != 0 || w.Balance != models.Rupiah(funding)-paid {
		c.t.Errorf("wallet balance %s locked %s; want %s and 0 after %d payouts paid", w.Balance, w.Locked, models.Rupiah(funding)-paid, s.succeeded)
	}
	c.reconcile()
	fmt.Println(s)
	c.t.Log(s)
	c.checkHistory(name, d)
	return s
}

// recovery is how long creates failed after the fault (0 if none was
// injected or none was accepted after it); the caller holds d.mu.
func (d *driver) recovery() time.Duration {
	if d.faultAt.IsZero() || d.resumedAt.IsZero() {
		return 0
	}
	return d.resumedAt.Sub(d.faultAt)
}

// openPayouts counts the stored payouts not yet final.
func (c *cluster) openPayouts() int64 {
	var n int64
	c.db.Model(&models.Disbursement{}).Where("status NOT IN ?", []models.DisbursementStatus{
		models.StatusSuccess, models.StatusFailed, models.StatusExpired, models.StatusCancelled, models.StatusReturned}).Count(&n)
	return n
}

// reconcile runs `payoutd admin reconcile` as an operator would and fails
// the test unless it reports a clean ledger.
func (c *cluster) reconcile() {
	c.t.Helper()
	cmd := exec.Command(payoutdBin, "admin", "reconcile")
	cmd.Env = c.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var report struct {
		OK       bool     `json:"ok"`
		Problems []string `json:"problems"`
	}
	if err != nil || json.Unmarshal(out, &report) != nil || !report.OK {
		c.t.Errorf("payoutd admin reconcile: %v\n%s%s", err, out, stderr.Bytes())
	}
}
