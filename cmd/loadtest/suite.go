package main

import (
	"context"
	"io"
	"runtime"
	"strings"
)

// suitePlan is what a suite runs, in this order: the pgbench ceilings,
// closed-loop phases against one `payoutd api` with no worker, the
// worker's drain of what they queued with no creates, and the concurrent
// phase with api and worker together. Each suite's file
// (scenario_<name>.go) says which.
type suitePlan struct {
	ceilings []ceilingRun
	// apiPhases name the closed-loop scenarios run against the api, in
	// order: balance, create-many, create-hot or payments.
	apiPhases  []string
	drain      bool
	concurrent bool
}

// executeSuite runs the phases of a suite's plan and prints one summary.
func executeSuite(ctx context.Context, s *runSetup, info scenarioInfo, stdout, stderr io.Writer) (bool, error) {
	o := s.o
	plan := info.suite(o)
	cfg := s.serverConfig(info)
	rail, _ := lookupRail(o.rail)
	sum := &suiteResult{Scenario: info.name, Rail: rail.name, RailVendor: rail.vendor, CPUs: runtime.NumCPU(),
		ServerEnv: cfg.extraEnv, Clients: o.clients, Amount: o.amount}
	if o.railAnswerDelay > 0 {
		sum.RailAnswerDelay = o.railAnswerDelay.String()
	}
	progress(stderr, "building cmd/payoutd")
	bin, err := buildPayoutdWith(ctx, plan.concurrent && o.evidence)
	if err != nil {
		return false, err
	}
	defer bin.remove()
	sum.Revision = bin.revision
	rr, err := startSuiteRail(ctx, rail, o, bin, &cfg, stderr)
	if err != nil {
		return false, err
	}
	defer rr.close(stderr)
	if len(plan.ceilings) > 0 {
		if sum.Ceilings, err = measureCeilings(ctx, o, s.db, stderr, plan.ceilings...); err != nil {
			return false, err
		}
	}
	if err := runIsolatedPhases(ctx, s, bin, cfg, rr, plan, sum, stderr); err != nil {
		return false, err
	}
	if plan.concurrent {
		if sum.Concurrent, err = measureConcurrent(ctx, s, bin, cfg, rr, stderr); err != nil {
			return false, err
		}
	}
	sum.judge()
	printSuite(stdout, o, sum, rr)
	return sum.clean(), nil
}

// runIsolatedPhases are the phases that run the api and the worker
// apart: the reads and creates with no worker, then the drain with no
// creates.
func runIsolatedPhases(ctx context.Context, s *runSetup, bin *payoutdBinary, cfg serverConfig, rr *railRun, plan suitePlan, sum *suiteResult, stderr io.Writer) error {
	if len(plan.apiPhases) > 0 {
		phases := make([]apiPhase, len(plan.apiPhases))
		for i, name := range plan.apiPhases {
			phases[i] = sum.apiPhase(name, s.o)
		}
		if err := runAPIPhases(ctx, s, bin, cfg, rr, phases, stderr); err != nil {
			return err
		}
	}
	if !plan.drain {
		return nil
	}
	var err error
	// The concurrent phase after the drain still needs the rail.
	sum.Drain, err = measureDrain(ctx, s, bin, cfg, rr, !plan.concurrent, stderr)
	return err
}

// apiPhase is the closed-loop scenario name as a phase of the suite whose
// figures go into r.
func (r *suiteResult) apiPhase(name string, o options) apiPhase {
	p := apiPhase{info: mustScenario(name)}
	switch name {
	case "balance":
		p.read = &r.Balance
	case "create-many":
		p.dst = &r.CreateMany
	case "create-hot":
		p.dst = &r.CreateHot
	case "payments":
		p.dst = &r.Payments
		r.PaymentAuth = o.paymentAuth
	default:
		panic("no suite phase " + name)
	}
	return p
}

// startSuiteRail starts the rail's simulator, if it has one, and points
// cfg at it: the api gets its address now, since the simulator calls
// back to it.
func startSuiteRail(ctx context.Context, rail railInfo, o options, bin *payoutdBinary, cfg *serverConfig, stderr io.Writer) (*railRun, error) {
	if rail.simulated() {
		addr, err := freeLoopbackAddr()
		if err != nil {
			return nil, err
		}
		cfg.apiAddr = addr
		progress(stderr, "starting `%s` for -rail %s", rail.simCommand, rail.name)
	}
	rr, err := startRail(ctx, rail, o, bin, "http://"+cfg.apiAddr, stderr)
	if err != nil {
		return nil, err
	}
	cfg.railEnv = rr.serviceEnv
	return rr, nil
}

// apiPhase is one closed-loop scenario of a suite against the api: balance
// reads (into read) or creates of disbursements or payments (into dst).
type apiPhase struct {
	info scenarioInfo
	dst  **createFigures
	read **readFigures
}

// runAPIPhases starts `payoutd api`, runs each phase against it and stops
// it, so that the worker later drains on its own.
func runAPIPhases(ctx context.Context, s *runSetup, bin *payoutdBinary, cfg serverConfig, rr *railRun, phases []apiPhase, stderr io.Writer) error {
	progress(stderr, "starting `payoutd api` (%s)", strings.Join(cfg.extraEnv, " "))
	srv, err := startServer(ctx, bin, cfg, stderr)
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			srv.stop()
		}
	}()
	most := 0
	for _, p := range phases {
		most = max(most, s.o.concurrencyFor(p.info))
	}
	send, closeIdle := httpSender(most)
	defer closeIdle()
	for _, p := range phases {
		sc := p.info.new(s.o)
		if err := sc.Prepare(ctx, s.fixture); err != nil {
			return err
		}
		concurrency := s.o.concurrencyFor(p.info)
		window := &cpuWindow{serverPID: srv.pid()}
		if pid := rr.simPID(); pid > 0 {
			window.railPIDs = []int{pid}
		}
		progress(stderr, "running %s: %d workers, warm-up %s, then measuring %s", p.info.name, concurrency, s.o.warmup, s.o.duration)
		checkpoint(ctx, s.db, stderr)
		m, err := runLoad(ctx, loadPlan{
			scenario: sc, base: srv.base, send: send, concurrency: concurrency,
			warmup: s.o.warmup, duration: s.o.duration, window: window, died: srv.exited, expectRate: p.info.goalRate,
		})
		if err != nil {
			return err
		}
		f := newCreateFigures(m, concurrency, window.usage())
		if w, ok := sc.(interface{ wallets() int }); ok {
			f.Wallets = w.wallets()
		}
		if p.read != nil {
			*p.read = readFiguresOf(f)
		} else {
			*p.dst = f
		}
		progress(stderr, "%s: %.0f %s, p50 %.2f ms, p99 %.2f ms, %d errors", p.info.name, f.CreatesPerS, p.info.unit, f.P50MS, f.P99MS, f.Errors)
	}
	stopped = true
	stopLogged(srv, stderr)
	return nil
}

func newCreateFigures(m *measurement, concurrency int, cpu *cpuUsage) *createFigures {
	return &createFigures{
		Concurrency: concurrency, DurationS: round(m.elapsed.Seconds(), 3),
		Creates: len(m.latencies) + m.errors, Errors: m.errors, WarmupErrors: m.warmupErrors,
		CreatesPerS: m.perSecond(), P50MS: m.ms(50), P90MS: m.ms(90), P99MS: m.ms(99), MaxMS: m.ms(100),
		CPU: cpu, failures: m.firstFailures,
	}
}
