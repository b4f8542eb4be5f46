package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/payoutd/payoutd/signature"
	"github.com/payoutd/payoutd/tasks"
)

// The soak (make soak, PAYOUTD_SOAK=1): the service run for SOAK_DURATION
// (30 minutes by default) as `payoutd api` and `payoutd worker` processes
// on a PostgreSQL and a Redis of the soak's own, the sandbox vendor paying
// each payout a second after its submit, at half the capacity measured
// first, while faults of every kind strike at random times. Every 10 s it
// samples what a leak or a slow degradation shows in; at the end it prints
// the samples as a table, draws them as a PNG, and fails when a series
// grows without bound, when a minute's p99 drifts above twice the first
// minute's, or when a payout is lost, paid twice or left the ledger
// unreconciled. docs/faults.md (Soak) says how to read it.

const (
	soakDefaultDuration = 30 * time.Minute
	// soakMinDuration leaves room for the baseline minute, five faults
	// soakFaultGap apart and the quiet end.
	soakMinDuration = soakFaultEarliest + 4*soakFaultGap + soakFaultQuietEnd
	soakSampleEvery = 10 * time.Second

	// The capacity measurement: a closed loop whose first seconds (fresh
	// connections, cold caches) are not counted.
	soakCapacityClients = 32
	soakCapacityWarmup  = 5 * time.Second
	soakCapacityFor     = 20 * time.Second

	// Faults start no earlier than the end of the first minute (the p99
	// baseline), at least soakFaultGap apart, and leave the last 90 s
	// alone so that the end of the soak is judged on a settled service.
	soakFaultEarliest = time.Minute
	soakFaultQuietEnd = 90 * time.Second
	soakFaultGap      = 15 * time.Second
	// soakFaultGrace is how long after a fault is undone the service may
	// still show it: the vendor's breaker stays open 10 s
	// (VENDOR_BREAKER_OPEN_FOR's default) before a probe finds the vendor
	// back, and merchants' retries, backed off up to 2 s, land then.
	// Samples and minutes within a fault's window and this grace are left
	// out of the growth and p99 verdicts.
	soakFaultGrace = 15 * time.Second
	soakDownFor    = time.Second      // a killed process or Redis stays down this long
	soakVendor5xx  = 10 * time.Second // the vendor's 503 burst

	// soakRedisFill: the tasks package keeps a finished task (and its id)
	// 10 minutes, so Redis fills for that long at any steady rate before
	// it levels off; its growth is judged on the samples after it.
	soakRedisFill = 10 * time.Minute

	// soakAppName tags the service's PostgreSQL connections
	// (application_name), which the connection kill ends and the sampler
	// counts; the test's own are left alone.
	soakAppName       = "payoutd"
	soakAdminPassword = "soak-operator-password-0123456789"
)

// soakFaultKinds are the faults of one round; a soak runs one round per
// started 30 minutes.
var soakFaultKinds = []string{"api-kill", "worker-kill", "redis-restart", "vendor-5xx", "pg-conn-kill"}

// TestSoak is make soak.
func TestSoak(t *testing.T) {
	if os.Getenv("PAYOUTD_SOAK") == "" {
		t.Skip("the soak runs with PAYOUTD_SOAK=1 (make soak)")
	}
	cfg := soakConfigFromEnv(t)
	plan, err := planSoakFaults(cfg.duration, cfg.seed)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("soak: seed=%d (SOAK_SEED=%d replays these fault times), SOAK_DURATION=%s\n", cfg.seed, cfg.seed, cfg.duration)
	for _, f := range plan {
		fmt.Printf("soak: planned %-13s at %s\n", f.kind, minSec(f.at))
	}

	began := time.Now()
	s := startSoak(t)
	setupTook := time.Since(began)

	measured := time.Now()
	capacity := s.load.measureCapacity(soakCapacityClients, soakCapacityWarmup, soakCapacityFor)
	fmt.Printf("soak: capacity %.1f creates/s (closed loop, %d clients, %s after %s of warm-up; p50 %.1f ms, p99 %.1f ms)\n",
		capacity.rate, soakCapacityClients, soakCapacityFor-soakCapacityWarmup, soakCapacityWarmup, ms(capacity.p50), ms(capacity.p99))
	if capacity.rate < 2 {
		t.Fatalf("the service created %.1f payouts/s in the capacity measurement: nothing to soak at half of it", capacity.rate)
	}
	s.rate = capacity.rate / 2
	s.waitBacklog()
	fmt.Printf("soak: offered rate %.1f creates/s (half the capacity), open loop for %s\n", s.rate, cfg.duration)
	measureTook := time.Since(measured)

	s.run(cfg.duration, plan)
	drained := time.Now()
	s.load.waitCreates()
	drainTook := time.Since(drained)

	s.report(cfg)
	settling := time.Now()
	failedBefore := t.Failed()
	sum := s.c.settle("soak", s.load.d, 3*time.Minute)
	checks := "clean"
	if t.Failed() && !failedBefore {
		checks = "failed (see above)"
	}
	fmt.Printf("soak: setup %s, capacity measurement and backlog %s, open loop %s, creates' drain %s, settle and reconcile %s\n",
		setupTook.Round(time.Second), measureTook.Round(time.Second), cfg.duration, drainTook.Round(time.Second), time.Since(settling).Round(time.Second))
	s.verdicts(cfg, sum, checks)
}

