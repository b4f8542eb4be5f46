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
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/api"
	"github.com/payoutd/payoutd/config"
	"github.com/payoutd/payoutd/database"
	"github.com/payoutd/payoutd/logging"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
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
	vendors  vendors.Registry
	closeAll func()
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
	return &backends{
		db: db, redis: rdb, queue: queue,
		vendors: sandbox.Registry(sandbox.Options{CompleteAfter: cfg.SandboxCompleteAfter}),
		closeAll: func() {
			rdb.Close()
			if sqlDB, err := db.DB(); err == nil {
				sqlDB.Close()
			}
		},
	}, nil
}

func runAPI(ctx context.Context, stderr io.Writer, getenv func(string) string) error {
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
	srv, err := api.New(api.Deps{Config: cfg, DB: b.db, Redis: b.redis, Sealer: sealer, Vendors: b.vendors, QueueRedis: b.queue})
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
	return worker.Run(ctx, worker.Deps{DB: b.db, Redis: b.queue, Vendors: b.vendors})
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
	deps := admin.Deps{DB: db, Sealer: sealer, Env: cfg.Env, Vendors: sandbox.Registry(sandbox.Options{})}
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
