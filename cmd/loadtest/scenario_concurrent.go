package main

// Scenario concurrent measures the api and `payoutd worker` running
// together, as in production, after the pgbench ceilings: three
// sub-phases (hot: one wallet; spread: many; wait: many, with the
// service's default submit wait), each following every payout from its
// create to its terminal state, then the ledger's reconcile. Goals
// (goalConc*): hot at least 0.5 of the hot-row ceiling with p99 under
// 100 ms; spread 800 payouts/s end to end, the last terminal within 1.5 ×
// the creates' time; wait p50 under 25 ms and p99 under 100 ms.
// Disbursements and all run it as their last phase. Its report is in
// concurrent_report.go, -evidence in concurrent_evidence.go and
// -concurrent-webhooks in concurrent_webhooks.go.

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
)

// concurrentSuite is the create path's pgbench ceilings, then the
// concurrent phase alone.
func concurrentSuite(o options) suitePlan {
	return suitePlan{ceilings: createShapeRuns(o), concurrent: true}
}

// The concurrent phase: api and worker run together, as in production,
// while the creates come. Its goals are informational (docs/performance.md).
const (
	goalConcHotRatio  = 0.5 // creates on one wallet over the hot-row ceiling
	goalConcP99       = 100 * time.Millisecond
	goalConcEndToEnd  = 800 // payouts/s, create → SUCCESS, many wallets
	goalConcLag       = 1.5 // last terminal within 1.5 × the creates' time
	goalConcWaitP50   = 25 * time.Millisecond
	concurrentPollGap = 250 * time.Millisecond
)

// terminalStatuses end a payout's life: nothing more happens to it.
var terminalStatuses = []models.DisbursementStatus{models.StatusSuccess, models.StatusFailed,
	models.StatusExpired, models.StatusCancelled, models.StatusReturned}

// concurrentResult is the concurrent phase: three sub-phases, then the
// ledger's reconcile.
type concurrentResult struct {
	MaxCreates    int                `json:"max_creates"`
	DrainTimeoutS float64            `json:"drain_timeout_s"`
	Phases        []*concurrentPhase `json:"phases"`
	// Reconcile is ledger.Reconcile after the last sub-phase (what `payoutd
	// admin reconcile` runs); NegativeWallets counts wallets whose balance
	// minus lock went below zero.
	ReconcileOK       bool     `json:"reconcile_ok"`
	ReconcileProblems []string `json:"reconcile_problems,omitempty"`
	NegativeWallets   int      `json:"negative_wallets"`
	EvidenceDir       string   `json:"evidence_dir,omitempty"`
	// SettledBefore is how many payouts of earlier phases (a drain whose
	// window closed first) the worker finished before the first
	// sub-phase; LeftOpen how many were still open at the bound, which
	// then distort the figures.
	SettledBefore int `json:"settled_before"`
	LeftOpen      int `json:"left_open"`
	// PgStatStatements says why pg_stat_statements gave nothing ("" when
	// it did, or without -evidence).
	PgStatStatements string `json:"pg_stat_statements_unavailable,omitempty"`
}

// concurrentPhase is one sub-phase: hot, spread or wait.
type concurrentPhase struct {
	Name string `json:"name"`
	// SubmitWait is the api's DISBURSEMENT_SUBMIT_WAIT ("default": the
	// service's own, 5s).
	SubmitWait string         `json:"submit_wait"`
	Ceiling    string         `json:"ceiling"` // "hot" or "spread"
	Create     *createFigures `json:"create"`
	EndToEnd   *endToEnd      `json:"end_to_end"`
	// EndToEndRatio is EndToEnd.PayoutsPerS over the same ceiling.
	EndToEndRatio *float64 `json:"end_to_end_ratio,omitempty"`
	// Webhooks are the deliveries to the merchants with a webhook URL
	// (-concurrent-webhooks), nil without.
	Webhooks  *webhookFigures `json:"webhooks,omitempty"`
	WorkerCPU *float64        `json:"worker_cpu_cores,omitempty"`
	Evidence  *phaseEvidence  `json:"evidence,omitempty"`
	GoalMet   bool            `json:"goal_met"`
	goal      string
}