// soakConfig is what the environment asks of a soak.
type soakConfig struct {
	duration time.Duration // SOAK_DURATION: the open loop's length
	seed     uint64        // SOAK_SEED: the fault times
	plot     string        // SOAK_PLOT: where the PNG goes
}

func soakConfigFromEnv(t *testing.T) soakConfig {
	t.Helper()
	cfg := soakConfig{duration: soakDefaultDuration, seed: uint64(time.Now().UnixNano()) % 1_000_000_000}
	if v := os.Getenv("SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("SOAK_DURATION=%q: %v (want e.g. 30m or 4m)", v, err)
		}
		cfg.duration = d
	}
	if v := os.Getenv("SOAK_SEED"); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("SOAK_SEED=%q: want a non-negative integer", v)
		}
		cfg.seed = seed
	}
	cfg.plot = os.Getenv("SOAK_PLOT")
	if cfg.plot == "" {
		cfg.plot = filepath.Join(os.TempDir(), fmt.Sprintf("payoutd-soak-%d.png", cfg.seed))
	}
	return cfg
}

// plannedFault is a fault of the schedule: its kind and when, from the
// start of the open loop.
type plannedFault struct {
	kind string
	at   time.Duration
}

// planSoakFaults draws the schedule: each kind once per started 30
// minutes, in an order and at times drawn from seed, uniformly among the
// schedules that keep faults soakFaultGap apart within [soakFaultEarliest,
// duration-soakFaultQuietEnd].
func planSoakFaults(duration time.Duration, seed uint64) ([]plannedFault, error) {
	if duration < soakMinDuration {
		return nil, fmt.Errorf("SOAK_DURATION=%s: at least %s (a baseline minute, the faults %s apart, a quiet end of %s)",
			duration, soakMinDuration, soakFaultGap, soakFaultQuietEnd)
	}
	rng := rand.New(rand.NewPCG(seed, 0x50a6))
	var kinds []string
	for range (duration + 30*time.Minute - 1) / (30 * time.Minute) {
		round := append([]string(nil), soakFaultKinds...)
		rng.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		kinds = append(kinds, round...)
	}
	// n points in [lo, hi-(n-1)·gap], sorted, the i-th moved by i·gap: a
	// uniform draw among the schedules whose gaps are all at least gap.
	lo, free := soakFaultEarliest, duration-soakFaultQuietEnd-soakFaultEarliest-time.Duration(len(kinds)-1)*soakFaultGap
	if free < 0 {
		return nil, fmt.Errorf("SOAK_DURATION=%s is too short for %d faults %s apart", duration, len(kinds), soakFaultGap)
	}
	at := make([]time.Duration, len(kinds))
	for i := range at {
		at[i] = time.Duration(rng.Int64N(int64(free) + 1)).Truncate(100 * time.Millisecond)
	}
	sort.Slice(at, func(i, j int) bool { return at[i] < at[j] })
	plan := make([]plannedFault, len(kinds))
	for i := range plan {
		plan[i] = plannedFault{kind: kinds[i], at: lo + at[i] + time.Duration(i)*soakFaultGap}
	}
	return plan, nil
}

// soakRun is one soak: the cluster, its processes, the load and what was
// sampled.
type soakRun struct {
	t    *testing.T
	c    *cluster
	load *soakLoad

	// procMu guards the processes the faults kill and restart, which the
	// sampler reads the pids of.
	procMu        sync.Mutex
	api, worker   *proc
	redis         *proc
	redisAddr     string
	workerMetrics string
	front         *vendorFront
	rdb           *redis.Client
	metricsClient *http.Client

	rate  float64
	start time.Time // the open loop's

	mu      sync.Mutex
	faults  []*soakFault
	samples []soakSample
}

// soakFault is a fault as it was injected.
type soakFault struct {
	plannedFault
	start, end time.Time // injected, undone (zero while under way)
	note       string
}

// window is when the service may show the fault: from its injection to
// soakFaultGrace after it was undone (open-ended while under way).
func (f *soakFault) window() (from, to time.Time) {
	if f.end.IsZero() {
		return f.start, f.start.Add(24 * time.Hour)
	}
	return f.start, f.end.Add(soakFaultGrace)
}

