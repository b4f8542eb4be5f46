// Command payoutd is the payout service: one binary whose subcommands run
// the API, the worker, the migrations, an all-in-one development mode and
// the operator's admin commands. It only wires the packages together.
package main

import (
	"context"
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
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/api"
	"github.com/payoutd/payoutd/internal/authcache"
	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/internal/credentials"
	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/internal/logging"
	"github.com/payoutd/payoutd/internal/metrics"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payments"
	"github.com/payoutd/payoutd/payouts"
	"github.com/payoutd/payoutd/tasks"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/sandboxacquirer"
	"github.com/payoutd/payoutd/vendors/vendorsim"
	"github.com/payoutd/payoutd/webhooks"
	"github.com/payoutd/payoutd/worker"
)

const usage = `usage: payoutd <command>

commands:
  api          serve the HTTP API (and the queue dashboard at /ops/queues)
  worker       process queued tasks and run the scheduler
  migrate      apply database migrations
  dev          run everything in one process with embedded PostgreSQL-free,
               Redis-free backends and a demo client (development only)
  admin ...    operator commands; "payoutd admin help" lists them
  healthcheck  exit 0 when the local API answers /readyz (for containers)
  vendorsim    run the sandbox payout vendors over HTTP (for the HTTP adapter and its callbacks)

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
	var err error
	switch args[0] {
	case "api":
		err = runAPI(ctx, stderr, getenv)
	case "worker":
		err = runWorker(ctx, stderr, getenv)
	case "migrate":
		err = runMigrate(ctx, stdout, stderr, getenv)
	case "dev":
		err = runDev(ctx, stdout, stderr, getenv)
	case "admin":
		return runAdmin(ctx, args[1:], stdout, stderr, getenv)
	case "healthcheck":
		err = runHealthcheck(getenv)
	case "vendorsim":
		err = runVendorSim(ctx, stdout, stderr, getenv)
	default:
		fmt.Fprintf(stderr, "payoutd: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "payoutd %s: %v\n", args[0], err)
		return 1
	}
	return 0
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

// backends are the connections the api and the worker share.
type backends struct {
	db       *gorm.DB
	redis    *redis.Client
	queue    asynq.RedisConnOpt
	tasks    *tasks.Client
	vendors  vendors.Registry
	metrics  *metrics.Metrics
	closeAll func()
}

// webhooks builds the webhook deliverer on the backends.
func (b *backends) webhooks(cfg config.Config, sealer *credentials.Sealer) *webhooks.Deliverer {
	return webhookDeliverer(cfg, b.db, sealer, b.tasks, b.metrics)
}

// webhookDeliverer builds the deliverer: in production only https and no
// private addresses (but WEBHOOK_ALLOWED_NETWORKS); elsewhere anything.
// m may be nil (the admin CLI counts nothing).
func webhookDeliverer(cfg config.Config, db *gorm.DB, sealer *credentials.Sealer, queue webhooks.Queue, m *metrics.Metrics) *webhooks.Deliverer {
	guard := webhooks.Guard{}
	if cfg.Env == models.Production {
		guard = webhooks.ProductionGuard(cfg.WebhookAllowedNetworks)
	}
	return webhooks.New(webhooks.Options{DB: db, Sealer: sealer, Guard: guard, Timeout: cfg.WebhookTimeout, Queue: queue, Metrics: m,
		Schedule: webhooks.Schedule{Base: cfg.WebhookRetryBase, Cap: cfg.WebhookRetryCap, Window: cfg.WebhookRetryWindow}})
}

// acquirer is the payment acquirer: the sandbox acquirer (sandboxpay).
func acquirer(cfg config.Config) (*sandboxacquirer.Acquirer, error) {
	return sandboxacquirer.New(sandboxacquirer.Options{Secret: cfg.AcquirerCallbackSecret()})
}

// paymentsService builds the payment service; m may be nil.
func paymentsService(cfg config.Config, db *gorm.DB, queue payments.Queue, m *metrics.Metrics) (*payments.Service, error) {
	acq, err := acquirer(cfg)
	if err != nil {
		return nil, err
	}
	return payments.New(payments.Options{DB: db, Acquirer: acq, Queue: queue, Calendar: cfg.SettlementCalendar(), Metrics: m}), nil
}

// payouts builds the disbursement service on the backends.
func (b *backends) payouts(cfg config.Config) *payouts.Service {
	return payouts.New(payouts.Options{DB: b.db, Vendors: b.vendors, Queue: b.tasks, LockTTL: cfg.DisbursementLockTTL,
		SubmitLease: cfg.DisbursementSubmitLease, Metrics: b.metrics, ReturnWatch: cfg.PayoutReturnWatch()})
}

func openBackends(ctx context.Context, cfg config.Config) (*backends, error) {
	db, err := database.Open(cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	pending, err := database.PendingMigrations(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("read migration state: %w", err)
	}
	if pending > 0 {
		return nil, fmt.Errorf("the database schema is %d migration(s) behind: run `payoutd migrate` first", pending)
	}
	redisOpts, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	queue, err := asynq.ParseRedisURI(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	rdb := redis.NewClient(redisOpts)
	registry, err := vendorRegistry(cfg, db)
	if err != nil {
		rdb.Close()
		return nil, err
	}
	taskClient := tasks.NewClient(queue)
	m := metrics.New()
	return &backends{
		db: db, redis: rdb, queue: queue, tasks: taskClient,
		vendors: m.WrapVendors(registry), metrics: m,
		closeAll: func() {
			taskClient.Close()
			rdb.Close()
			if sqlDB, err := db.DB(); err == nil {
				sqlDB.Close()
			}
		},
	}, nil
}

func runAPI(ctx context.Context, stderr io.Writer, getenv func(string) string) error {
	cfg, err := loadConfig(stderr, getenv, config.Needs{Database: true, Redis: true, Secrets: true, Operators: true})
	if err != nil {
		return err
	}
	b, err := openBackends(ctx, cfg)
	if err != nil {
		return err
	}
	defer b.closeAll()
	sealer, err := cfg.Sealer()
	if err != nil {
		return err
	}
	acq, err := acquirer(cfg)
	if err != nil {
		return err
	}
	// The queue gauges come from the api, beside the dashboard, so that
	// the workers do not report them once each.
	closeQueues, err := b.metrics.CollectQueues(b.queue)
	if err != nil {
		return err
	}
	defer closeQueues()
	srv, err := api.New(api.Deps{Config: cfg, DB: b.db, Redis: b.redis, Sealer: sealer, Vendors: b.vendors,
		QueueRedis: b.queue, Queue: b.tasks, Acquirer: acq, Metrics: b.metrics})
	if err != nil {
		return err
	}
	defer srv.Close()
	return api.ListenAndServe(ctx, cfg.HTTPAddr, srv.Handler(), func(addr string) {
		slog.Info("api listening", slog.String("addr", addr), slog.String("env", string(cfg.Env)))
	})
}

func runWorker(ctx context.Context, stderr io.Writer, getenv func(string) string) error {
	cfg, err := loadConfig(stderr, getenv, config.Needs{Database: true, Redis: true, Secrets: true})
	if err != nil {
		return err
	}
	b, err := openBackends(ctx, cfg)
	if err != nil {
		return err
	}
	defer b.closeAll()
	sealer, err := cfg.Sealer()
	if err != nil {
		return err
	}
	pay, err := paymentsService(cfg, b.db, b.tasks, b.metrics)
	if err != nil {
		return err
	}
	deps := worker.Deps{DB: b.db, Redis: b.queue, Payouts: b.payouts(cfg), Webhooks: b.webhooks(cfg, sealer), Payments: pay}
	if cfg.MetricsAddr == "" {
		return worker.Run(ctx, deps)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return worker.Run(gctx, deps) })
	g.Go(func() error { return serveMetrics(gctx, cfg, b.redis, b.metrics) })
	return g.Wait()
}

// serveMetrics serves the worker's /metrics on METRICS_ADDR behind the
// operators' basic auth until ctx ends, then shuts down gracefully.
func serveMetrics(ctx context.Context, cfg config.Config, rdb *redis.Client, m *metrics.Metrics) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", api.AdminOnly(cfg, rdb, m.Handler()))
	return api.ListenAndServe(ctx, cfg.MetricsAddr, mux, func(addr string) {
		slog.Info("worker metrics listening", slog.String("addr", addr))
	})
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
	if len(args) == 0 || args[0] == "help" {
		fmt.Fprint(stdout, admin.Usage())
		return 0
	}
	cfg, err := loadConfig(io.Discard, getenv, config.Needs{Database: true, Secrets: true})
	if err != nil {
		admin.WriteError(stderr, err.Error())
		return 1
	}
	db, err := database.Open(cfg.DatabaseURL)
	if err != nil {
		admin.WriteError(stderr, err.Error())
		return 1
	}
	defer func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	}()
	sealer, err := cfg.Sealer()
	if err != nil {
		admin.WriteError(stderr, err.Error())
		return 1
	}
	registry, err := vendorRegistry(cfg, db)
	if err != nil {
		admin.WriteError(stderr, err.Error())
		return 1
	}
	deps := admin.Deps{DB: db, Sealer: sealer, Env: cfg.Env, Vendors: registry, LockTTL: cfg.DisbursementLockTTL}
	// With Redis configured, what a command sets in motion (an approved
	// payout's submit, a simulated payment's webhook and settlement) is
	// enqueued at once; without it the worker's sweeps pick it up.
	var paymentQueue payments.Queue
	if cfg.RedisURL != "" {
		if opt, err := asynq.ParseRedisURI(cfg.RedisURL); err == nil {
			queue := tasks.NewClient(opt)
			defer queue.Close()
			deps.Queue, paymentQueue = queue, queue
		}
		if opt, err := redis.ParseURL(cfg.RedisURL); err == nil {
			rdb := redis.NewClient(opt)
			defer rdb.Close()
			deps.ClientChanged = announceClientChange(rdb, stderr)
		}
	}
	deps.Webhooks = webhookDeliverer(cfg, db, sealer, nil, nil)
	if deps.Payments, err = paymentsService(cfg, db, paymentQueue, nil); err != nil {
		admin.WriteError(stderr, err.Error())
		return 1
	}
	return admin.Run(ctx, deps, args, stdout, stderr)
}

// runHealthcheck asks the local API for /readyz; containers without a
// shell use it as their health check.
func runHealthcheck(getenv func(string) string) error {
	cfg, _ := config.Load(getenv, config.Defaults())
	_, port, err := net.SplitHostPort(cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("HTTP_ADDR: %w", err)
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

// vendorRegistry returns the payout vendors: the sandbox vendors over HTTP
// when VENDORSIM_URL is set, otherwise in this process, their accepted
// payouts kept in the database so that the api, the workers and the admin
// CLI share them.
func vendorRegistry(cfg config.Config, db *gorm.DB) (vendors.Registry, error) {
	if cfg.VendorSimURL != "" {
		return vendorsim.NewRegistry(cfg.VendorSimURL,
			vendorsim.Secrets{Token: cfg.VendorSimToken, CallbackSecret: cfg.VendorSimCallbackSecret}, vendorsim.ClientOptions{})
	}
	return sandbox.Registry(sandbox.Options{CompleteAfter: cfg.SandboxCompleteAfter, Store: sandbox.NewDBStore(db)}), nil
}
