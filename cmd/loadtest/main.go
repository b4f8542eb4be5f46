// Command loadtest measures the payout API under load and prints
// requests/s, p50, p90, p99 and max latency and the error count, then the
// same figures as one line of JSON to paste into notes.
//
// Usage:
//
//	go run ./cmd/loadtest                        # balance, 64 workers, 2 s warm-up + 10 s
//	go run ./cmd/loadtest -concurrency 32 -duration 30s
//	go run ./cmd/loadtest -server-env LOG_LEVEL=info   # with access logs
//	go run ./cmd/loadtest -inprocess-profile cpu.pprof && go tool pprof -top cpu.pprof
//	go run ./cmd/loadtest -h                     # every flag and scenario
//
// The load is a closed loop: -concurrency workers each send requests back
// to back over keep-alive connections for -warmup (not measured) and then
// -duration (measured). Latency is the time from sending a request to
// having read its whole response; every successful request of the
// measured window is one sample and the percentiles are exact (all samples
// sorted). requests/s counts successful requests only. Each request is
// signed afresh (x-signature over the empty body at time.Now()) with the
// x-api-key of one of -clients merchant clients, taken round-robin.
//
// Self-contained mode (the default) needs PostgreSQL and Redis on this
// machine. The tool drops and recreates the database named in
// -database-url (DROP DATABASE ... WITH (FORCE), through the "postgres"
// maintenance database of the same server; only a server on the loopback
// interface), migrates it, provisions the clients, each with one funded
// wallet, builds ./cmd/payoutd and runs `payoutd api` as a separate
// process on a free port of 127.0.0.1, with APP_ENV=production,
// LOG_LEVEL=warn (no per-request access logs) and the SECRETS_KEY the tool
// sealed the clients' secrets with. It waits for /readyz, runs the load,
// then stops the server with SIGTERM and waits for it; the server is also
// stopped on Ctrl-C or any error.
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
// The load generator shares the machine with the server, PostgreSQL and
// Redis; the summary shows how the CPU was split between them, and warns
// when other processes or the hypervisor (steal) took enough of it to
// distort the figures (Linux).
//
// Exit status: 0 when every request succeeded, whether or not the goal was
// met (the goal is informational); 1 when a request failed or the run
// could not be made; 2 for bad flags.
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
	"strings"
	"syscall"
	"time"

	"github.com/payoutd/payoutd/logging"
	"github.com/payoutd/payoutd/models"
)

const (
	defaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/payoutd_load?sslmode=disable"
	defaultRedisURL    = "redis://127.0.0.1:6379/0"
)

// The goal the figures are compared with; informational only.
const (
	goalRPS = 5000
	goalP99 = 20 * time.Millisecond
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

	res, err := execute(ctx, o, stdout, stderr)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "loadtest: interrupted")
		} else {
			fmt.Fprintf(stderr, "loadtest: %v\n", err)
		}
		return 1
	}
	if res.Errors > 0 || res.WarmupErrors > 0 {
		return 1
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer, getenv func(string) string) (options, error) {
	var o options
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.scenario, "scenario", "balance", "what to measure: "+strings.Join(scenarioNames(), ", "))
	fs.StringVar(&o.databaseURL, "database-url", envOr(getenv, "LOAD_DATABASE_URL", defaultDatabaseURL),
		"PostgreSQL database to (re)create and provision (env LOAD_DATABASE_URL);\nwith -target, the running server's database, provisioned but not recreated")
	fs.StringVar(&o.redisURL, "redis-url", envOr(getenv, "LOAD_REDIS_URL", defaultRedisURL), "Redis for the server (env LOAD_REDIS_URL)")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "measured time")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "load before measuring, not counted")
	fs.IntVar(&o.concurrency, "concurrency", 64, "workers, each sending requests back to back (closed loop)")
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
	fs.StringVar(&o.inprocessProfile, "inprocess-profile", "",
		"serve the requests with the API handler in this process (no HTTP, no TCP)\nand write a CPU profile of the measured window to `FILE`")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `usage: go run ./cmd/loadtest [flags]

Measures the payout API under a closed-loop load and prints requests/s,
p50/p90/p99/max latency and errors, then one line of JSON. By default it
recreates the database, provisions clients, starts `+"`payoutd api`"+` as a
separate process on 127.0.0.1 and stops it afterwards. Goal: %d req/s with
p99 < %s (informational).

scenarios:
%s
flags:
`, goalRPS, goalP99, scenarioHelp())
		fs.PrintDefaults()
	}
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

func (o options) check() error {
	var errs []error
	if _, ok := lookupScenario(o.scenario); !ok {
		errs = append(errs, fmt.Errorf("-scenario %q: want one of %s", o.scenario, strings.Join(scenarioNames(), ", ")))
	}
	if o.duration <= 0 {
		errs = append(errs, errors.New("-duration must be positive"))
	}
	if o.warmup < 0 {
		errs = append(errs, errors.New("-warmup must not be negative"))
	}
	if o.concurrency < 1 {
		errs = append(errs, errors.New("-concurrency must be at least 1"))
	}
	if o.clients < 1 {
		errs = append(errs, errors.New("-clients must be at least 1"))
	}
	if _, err := models.ParseEnvironment(o.env); err != nil {
		errs = append(errs, fmt.Errorf("-env: %w", err))
	}
	if o.target != "" {
		u, err := url.Parse(o.target)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("-target %q: want a base URL such as http://127.0.0.1:8080", o.target))
		}
		if o.secretsKey == "" {
			errs = append(errs, errors.New("-target needs -secrets-key (or LOAD_SECRETS_KEY): the running server's SECRETS_KEY"))
		}
		if o.inprocessProfile != "" {
			errs = append(errs, errors.New("-target and -inprocess-profile exclude each other"))
		}
		if len(o.serverEnv) > 0 {
			errs = append(errs, errors.New("-server-env applies to a server the tool starts, not to -target"))
		}
	}
	return errors.Join(errs...)
}

func envOr(getenv func(string) string, name, fallback string) string {
	if v := strings.TrimSpace(getenv(name)); v != "" {
		return v
	}
	return fallback
}