// startSoak starts the soak's PostgreSQL, Redis, cluster (the simulator
// paying 1 s after a submit, behind a fault front), api and worker.
func startSoak(t *testing.T) *soakRun {
	t.Helper()
	pg := newPGInstance(t, "soak postgres")
	pg.run("initdb", "-D", pg.data, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync")
	pg.configure("listen_addresses = '127.0.0.1'", "fsync = on", "synchronous_commit = on",
		"shared_buffers = 128MB", "max_connections = 150", "logging_collector = off")
	pg.start()
	dbURL := pg.createDatabase("soak")
	migrateDatabase(t, dbURL)

	s := &soakRun{t: t, metricsClient: &http.Client{Timeout: 3 * time.Second}}
	s.redis, s.redisAddr = startSoakRedis(t)
	// The test's own handle on the database logs its slow statements (the
	// sampler's counts, settle's read of every payout) as warnings, which
	// would break up the table: errors only.
	logger := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	t.Cleanup(func() { slog.SetDefault(logger) })
	s.c = newClusterOn(t, "redis://"+s.redisAddr+"/0", dbURL, clusterOptions{completeAfter: time.Second})
	s.front = s.c.frontVendor()

	// The soak has a PostgreSQL of its own: the service's default pool
	// (DATABASE_MAX_CONNS 32) rather than the scenarios' 6.
	service := []string{"DATABASE_URL=" + dbURL + "&application_name=" + soakAppName, "DATABASE_MAX_CONNS=32",
		"SANDBOX_COMPLETE_AFTER=1s", "ADMIN_USER=ops", "ADMIN_PASSWORD=" + soakAdminPassword}
	s.api = s.c.startAPI(service...)
	s.workerMetrics = freeAddr(t)
	s.worker = s.c.startPayoutd("worker", []string{"worker"}, append([]string{"METRICS_ADDR=" + s.workerMetrics}, service...)...)
	waitFor(t, "the worker's /metrics", 30*time.Second, func() bool { return !math.IsNaN(s.goroutines(s.workerMetrics)) })

	s.rdb = redis.NewClient(&redis.Options{Addr: s.redisAddr, DialTimeout: time.Second, ReadTimeout: 3 * time.Second,
		WriteTimeout: 3 * time.Second, MaxRetries: -1, PoolSize: 2})
	t.Cleanup(func() { s.rdb.Close() })
	s.load = newSoakLoad(s.c)
	return s
}

// startSoakRedis starts the soak's redis-server (no persistence: a restart
// empties it) and returns it, restartable, with its address.
func startSoakRedis(t *testing.T) (*proc, string) {
	t.Helper()
	server, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server is not installed (apt-get install redis-server; make soak installs it)")
	}
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	p := startProc(t, "redis", server, []string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir()}, nil)
	waitFor(t, "the soak's redis-server answering", 30*time.Second, func() bool { return redisAnswers(addr) })
	return p, addr
}

func redisAnswers(addr string) bool {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return c.Ping(ctx).Err() == nil
}

// waitBacklog waits, up to 2 minutes, until the payouts the capacity
// measurement left open are down to what the offered rate keeps open,
// so that the open loop does not start on the measurement's backlog.
func (s *soakRun) waitBacklog() {
	steady := int64(max(50, 3*s.rate))
	began := time.Now()
	for s.c.openPayouts() > steady && time.Since(began) < 2*time.Minute {
		time.Sleep(time.Second)
	}
	fmt.Printf("soak: %d payouts open %s after the capacity measurement (waited for at most %d)\n",
		s.c.openPayouts(), time.Since(began).Round(time.Second), steady)
}

// run offers s.rate creates a second for duration, samples every
// soakSampleEvery and injects the planned faults, then stops offering.
func (s *soakRun) run(duration time.Duration, plan []plannedFault) {
	s.start = time.Now()
	ctx, stop := context.WithDeadline(context.Background(), s.start.Add(duration))
	defer stop()
	loaded := make(chan struct{})
	go func() {
		// A minute of arrivals waiting is where merchants would have
		// given up long before: beyond it creates are shed, and counted.
		s.load.openLoop(ctx, s.rate, int64(max(1000, 60*s.rate)))
		close(loaded)
	}()
	sampled := make(chan struct{})
	go func() {
		s.sampleLoop(duration)
		close(sampled)
	}()
	for _, p := range plan {
		time.Sleep(time.Until(s.start.Add(p.at)))
		f := &soakFault{plannedFault: p, start: time.Now()}
		s.mu.Lock()
		s.faults = append(s.faults, f)
		s.mu.Unlock()
		note := s.inject(f.kind)
		s.mu.Lock()
		f.end, f.note = time.Now(), note
		s.mu.Unlock()
		fmt.Fprintf(os.Stderr, "soak: %s %-13s %s\n", minSec(f.start.Sub(s.start)), f.kind, note)
	}
	<-sampled
	<-loaded
}

// inject does one fault and returns once it is undone, saying how it went.
func (s *soakRun) inject(kind string) string {
	switch kind {
	case "api-kill":
		took := s.restart(s.api, func() { waitReady(s.t, s.c.apiAddr, 30*time.Second) })
		return fmt.Sprintf("SIGKILL, down %s, /readyz 200 again after %.1fs", soakDownFor, took.Seconds())
	case "worker-kill":
		took := s.restart(s.worker, func() {
			waitFor(s.t, "the worker's /metrics", 30*time.Second, func() bool { return !math.IsNaN(s.goroutines(s.workerMetrics)) })
		})
		return fmt.Sprintf("SIGKILL, down %s, serving again after %.1fs", soakDownFor, took.Seconds())
	case "redis-restart":
		took := s.restart(s.redis, func() {
			waitFor(s.t, "redis-server answering", 30*time.Second, func() bool { return redisAnswers(s.redisAddr) })
		})
		return fmt.Sprintf("SIGKILL (every key lost), down %s, answering again after %.1fs", soakDownFor, took.Seconds())
	case "vendor-5xx":
		s.front.set(front5xx, 0)
		time.Sleep(soakVendor5xx)
		s.front.set(frontPass, 0)
		return fmt.Sprintf("the vendor answered 503 to everything for %s", soakVendor5xx)
	case "pg-conn-kill":
		var n int64
		err := s.c.db.Raw("SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND application_name = ?",
			soakAppName).Scan(&n).Error
		if err != nil {
			s.t.Fatalf("pg_terminate_backend: %v", err)
		}
		return fmt.Sprintf("pg_terminate_backend ended the service's %d connections", n)
	}
	s.t.Fatalf("unknown fault %q", kind)
	return ""
}

