package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/api"
	"github.com/payoutd/payoutd/internal/app"
	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/internal/logging"
	"github.com/payoutd/payoutd/internal/redisconn"
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
	useDevInquiryBank(&cfg)
	backends, err := startDevBackends(getenv)
	if err != nil {
		return err
	}
	defer backends.close()
	cfg.DatabaseURL = "sqlite://" + filepath.Join(backends.dataDir, devDatabaseFile)
	cfg.RedisURL = "redis://" + backends.redis.Addr()
	state, err := backends.resume(&cfg, getenv, opts.rails)
	if err != nil {
		return err
	}

	// One App: one payout service, one payment service, one metrics
	// registry (served at the api's /metrics) and one Redis pool for the
	// api, the worker and the demo's provisioning.
	a, err := app.Build(ctx, cfg, app.Options{Migrations: app.ApplyMigrations})
	if err != nil {
		return err
	}
	defer a.Close()
	ops := admin.Deps{DB: a.DB, Sealer: a.Sealer, Env: cfg.Env, Vendors: a.Vendors, Payouts: a.Payouts}
	var demo *demoClient
	if state.Demo != nil {
		if demo, err = restoreDemo(ctx, a.DB, state.Demo, opts.rails); err != nil {
			return fmt.Errorf("demo client of %s: %w", backends.dataDir, err)
		}
	} else {
		demo, err = provisionDemo(ctx, ops, opts.rails)
		if err != nil {
			return fmt.Errorf("create demo client: %w", err)
		}
		state.Demo = demo.record()
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

	inbox := newDevInbox(eventCallbackSecret(a.DB, a.Sealer), cfg.WebhookTimeout)
	banner := devBanner{cfg: cfg, demo: demo, rails: opts.rails, sims: sims, dataDir: backends.dataDir,
		kept: !backends.temporary, resumed: state.resumed}
	return serveDev(ctx, a, inbox.handler(srv.Handler()), cfg.HTTPAddr, backends.redis, sims, func(addr string) error {
		banner.addr, banner.startup = addr, time.Since(start)
		state.APIURL = "http://" + hostPort(addr)
		// The demo's webhooks go to the inbox on the address dev listens on
		// now (a restart may listen elsewhere).
		// Not cut short by a stop that comes meanwhile: dev then shuts down.
		if _, err := admin.UpdateClient(context.WithoutCancel(ctx), ops, uuid.MustParse(demo.creds.ClientID), map[string]string{
			"payout-webhook-url": state.APIURL + devInboxPath + "/payouts", "payment-webhook-url": state.APIURL + devInboxPath + "/payments"}); err != nil {
			return fmt.Errorf("point the demo's webhooks at the inbox: %w", err)
		}
		if err := state.save(backends.dataDir); err != nil {
			return fmt.Errorf("save %s: %w", devStateFile, err)
		}
		if err := notePointer(getenv, backends.dataDir); err != nil {
			slog.Warn("payoutd admin --dev will need PAYOUTD_DEV_DIR", slog.Any("error", err))
		}
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
	// Webhook retries a user can watch in the inbox: the first after 5 s,
	// an attempt given up after 5 s.
	base.WebhookRetryBase, base.WebhookTimeout = 5*time.Second, 5*time.Second
	// This machine only: dev prints its operator password, serves the
	// webhook inbox without a login and pays anything in its sandbox, so
	// another machine on the network must not reach it unless HTTP_ADDR
	// says so (":8080" for a VM or container's host).
	base.HTTPAddr = devHTTPAddr
	// Read under staging's rules whatever APP_ENV says: dev is never
	// production, and a live key in the environment is refused here too.
	cfg, err := config.Load(func(name string) string {
		if name == "APP_ENV" {
			return string(models.Staging)
		}
		return getenv(name)
	}, base)
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
// database, locked for this run, and an in-memory Redis.
type devBackends struct {
	dataDir string
	// temporary: the folder was made for this run and goes with it.
	temporary bool
	lock      *dataDirLock
	redis     *miniredis.Miniredis
}

// startDevBackends makes the data folder (DEV_DATA_DIR, or a temporary
// one), takes its lock (a second dev on the folder is refused) and starts
// miniredis. On an error nothing is left held.
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
	lock, err := lockDataDir(b.dataDir)
	if err != nil {
		b.removeDataDir()
		return nil, err
	}
	b.lock = lock
	b.redis = miniredis.NewMiniRedis()
	if err := b.redis.Start(); err != nil {
		b.lock.release()
		b.removeDataDir()
		return nil, fmt.Errorf("start embedded redis: %w", err)
	}
	// It never evicts: it says so to the start's eviction check.
	if err := redisconn.AnswerEvictionPolicy(b.redis); err != nil {
		b.redis.Close()
		b.removeDataDir()
		return nil, fmt.Errorf("start embedded redis: %w", err)
	}
	return b, nil
}

// close stops Redis, lets the folder's lock go, then removes a temporary
// data folder. runDev defers it first, so it runs after the database is
// closed: the next dev on the folder finds it quiet.
func (b *devBackends) close() {
	b.redis.Close()
	b.lock.release()
	b.removeDataDir()
}

func (b *devBackends) removeDataDir() {
	if b.temporary {
		os.RemoveAll(b.dataDir)
	}
}

// devDatabaseFile is dev mode's SQLite database in its data folder.
const devDatabaseFile = "payoutd-dev.db"

// resumableState is the dev state of this run: loaded from a kept data
// folder (resumed) or new.
type resumableState struct {
	*devState
	resumed bool
}

// resume reads a kept data folder's state and makes cfg open its data as
// before: the same secrets key and operator password (the database's
// sealed secrets open only under that key). A first run, or a temporary
// folder, gets a new state of cfg's. A kept folder with a database but no
// state, a SECRETS_KEY of the caller's that differs from the folder's, or
// other --vendors than the folder's are refused with the reason, at start,
// rather than failing on every request later.
func (b *devBackends) resume(cfg *config.Config, getenv func(string) string, rails []devRail) (*resumableState, error) {
	fresh := &resumableState{devState: &devState{SecretsKey: hex.EncodeToString(cfg.SecretsKey), AdminUser: cfg.AdminUser,
		AdminPassword: cfg.AdminPassword, DatabaseURL: cfg.DatabaseURL, RedisURL: cfg.RedisURL, Rails: railNames(rails)}}
	if b.temporary {
		return fresh, nil
	}
	state, err := loadDevState(b.dataDir)
	if err != nil {
		return nil, err
	}
	if state == nil {
		if _, err := os.Stat(filepath.Join(b.dataDir, devDatabaseFile)); err == nil {
			return nil, fmt.Errorf("DEV_DATA_DIR %s holds a database but no %s (made by an earlier payoutd dev): its secrets cannot be opened; remove %s or use an empty folder",
				b.dataDir, devStateFile, devDatabaseFile)
		}
		return fresh, nil
	}
	key, err := state.secretsKey()
	if err != nil {
		return nil, err
	}
	if env := getenv("SECRETS_KEY"); env != "" && !strings.EqualFold(env, state.SecretsKey) {
		return nil, fmt.Errorf("SECRETS_KEY differs from the key the data in DEV_DATA_DIR %s is sealed with: unset it, or use another folder", b.dataDir)
	}
	if got, want := strings.Join(railNames(rails), ","), strings.Join(state.Rails, ","); got != want {
		return nil, fmt.Errorf("DEV_DATA_DIR %s was made with --vendors=%s: start it with the same, or use another folder", b.dataDir, want)
	}
	cfg.SecretsKey = key
	if getenv("ADMIN_PASSWORD") == "" {
		cfg.AdminUser, cfg.AdminPassword = state.AdminUser, state.AdminPassword
	}
	state.DatabaseURL, state.RedisURL = cfg.DatabaseURL, cfg.RedisURL
	return &resumableState{devState: state, resumed: state.Demo != nil}, nil
}

// serveDev runs the worker, the api server (on httpAddr) and the
// simulators, and keeps miniredis's clock moving, until ctx ends or one of
// them fails; ready is called with the address the api listens on once it
// does, and its error stops dev mode.
func serveDev(ctx context.Context, a *app.App, handler http.Handler, httpAddr string, mr *miniredis.Miniredis,
	sims []simulatedRail, ready func(addr string) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return advanceRedisClock(gctx, mr) })
	g.Go(func() error { return worker.Run(gctx, workerDeps(a)) })
	for _, s := range sims {
		g.Go(func() error { return s.serve(gctx) })
	}
	readyErr := make(chan error, 1)
	g.Go(func() error {
		return api.ListenAndServe(gctx, httpAddr, handler, func(addr string) { readyErr <- ready(addr) })
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

// record is the demo client as dev's state keeps it.
func (d *demoClient) record() *devDemoRecord {
	r := &devDemoRecord{Credentials: *d.creds}
	for _, w := range d.wallets {
		r.WalletIDs = append(r.WalletIDs, w.id)
	}
	return r
}

// restoreDemo is the demo client of a kept data folder, its wallets with
// their balances as stored now.
func restoreDemo(ctx context.Context, db *gorm.DB, r *devDemoRecord, rails []devRail) (*demoClient, error) {
	creds := r.Credentials
	demo := &demoClient{creds: &creds}
	i := 0
	for _, rail := range rails {
		for _, spec := range rail.wallets {
			if i >= len(r.WalletIDs) {
				return nil, fmt.Errorf("%s lists %d wallets, the rails have more", devStateFile, len(r.WalletIDs))
			}
			id, err := parseUUID(r.WalletIDs[i])
			if err != nil {
				return nil, err
			}
			w, err := models.NewStore(db).FindWallet(ctx, id)
			if err != nil {
				return nil, fmt.Errorf("wallet %s: %w", id, err)
			}
			demo.wallets = append(demo.wallets, demoWallet{spec: spec, id: r.WalletIDs[i], balance: w.Balance.Fixed4()})
			i++
		}
	}
	return demo, nil
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

// devHTTPAddr is where dev listens unless HTTP_ADDR says otherwise:
// loopback only.
const devHTTPAddr = "127.0.0.1:8080"

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