// endToEnd follows every payout of a sub-phase from its create (the row's
// created_at) to its terminal state (completed_at, or updated_at for a
// payout that ended without one).
type endToEnd struct {
	Payouts int `json:"payouts"`
	Success int `json:"success"`
	Failed  int `json:"failed"`
	// Open is how many were not terminal when the drain's bound passed;
	// Complete is Open == 0.
	Open     int  `json:"open"`
	Complete bool `json:"complete"`
	// CreatesS runs from the first to the last create; SpanS from the
	// first create to the last terminal; LastTerminalAfterS from the last
	// create to the last terminal (how far the worker fell behind).
	CreatesS           float64 `json:"creates_s"`
	SpanS              float64 `json:"span_s"`
	LastTerminalAfterS float64 `json:"last_terminal_after_s"`
	PayoutsPerS        float64 `json:"payouts_per_s"`
	P50MS              float64 `json:"p50_ms"`
	P99MS              float64 `json:"p99_ms"`
	MaxMS              float64 `json:"max_ms"`
}

// concurrentSub describes a sub-phase before it runs.
type concurrentSub struct {
	name   string
	hot    bool
	waitOn bool // the service's default DISBURSEMENT_SUBMIT_WAIT instead of 0
}

var concurrentSubs = []concurrentSub{{name: "hot", hot: true}, {name: "spread"}, {name: "wait", waitOn: true}}

// selectConcurrentSubs is -concurrent-phases: the named sub-phases, in
// their fixed order.
func selectConcurrentSubs(names string) ([]concurrentSub, error) {
	want := map[string]bool{}
	for _, n := range strings.Split(names, ",") {
		if n = strings.TrimSpace(n); n != "" {
			want[n] = true
		}
	}
	var subs []concurrentSub
	for _, sub := range concurrentSubs {
		if want[sub.name] {
			subs = append(subs, sub)
			delete(want, sub.name)
		}
	}
	if len(want) > 0 || len(subs) == 0 {
		return nil, fmt.Errorf("-concurrent-phases %q: name one or more of hot, spread, wait", names)
	}
	return subs, nil
}

// concurrentRun is what the sub-phases share.
type concurrentRun struct {
	s        *runSetup
	bin      *payoutdBinary
	cfg      serverConfig
	rr       *railRun
	worker   *serverProcess
	spread   *Fixture // the clients' wallets and more, -concurrent-wallets in all
	evidence *evidenceRun
	workerPP string // the worker's pprof address with -evidence
	// workerMetrics is where the worker serves /metrics with -evidence
	// (METRICS_ADDR, operator credentials made up): its group commits.
	workerMetrics *serverProfile
	// sink receives the webhooks of the merchants hooked, the first of
	// spread's clients (-concurrent-webhooks); nil without.
	sink   *webhookSink
	hooked map[uuid.UUID]bool // their wallets
	stderr io.Writer
}

// measureConcurrent starts `payoutd worker` and, for each sub-phase, an
// api; runs the creates with both running; waits until every payout of
// the sub-phase is terminal (at most -concurrent-drain-timeout); and at
// the end runs the ledger's reconcile.
func measureConcurrent(ctx context.Context, s *runSetup, bin *payoutdBinary, cfg serverConfig, rr *railRun, stderr io.Writer) (*concurrentResult, error) {
	o := s.o
	res := &concurrentResult{MaxCreates: o.concurrentMax, DrainTimeoutS: o.concurrentDrainTimeout.Seconds()}
	cr := &concurrentRun{s: s, bin: bin, rr: rr, stderr: stderr}
	var err error
	if cr.spread, err = spreadFixture(ctx, s, o.concurrentWallets); err != nil {
		return nil, err
	}
	if o.concurrentWebhooks > 0 {
		stop, err := cr.addWebhooks(ctx, &cfg)
		if err != nil {
			return nil, err
		}
		defer stop()
	}
	cr.cfg = cfg
	workerCfg := cfg
	if o.evidence {
		if cr.evidence, err = newEvidenceRun(ctx, o.evidenceDir, s.db); err != nil {
			return nil, err
		}
		res.EvidenceDir, res.PgStatStatements = o.evidenceDir, cr.evidence.pgssUnavailable
		if cr.workerPP, err = freeLoopbackAddr(); err != nil {
			return nil, err
		}
		if cr.workerMetrics, err = newServerProfile("", 0); err != nil {
			return nil, err
		}
		metricsAddr, err := freeLoopbackAddr()
		if err != nil {
			return nil, err
		}
		cr.workerMetrics.base = "http://" + metricsAddr
		workerCfg.extraEnv = append(slices.Clone(cfg.extraEnv), "LOADTEST_PPROF_ADDR="+cr.workerPP, "METRICS_ADDR="+metricsAddr)
		workerCfg.extraEnv = append(workerCfg.extraEnv, cr.workerMetrics.env()...)
	}
	progress(stderr, "concurrent: starting `payoutd worker`, which runs through the three sub-phases")
	if cr.worker, err = startWorker(bin, workerCfg, stderr); err != nil {
		return nil, err
	}
	defer stopLogged(cr.worker, stderr)
	if res.SettledBefore, res.LeftOpen, err = cr.settle(ctx); err != nil {
		return nil, err
	}
	subs, err := selectConcurrentSubs(o.concurrentPhases)
	if err != nil {
		return nil, err
	}
	for _, sub := range subs {
		p, err := cr.runSub(ctx, sub)
		if err != nil {
			return nil, err
		}
		res.Phases = append(res.Phases, p)
	}
	stopLogged(cr.worker, stderr)
	return res, res.reconcile(ctx, s)
}

