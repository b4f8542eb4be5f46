package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/payoutd/payoutd/internal/logging"
)

// scenarios lists every -scenario value: its name, what runs it (a
// closed-loop Scenario, a suite's plan of phases, or a run of its own)
// and what it measures. Each has a file named after it, scenario_<name>.go,
// that says what it measures and which goal it reads.
var scenarios = []scenarioInfo{
	{
		name: "balance", new: newBalanceScenario,
		summary:     "signed GET /api/v3/wallets/{wallet_id}/balance, round-robin over the clients' wallets, as a ratio of a pgbench select-only ceiling",
		concurrency: 32, unit: "req/s", goalRate: goalRPS, goalP99: goalP99, selectOnly: true,
	},
	{
		name: "create-many", new: newCreateManyScenario,
		summary:     "signed POST /api/v3/disbursements, a fresh Idempotency-Key each, round-robin over the clients' wallets",
		concurrency: 16, unit: "creates/s", goalRate: goalCreatesMany, goalP99: goalCreateP99, creates: true,
	},
	{
		name: "create-hot", new: newCreateHotScenario,
		summary:     "signed POST /api/v3/disbursements, a fresh Idempotency-Key each, all on one wallet of one client",
		concurrency: 8, unit: "creates/s", goalRate: goalCreatesHot, goalP99: goalCreateP99, creates: true,
	},
	{
		name: "payments", new: newPaymentsScenario,
		summary:     "POST /api/v1/payments (x-signature, or x-timestamp with -payment-auth timestamp), round-robin over the clients, into each one's default wallet",
		concurrency: 16, unit: "creates/s", goalRate: goalPayments, goalP99: goalCreateP99, enqueues: true,
	},
	{
		name: "drain", suite: drainSuite,
		summary: "create-many, then `payoutd worker` drains the queued payouts through the -rail vendor (payouts/s)",
		unit:    "payouts/s", goalRate: goalPayouts, creates: true,
	},
	{
		name: "concurrent", suite: concurrentSuite,
		summary:     "pgbench ceilings, then api and worker together: creates on one wallet, over many, and with the default wait, each payout followed to its end",
		concurrency: 32, unit: "creates/s", creates: true,
	},
	{
		name: "overload", run: executeOverload,
		summary: "the capacity of create-many, then an open-loop load at -overload-factor times it against an api with MAX_IN_FLIGHT=-overload-in-flight: no 500, accepted p99 < 100 ms",
		unit:    "creates/s", creates: true,
	},
	{
		name: "disbursements", suite: disbursementsSuite,
		summary: "pgbench ceilings (spread, hot row), create-many, create-hot, drain and concurrent, with each figure as a ratio of its ceiling",
		unit:    "creates/s", creates: true,
	},
	{
		name: "all", suite: allSuite,
		summary: "disbursements with balance reads and payments added: pgbench ceilings (select-only too), balance, create-many, create-hot, payments, drain and concurrent, in one table",
		unit:    "creates/s", creates: true,
	},
}

// The goals the figures are compared with; informational only.
const (
	goalRPS = 5000 // balance
	goalP99 = 20 * time.Millisecond

	goalCreatesMany = 1000 // creates/s across many wallets
	goalCreatesHot  = 300  // creates/s on one wallet
	goalCreateP99   = 50 * time.Millisecond
	goalPayouts     = 500  // payouts/s drained by the worker
	goalPayments    = 1500 // payment creates/s across many clients
	// goalCeilingRatio is the aim for each figure as a share of its
	// pgbench ceiling, the same on any machine.
	goalCeilingRatio = 0.3
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// run is main without the process.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	o, err := parseFlags(args, stderr, getenv)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "loadtest: %v\n", err)
		return 2
	}
	// Warnings only: the tool's own database handle and any in-process
	// server log through slog, and access logs at info would swamp both.
	slog.SetDefault(logging.New(stderr, slog.LevelWarn))

	clean, err := execute(ctx, o, stdout, stderr)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "loadtest: interrupted")
		} else {
			fmt.Fprintf(stderr, "loadtest: %v\n", err)
		}
		return 1
	}
	if !clean {
		return 1
	}
	return 0
}

// execute runs the scenario o names and prints its report. Progress goes
// to stderr, the report to stdout. clean is false when a request failed.
func execute(ctx context.Context, o options, stdout, stderr io.Writer) (clean bool, err error) {
	info, _ := lookupScenario(o.scenario)
	s, err := setUp(ctx, o, info, stderr)
	if err != nil {
		return false, err
	}
	defer s.close()
	switch {
	case info.run != nil:
		return info.run(ctx, s, info, stdout, stderr)
	case info.suite != nil:
		return executeSuite(ctx, s, info, stdout, stderr)
	}
	res, err := executeSingle(ctx, s, info, stdout, stderr)
	if err != nil {
		return false, err
	}
	return res.Errors == 0 && res.WarmupErrors == 0, nil
}

// scenarioInfo is an entry of the -scenario list.
type scenarioInfo struct {
	name    string
	summary string
	// Exactly one of new, suite and run says how the scenario runs. new
	// makes the Scenario of a single closed-loop run (executeSingle), which
	// a suite can run as one of its phases too; suite is the plan of a
	// suite of phases (executeSuite); run runs a scenario of its own shape.
	new   func(options) Scenario
	suite func(options) suitePlan
	run   func(ctx context.Context, s *runSetup, info scenarioInfo, stdout, stderr io.Writer) (clean bool, err error)
	// concurrency is the default number of workers (-concurrency 0).
	concurrency int
	// unit names the rate: "req/s" or "creates/s".
	unit string
	// goalRate and goalP99 are the informational goal.
	goalRate float64
	goalP99  time.Duration
	// creates: the server is started with DISBURSEMENT_SUBMIT_WAIT=0 and
	// the tool flushes the Redis database the API enqueues into.
	creates bool
	// enqueues: the API enqueues into Redis (payment:expire), so the tool
	// flushes its Redis database first; implied by creates.
	enqueues bool
	// selectOnly: the pgbench select-only ceiling is measured before the
	// load and the rate reported as a ratio of it (balance).
	selectOnly bool
}

// flushesRedis: the tool empties its Redis database before the run.
func (s scenarioInfo) flushesRedis() bool { return s.creates || s.enqueues }

func lookupScenario(name string) (scenarioInfo, bool) {
	for _, s := range scenarios {
		if s.name == name {
			return s, true
		}
	}
	return scenarioInfo{}, false
}

func mustScenario(name string) scenarioInfo {
	info, ok := lookupScenario(name)
	if !ok {
		panic("no scenario " + name)
	}
	return info
}

func scenarioNames() []string {
	names := make([]string, len(scenarios))
	for i, s := range scenarios {
		names[i] = s.name
	}
	return names
}

func scenarioHelp() string {
	var b strings.Builder
	for _, s := range scenarios {
		fmt.Fprintf(&b, "  %-14s %s\n", s.name, s.summary)
	}
	return b.String()
}

func progress(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "loadtest: "+format+"\n", args...)
}
