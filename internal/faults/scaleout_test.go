package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/payoutd/payoutd/client"
	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/signature"
	"github.com/payoutd/payoutd/tasks"
	"github.com/payoutd/payoutd/webhooks"
)

// Three API and three worker processes on one PostgreSQL and one Redis,
// merchants spread over the APIs: every payout is paid exactly once (the
// summary line), every webhook event is recorded once and delivered, each
// periodic task runs once per period however many workers schedule it,
// and a credential rotation reaches every API at once although each keeps
// authenticated clients in memory for a minute.
//
// On PostgreSQL the processes reach it through PgBouncer in transaction
// pooling, as a deployment of many processes does: PostgreSQL sees at most
// the bouncer's pool however many connections the processes hold. Their
// DATABASE_URL says default_query_exec_mode=exec, since PgBouncer 1.18
// keeps no prepared statement from one transaction to the next;
// PAYOUTD_FAULTS_QUERY_MODE=cache_statement runs them with pgx's default,
// which prepares and names statements.
func TestScaleOut(t *testing.T) {
	scenario(t, quick)
	redisURL := testenv.RedisDatabase(t)
	c := newCluster(t, redisURL)
	var bouncer *pgBouncer
	if dialect, _ := database.DialectOf(c.dbURL); dialect == database.Postgres {
		bouncer = startPgBouncer(t, c.dbURL, scaleOutServerConns)
		mode, set := os.LookupEnv("PAYOUTD_FAULTS_QUERY_MODE")
		if !set {
			mode = "exec"
		}
		c.useDatabaseURL(bouncer.url(mode))
		bouncer.watch()
	}
	hooks := c.receiveWebhooks()
	const apis, workers = 3, 3
	operators := []string{"ADMIN_USER=ops", "ADMIN_PASSWORD=" + scaleOutAdminPassword}
	for range apis {
		c.startAPI(append([]string{"AUTH_CACHE_TTL=1m"}, operators...)...)
	}
	started := time.Now()
	var workerMetrics []string
	for i := range workers {
		addr := freeAddr(t)
		workerMetrics = append(workerMetrics, addr)
		c.startPayoutd(fmt.Sprintf("worker %d", i+1), []string{"worker"}, append([]string{"METRICS_ADDR=" + addr}, operators...)...)
	}

	ctx, stop := context.WithTimeout(context.Background(), 12*time.Second)
	defer stop()
	d := c.drive(ctx, 9, 30*time.Second)
	d.wait()
	s := c.settle(fmt.Sprintf("scale-out-%dx%d", apis, workers), d, 2*time.Minute)
	if s.succeeded == 0 {
		t.Fatalf("nothing was paid: %s", s)
	}
	hooks.checkEveryEventOnce(t, c, time.Minute)
	checkPeriodicOncePerPeriod(t, redisURL, time.Since(started))
	checkEveryProcessCounted(t, c.apis, workerMetrics)
	c.checkRotationReachesEveryAPI()
	if bouncer != nil {
		bouncer.checkPooled()
	}
}

// scaleOutServerConns is the PgBouncer pool: the PostgreSQL connections
// of every process together, fewer than the 36 their pools may open (six
// processes, DATABASE_MAX_CONNS=6 each).
const scaleOutServerConns = 12

// scaleOutAdminPassword guards the processes' /metrics.
const scaleOutAdminPassword = "scale-out-operator-password"

// checkEveryProcessCounted reads each API's and each worker's /metrics, as
// Prometheus would, and checks that every process counted its own share of
// the load: requests served by each API, payout status changes and tasks
// run by each worker.
func checkEveryProcessCounted(t *testing.T, apis, workers []string) {
	t.Helper()
	for _, tc := range []struct {
		addrs []string
		want  []string
	}{
		{apis, []string{"payoutd_http_requests_total", "payoutd_disbursement_transitions_total"}},
		{workers, []string{"payoutd_tasks_processed_total", "payoutd_disbursement_transitions_total"}},
	} {
		for _, addr := range tc.addrs {
			req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
			req.SetBasicAuth("ops", scaleOutAdminPassword)
			resp, err := httpClient.Do(req)
			if err != nil {
				t.Fatalf("/metrics of %s: %v", addr, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("/metrics of %s: %d", addr, resp.StatusCode)
			}
			for _, name := range tc.want {
				if counterSum(string(body), name) <= 0 {
					t.Errorf("%s on %s counted nothing after the load", name, addr)
				}
			}
		}
	}
}

// counterSum adds up every series of the counter name in a /metrics page.
func counterSum(page, name string) float64 {
	sum := 0.0
	for _, line := range strings.Split(page, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &v); err == nil {
			sum += v
		}
	}
	return sum
}

// webhookReceiver is the merchant's webhook endpoint: it checks each
// delivery's signature and counts deliveries by event id.
type webhookReceiver struct {
	secret string
	mu     sync.Mutex
	seen   map[string]int
	forged int
}

// receiveWebhooks serves the merchant's webhook endpoint and points the
// merchant's payout webhooks at it with the admin CLI, as an operator
// would.
func (c *cluster) receiveWebhooks() *webhookReceiver {
	c.t.Helper()
	r := &webhookReceiver{secret: c.merchant.CallbackSecret, seen: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		if client.VerifyWebhook(r.secret, req.Header, body, time.Now()) != nil {
			r.forged++
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		r.seen[req.Header.Get(webhooks.EventIDHeader)]++
	}))
	c.t.Cleanup(srv.Close)
	c.admin("client", "update", "--client", c.merchant.ClientID, "--payout-webhook-url", srv.URL+"/hooks")
	return r
}