// settle lets the worker finish what earlier phases left open (the
// drain's window may close first), at most -concurrent-drain-timeout, so
// that the sub-phases' worker works only on their own payouts. On a rail
// that calls back, no api receives the callbacks meanwhile: the worker's
// status polls bring the results.
func (cr *concurrentRun) settle(ctx context.Context) (settled, left int, err error) {
	before, err := countDisbursements(ctx, cr.s.db)
	if err != nil || before.open == 0 {
		return 0, 0, err
	}
	progress(cr.stderr, "concurrent: the worker first finishes the %d payouts earlier phases left open (at most %s)", before.open, cr.s.o.concurrentDrainTimeout)
	deadline := time.Now().Add(cr.s.o.concurrentDrainTimeout)
	for {
		c, err := countDisbursements(ctx, cr.s.db)
		if err != nil {
			return 0, 0, err
		}
		if c.open == 0 || time.Now().After(deadline) {
			if c.open > 0 {
				progress(cr.stderr, "warning: %d payouts of earlier phases still open: they distort the concurrent figures", c.open)
			}
			return before.open - c.open, c.open, nil
		}
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-cr.worker.exited:
			return 0, 0, fmt.Errorf("payoutd worker exited before the concurrent phase: %v", cr.worker.err)
		case <-time.After(concurrentPollGap):
		}
	}
}

// spreadFixture is the run's clients and, when fewer than wallets, as
// many more provisioned as make up the difference, each with a wallet.
func spreadFixture(ctx context.Context, s *runSetup, wallets int) (*Fixture, error) {
	f := *s.fixture
	if extra := wallets - len(f.Clients); extra > 0 {
		rail, _ := lookupRail(s.o.rail)
		more, err := provision(ctx, f.Admin, extra, rail.vendor)
		if err != nil {
			return nil, err
		}
		f.Clients = append(slices.Clone(f.Clients), more.Clients...)
	}
	f.Clients = f.Clients[:wallets]
	return &f, nil
}

// runSub runs one sub-phase: an api of its own (its submit wait), the
// closed loop with no warm-up (every payout is followed end to end), then
// the wait for every payout to be terminal.
func (cr *concurrentRun) runSub(ctx context.Context, sub concurrentSub) (*concurrentPhase, error) {
	o := cr.s.o
	p := &concurrentPhase{Name: sub.name, SubmitWait: "0s", Ceiling: "spread"}
	if sub.hot {
		p.Ceiling = "hot"
	}
	sc := newCreateScenario(sub.hot, o.amount)
	if err := sc.Prepare(ctx, cr.spread); err != nil {
		return nil, err
	}
	apiCfg := cr.cfg
	apiCfg.extraEnv = slices.Clone(cr.cfg.extraEnv)
	if sub.waitOn {
		// The tool's own DISBURSEMENT_SUBMIT_WAIT=0s goes; one from
		// -server-env stays.
		if i := slices.Index(apiCfg.extraEnv, "DISBURSEMENT_SUBMIT_WAIT=0s"); i >= 0 {
			apiCfg.extraEnv = slices.Delete(apiCfg.extraEnv, i, i+1)
		}
		p.SubmitWait = "default"
	}
	for _, kv := range apiCfg.extraEnv {
		if v, ok := strings.CutPrefix(kv, "DISBURSEMENT_SUBMIT_WAIT="); ok {
			p.SubmitWait = v
		}
	}
	var hooks []windowHooks
	var ev *phaseEvidence
	if cr.evidence != nil {
		var err error
		if ev, hooks, err = cr.evidenceHooks(sub.name, &apiCfg); err != nil {
			return nil, err
		}
	}
	api, err := startServer(ctx, cr.bin, apiCfg, cr.stderr)
	if err != nil {
		return nil, err
	}
	defer stopLogged(api, cr.stderr)
	for _, h := range hooks {
		if sp, ok := h.(*serverProfile); ok && sp.base == "" {
			sp.base = api.base
		}
	}
	if err := cr.load(ctx, p, sc, api, hooks); err != nil {
		return nil, err
	}
	if p.EndToEnd, err = cr.waitTerminal(ctx, sc.keyBase, api); err != nil {
		return nil, err
	}
	if cr.sink != nil {
		if p.Webhooks, err = cr.waitDeliveries(ctx, sc.keyBase, sub.hot); err != nil {
			return nil, err
		}
	}
	if ev != nil {
		cr.finishEvidence(sub.name, ev, hooks)
		p.Evidence = ev
	}
	progress(cr.stderr, "concurrent %s: %.0f creates/s, p99 %.1f ms; end to end %.0f payouts/s, last terminal %.2fs after the last create, %d open",
		sub.name, p.Create.CreatesPerS, p.Create.P99MS, p.EndToEnd.PayoutsPerS, p.EndToEnd.LastTerminalAfterS, p.EndToEnd.Open)
	return p, nil
}

