// Command loadtest measures the payout API under load and prints
// requests/s, p50, p90, p99 and max latency and the error count, then the
// same figures as one line of JSON to paste into notes.
//
// Usage:
//
//	go run ./cmd/loadtest                        # balance, 32 workers, 2 s warm-up + 10 s, over a pgbench select-only ceiling
//	go run ./cmd/loadtest -scenario disbursements  # pgbench ceilings, creates, drain: one table
//	go run ./cmd/loadtest -scenario disbursements -rail xendit  # the same on the Xendit simulator
//	go run ./cmd/loadtest -scenario drain -rail snap  # creates and drain on a SNAP BI bank's simulator
//	go run ./cmd/loadtest -scenario create-hot -concurrency 16
//	go run ./cmd/loadtest -scenario payments     # POST /api/v1/payments, 16 workers
//	go run ./cmd/loadtest -scenario all          # disbursements plus balance and payments: one table
//	go run ./cmd/loadtest -scenario concurrent -evidence  # api and worker together, with PostgreSQL's evidence
//	go run ./cmd/loadtest -concurrency 32 -duration 30s
//	go run ./cmd/loadtest -server-env LOG_LEVEL=info   # with access logs
//	go run ./cmd/loadtest -inprocess-profile cpu.pprof && go tool pprof -top cpu.pprof
//	go run ./cmd/loadtest -scenario create-many -server-profile api.pprof
//	go run ./cmd/loadtest -h                     # every flag and scenario
//
// The load is a closed loop: -concurrency workers each send requests back
// to back over keep-alive connections for -warmup (not measured) and then
// -duration (measured). Latency is the time from sending a request to
// having read its whole response; every successful request of the
// measured window is one sample and the percentiles are exact (all samples
// sorted). requests/s counts successful requests only. Each request is
// signed afresh (x-signature at time.Now()) with the x-api-key of one of
// -clients merchant clients, taken round-robin.
//
// Scenarios balance, create-many and create-hot are one closed loop each.
// The create scenarios send signed POST /api/v3/disbursements with a fresh
// Idempotency-Key per request; each wallet's body is serialised once and
// every request signs those exact bytes. create-many goes round-robin over
// every client's wallet, create-hot sends everything to one wallet of one
// client; the wallets are funded generously first. The server runs with
// DISBURSEMENT_SUBMIT_WAIT=0, so a create is answered once stored, locked
// and enqueued, without waiting for the worker, and the tool flushes the
// Redis database of -redis-url (its own, database 9 by default; never
// database 0) so that no queue of an earlier run remains.
//
// Scenario balance first measures the machine's own ceiling for a read
// with pgbench (select-only: the shape of pgbench -S, one primary-key
// SELECT of a wallet-like row without BEGIN and END, over -pgbench-rows
// rows of lt_wallets in the load database) before the server starts, and
// reports the balance reads' rate as a ratio of it, with the goal of at
// least 0.3. Without pgbench it says the ceiling is
// unavailable and goes on without the ratio; with -target it measures
// none (it makes no tables of its own in the server's database).
//
// Scenario payments sends POST /api/v1/payments with {"price": 150000,
// "playerId": ...}, round-robin over the clients, each body serialised
// once; each client's one provisioned wallet is its default (checked
// before the run), which the payments are credited to. Requests carry
// x-signature over the body, or only x-timestamp with -payment-auth
// timestamp. A create is answered once the row is stored and
// payment:expire enqueued; the tool flushes its Redis database first.
// Scenario all is disbursements with a balance phase before create-many
// (the reads of scenario balance, its rate a ratio of the select-only
// ceiling, measured first among the ceilings) and a payments phase after
// create-hot, its rate a ratio of the spread ceiling. Scenario
// disbursements has no balance phase and measures no select-only ceiling.
//
// Scenario drain runs create-many, stops the api and starts `payoutd
// worker` as a separate process on the queued payouts, with the sandbox
// vendor paying at once (SANDBOX_COMPLETE_AFTER=-sandbox-complete-after);
// it polls the database until every payout is final or -drain-duration
// has passed since the first SUCCESS, and reports payouts/s from the first
// to the last SUCCESS (their completed_at). Scenario disbursements first
// measures the machine's own ceiling with pgbench (a script of BEGIN, one
// conditional UPDATE of a wallet-like row and one INSERT, END, in tables
// lt_wallets and lt_ledger of the load database; once spread over
// -pgbench-rows rows, once on one hot row), then runs create-many,
// create-hot and the drain, and prints one table with each figure as a
// ratio of its ceiling (spread for create-many, hot row for create-hot and
// the drain), so that the figures mean the same on any machine. Without
// pgbench it says how to install it and goes on without ratios. Every
// measured phase, pgbench's included, starts right after a CHECKPOINT, so
// that none pays for the dirty pages or the checkpoint of the one before.
//
// -rail decides the vendor the wallets of drain, disbursements and all are
// on (rail.go): sandbox (the default) is simbank inside the api and worker;
// vendorsim is simbank served over HTTP by `payoutd vendorsim`; xendit is
// vendor xendit served by `payoutd vendorsim --provider xendit`; snap is
// vendor snap:bca, a SNAP BI bank served by `payoutd vendorsim --provider
// snap --bank bca`. A simulated rail runs as a process of its own on a
// free loopback port, with SANDBOX_COMPLETE_AFTER=-sandbox-complete-after
// (so it pays at once and the drain measures the service, not a simulated
// bank's delay) and secrets made up for the run, which the api and worker
// get through their environment (XENDIT_SECRET_KEY, XENDIT_CALLBACK_TOKEN,
// XENDIT_BASE_URL; or VENDORSIM_URL, VENDORSIM_TOKEN,
// VENDORSIM_CALLBACK_SECRET; or SNAP_BANKS and the SNAP_BCA_* variables)
// and the summary never prints. The snap rail also makes the platform's
// and the bank's 2048-bit RSA key pairs, in a private temporary directory
// removed at the end of the run: the service signs with the platform's
// and verifies notifications with the bank's public key, the simulator
// the other way round. Such a rail
// reports payouts to the api, so an api runs through the drain beside the
// worker to receive its callbacks; the CPU of the simulator and of that
// api is reported as "rail". The drain counts a payout once it is final
// (SUCCESS, or failed), whether a callback or the worker's status poll
// brought the result, and reports the p50/p90/p99/max of a paid payout's
// latency from the worker's first call to the vendor (submit_attempted_at)
// to SUCCESS (completed_at).
//
// Scenario concurrent (also the last phase of disbursements and all) runs
// the api and `payoutd worker` together, as in production, with
// -concurrency clients (32 by default) and no warm-up, in three
// sub-phases of -duration or -concurrent-max creates each: hot (one
// wallet, DISBURSEMENT_SUBMIT_WAIT=0), spread (-concurrent-wallets
// wallets, wait 0) and wait (those wallets, the service's default wait).
// After the creates it waits, at most -concurrent-drain-timeout, until
// every payout of the sub-phase is terminal, and reports creates/s with
// p50/p99/max, end to end (payouts over the time from the first create to
// the last terminal; create → terminal p50/p99/max; how long after the
// last create the last payout became terminal), each rate over the same
// run's ceiling (hot row for hot, spread for the others). Then it runs the
// ledger's reconcile (as `payoutd admin reconcile`) and counts overdrawn
// wallets; payouts left open, a failed one, an overdrawn wallet or a
// reconcile problem make the run unclean (exit 1). With -evidence it
// samples pg_stat_activity (wait events) and pg_locks (blocked requests,
// and which statement waits for which) every 100 ms, reads
// pg_stat_statements when the server preloads it, times a Redis PING every
// 100 ms, and takes CPU profiles of the api (its /debug/pprof) and of the
// worker (net/http/pprof added to the tool's build only, by go build
// -overlay, listening on a loopback port given in LOADTEST_PPROF_ADDR); a
// breakdown goes into the summary, the raw files into -evidence-dir.
//
// Self-contained mode (the default) needs PostgreSQL and Redis on this
// machine. The tool drops and recreates the database named in
// -database-url (DROP DATABASE ... WITH (FORCE), through the "postgres"
// maintenance database of the same server; only a server on the loopback
// interface), migrates it, provisions the clients, each with one funded
// wallet, builds ./cmd/payoutd and runs `payoutd api` (and for the drain
// `payoutd worker`) as a separate process, the api on a free port of
// 127.0.0.1, with APP_ENV=production, LOG_LEVEL=warn (no per-request
// access logs) and the SECRETS_KEY the tool sealed the clients' secrets
// with. It waits for /readyz, runs the load, then stops each process with
// SIGTERM and waits for it; they are also stopped on Ctrl-C or any error.
//
// With -target URL the tool starts no server and recreates nothing: it
// provisions the clients into -database-url, which must be that server's
// database (migrated), sealing their secrets with -secrets-key, which must
// be that server's SECRETS_KEY, for the environment given by -env.
//
// With -inprocess-profile FILE the tool serves the requests with the API
// handler inside its own process, called directly without HTTP or TCP,
// and writes a CPU profile of the measured window to FILE: what the server
// spends per request, database client included, without the HTTP server
// and TCP. Building the requests (main.* frames) is in it too, a few per
// cent. The summary adds the heap allocations per request.
//
// With -server-profile FILE the tool starts `payoutd api` with operator
// credentials it makes up for the run (ADMIN_USER, ADMIN_PASSWORD) and
// writes the CPU profile of that process over the measured window, from
// its /debug/pprof/profile, to FILE: HTTP and TCP included.
//
// The load generator shares the machine with the server, PostgreSQL and
// Redis; the summary shows how the CPU was split between them (for the
// disbursements table also the CPU time per operation of each), and warns
// when other processes or the hypervisor (steal) took enough of it to
// distort the figures (Linux).
//
// Exit status: 0 when every request succeeded and no payout failed,
// whether or not the goals were met (they are informational); 1 when a
// request or payout failed or the run could not be made; 2 for bad flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/payoutd/payoutd/internal/logging"
	"github.com/payoutd/payoutd/models"
)