// restart kills p (SIGKILL), waits soakDownFor, starts it again and waits
// until ready says it serves; it returns the time from the kill to then.
func (s *soakRun) restart(p *proc, ready func()) time.Duration {
	began := time.Now()
	s.procMu.Lock()
	p.kill()
	s.procMu.Unlock()
	time.Sleep(soakDownFor)
	s.procMu.Lock()
	p.start()
	s.procMu.Unlock()
	ready()
	return time.Since(began)
}

// The sampled series, in table and plot order.
const (
	serAPIRSS = iota
	serWorkerRSS
	serAPIGoroutines
	serWorkerGoroutines
	serPGConns
	serRedisMB
	serQueue
	serOpen
	serCreates
	serP50
	serP99
	serCount
)

// soakSeries is one sampled series: its column, its plot title and, for
// those judged for growth, the test's thresholds: it grows without bound
// when the last third's maximum exceeds factor × the first third's plus
// slack, and a least-squares line through the last half still rises by
// more than a tenth of the first third's maximum plus half the slack.
type soakSeries struct {
	column, title string
	format        string
	judged        bool
	factor, slack float64
	from          time.Duration // samples before are not judged
}

// soakSeriesFor are the series of a soak offering rate creates a second.
// A factor of 1.25: a process at a steady load peaks at about the same
// RSS, goroutines and connections in every ten minutes (restarts only
// lower them), so a quarter more at the end, still rising, is growth. The
// slack absorbs what moves without leaking: a few MB of a Go heap's next
// goal, goroutines of requests in flight, a pool's connection or two,
// the tasks and open payouts a couple of seconds of arrivals make.
func soakSeriesFor(rate float64) [serCount]soakSeries {
	backlog := max(50, 2*rate)
	return [serCount]soakSeries{
		serAPIRSS:           {"api_rss", "api RSS (MB)", "%.1f", true, 1.25, 8, 0},
		serWorkerRSS:        {"wrk_rss", "worker RSS (MB)", "%.1f", true, 1.25, 8, 0},
		serAPIGoroutines:    {"api_gor", "api goroutines", "%.0f", true, 1.25, 25, 0},
		serWorkerGoroutines: {"wrk_gor", "worker goroutines", "%.0f", true, 1.25, 25, 0},
		serPGConns:          {"pg_conn", "service's PostgreSQL connections", "%.0f", true, 1.25, 2, 0},
		serRedisMB:          {"redis_mb", "Redis used_memory (MB)", "%.2f", true, 1.25, 2, soakRedisFill},
		serQueue:            {"queue", "asynq pending+scheduled+retry", "%.0f", true, 1.25, backlog, 0},
		serOpen:             {"open", "payouts not final", "%.0f", true, 1.25, backlog, 0},
		serCreates:          {"creates/s", "creates/s accepted", "%.1f", false, 0, 0, 0},
		serP50:              {"p50_ms", "create p50 (ms)", "%.1f", false, 0, 0, 0},
		serP99:              {"p99_ms", "create p99 (ms)", "%.1f", false, 0, 0, 0},
	}
}

// soakSample is one sample: at (from the open loop's start) the end of its
// window, and each series' value (NaN when it could not be read: the
// process or server was down).
type soakSample struct {
	at      time.Duration
	v       [serCount]float64
	retries int // create attempts answered a transport error, 5xx or 429 in the window
}

func (s *soakRun) sampleLoop(duration time.Duration) {
	fmt.Fprintln(os.Stderr, soakTableHeader(soakSeriesFor(s.rate)))
	for k := 1; time.Duration(k)*soakSampleEvery <= duration; k++ {
		end := s.start.Add(time.Duration(k) * soakSampleEvery)
		time.Sleep(time.Until(end))
		smp := s.sample(end.Add(-soakSampleEvery), end)
		s.mu.Lock()
		s.samples = append(s.samples, smp)
		faults := s.faultsBetween(end.Add(-soakSampleEvery), end)
		s.mu.Unlock()
		fmt.Fprintln(os.Stderr, smp.row(soakSeriesFor(s.rate), faults))
	}
}

// sample reads every series for the window (from, to].
func (s *soakRun) sample(from, to time.Time) soakSample {
	smp := soakSample{at: to.Sub(s.start)}
	smp.v[serAPIRSS] = rssMB(s.pid(s.api))
	smp.v[serWorkerRSS] = rssMB(s.pid(s.worker))
	smp.v[serAPIGoroutines] = s.goroutines(s.c.apiAddr)
	smp.v[serWorkerGoroutines] = s.goroutines(s.workerMetrics)
	smp.v[serPGConns] = s.pgConns()
	smp.v[serRedisMB], smp.v[serQueue] = s.redisFigures()
	smp.v[serOpen] = float64(s.c.openPayouts())
	w := s.load.window(from, to)
	smp.v[serCreates] = float64(len(w.latencies)) / to.Sub(from).Seconds()
	smp.v[serP50], smp.v[serP99] = ms(percentile(w.latencies, 0.50)), ms(percentile(w.latencies, 0.99))
	smp.retries = w.failed
	return smp
}

