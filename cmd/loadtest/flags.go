package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/payoutd/payoutd/models"
)

const (
	defaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/payoutd_load?sslmode=disable"
	// defaultRedisURL is a Redis database of the tool's own: create
	// scenarios flush it at the start.
	defaultRedisURL = "redis://127.0.0.1:6379/9"
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

	// The concurrent phase (scenario_concurrent.go) and its evidence.
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
	if info, ok := lookupScenario(o.scenario); o.evidence && !(ok && info.suite != nil && info.suite(o).concurrent) {
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