const (
	defaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/payoutd_load?sslmode=disable"
	// defaultRedisURL is a Redis database of the tool's own: create
	// scenarios flush it at the start.
	defaultRedisURL = "redis://127.0.0.1:6379/9"
)

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

// options are the parsed flags.
type options struct {
	scenario         string
	databaseURL      string
	redisURL         string
	duration         time.Duration
	warmup           time.Duration
	concurrency      int
	clients          int
	target           string
	env              string
	secretsKey       string
	serverEnv        []string
	inprocessProfile string
	serverProfile    string

	// Payments.
	paymentAuth string

	// Disbursement scenarios.
	rail                 string
	amount               string
	sandboxCompleteAfter time.Duration
	railAnswerDelay      time.Duration
	drainDuration        time.Duration
	pgbench              string
	pgbenchDuration      time.Duration
	pgbenchClients       int
	pgbenchRows          int

	// The concurrent phase (concurrent.go) and its evidence.
	concurrentMax          int
	concurrentWallets      int
	concurrentWebhooks     float64
	concurrentDrainTimeout time.Duration
	concurrentPhases       string // comma-separated sub-phase names
	overloadFactor         float64
	overloadInFlight       int
	evidence               bool
	evidenceDir            string
}

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

func parseFlags(args []string, stderr io.Writer, getenv func(string) string) (options, error) {
	var o options
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.defineRunFlags(fs, getenv)
	o.defineProfileFlags(fs)
	o.defineScenarioFlags(fs)
	fs.Usage = func() { printUsage(fs) }
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.secretsKey == "" { // read here, so that -h never prints it
		o.secretsKey = strings.TrimSpace(getenv("LOAD_SECRETS_KEY"))
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q; see -h", fs.Args())
	}
	return o, o.check()
}

