// Command payoutd is the payout service: one binary whose subcommands run
// the API, the worker, the migrations, an all-in-one development mode and
// the operator's admin commands. It only wires the packages together.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/api"
	"github.com/payoutd/payoutd/internal/app"
	"github.com/payoutd/payoutd/internal/authcache"
	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/internal/logging"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/worker"
)

const usage = `usage: payoutd <command>

commands:
  api          serve the HTTP API (and the queue dashboard at /ops/queues)
  worker       process queued tasks and run the scheduler
  migrate      apply database migrations
  dev          run everything in one process with embedded PostgreSQL-free,
               Redis-free backends and a demo client (development only);
               --vendors=sandbox,simulated-xendit,simulated-snap adds
               Xendit and SNAP BI (BCA) simulators
               ("payoutd dev --help")
  admin ...    operator commands; "payoutd admin help" lists them;
               "payoutd admin --dev ..." runs them on the running payoutd dev
  healthcheck  exit 0 when the local API (--worker: the worker) answers /readyz (for containers)
  vendorsim    run the sandbox payout vendors over HTTP (for the HTTP adapter and its callbacks);
               --provider xendit runs a Xendit Payouts v2 simulator instead,
               --provider snap --bank B a SNAP BI bank

Configuration is read from the environment; see README.md.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// run is main without the process: tests call it directly.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, usage)
		return 0
	}
	worker := args[0] == "healthcheck" && len(args) == 2 && args[1] == "--worker"
	if usage, ok := commandUsage[args[0]]; ok && !worker {
		// These take no arguments: --help prints their usage, anything
		// else is a mistake in the command line.
		switch {
		case len(args) > 1 && isHelpFlag(args[1]):
			fmt.Fprint(stdout, usage)
			return 0
		case len(args) > 1:
			fmt.Fprintf(stderr, "payoutd %s: unexpected argument %q; see payoutd %s --help\n", args[0], args[1], args[0])
			return 2
		}
	}
	var err error
	switch args[0] {
	case "api":
		err = runAPI(ctx, stderr, getenv)
	case "worker":
		err = runWorker(ctx, stderr, getenv)
	case "migrate":
		err = runMigrate(ctx, stdout, stderr, getenv)
	case "dev":
		return runDevCommand(ctx, args[1:], stdout, stderr, getenv)
	case "admin":
		return runAdmin(ctx, args[1:], stdout, stderr, getenv)
	case "healthcheck":
		err = runHealthcheck(getenv, worker)
	case "vendorsim":
		err = runVendorSim(ctx, args[1:], stdout, stderr, getenv)
	default:
		fmt.Fprintf(stderr, "payoutd: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	var usageErr commandLineError
	switch {
	case errors.Is(err, errHelpShown):
		return 0
	case errors.As(err, &usageErr):
		fmt.Fprintf(stderr, "payoutd %s: %v; see payoutd %s --help\n", args[0], usageErr.error, args[0])
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "payoutd %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

// errHelpShown: a command printed its --help; the process exits 0.
var errHelpShown = errors.New("help shown")

// commandLineError is a mistake in the command line (an unknown flag, a
// stray argument): exit 2 with one line.
type commandLineError struct{ error }

// commandUsage is the --help of the commands that take no arguments.
var commandUsage = map[string]string{
	"api": `usage: payoutd api

Serves the HTTP API (and the queue dashboard at /ops/queues, /metrics and
/debug/pprof behind ADMIN_USER/ADMIN_PASSWORD) on HTTP_ADDR until SIGINT or
SIGTERM. Needs DATABASE_URL, REDIS_URL, SECRETS_KEY; see README.md,
Configuration.
`,
	"worker": `usage: payoutd worker

Processes the queued tasks (submits, status checks, webhooks, settlements)
and runs the submit pumps and the periodic sweeps until SIGINT or SIGTERM;
serves /metrics on METRICS_ADDR when set. Needs DATABASE_URL, REDIS_URL,
SECRETS_KEY; see README.md, Configuration.
`,
	"migrate": `usage: payoutd migrate

Applies the pending database migrations of DATABASE_URL and exits.
`,
	"healthcheck": `usage: payoutd healthcheck [--worker]