// pid is p's process id (0 while it is down).
func (s *soakRun) pid(p *proc) int {
	s.procMu.Lock()
	defer s.procMu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// rssMB is the resident set of process pid (VmRSS of /proc/pid/status) in
// MB; NaN when it cannot be read.
func rssMB(pid int) float64 {
	if pid == 0 {
		return math.NaN()
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return math.NaN()
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			if err != nil {
				return math.NaN()
			}
			return kb / 1024
		}
	}
	return math.NaN()
}

// goroutines reads go_goroutines from the /metrics at addr, with the
// operator's credentials; NaN when it does not answer.
func (s *soakRun) goroutines(addr string) float64 {
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
	req.SetBasicAuth("ops", soakAdminPassword)
	resp, err := s.metricsClient.Do(req)
	if err != nil {
		return math.NaN()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return math.NaN()
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "go_goroutines "); ok {
			if n, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				return n
			}
		}
	}
	return math.NaN()
}

// pgConns counts the service's connections to the soak's database.
func (s *soakRun) pgConns() float64 {
	var n int64
	if err := s.c.db.Raw("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = ?",
		soakAppName).Scan(&n).Error; err != nil {
		return math.NaN()
	}
	return float64(n)
}

// redisFigures reads Redis's used_memory (MB) and the asynq tasks waiting
// (pending, scheduled and retry, across queues); NaN while Redis is down.
func (s *soakRun) redisFigures() (usedMB, waiting float64) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	usedMB, waiting = math.NaN(), math.NaN()
	if info, err := s.rdb.Info(ctx, "memory").Result(); err == nil {
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
				if b, err := strconv.ParseFloat(v, 64); err == nil {
					usedMB = b / (1 << 20)
				}
			}
		}
	}
	// The queues' keys are read directly, not through asynq's Inspector:
	// it lists the queues named in a set each process adds a queue to
	// once, at its first enqueue, so after a Redis restart it sees none
	// until the processes restart.
	pipe := s.rdb.Pipeline()
	var sizes []*redis.IntCmd
	for _, q := range []string{tasks.QueueCritical, tasks.QueueDefault, tasks.QueueLow} {
		prefix := "asynq:{" + q + "}:"
		sizes = append(sizes, pipe.LLen(ctx, prefix+"pending"), pipe.ZCard(ctx, prefix+"scheduled"), pipe.ZCard(ctx, prefix+"retry"))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return usedMB, math.NaN()
	}
	total := int64(0)
	for _, n := range sizes {
		total += n.Val()
	}
	return usedMB, float64(total)
}

// faultsBetween names the faults whose window overlaps (from, to]; the
// caller holds s.mu.
func (s *soakRun) faultsBetween(from, to time.Time) string {
	var names []string
	for _, f := range s.faults {
		ws, we := f.window()
		if ws.Before(to) && we.After(from) {
			names = append(names, f.kind)
		}
	}
	return strings.Join(names, ",")
}

// soakLoad is the merchant: signed creates over HTTP, each retried with its
// Idempotency-Key (backing off from 100 ms to 2 s) after a transport
// error, a 5xx or a 429 until a definite answer, recorded in the driver
// the harness's settle counts from.
type soakLoad struct {
	c *cluster
	d *driver
	// client keeps its connections: the harness's client keeps two idle,
	// and an open loop's creates under way at once would each dial afresh
	// (and leave a TIME_WAIT socket) for half an hour. Up to 64 idle,
	// which steady arrivals never need more of, so that the connections a
	// retry storm opens after a fault close again and do not leave the
	// API's goroutines high.
	client *http.Client

	mu      sync.Mutex
	oks     []soakAccepted // in the order they were recorded
	fails   []time.Time    // attempts that are retried
	created sync.WaitGroup

	inFlight atomic.Int64
	shed     atomic.Int64
}

// soakAccepted is an attempt answered 2xx: when, and how long the attempt
// took (from sending to having read the answer).
type soakAccepted struct {
	at   time.Time
	took time.Duration
}

func newSoakLoad(c *cluster) *soakLoad {
	return &soakLoad{c: c, d: &driver{c: c, done: make(chan struct{}), answers: map[string]answer{}},
		client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			MaxIdleConns: 64, MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute, DisableCompression: true}}}
}

// soakCapacity is the closed loop's rate and latencies.
type soakCapacity struct {
	rate     float64
	p50, p99 time.Duration
}

// measureCapacity runs clients merchants back to back for measure and
// counts the creates accepted after warmup.
func (l *soakLoad) measureCapacity(clients int, warmup, measure time.Duration) soakCapacity {
	began := time.Now()
	ctx, stop := context.WithTimeout(context.Background(), measure)
	defer stop()
	for i := range clients {
		l.created.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				l.create(ctx, fmt.Sprintf("soak-capacity-%d-%d", i, n), 30*time.Second)
			}
		})
	}
	<-ctx.Done()
	from, to := began.Add(warmup), began.Add(measure)
	l.waitCreates()
	w := l.window(from, to)
	return soakCapacity{rate: float64(len(w.latencies)) / to.Sub(from).Seconds(),
		p50: percentile(w.latencies, 0.50), p99: percentile(w.latencies, 0.99)}
}