// defineRunFlags defines what every run takes: the scenario, the
// backends, the load's shape and the server it runs against.
func (o *options) defineRunFlags(fs *flag.FlagSet, getenv func(string) string) {
	fs.StringVar(&o.scenario, "scenario", "balance", "what to measure: "+strings.Join(scenarioNames(), ", "))
	fs.StringVar(&o.databaseURL, "database-url", envOr(getenv, "LOAD_DATABASE_URL", defaultDatabaseURL),
		"PostgreSQL database to (re)create and provision (env LOAD_DATABASE_URL);\nwith -target, the running server's database, provisioned but not recreated")
	fs.StringVar(&o.redisURL, "redis-url", envOr(getenv, "LOAD_REDIS_URL", defaultRedisURL), "Redis for the server (env LOAD_REDIS_URL)")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "measured time")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "load before measuring, not counted")
	fs.IntVar(&o.concurrency, "concurrency", 0, "workers, each sending requests back to back (closed loop);\n0: the scenario's own (balance 32, create-many 16, create-hot 8, payments 16)")
	fs.IntVar(&o.clients, "clients", 50, "merchant clients to provision, each with one funded wallet; requests go round-robin across them")
	fs.StringVar(&o.target, "target", "", "base URL of an already running server (e.g. http://127.0.0.1:8080);\nempty: build and start one as a separate process")
	fs.StringVar(&o.env, "env", string(models.Production), "APP_ENV of the server: production or staging (decides the API key prefix)")
	fs.StringVar(&o.secretsKey, "secrets-key", "",
		"SECRETS_KEY to seal the clients' secrets with (env LOAD_SECRETS_KEY); required with -target,\nrandom otherwise")
	fs.Func("server-env", "`KEY=VALUE` added to the started server's environment, after the tool's own\n(repeatable; e.g. LOG_LEVEL=info, GOGC=200, GOMAXPROCS=1)", func(v string) error {
		if k, _, ok := strings.Cut(v, "="); !ok || k == "" {
			return errors.New("want KEY=VALUE")
		}
		o.serverEnv = append(o.serverEnv, v)
		return nil
	})
}