Exits 0 when the API on this machine (the port of HTTP_ADDR) answers
/readyz with 200, 1 otherwise: a container health check without a shell.
--worker asks the worker instead, on the port of METRICS_ADDR.
`,
}

// isHelpFlag reports whether arg asks for help.
func isHelpFlag(arg string) bool {
	return arg == "-h" || arg == "--help" || arg == "-help" || arg == "help"
}

// loadConfig reads and checks the configuration and installs the logger.
func loadConfig(stderr io.Writer, getenv func(string) string, needs config.Needs) (config.Config, error) {
	cfg, err := config.Load(getenv, config.Defaults())
	if err == nil {
		err = cfg.Check(needs)
	}
	if err != nil {
		return cfg, fmt.Errorf("configuration:\n%w", err)
	}
	slog.SetDefault(logging.New(stderr, cfg.LogLevel))
	return cfg, nil
}

func runAPI(ctx context.Context, stderr io.Writer, getenv func(string) string) error {
	cfg, err := loadConfig(stderr, getenv, config.Needs{Database: true, Redis: true, Secrets: true, Operators: true})
	if err != nil {
		return err
	}
	a, err := app.Build(ctx, cfg, app.Options{})
	if err != nil {
		return err
	}
	defer a.Close()
	// The queue gauges come from the api, beside the dashboard, so that
	// the workers do not report them once each.
	closeQueues, err := a.Metrics.CollectQueues(a.Queue)
	if err != nil {
		return err
	}
	defer closeQueues()
	srv, err := api.New(apiDeps(a))
	if err != nil {
		return err
	}
	defer srv.Close()
	return api.ListenAndServe(ctx, cfg.HTTPAddr, srv.Handler(), func(addr string) {
		slog.Info("api listening", slog.String("addr", addr), slog.String("env", string(cfg.Env)))
	})
}

// apiDeps hands the API what the composition root built.
func apiDeps(a *app.App) api.Deps {
	return api.Deps{Config: a.Config, DB: a.DB, Redis: a.Redis, Sealer: a.Sealer, Vendors: a.Vendors, Breakers: a.Breakers,
		QueueRedis: a.Queue, Queue: a.Tasks, Acquirer: a.Acquirer, Metrics: a.Metrics, Payouts: a.Payouts, Dispatch: a.Dispatch,
		Payments: a.Payments}
}

// workerDeps hands the worker what the composition root built.
func workerDeps(a *app.App) worker.Deps {
	return worker.Deps{DB: a.DB, Redis: a.Queue, Dispatch: a.Dispatch, Webhooks: a.Webhooks, Payments: a.Payments, Metrics: a.Metrics}
}

func runWorker(ctx context.Context, stderr io.Writer, getenv func(string) string) error {
	cfg, err := loadConfig(stderr, getenv, config.Needs{Database: true, Redis: true, Secrets: true})
	if err != nil {
		return err
	}
	a, err := app.Build(ctx, cfg, app.Options{})
	if err != nil {
		return err
	}
	defer a.Close()
	deps := workerDeps(a)
	if cfg.MetricsAddr == "" {
		return worker.Run(ctx, deps)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return worker.Run(gctx, deps) })
	g.Go(func() error { return serveMetrics(gctx, cfg, a) })
	return g.Wait()
}

// serveMetrics serves the worker's /metrics on METRICS_ADDR behind the
// operators' basic auth, and its /healthz (the process answers) and /readyz
// (PostgreSQL and Redis answer) to anyone, as the API does, until ctx
// ends, then shuts down gracefully.
func serveMetrics(ctx context.Context, cfg config.Config, a *app.App) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", api.AdminOnly(cfg, a.Redis, a.Metrics.Handler()))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ok"}`))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if err := workerReady(r.Context(), a); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			json.NewEncoder(w).Encode(map[string]string{"error": "not ready", "hint": err.Error()})
			return
		}
		w.Write([]byte(`{"status":"ready"}`))
	})
	return api.ListenAndServe(ctx, cfg.MetricsAddr, mux, func(addr string) {
		slog.Info("worker metrics listening", slog.String("addr", addr))
	})
}