// load runs the closed loop of a sub-phase against api, the worker
// running: -duration or -concurrent-max creates, whichever comes first.
func (cr *concurrentRun) load(ctx context.Context, p *concurrentPhase, sc *createScenario, api *serverProcess, hooks []windowHooks) error {
	o := cr.s.o
	concurrency := o.concurrencyFor(mustScenario("concurrent"))
	window := &cpuWindow{serverPID: api.pid(), railPIDs: []int{cr.worker.pid()}}
	if pid := cr.rr.simPID(); pid > 0 {
		window.railPIDs = append(window.railPIDs, pid)
	}
	workerWindow := &cpuWindow{serverPID: cr.worker.pid()}
	send, closeIdle := httpSender(concurrency)
	defer closeIdle()
	progress(cr.stderr, "concurrent %s: %d workers on %d wallet(s), api and worker running, up to %s or %d creates",
		p.Name, concurrency, sc.wallets(), o.duration, o.concurrentMax)
	checkpoint(ctx, cr.s.db, cr.stderr)
	stopAnalyze := analyzeOnceFilled(ctx, cr.s.db, cr.stderr)
	defer stopAnalyze()
	m, err := runLoad(ctx, loadPlan{
		scenario: sc, base: api.base, send: send, concurrency: concurrency, duration: o.duration,
		window: append(allHooks(hooks), window, workerWindow), died: api.exited, expectRate: goalConcEndToEnd,
		maxRequests: uint64(o.concurrentMax),
	})
	if err != nil {
		return err
	}
	p.Create = newCreateFigures(m, concurrency, window.usage())
	p.Create.Wallets = sc.wallets()
	if u := workerWindow.usage(); u != nil {
		p.WorkerCPU = u.Server
	}
	return nil
}

// waitTerminal polls until every payout whose Idempotency-Key starts with
// keyBase is terminal, or -concurrent-drain-timeout has passed since the
// creates ended: at that bound the payouts still open are reported (Open,
// Complete false) and the run is not clean.
func (cr *concurrentRun) waitTerminal(ctx context.Context, keyBase string, api *serverProcess) (*endToEnd, error) {
	deadline := time.Now().Add(cr.s.o.concurrentDrainTimeout)
	for {
		var open int64
		if err := cr.s.db.WithContext(ctx).Model(&models.Disbursement{}).
			Where("idempotency_key LIKE ? AND status NOT IN ?", keyBase+"%", terminalStatuses).Count(&open).Error; err != nil {
			return nil, fmt.Errorf("count open payouts: %w", err)
		}
		if open == 0 || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-cr.worker.exited:
			return nil, fmt.Errorf("payoutd worker exited during the concurrent phase: %v", cr.worker.err)
		case <-api.exited:
			return nil, fmt.Errorf("payoutd api exited during the concurrent phase: %v", api.err)
		case <-time.After(concurrentPollGap):
		}
	}
	return readEndToEnd(ctx, cr.s, keyBase)
}

// payoutTimes are what end to end (and the webhook figures) read of each
// payout.
type payoutTimes struct {
	ID          uuid.UUID
	WalletID    uuid.UUID
	Status      models.DisbursementStatus
	CreatedAt   time.Time
	CompletedAt *time.Time
	UpdatedAt   time.Time
}

