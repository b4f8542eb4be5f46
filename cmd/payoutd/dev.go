package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/alicebob/miniredis/v2"
	"golang.org/x/sync/errgroup"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/api"
	"github.com/payoutd/payoutd/internal/app"
	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/internal/logging"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/worker"
)

// runDev runs the API and the worker in one process on embedded backends:
// an in-memory Redis (miniredis) and a SQLite file in a temporary folder
// (or DEV_DATA_DIR), with a demo client whose credentials it prints, and the
// simulators of the simulated rails of opts. It is for trying the service
// and developing it, never for real money.
func runDev(ctx context.Context, opts devOptions, stdout, stderr io.Writer, getenv func(string) string) error {
	start := time.Now()
	for _, r := range opts.rails {
		if r.maskEnv != nil {
			getenv = r.maskEnv(getenv)
		}
	}
	cfg, err := devConfig(getenv)
	if err != nil {
		return err
	}
	slog.SetDefault(logging.New(stderr, cfg.LogLevel))
	sims, err := startSimulators(opts.rails, simOptions{completeAfter: cfg.SandboxCompleteAfter, log: slog.Default()})
	if err != nil {
		return err
	}
	defer closeSimulators(sims)
	for _, s := range sims {
		s.configure(&cfg)
	}
	backends, err := startDevBackends(getenv)
	if err != nil {
		return err
	}
	defer backends.close()
	cfg.DatabaseURL = "sqlite://" + filepath.Join(backends.dataDir, "payoutd-dev.db")
	cfg.RedisURL = "redis://" + backends.redis.Addr()

	// One App: one payout service, one payment service, one metrics
	// registry (served at the api's /metrics) and one Redis pool for the
	// api, the worker and the demo's provisioning.
	a, err := app.Build(ctx, cfg, app.Options{Migrations: app.ApplyMigrations})
	if err != nil {
		return err
	}
	defer a.Close()
	demo, err := provisionDemo(ctx, admin.Deps{DB: a.DB, Sealer: a.Sealer, Env: cfg.Env, Vendors: a.Vendors, Payouts: a.Payouts}, opts.rails)
	if err != nil {
		return fmt.Errorf("create demo client: %w", err)
	}
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
	if devStarted != nil {
		devStarted(a, apiDeps(a), workerDeps(a))
	}

	banner := devBanner{cfg: cfg, demo: demo, rails: opts.rails, sims: sims, dataDir: backends.dataDir}
	return serveDev(ctx, a, srv, cfg.HTTPAddr, backends.redis, sims, func(addr string) error {
		banner.addr, banner.startup = addr, time.Since(start)
		return devReady(stdout, banner)
	})
}

// devReady connects the simulators to the api now listening at b.addr,
// then prints the banner: its payouts work once it shows.
func devReady(stdout io.Writer, b devBanner) error {
	base := "http://" + hostPort(b.addr)
	for _, s := range b.sims {
		if err := s.connect(base); err != nil {
			return err
		}
	}
	printDevBanner(stdout, b)
	return nil
}

// devConfig is the configuration dev mode runs on: the environment's, over
// dev defaults (staging rules, a fresh admin password and secrets key, a
// 30 s settlement delay), never production, with checkout links that work
// from this machine. The database and Redis are set once they are started.
func devConfig(getenv func(string) string) (config.Config, error) {
	base := config.Defaults()
	base.Env = models.Staging
	base.AdminUser = "admin"
	base.AdminPassword = randomHex(12) // 24 characters, over config.MinAdminPasswordLength
	base.SecretsKey = mustRandom(32)
	// Collected money settles 30 s after it is paid instead of on the next
	// business day, so a dev session can pay it out again.
	base.SettlementDelay = 30 * time.Second
	cfg, err := config.Load(getenv, base)
	if err == nil {
		err = cfg.Check(config.Needs{Operators: true}) // an ADMIN_PASSWORD of the caller's must be long enough too
	}
	if err != nil {
		return cfg, fmt.Errorf("configuration:\n%w", err)
	}
	cfg.Env = models.Staging // dev is never production
	if getenv("PUBLIC_BASE_URL") == "" {
		cfg.PublicBaseURL = "http://" + hostPort(cfg.HTTPAddr) // checkout links that work from this machine
	}
	return cfg, nil
}