// admin runs `payoutd admin <args>` on the cluster and returns its JSON
// answer; a failure fails the test.
func (c *cluster) admin(args ...string) map[string]any {
	c.t.Helper()
	cmd := exec.Command(payoutdBin, append([]string{"admin"}, args...)...)
	cmd.Env = c.env
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		c.t.Fatalf("payoutd admin %v: %v\n%s%s", args, err, out, stderr)
	}
	var answer map[string]any
	if err := json.Unmarshal(out, &answer); err != nil {
		c.t.Fatalf("payoutd admin %v printed %q: %v", args, out, err)
	}
	return answer
}

// checkEveryEventOnce waits until every recorded webhook event is
// delivered, then checks that no payout has an event recorded twice, that
// every paid payout has its event, and that the receiver saw every event
// (at least once: a delivery whose answer was lost is sent again) and no
// forged one.
func (r *webhookReceiver) checkEveryEventOnce(t *testing.T, c *cluster, within time.Duration) {
	t.Helper()
	waitFor(t, "every webhook event delivered", within, func() bool {
		var open int64
		c.db.Model(&models.WebhookEvent{}).Where("state <> ?", models.WebhookDelivered).Count(&open)
		return open == 0
	})
	var events []models.WebhookEvent
	if err := c.db.Find(&events).Error; err != nil {
		t.Fatal(err)
	}
	perSubject := map[string]int{}
	for _, e := range events {
		perSubject[e.SubjectID.String()+" "+e.Event]++
	}
	for k, n := range perSubject {
		if n > 1 {
			t.Errorf("event %s recorded %d times", k, n)
		}
	}
	var paid []models.Disbursement
	c.db.Where("status = ?", models.StatusSuccess).Find(&paid)
	withEvent := map[string]bool{}
	for _, e := range events {
		withEvent[e.SubjectID.String()] = true
	}
	for _, d := range paid {
		if !withEvent[d.ID.String()] {
			t.Errorf("paid payout %s has no webhook event", d.ID)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	twice := 0
	for _, e := range events {
		switch n := r.seen[e.ID.String()]; {
		case n == 0:
			t.Errorf("event %s is marked delivered but the receiver never got it", e.ID)
		case n > 1:
			twice++
		}
	}
	if r.forged > 0 {
		t.Errorf("%d deliveries had a signature that does not verify", r.forged)
	}
	t.Logf("%d webhook events for %d paid payouts, each recorded once; %d delivered more than once", len(events), len(paid), twice)
}

// checkPeriodicOncePerPeriod counts the runs of each periodic task that
// the workers completed (asynq retains them for a period, under an id per
// period) and fails if any task ran more often than the periods that began
// while the workers ran: several schedulers must not multiply the runs.
func checkPeriodicOncePerPeriod(t *testing.T, redisURL string, ran time.Duration) {
	t.Helper()
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	inspector := asynq.NewInspector(asynq.RedisClientOpt{Addr: opts.Addr, DB: opts.DB, Username: opts.Username, Password: opts.Password})
	defer inspector.Close()
	runs := map[string]int{}
	for _, q := range []string{tasks.QueueCritical, tasks.QueueDefault, tasks.QueueLow} {
		completed, err := inspector.ListCompletedTasks(q, asynq.PageSize(1000))
		if err != nil {
			continue // a queue nothing ran on has no completed tasks
		}
		for _, task := range completed {
			runs[task.Type]++
		}
	}
	for _, p := range tasks.PeriodicTasks {
		// A worker's first run comes one to two periods after it starts
		// (worker's firstSlot): a task is owed a run only after two.
		least := 0
		if ran >= 2*p.Every {
			least = 1
		}
		most := int(ran/p.Every) + 1
		if n := runs[p.Type]; n < least || n > most {
			t.Errorf("%s ran %d times in %s with several workers; once per %s is %d to %d", p.Type, n, ran.Round(time.Second), p.Every, least, most)
		} else {
			t.Logf("%s ran %d times in %s (every %s)", p.Type, n, ran.Round(time.Second), p.Every)
		}
	}
}

// checkRotationReachesEveryAPI warms every API's memory of the merchant
// with a signed read, rotates the merchant's credentials with the admin
// CLI, and checks that every API refuses the old key within a couple of
// seconds, although each would keep it for AUTH_CACHE_TTL (a minute): the
// rotation's announcement reached them all.
func (c *cluster) checkRotationReachesEveryAPI() {
	c.t.Helper()
	for _, api := range c.apis {
		if code := c.balance(api); code != http.StatusOK {
			c.t.Fatalf("balance on %s before the rotation: %d", api, code)
		}
	}
	c.admin("client", "rotate-credentials", "--client", c.merchant.ClientID)
	for _, api := range c.apis {
		waitFor(c.t, "the API on "+api+" refusing the rotated key", 2*time.Second, func() bool {
			return c.balance(api) == http.StatusUnauthorized
		})
	}
}

// balance reads the wallet's balance on api with the merchant's first
// credentials and returns the status.
func (c *cluster) balance(api string) int {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+api+"/api/v3/wallets/"+c.wallet.String()+"/balance", nil)
	req.Header.Set("x-api-key", c.merchant.APIKey)
	req.Header.Set("x-signature", signature.Sign(*c.merchant.SigningSecret, nil, time.Now()))
	resp, err := httpClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