// workerReady reports whether the worker's PostgreSQL and Redis answer.
func workerReady(ctx context.Context, a *app.App) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	sqlDB, err := a.DB.DB()
	if err == nil {
		err = sqlDB.PingContext(ctx)
	}
	if err != nil {
		return errors.New("database unreachable")
	}
	if err := a.Redis.Ping(ctx).Err(); err != nil {
		return errors.New("redis unreachable")
	}
	return nil
}

func runMigrate(ctx context.Context, stdout, stderr io.Writer, getenv func(string) string) error {
	cfg, err := loadConfig(stderr, getenv, config.Needs{Database: true})
	if err != nil {
		return err
	}
	db, err := database.Open(cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	}()
	applied, err := database.Migrate(ctx, db)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "{\"applied\":%s}\n", jsonInts(applied))
	return nil
}

func jsonInts(v []int64) string {
	parts := make([]string, len(v))
	for i, n := range v {
		parts[i] = fmt.Sprint(n)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// announceClientChange tells the API instances that a client changed, so
// that they drop what they cached of it. The change is committed already:
// a failed announcement is a warning, bounded by AUTH_CACHE_TTL.
func announceClientChange(rdb *redis.Client, stderr io.Writer) func(context.Context, uuid.UUID) {
	return func(ctx context.Context, id uuid.UUID) {
		if err := authcache.Announce(ctx, rdb, id); err != nil {
			fmt.Fprintf(stderr, "warning: the change is saved, but API instances were not told (%v); they apply it within AUTH_CACHE_TTL\n", err)
		}
	}
}

func runAdmin(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) > 0 && args[0] == "--dev" {
		// The running payoutd dev's database, Redis and secrets key.
		devEnv, err := devAdminEnv(getenv)
		if err != nil {
			admin.WriteError(stderr, err.Error())
			return 1
		}
		getenv, args = devEnv, args[1:]
	}
	if text, ok := admin.Help(args); ok {
		fmt.Fprint(stdout, text)
		return 0
	}
	if !admin.Known(args) {
		admin.WriteError(stderr, fmt.Sprintf("unknown admin command %q; payoutd admin --help lists them", strings.Join(args, " ")))
		return 2
	}
	if admin.IsRailCheck(args) {
		// The rail's own check reports the configuration it finds wrong
		// and needs no database.
		return admin.RunRailCheck(ctx, admin.RailDeps{Getenv: getenv, Vendors: func(cfg config.Config) (vendors.Registry, error) {
			return app.VendorRegistry(cfg, nil)
		}}, args, stdout, stderr)
	}
	cfg, err := loadConfig(io.Discard, getenv, config.Needs{Database: true, Secrets: true})
	if err != nil {
		admin.WriteError(stderr, err.Error())
		return 1
	}
	// With Redis configured, what a command sets in motion (an approved
	// payout's submit, a simulated payment's webhook and settlement) is
	// enqueued at once; without it the worker's sweeps pick it up.
	a, err := app.Build(ctx, cfg, app.Options{Migrations: app.IgnoreMigrations, Operator: true})
	if err != nil {
		admin.WriteError(stderr, err.Error())
		return 1
	}
	defer a.Close()
	deps := admin.Deps{DB: a.DB, Sealer: a.Sealer, Env: cfg.Env, Vendors: a.Vendors, Payouts: a.Payouts,
		Webhooks: a.Webhooks, Payments: a.Payments}
	if a.Redis != nil {
		deps.ClientChanged = announceClientChange(a.Redis, stderr)
	}
	return admin.Run(ctx, deps, args, stdout, stderr)
}

// runHealthcheck asks the local API for /readyz; containers without a
// shell use it as their health check.
func runHealthcheck(getenv func(string) string, worker bool) error {
	cfg, _ := config.Load(getenv, config.Defaults())
	name, addr := "HTTP_ADDR", cfg.HTTPAddr
	if worker {
		name, addr = "METRICS_ADDR", cfg.MetricsAddr
		if addr == "" {
			return errors.New("--worker: METRICS_ADDR is not set, so the worker serves no /readyz")
		}
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	client := &http.Client{Timeout: 3 * time.Second}
	resp, err := client.Get("http://127.0.0.1:" + port + "/readyz")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New("not ready: " + resp.Status)
	}
	return nil
}

func parseUUID(s string) (uuid.UUID, error) { return uuid.Parse(s) }