// payoutTimesColumns are payoutTimes' columns.
var payoutTimesColumns = []string{"id", "wallet_id", "status", "created_at", "completed_at", "updated_at"}

// readPayoutTimes reads every payout whose Idempotency-Key starts with
// keyBase.
func readPayoutTimes(ctx context.Context, db *gorm.DB, keyBase string) ([]payoutTimes, error) {
	var rows []payoutTimes
	if err := db.WithContext(ctx).Model(&models.Disbursement{}).Select(payoutTimesColumns).
		Where("idempotency_key LIKE ?", keyBase+"%").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read the phase's payouts: %w", err)
	}
	return rows, nil
}

// ended is when a terminal payout ended: completed_at, or updated_at for
// one that ended without it.
func (r payoutTimes) ended() time.Time {
	if r.CompletedAt != nil {
		return *r.CompletedAt
	}
	return r.UpdatedAt
}

// readEndToEnd measures every payout of the sub-phase from create to
// terminal.
func readEndToEnd(ctx context.Context, s *runSetup, keyBase string) (*endToEnd, error) {
	rows, err := readPayoutTimes(ctx, s.db, keyBase)
	if err != nil {
		return nil, err
	}
	e := &endToEnd{Payouts: len(rows)}
	var firstCreate, lastCreate, lastDone time.Time
	latencies := make([]time.Duration, 0, len(rows))
	for _, r := range rows {
		if firstCreate.IsZero() || r.CreatedAt.Before(firstCreate) {
			firstCreate = r.CreatedAt
		}
		lastCreate = later(lastCreate, r.CreatedAt)
		switch {
		case !slices.Contains(terminalStatuses, r.Status):
			e.Open++
			continue
		case r.Status == models.StatusSuccess:
			e.Success++
		default:
			e.Failed++
		}
		done := r.ended()
		lastDone = later(lastDone, done)
		latencies = append(latencies, max(0, done.Sub(r.CreatedAt)))
	}
	e.Complete = e.Open == 0
	slices.Sort(latencies)
	if !lastDone.IsZero() {
		e.CreatesS = round(lastCreate.Sub(firstCreate).Seconds(), 3)
		e.SpanS = round(lastDone.Sub(firstCreate).Seconds(), 3)
		e.LastTerminalAfterS = round(lastDone.Sub(lastCreate).Seconds(), 3)
		if e.SpanS > 0 {
			e.PayoutsPerS = round(float64(len(latencies))/e.SpanS, 1)
		}
	}
	e.P50MS, e.P99MS, e.MaxMS = millis(percentile(latencies, 50)), millis(percentile(latencies, 99)), millis(percentile(latencies, 100))
	return e, nil
}

// reconcile runs the ledger's reconcile (what `payoutd admin reconcile`
// runs) and counts wallets overdrawn (balance minus lock below zero).
func (r *concurrentResult) reconcile(ctx context.Context, s *runSetup) error {
	rep, err := ledger.Reconcile(ctx, s.db, time.Now())
	if err != nil {
		return fmt.Errorf("reconcile after the concurrent phase: %w", err)
	}
	r.ReconcileOK, r.ReconcileProblems = rep.OK, rep.Problems
	var n int64
	if err := s.db.WithContext(ctx).Model(&models.Wallet{}).Where("balance - locked < 0").Count(&n).Error; err != nil {
		return fmt.Errorf("count overdrawn wallets: %w", err)
	}
	r.NegativeWallets = int(n)
	return nil
}

// analyzeOnceFilled runs ANALYZE on the tables the payouts fill, one
// second into a sub-phase, as autovacuum does on a running system once 50
// rows changed (within its minute of naptime). A sub-phase of seconds on
// the tool's fresh database would otherwise be planned as on a table
// PostgreSQL believes empty, where every index that starts with client_id
// ties with the Idempotency-Key's unique one for the create's key check,
// and a plan that scans the client's rows stays for the whole run: a cold
// start, not the service's steady state. SQLite is left alone.
func analyzeOnceFilled(ctx context.Context, db *gorm.DB, stderr io.Writer) (stop func()) {
	if database.DialectOfDB(db) != database.Postgres {
		return func() {}
	}
	timer := time.AfterFunc(time.Second, func() {
		if err := db.WithContext(ctx).Exec("ANALYZE disbursements, disbursement_transitions, wallets, ledger_entries, ledger_transactions").Error; err != nil {
			progress(stderr, "warning: ANALYZE one second in: %v", err)
		}
	})
	return func() { timer.Stop() }
}
