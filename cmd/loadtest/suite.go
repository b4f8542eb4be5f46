package main

import (
	"context"
	"io"
	"runtime"
	"strings"
)

// executeSuite runs the phases of drain (create-many, then the worker),
// disbursements (pgbench ceilings, create-many, create-hot, then the
// worker) or all (disbursements with a balance phase before the creates
// and payments after create-hot) and prints one summary.
func executeSuite(ctx context.Context, s *runSetup, info scenarioInfo, stdout, stderr io.Writer) (bool, error) {
	o := s.o
	full := info.name != "drain" && info.name != "concurrent" // with create-hot
	ceil := info.name != "drain"                              // with the pgbench ceilings
	conc := info.name != "drain"                              // with the concurrent phase
	cfg := s.serverConfig(info)
	rail, _ := lookupRail(o.rail)
	sum := &suiteResult{Scenario: info.name, Rail: rail.name, RailVendor: rail.vendor, CPUs: runtime.NumCPU(),
		ServerEnv: cfg.extraEnv, Clients: o.clients, Amount: o.amount}
	if o.railAnswerDelay > 0 {
		sum.RailAnswerDelay = o.railAnswerDelay.String()
	}
	progress(stderr, "building cmd/payoutd")
	bin, err := buildPayoutdWith(ctx, conc && o.evidence)
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
	if ceil {
		if sum.Ceilings, err = measureCeilings(ctx, o, s.db, stderr, suiteCeilingRuns(o, info)...); err != nil {
			return false, err
		}
	}
	if info.name != "concurrent" {
		if err := runIsolatedPhases(ctx, s, bin, cfg, rr, info, full, sum, stderr); err != nil {
			return false, err
		}
	}
	if conc {
		if sum.Concurrent, err = measureConcurrent(ctx, s, bin, cfg, rr, stderr); err != nil {
			return false, err
		}
	}
	sum.judge()
	printSuite(stdout, o, sum, rr)
	return sum.clean(), nil
}

// suiteCeilingRuns are the pgbench ceilings of a suite: select-only when
// it reads balances (all), first, on the freshly made table as -scenario
// balance reads it; then spread and hot row for the creates.
func suiteCeilingRuns(o options, info scenarioInfo) []ceilingRun {
	var runs []ceilingRun
	if info.name == "all" {
		runs = append(runs, selectOnlyRun(o))
	}
	return append(runs, createShapeRuns(o)...)
}

// runIsolatedPhases are the phases that run the api and the worker
// apart: the reads and creates with no worker, then the drain with no
// creates.
func runIsolatedPhases(ctx context.Context, s *runSetup, bin *payoutdBinary, cfg serverConfig, rr *railRun, info scenarioInfo, full bool, sum *suiteResult, stderr io.Writer) error {
	var phases []apiPhase
	if info.name == "all" {
		// The reads first, on tables no create has written to yet, as
		// -scenario balance reads them.
		phases = append(phases, apiPhase{info: mustScenario("balance"), read: &sum.Balance})
	}
	phases = append(phases, apiPhase{info: mustScenario("create-many"), dst: &sum.CreateMany})
	if full {
		phases = append(phases, apiPhase{info: mustScenario("create-hot"), dst: &sum.CreateHot})
	}
	if info.name == "all" {
		phases = append(phases, apiPhase{info: mustScenario("payments"), dst: &sum.Payments})
		sum.PaymentAuth = s.o.paymentAuth
	}
	if err := runAPIPhases(ctx, s, bin, cfg, rr, phases, stderr); err != nil {
		return err
	}
	var err error
	// The concurrent phase after the drain still needs the rail.
	sum.Drain, err = measureDrain(ctx, s, bin, cfg, rr, info.name == "drain", stderr)
	return err
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
	if err := srv.stop(); err != nil {
		progress(stderr, "warning: %v", err)
	}
	return nil
}

func newCreateFigures(m *measurement, concurrency int, cpu *cpuUsage) *createFigures {
	ok := len(m.latencies)
	return &createFigures{
		Concurrency: concurrency, DurationS: round(m.elapsed.Seconds(), 3),
		Creates: ok + m.errors, Errors: m.errors, WarmupErrors: m.warmupErrors,
		CreatesPerS: round(float64(ok)/m.elapsed.Seconds(), 1),
		P50MS:       millis(percentile(m.latencies, 50)), P90MS: millis(percentile(m.latencies, 90)),
		P99MS: millis(percentile(m.latencies, 99)), MaxMS: millis(percentile(m.latencies, 100)),
		CPU: cpu, failures: m.firstFailures,
	}
}