// defineProfileFlags defines the two ways of profiling the server.
func (o *options) defineProfileFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.inprocessProfile, "inprocess-profile", "",
		"serve the requests with the API handler in this process (no HTTP, no TCP)\nand write a CPU profile of the measured window to `FILE` (balance, create-many, create-hot, payments)")
	fs.StringVar(&o.serverProfile, "server-profile", "",
		"write a CPU profile of the started payoutd api over the measured window to `FILE`\n(from its /debug/pprof, with operator credentials made up for the run; balance, create-many, create-hot, payments)")
}

// defineScenarioFlags defines the settings of particular scenarios: the
// payments' authentication, the disbursements' amount and sandbox vendor,
// the drain and the pgbench ceilings.
func (o *options) defineScenarioFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.paymentAuth, "payment-auth", paymentAuthSignature,
		"how payments authenticate: signature (x-signature over the body) or timestamp (x-timestamp only)")
	fs.StringVar(&o.rail, "rail", defaultRail, "vendor the wallets are on and how it is served (drain, disbursements, all): "+strings.Join(railNames(), ", "))
	fs.StringVar(&o.amount, "amount", "20000", "gross amount of each disbursement (IDR)")
	fs.DurationVar(&o.sandboxCompleteAfter, "sandbox-complete-after", time.Microsecond,
		"SANDBOX_COMPLETE_AFTER of the api and worker, and of a -rail simulator: how long a\npayout stays pending (0 would mean the service's default of 2s)")
	fs.DurationVar(&o.railAnswerDelay, "rail-answer-delay", 0,
		"-rail vendorsim: how long after recording it the simulator answers each payout submit\n(VENDORSIM_ANSWER_DELAY): the latency of a real vendor's API, such as 100ms")
	fs.DurationVar(&o.drainDuration, "drain-duration", 10*time.Second, "drain: longest measured time, from the first SUCCESS")
	fs.StringVar(&o.pgbench, "pgbench", "pgbench", "pgbench `program` for the ceilings of -scenario balance, concurrent, disbursements and all")
	fs.DurationVar(&o.pgbenchDuration, "pgbench-duration", 10*time.Second, "pgbench time of each ceiling (select-only, spread, hot row)")
	fs.IntVar(&o.pgbenchClients, "pgbench-clients", 16, "pgbench clients (-c)")
	fs.IntVar(&o.pgbenchRows, "pgbench-rows", 10000, "rows the spread ceiling's updates and the select-only ceiling's reads are spread over")
	fs.IntVar(&o.concurrentMax, "concurrent-max", 20000, "concurrent: most creates of each sub-phase (it also ends after -duration)")
	fs.IntVar(&o.concurrentWallets, "concurrent-wallets", 100, "concurrent: wallets the spread and wait sub-phases go over (clients added beyond -clients)")
	fs.Float64Var(&o.concurrentWebhooks, "concurrent-webhooks", 0,
		"concurrent: share of the merchants (0 to 1) with a payout webhook URL to an HTTPS sink in the tool, which answers 200 at once;\nthe worker delivers their events and each sub-phase waits for them (the hot wallet's merchant is the first hooked)")
	fs.DurationVar(&o.concurrentDrainTimeout, "concurrent-drain-timeout", 2*time.Minute,
		"concurrent: longest wait, after the creates, for every payout of a sub-phase to be terminal;\nthose still open then are reported and the run exits 1")
	fs.StringVar(&o.concurrentPhases, "concurrent-phases", "hot,spread,wait",
		"concurrent: the sub-phases to run, comma-separated, in the order hot, spread, wait")
	fs.Float64Var(&o.overloadFactor, "overload-factor", 2, "overload: the open-loop rate offered, as a multiple of the measured capacity")
	fs.IntVar(&o.overloadInFlight, "overload-in-flight", 32,
		"overload: MAX_IN_FLIGHT of the api under overload (its throughput × the latency target, 100 ms, on this machine)")
	fs.BoolVar(&o.evidence, "evidence", false,
		"concurrent: sample pg_stat_activity wait events and pg_locks every 100ms, read pg_stat_statements,\nprofile the api and the worker, time Redis PINGs; raw files in -evidence-dir")
	fs.StringVar(&o.evidenceDir, "evidence-dir", "loadtest-evidence", "where -evidence writes its files (`DIR`, created)")
}