// openLoop starts a create every 1/rate seconds until ctx ends, whatever
// the answers: each create is its own merchant, so a slow service meets
// more of them, not fewer. Beyond maxInFlight creates under way, new ones
// are shed (counted).
func (l *soakLoad) openLoop(ctx context.Context, rate float64, maxInFlight int64) {
	start := time.Now()
	interval := time.Duration(float64(time.Second) / rate)
	for n := 0; ; n++ {
		time.Sleep(time.Until(start.Add(time.Duration(n) * interval)))
		if ctx.Err() != nil {
			return
		}
		if l.inFlight.Load() >= maxInFlight {
			l.shed.Add(1)
			continue
		}
		l.inFlight.Add(1)
		l.created.Go(func() {
			defer l.inFlight.Add(-1)
			l.create(ctx, fmt.Sprintf("soak-%d", n), 30*time.Second)
		})
	}
}

// waitCreates waits for every create started to have its answer (or be
// given up, 30 s after its loop ended).
func (l *soakLoad) waitCreates() { l.created.Wait() }

// create sends one create until it has a definite answer, or until giveUp
// after ctx ended, as the harness's driver does.
func (l *soakLoad) create(ctx context.Context, key string, giveUp time.Duration) {
	body, _ := json.Marshal(map[string]string{"client_wallet_id": l.c.wallet.String(), "amount": fmt.Sprint(payoutAmount),
		"bank_code": "bca", "account_no": "1234567890", "transfer_type": "BIFAST", "reference_id": key})
	backoff := 100 * time.Millisecond
	var deadline time.Time
	for {
		if ctx.Err() != nil && deadline.IsZero() {
			deadline = time.Now().Add(giveUp)
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			l.d.record(key, unanswered, time.Time{})
			return
		}
		sent := time.Now()
		code, errBody, err := l.post(body, key)
		took := time.Since(sent)
		switch {
		case err == nil && code/100 == 2:
			l.d.record(key, accepted, sent)
			l.mu.Lock()
			l.oks = append(l.oks, soakAccepted{at: time.Now(), took: took})
			l.mu.Unlock()
			return
		case err == nil && code == http.StatusInternalServerError:
			l.d.mu.Lock()
			l.d.status500++
			l.d.mu.Unlock()
		case err == nil && code != http.StatusServiceUnavailable && code != http.StatusTooManyRequests && code/100 == 4:
			if !errBody {
				l.d.mu.Lock()
				l.d.badBodies++
				l.d.mu.Unlock()
			}
			l.d.record(key, refused, time.Time{})
			return
		}
		l.mu.Lock()
		l.fails = append(l.fails, time.Now())
		l.mu.Unlock()
		time.Sleep(backoff/2 + rand.N(backoff/2))
		backoff = min(2*backoff, 2*time.Second)
	}
}

// post sends a signed create, as the harness's driver does, over l.client.
func (l *soakLoad) post(body []byte, key string) (code int, errorBody bool, err error) {
	req, _ := http.NewRequest(http.MethodPost, "http://"+l.c.apiAddr+"/api/v3/disbursements", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", l.c.merchant.APIKey)
	req.Header.Set("x-signature", signature.Sign(*l.c.merchant.SigningSecret, body, time.Now()))
	req.Header.Set("Idempotency-Key", key)
	resp, err := l.client.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var e struct {
		Error string `json:"error"`
	}
	return resp.StatusCode, json.Unmarshal(raw, &e) == nil && e.Error != "", nil
}

// soakWindow is what the load saw in a window: the latencies of the
// accepted attempts, sorted, and the attempts retried.
type soakWindow struct {
	latencies []time.Duration
	failed    int
}

// window is the load's figures for (from, to].
func (l *soakLoad) window(from, to time.Time) soakWindow {
	l.mu.Lock()
	defer l.mu.Unlock()
	var w soakWindow
	i := sort.Search(len(l.oks), func(i int) bool { return l.oks[i].at.After(from) })
	for ; i < len(l.oks) && !l.oks[i].at.After(to); i++ {
		w.latencies = append(w.latencies, l.oks[i].took)
	}
	sort.Slice(w.latencies, func(i, j int) bool { return w.latencies[i] < w.latencies[j] })
	i = sort.Search(len(l.fails), func(i int) bool { return l.fails[i].After(from) })
	for ; i < len(l.fails) && !l.fails[i].After(to); i++ {
		w.failed++
	}
	return w
}

// percentile is the q-quantile of sorted by nearest rank; 0 when empty
// (ms turns it into NaN).
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// ms is d in milliseconds; NaN for 0 (no sample).
func ms(d time.Duration) float64 {
	if d == 0 {
		return math.NaN()
	}
	return float64(d) / float64(time.Millisecond)
}

// minSec prints d as m:ss.s.
func minSec(d time.Duration) string {
	return fmt.Sprintf("%d:%04.1f", int(d/time.Minute), (d % time.Minute).Seconds())
}

func soakTableHeader(series [serCount]soakSeries) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%6s", "t_min")
	for _, s := range series {
		fmt.Fprintf(&b, " %9s", s.column)
	}
	fmt.Fprintf(&b, " %7s  %s", "retries", "fault")
	return b.String()
}

func (smp soakSample) row(series [serCount]soakSeries, faults string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%6.2f", smp.at.Minutes())
	for i, s := range series {
		v := "-"
		if !math.IsNaN(smp.v[i]) {
			v = fmt.Sprintf(s.format, smp.v[i])
		}
		fmt.Fprintf(&b, " %9s", v)
	}
	fmt.Fprintf(&b, " %7d  %s", smp.retries, faults)
	return b.String()
}

// growthVerdict is a series' growth test.
type growthVerdict struct {
	judged            bool
	why               string // when not judged
	firstMax, lastMax float64
	rise              float64 // of the last half's least-squares line
	limit             float64 // factor × firstMax + slack
	grows             bool
}