// devBackends are dev mode's embedded backends: the folder of its SQLite
// database and an in-memory Redis.
type devBackends struct {
	dataDir string
	// temporary: the folder was made for this run and goes with it.
	temporary bool
	redis     *miniredis.Miniredis
}

// startDevBackends makes the data folder (DEV_DATA_DIR, or a temporary
// one) and starts miniredis.
func startDevBackends(getenv func(string) string) (*devBackends, error) {
	b := &devBackends{dataDir: getenv("DEV_DATA_DIR")}
	if b.dataDir == "" {
		dir, err := os.MkdirTemp("", "payoutd-dev-")
		if err != nil {
			return nil, err
		}
		b.dataDir, b.temporary = dir, true
	} else if err := os.MkdirAll(b.dataDir, 0o700); err != nil {
		return nil, err
	}
	b.redis = miniredis.NewMiniRedis()
	if err := b.redis.Start(); err != nil {
		b.removeDataDir()
		return nil, fmt.Errorf("start embedded redis: %w", err)
	}
	return b, nil
}

// close stops Redis, then removes a temporary data folder.
func (b *devBackends) close() {
	b.redis.Close()
	b.removeDataDir()
}

func (b *devBackends) removeDataDir() {
	if b.temporary {
		os.RemoveAll(b.dataDir)
	}
}

// serveDev runs the worker, the api server (on httpAddr) and the
// simulators, and keeps miniredis's clock moving, until ctx ends or one of
// them fails; ready is called with the address the api listens on once it
// does, and its error stops dev mode.
func serveDev(ctx context.Context, a *app.App, srv *api.Server, httpAddr string, mr *miniredis.Miniredis,
	sims []simulatedRail, ready func(addr string) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return advanceRedisClock(gctx, mr) })
	g.Go(func() error { return worker.Run(gctx, workerDeps(a)) })
	for _, s := range sims {
		g.Go(func() error { return s.serve(gctx) })
	}
	readyErr := make(chan error, 1)
	g.Go(func() error {
		return api.ListenAndServe(gctx, httpAddr, srv.Handler(), func(addr string) { readyErr <- ready(addr) })
	})
	g.Go(func() error {
		select {
		case err := <-readyErr:
			return err
		case <-gctx.Done():
			return nil
		}
	})
	return g.Wait()
}

// devStarted, when a test sets it, is shown what dev mode built and what it
// hands the api and the worker, once they are built and before they run.
var devStarted func(a *app.App, apiDeps api.Deps, workerDeps worker.Deps)

// advanceRedisClock makes miniredis expire keys: it only does so when told
// that time has passed.
func advanceRedisClock(ctx context.Context, mr *miniredis.Miniredis) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-tick.C:
			mr.FastForward(now.Sub(last))
			last = now
		}
	}
}

// demoClient is what the banner shows.
type demoClient struct {
	creds *admin.IssuedCredentials
	// wallets in the order created: the first is the default.
	wallets []demoWallet
}

// demoWallet is one funded wallet of the demo client.
type demoWallet struct {
	spec    demoWalletSpec
	id      string
	balance string
}

// provisionDemo creates the demo merchant with a funded wallet for each
// wallet of each rail, in the order of rails: the first is its default.
func provisionDemo(ctx context.Context, d admin.Deps, rails []devRail) (*demoClient, error) {
	creds, err := admin.CreateClient(ctx, d, admin.ClientOptions{Name: "Demo Merchant"})
	if err != nil {
		return nil, err
	}
	clientID, _ := parseUUID(creds.ClientID)
	demo := &demoClient{creds: creds}
	for _, r := range rails {
		for _, spec := range r.wallets {
			w, err := admin.CreateWallet(ctx, d, admin.WalletOptions{ClientID: clientID, Name: spec.name, Vendor: spec.vendor})
			if err != nil {
				return nil, err
			}
			id, _ := parseUUID(w.WalletID)
			funded, err := admin.AdjustWallet(ctx, d, id, spec.opening, "dev mode opening balance")
			if err != nil {
				return nil, err
			}
			demo.wallets = append(demo.wallets, demoWallet{spec: spec, id: w.WalletID, balance: funded.Balance})
		}
	}
	return demo, nil
}

// hostPort turns a listen address such as "[::]:8080" into one to dial.
func hostPort(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

func randomHex(n int) string { return hex.EncodeToString(mustRandom(n)) }

func mustRandom(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return b
}