// printUsage is -h: what the tool does, its goals, its scenarios and its
// flags.
func printUsage(fs *flag.FlagSet) {
	fmt.Fprintf(fs.Output(), `usage: go run ./cmd/loadtest [flags]

Measures the payout API under a closed-loop load and prints requests/s,
p50/p90/p99/max latency and errors, then one line of JSON. By default it
recreates the database, provisions clients, starts `+"`payoutd api`"+` as a
separate process on 127.0.0.1 and stops it afterwards. Goals (informational):
balance %d req/s with p99 < %s; creates %d/s across many wallets and %d/s
on one wallet with p99 < %s; %d payment creates/s; %d payouts/s drained
by the worker; each figure at least %.1f of its pgbench ceiling measured in
the same run (balance: select-only, as pgbench -S; creates and the drain:
spread and hot row, with -scenario disbursements or all).

scenarios:
%s
rails (-rail; the simulators get SANDBOX_COMPLETE_AFTER=-sandbox-complete-after too):
%s
flags:
`, goalRPS, goalP99, goalCreatesMany, goalCreatesHot, goalCreateP99, goalPayments, goalPayouts, goalCeilingRatio, scenarioHelp(), railHelp())
	fs.PrintDefaults()
}

// check reports every flag that is wrong or does not go with another.
func (o options) check() error {
	var errs []error
	errs = append(errs, o.scenarioProblems()...)
	errs = append(errs, o.scenarioSettingProblems()...)
	errs = append(errs, o.loadProblems()...)
	errs = append(errs, o.targetProblems()...)
	return errors.Join(errs...)
}

// scenarioProblems: -scenario names none, or a suite (which starts its own
// processes) is asked for with -target or a profile; or the profiles are
// asked for together or beyond what the server profiles.
func (o options) scenarioProblems() []error {
	var errs []error
	info, ok := lookupScenario(o.scenario)
	if !ok {
		errs = append(errs, fmt.Errorf("-scenario %q: want one of %s", o.scenario, strings.Join(scenarioNames(), ", ")))
	}
	if ok && info.new == nil {
		if o.target != "" {
			errs = append(errs, fmt.Errorf("-scenario %s starts its own api and worker: not with -target", o.scenario))
		}
		if o.inprocessProfile != "" || o.serverProfile != "" {
			errs = append(errs, fmt.Errorf("-inprocess-profile and -server-profile: not with -scenario %s; profile create-many, create-hot or payments", o.scenario))
		}
	}
	if o.serverProfile != "" && o.inprocessProfile != "" {
		errs = append(errs, errors.New("-server-profile and -inprocess-profile exclude each other"))
	}
	if o.serverProfile != "" && o.duration > 50*time.Second {
		errs = append(errs, errors.New("-server-profile takes at most 50 s of profile: -duration 50s or less"))
	}
	return errs
}