// judgeGrowth tests one series sampled at ats over [0, span]: the samples
// before s.from and those excluded (within a fault's window) are left out;
// the thirds and the half are of the judged stretch [s.from, span].
func judgeGrowth(s soakSeries, ats []time.Duration, vs []float64, excluded func(time.Duration) bool, span time.Duration) growthVerdict {
	var v growthVerdict
	stretch := span - s.from
	if stretch <= 0 {
		v.why = fmt.Sprintf("judged from minute %.0f on, after what it fills legitimately", s.from.Minutes())
		return v
	}
	firstEnd, lastFrom, halfFrom := s.from+stretch/3, s.from+2*stretch/3, s.from+stretch/2
	var nFirst, nLast int
	var xs, ys []float64
	v.firstMax, v.lastMax = math.Inf(-1), math.Inf(-1)
	for i, at := range ats {
		if at < s.from || math.IsNaN(vs[i]) || excluded(at) {
			continue
		}
		if at <= firstEnd {
			nFirst++
			v.firstMax = max(v.firstMax, vs[i])
		}
		if at > lastFrom {
			nLast++
			v.lastMax = max(v.lastMax, vs[i])
		}
		if at > halfFrom {
			xs = append(xs, at.Seconds())
			ys = append(ys, vs[i])
		}
	}
	if nFirst < 3 || nLast < 3 || len(xs) < 4 {
		v.why = fmt.Sprintf("too few samples outside the faults' windows (%d in the first third, %d in the last, %d in the last half; 3, 3 and 4 needed)",
			nFirst, nLast, len(xs))
		return v
	}
	v.judged = true
	v.rise = slope(xs, ys) * (xs[len(xs)-1] - xs[0])
	v.limit = s.factor*v.firstMax + s.slack
	v.grows = v.lastMax > v.limit && v.rise > 0.1*v.firstMax+s.slack/2
	return v
}

// slope is the least-squares slope of ys over xs.
func slope(xs, ys []float64) float64 {
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

// minuteP99 is one minute of the open loop for the p99 verdict.
type minuteP99 struct {
	minute   int // 1-based
	n        int
	p99      time.Duration
	excluded string // the faults whose window overlaps it
}

// soakMinSamples: a minute with fewer accepted creates has no p99 worth
// comparing.
const soakMinSamples = 50

// judgeP99 compares each later minute, outside the faults' windows, with
// the first minute's p99: over twice it fails. It returns the baseline
// (0 if the first minute has too few creates), how many minutes were
// compared with it and those over.
func judgeP99(minutes []minuteP99) (baseline time.Duration, judged int, over []minuteP99) {
	if len(minutes) == 0 || minutes[0].n < soakMinSamples {
		return 0, 0, nil
	}
	baseline = minutes[0].p99
	for _, m := range minutes[1:] {
		if m.excluded != "" || m.n < soakMinSamples {
			continue
		}
		judged++
		if m.p99 > 2*baseline {
			over = append(over, m)
		}
	}
	return baseline, judged, over
}

// minutes cuts the open loop into whole minutes for the p99 verdict.
func (s *soakRun) minutes(duration time.Duration) []minuteP99 {
	var out []minuteP99
	for m := 0; time.Duration(m+1)*time.Minute <= duration; m++ {
		from, to := s.start.Add(time.Duration(m)*time.Minute), s.start.Add(time.Duration(m+1)*time.Minute)
		w := s.load.window(from, to)
		s.mu.Lock()
		excluded := s.faultsBetween(from, to)
		s.mu.Unlock()
		out = append(out, minuteP99{minute: m + 1, n: len(w.latencies), p99: percentile(w.latencies, 0.99), excluded: excluded})
	}
	return out
}

// inFaultWindow says whether the sample whose window ends at (from the
// open loop's start) overlaps a fault's window.
func (s *soakRun) inFaultWindow(at time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	end := s.start.Add(at)
	return s.faultsBetween(end.Add(-soakSampleEvery), end) != ""
}

// report prints the faults, the table, the p99 by minute and the growth
// verdicts, and draws the plot.
func (s *soakRun) report(cfg soakConfig) {
	series := soakSeriesFor(s.rate)
	s.mu.Lock()
	samples := append([]soakSample(nil), s.samples...)
	faults := append([]*soakFault(nil), s.faults...)
	s.mu.Unlock()

	fmt.Printf("\nsoak: faults (seed %d), each excluded from the growth and p99 verdicts until %s after it was undone:\n", cfg.seed, soakFaultGrace)
	for _, f := range faults {
		from, to := f.window()
		w := s.load.window(from, to)
		fmt.Printf("  %s  %-13s %s; %d create attempts retried until %s\n", minSec(f.start.Sub(s.start)), f.kind, f.note, w.failed, minSec(to.Sub(s.start)))
	}

	fmt.Printf("\nsoak: samples every %s (t_min: the window's end, minutes from the open loop's start; RSS and Redis in MB; queue: asynq pending+scheduled+retry; open: payouts not final; creates/s, p50, p99: the window's accepted creates; retries: attempts answered a transport error, 5xx or 429; fault: a fault's window overlaps)\n", soakSampleEvery)
	fmt.Println(soakTableHeader(series))
	for _, smp := range samples {
		s.mu.Lock()
		names := s.faultsBetween(s.start.Add(smp.at-soakSampleEvery), s.start.Add(smp.at))
		s.mu.Unlock()
		fmt.Println(smp.row(series, names))
	}

	minutes := s.minutes(cfg.duration)
	baseline, _, _ := judgeP99(minutes)
	fmt.Printf("\nsoak: p99 of each minute's accepted creates against 2 × minute 1's (%.1f ms):\n", ms(baseline))
	for _, m := range minutes {
		verdict := "ok"
		switch {
		case m.minute == 1:
			verdict = "baseline"
		case m.excluded != "":
			verdict = "not judged: " + m.excluded
		case m.n < soakMinSamples:
			verdict = fmt.Sprintf("not judged: fewer than %d creates", soakMinSamples)
		case baseline > 0 && m.p99 > 2*baseline:
			verdict = "OVER"
		}
		fmt.Printf("  minute %2d  %6d creates  p99 %7.1f ms  %s\n", m.minute, m.n, ms(m.p99), verdict)
	}

	fmt.Printf("\nsoak: growth (first third's max → last third's max, outside the faults' windows; grows when over the limit and the last half's fitted line still rises past a tenth of the first max + slack/2):\n")
	for i, ser := range series {
		if !ser.judged {
			continue
		}
		v := s.growth(ser, samples, i, cfg.duration)
		if !v.judged {
			fmt.Printf("  %-9s not judged: %s\n", ser.column, v.why)
			continue
		}
		verdict := "ok"
		if v.grows {
			verdict = "GROWS"
		}
		fmt.Printf("  %-9s %9.2f → %9.2f (limit %.2f = %.2f× + %.0f), last half's rise %+.2f  %s\n",
			ser.column, v.firstMax, v.lastMax, v.limit, ser.factor, ser.slack, v.rise, verdict)
	}

	var shade [][2]float64
	for _, f := range faults {
		from, to := f.window()
		shade = append(shade, [2]float64{from.Sub(s.start).Minutes(), to.Sub(s.start).Minutes()})
	}
	xs := make([]float64, len(samples))
	panels := make([]plotSeries, serCount)
	for i := range panels {
		panels[i] = plotSeries{title: series[i].title, ys: make([]float64, len(samples))}
	}
	for j, smp := range samples {
		xs[j] = smp.at.Minutes()
		for i := range panels {
			panels[i].ys[j] = smp.v[i]
		}
	}
	title := fmt.Sprintf("payoutd soak: %s at %.0f creates/s, seed %d; x: minutes from the open loop's start; shaded: faults' windows", cfg.duration, s.rate, cfg.seed)
	if err := plotSoak(cfg.plot, title, xs, panels, shade); err != nil {
		s.t.Errorf("the plot: %v", err)
	} else {
		fmt.Printf("\nsoak: plot written to %s\n", cfg.plot)
	}
}

// growth judges series i over the samples.
func (s *soakRun) growth(ser soakSeries, samples []soakSample, i int, duration time.Duration) growthVerdict {
	ats := make([]time.Duration, len(samples))
	vs := make([]float64, len(samples))
	for j, smp := range samples {
		ats[j], vs[j] = smp.at, smp.v[i]
	}
	return judgeGrowth(ser, ats, vs, s.inFaultWindow, duration)
}

// verdicts fails the soak on growth, a p99 over twice the first minute's
// or shed creates, and prints the closing line.
func (s *soakRun) verdicts(cfg soakConfig, sum summary, checks string) {
	series := soakSeriesFor(s.rate)
	s.mu.Lock()
	samples := append([]soakSample(nil), s.samples...)
	s.mu.Unlock()
	growth, growthJudged, growthSeries := "ok", 0, 0
	for i, ser := range series {
		if !ser.judged {
			continue
		}
		growthSeries++
		v := s.growth(ser, samples, i, cfg.duration)
		if v.judged {
			growthJudged++
		}
		if v.grows {
			growth = "GROWS"
			s.t.Errorf("%s grows without bound: its last third's max %.2f is over %.2f (%.2f× the first third's %.2f + %.0f) and the last half still rises by %.2f",
				ser.title, v.lastMax, v.limit, ser.factor, v.firstMax, ser.slack, v.rise)
		}
	}
	p99 := "ok"
	baseline, p99Judged, over := judgeP99(s.minutes(cfg.duration))
	if baseline == 0 {
		p99 = "no baseline"
		s.t.Errorf("the first minute had fewer than %d accepted creates: no p99 baseline", soakMinSamples)
	}
	for _, m := range over {
		p99 = "OVER"
		s.t.Errorf("minute %d's p99 %.1f ms is over twice minute 1's %.1f ms", m.minute, ms(m.p99), ms(baseline))
	}
	if n := s.load.shed.Load(); n > 0 {
		s.t.Errorf("%d creates were not sent: a minute's worth of creates was already waiting for answers", n)
	}
	// How many series and minutes were judged: "ok" over none is no pass.
	fmt.Printf("soak seed=%d duration=%s offered_per_s=%.1f sent=%d lost=%d double_paid=%d shed=%d growth=%s (series judged: %d/%d) p99=%s (minutes judged: %d) checks=%s\n",
		cfg.seed, cfg.duration, s.rate, sum.sent, sum.lost, sum.double, s.load.shed.Load(), growth, growthJudged, growthSeries, p99, p99Judged, checks)
}