// scenarioSettingProblems checks the flags defineScenarioFlags defines.
func (o options) scenarioSettingProblems() []error {
	var errs []error
	if !slices.Contains(paymentAuths, o.paymentAuth) {
		errs = append(errs, fmt.Errorf("-payment-auth %q: want %s", o.paymentAuth, strings.Join(paymentAuths, " or ")))
	}
	if _, err := models.ParsePositiveAmount(o.amount); err != nil {
		errs = append(errs, fmt.Errorf("-amount %q: %w", o.amount, err))
	}
	if o.overloadFactor <= 0 || o.overloadFactor > 100 {
		errs = append(errs, fmt.Errorf("-overload-factor %g: want more than 0 and at most 100", o.overloadFactor))
	}
	if o.overloadInFlight < 1 {
		errs = append(errs, fmt.Errorf("-overload-in-flight %d: want 1 or more", o.overloadInFlight))
	}
	if o.sandboxCompleteAfter <= 0 {
		errs = append(errs, errors.New("-sandbox-complete-after must be positive (the service reads 0 as its default, 2s)"))
	}
	if o.railAnswerDelay < 0 || o.railAnswerDelay > time.Minute {
		errs = append(errs, fmt.Errorf("-rail-answer-delay %s: want 0 to 1m", o.railAnswerDelay))
	} else if o.railAnswerDelay > 0 && o.rail != "vendorsim" {
		errs = append(errs, fmt.Errorf("-rail-answer-delay: only with -rail vendorsim (its simulator delays the answers), not %s", o.rail))
	}
	if _, ok := lookupRail(o.rail); !ok {
		errs = append(errs, fmt.Errorf("-rail %q: want one of %s", o.rail, strings.Join(railNames(), ", ")))
	} else if info, ok := lookupScenario(o.scenario); ok && info.new != nil && o.rail != defaultRail {
		errs = append(errs, fmt.Errorf("-rail %s: only with -scenario drain, concurrent, disbursements or all (the suites that start the api and worker)", o.rail))
	}
	if o.drainDuration <= 0 || o.pgbenchDuration < time.Second {
		errs = append(errs, errors.New("-drain-duration must be positive and -pgbench-duration at least 1s"))
	}
	if o.pgbenchClients < 1 || o.pgbenchRows < 1 {
		errs = append(errs, errors.New("-pgbench-clients and -pgbench-rows must be at least 1"))
	}
	return append(errs, o.concurrentProblems()...)
}

// concurrentProblems checks the flags of the concurrent phase.
func (o options) concurrentProblems() []error {
	var errs []error
	if o.concurrentMax < 1 || o.concurrentWallets < 1 || o.concurrentDrainTimeout <= 0 {
		errs = append(errs, errors.New("-concurrent-max and -concurrent-wallets must be at least 1, -concurrent-drain-timeout positive"))
	}
	if !(o.concurrentWebhooks >= 0 && o.concurrentWebhooks <= 1) {
		errs = append(errs, fmt.Errorf("-concurrent-webhooks %v: a share from 0 to 1", o.concurrentWebhooks))
	}
	if _, err := selectConcurrentSubs(o.concurrentPhases); err != nil {
		errs = append(errs, err)
	}
	if o.evidence && !slices.Contains([]string{"concurrent", "disbursements", "all"}, o.scenario) {
		errs = append(errs, fmt.Errorf("-evidence: only with -scenario concurrent, disbursements or all (the concurrent phase), not %s", o.scenario))
	}
	if o.evidence && o.duration > 50*time.Second {
		errs = append(errs, errors.New("-evidence profiles the whole -duration, at most 50 s: -duration 50s or less"))
	}
	return errs
}

// loadProblems checks the load's shape and the environment it provisions
// for.
func (o options) loadProblems() []error {
	var errs []error
	if o.duration <= 0 {
		errs = append(errs, errors.New("-duration must be positive"))
	}
	if o.warmup < 0 {
		errs = append(errs, errors.New("-warmup must not be negative"))
	}
	if o.concurrency < 0 {
		errs = append(errs, errors.New("-concurrency must not be negative (0: the scenario's own)"))
	}
	if o.clients < 1 {
		errs = append(errs, errors.New("-clients must be at least 1"))
	}
	if _, err := models.ParseEnvironment(o.env); err != nil {
		errs = append(errs, fmt.Errorf("-env: %w", err))
	}
	return errs
}

// targetProblems: with -target, the URL must be one, the server's secrets
// key is needed, and nothing that applies only to a server the tool
// starts may be asked for.
func (o options) targetProblems() []error {
	if o.target == "" {
		return nil
	}
	var errs []error
	u, err := url.Parse(o.target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("-target %q: want a base URL such as http://127.0.0.1:8080", o.target))
	}
	if o.secretsKey == "" {
		errs = append(errs, errors.New("-target needs -secrets-key (or LOAD_SECRETS_KEY): the running server's SECRETS_KEY"))
	}
	if o.inprocessProfile != "" || o.serverProfile != "" {
		errs = append(errs, errors.New("-target excludes -inprocess-profile and -server-profile (the tool profiles only what it runs)"))
	}
	if len(o.serverEnv) > 0 {
		errs = append(errs, errors.New("-server-env applies to a server the tool starts, not to -target"))
	}
	return errs
}

// concurrencyFor is -concurrency, or the scenario's own when it is 0.
func (o options) concurrencyFor(info scenarioInfo) int {
	if o.concurrency > 0 {
		return o.concurrency
	}
	return info.concurrency
}

func envOr(getenv func(string) string, name, fallback string) string {
	if v := strings.TrimSpace(getenv(name)); v != "" {
		return v
	}
	return fallback
}
