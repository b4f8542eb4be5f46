// Package app is the composition root: it reads nothing but the checked
// configuration it is given and builds, once per process, the database
// handle, the one Redis pool, the task client, the vendors, the metrics
// and every service. The api, the worker, the admin commands, dev mode and
// the load tool receive what it built; none of them constructs a service.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/dispatch"
	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/internal/credentials"
	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/internal/inquirybudget"
	"github.com/payoutd/payoutd/internal/metrics"
	"github.com/payoutd/payoutd/internal/redisconn"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payments"
	"github.com/payoutd/payoutd/payouts"
	"github.com/payoutd/payoutd/tasks"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/breaker"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/sandboxacquirer"
	"github.com/payoutd/payoutd/vendors/snap"
	"github.com/payoutd/payoutd/vendors/vendorsim"
	"github.com/payoutd/payoutd/vendors/xendit"
	"github.com/payoutd/payoutd/webhooks"
)

// Migrations says what Build does about the database schema.
type Migrations int

const (
	// RequireMigrated refuses a schema with pending migrations (api, worker).
	RequireMigrated Migrations = iota
	// ApplyMigrations applies them (dev mode).
	ApplyMigrations
	// IgnoreMigrations does not look (the admin commands).
	IgnoreMigrations
)

// Options are what differs between the processes Build serves.
type Options struct {
	Migrations Migrations
	// Operator builds for the admin commands: nothing is counted (no
	// metrics), Redis is optional and an unparsable REDIS_URL only leaves
	// it out, and webhook events an operator frees are left to the
	// worker's sweep rather than enqueued.
	Operator bool
}

// The task client enqueues a commit's webhook events together (several at
// once), so that payouts' rules run no goroutines of their own.
var _ payouts.WebhookBatchQueue = (*tasks.Client)(nil)

// App is what one process runs on, built once.
type App struct {
	Config config.Config
	DB     *gorm.DB
	// Redis is the process's one go-redis pool; nil without REDIS_URL
	// (admin commands only).
	Redis *redis.Client
	// Queue is an asynq connection option on Redis's pool (SharedRedis):
	// the worker's asynq server and scheduler, the dashboard and the queue
	// gauges use it; nil without Redis.
	Queue asynq.RedisConnOpt
	// Tasks enqueues the services' work; nil without Redis.
	Tasks   *tasks.Client
	Sealer  *credentials.Sealer
	Vendors vendors.Registry
	// Breakers are the vendors' concurrency bounds and circuit breakers
	// (vendors/breaker), which Vendors go through; nil for the admin
	// commands.
	Breakers *breaker.Set
	Acquirer vendors.Acquirer
	// Metrics is nil for the admin commands (they count nothing).
	Metrics *metrics.Metrics
	Payouts *payouts.Service
	// Dispatch decides when Payouts' submits and status checks run.
	Dispatch *dispatch.Dispatcher
	Payments *payments.Service
	Webhooks *webhooks.Deliverer

	closers []func()
}

// Build opens the backends named by cfg (checked already) and builds the
// services on them. Close releases what it opened.
func Build(ctx context.Context, cfg config.Config, o Options) (_ *App, err error) {
	a := &App{Config: cfg}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	if a.DB, err = database.Open(cfg.DatabaseURL); err != nil {
		return nil, err
	}
	db := a.DB
	if err := database.LimitConns(db, cfg.DatabaseMaxConns); err != nil {
		return nil, err
	}
	a.closers = append(a.closers, func() {
		if sqlDB, err := db.DB(); err == nil {
			sqlDB.Close()
		}
	})
	switch o.Migrations {
	case RequireMigrated:
		pending, err := database.PendingMigrations(ctx, db)
		if err != nil {
			return nil, fmt.Errorf("read migration state: %w", err)
		}
		if pending > 0 {
			return nil, fmt.Errorf("the database schema is %d migration(s) behind: run `payoutd migrate` first", pending)
		}
	case ApplyMigrations:
		if _, err := database.Migrate(ctx, db); err != nil {
			return nil, err
		}
	}
	if err := a.openRedis(cfg, o.Operator); err != nil {
		return nil, err
	}
	if a.Sealer, err = cfg.Sealer(); err != nil {
		return nil, err
	}
	var guard func(vendors.Registry) vendors.Registry
	if !o.Operator {
		a.Metrics = metrics.New()
		// Every vendor call goes through its vendor's guard, and is
		// counted outside it (a refused call counts as breaker_open or
		// concurrency_limit).
		guard = func(reg vendors.Registry) vendors.Registry {
			reg, a.Breakers = breaker.Wrap(reg, BreakerOptions(cfg, a.Metrics))
			return vendors.Observed(reg, a.Metrics)
		}
	}
	if a.Vendors, err = composeVendors(cfg, db, guard); err != nil {
		return nil, err
	}
	if !o.Operator {
		if err := a.Metrics.CollectBreakers(a.Breakers); err != nil {
			return nil, err
		}
		logRailResults(slog.Default(), cfg, a.Vendors)
	}
	if a.Acquirer, err = Acquirer(cfg); err != nil {
		return nil, err
	}
	parts := Parts{Config: cfg, DB: db, Redis: a.Redis, Vendors: a.Vendors, Acquirer: a.Acquirer, Metrics: a.Metrics}
	if a.Breakers != nil {
		parts.Gate = a.Breakers
	}
	if a.Tasks != nil {
		parts.Queue = a.Tasks
	}
	if a.Redis != nil && !o.Operator {
		// Fresh payouts reach the workers' submit pumps, not a task each.
		parts.DueSignal = &RedisDue{Redis: a.Redis}
	}
	a.Payouts, a.Dispatch, a.Payments = NewServices(parts)
	if a.Redis != nil && !o.Operator {
		wctx, stop := context.WithCancel(context.Background())
		a.closers = append(a.closers, stop)
		SubscribeWakes(wctx, a.Redis, a.Dispatch)
	}
	var hookQueue webhooks.Queue
	if a.Tasks != nil && !o.Operator {
		hookQueue = a.Tasks
	}
	a.Webhooks = WebhookDeliverer(cfg, db, a.Sealer, hookQueue, a.Metrics)
	return a, nil
}

// openRedis opens the one pool (a single server or, through Sentinel, the
// primary of the moment) and puts the task client on it.
func (a *App) openRedis(cfg config.Config, operator bool) error {
	if cfg.RedisURL == "" {
		return nil
	}
	rdb, err := redisconn.Open(cfg.RedisURL)
	if err != nil {
		if operator {
			return nil
		}
		return fmt.Errorf("REDIS_URL: %w", err)
	}
	if !operator && cfg.RedisEvictionChecked {
		if err := checkEvictionPolicy(rdb); err != nil {
			rdb.Close()
			return fmt.Errorf("REDIS_URL: %w", err)
		}
	}
	a.Redis, a.Queue = rdb, SharedRedis{Client: rdb}
	a.Tasks = tasks.NewClient(a.Queue)
	a.closers = append(a.closers, func() { a.Tasks.Close() }, func() { rdb.Close() })
	return nil
}

// checkEvictionPolicy refuses a Redis that may evict keys
// (redisconn.CheckNoEviction). A Redis that does not answer at all is let
// through with a warning: the process starts as it would without the check
// and its requests meet the outage; the check runs again at the next start.
func checkEvictionPolicy(rdb *redis.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	unreachable, err := redisconn.CheckNoEviction(ctx, rdb)
	if unreachable {
		slog.Warn("Redis did not answer; its maxmemory-policy is not checked", slog.Any("error", err))
		return nil
	}
	return err
}

// Close releases what Build opened, last opened first.
func (a *App) Close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
	a.closers = nil
}

// Parts are what the services are built on. Build fills them from the
// configuration; tests and the load tool, which hold their own handles,
// fill them themselves.
type Parts struct {
	Config config.Config
	DB     *gorm.DB
	// Redis counts the inquiry budget (INQUIRY_REFUSAL_RATE_LIMIT) and,
	// with a submit wait, carries the wake-ups of waiting creates
	// (RedisWakes); nil: no budget, waiters re-check only.
	Redis    *redis.Client
	Vendors  vendors.Registry
	Acquirer vendors.Acquirer
	// Queue hands work to the worker; nil leaves it to the sweeps.
	Queue interface {
		payouts.Queue
		dispatch.Queue
		payments.Queue
	}
	Metrics *metrics.Metrics
	// DueSignal, when set, tells the workers' submit pumps of fresh
	// payouts instead of a submit task each (dispatch.Options.DueSignal).
	DueSignal dispatch.DueSignal
	// Now is the services' clock; nil: time.Now.
	Now func() time.Time
	// Gate holds back the submits of vendors whose breaker is open
	// (payouts.Options.Gate); nil: none.
	Gate vendors.Gate
}

// payoutServices counts the payout services built in this process (the
// test that dev mode runs one reads it).
var payoutServices atomic.Int64

// PayoutServicesBuilt is how many payout services this process built.
func PayoutServicesBuilt() int64 { return payoutServices.Load() }

// NewServices builds the payout service with its dispatcher, and the
// payment service, with every option the configuration sets. It is the
// only place any of them is constructed.
func NewServices(p Parts) (*payouts.Service, *dispatch.Dispatcher, *payments.Service) {
	var payoutQueue payouts.Queue
	var submitQueue dispatch.Queue
	var paymentQueue payments.Queue
	if p.Queue != nil {
		payoutQueue, submitQueue, paymentQueue = p.Queue, p.Queue, p.Queue
	}
	var budget payouts.InquiryBudget
	if p.Redis != nil && p.Config.InquiryRefusalRateLimit > 0 {
		budget = inquirybudget.New(p.Redis, p.Config.InquiryRefusalRateLimit)
	}
	// With a submit wait, the API submits inline and every process tells
	// the waiting creates of the moves out of VERIFIED.
	var notifier dispatch.Notifier
	if p.Redis != nil && p.Config.DisbursementSubmitWait > 0 {
		notifier = RedisWakes{Redis: p.Redis}
	}
	payoutServices.Add(1)
	po, dp := dispatch.New(payouts.Options{DB: p.DB, Vendors: p.Vendors, Queue: payoutQueue,
		LockTTL: p.Config.DisbursementLockTTL, SubmitLease: p.Config.DisbursementSubmitLease, Now: p.Now, Metrics: p.Metrics,
		InquiryBudget: budget, ReturnWatch: p.Config.PayoutReturnWatch(),
		SubmitInline: p.Config.DisbursementSubmitWait > 0, Gate: p.Gate},
		dispatch.Options{Queue: submitQueue, DueSignal: p.DueSignal, Notifier: notifier})
	pa := payments.New(payments.Options{DB: p.DB, Acquirer: p.Acquirer, Queue: paymentQueue,
		Calendar: SettlementCalendar(p.Config), Now: p.Now, Metrics: p.Metrics})
	return po, dp, pa
}

// BreakerOptions are the vendors' guards as cfg configures them
// (VENDOR_MAX_CONCURRENCY, VENDOR_QUEUE_WAIT, VENDOR_BREAKER_FAILURES,
// VENDOR_BREAKER_OPEN_FOR), their transitions counted in m (may be nil).
func BreakerOptions(cfg config.Config, m *metrics.Metrics) breaker.Options {
	return breaker.Options{MaxConcurrency: cfg.VendorMaxConcurrency, QueueWait: cfg.VendorQueueWait,
		Failures: cfg.VendorBreakerFailures, OpenFor: cfg.VendorBreakerOpenFor,
		OnStateChange: func(vendor string, from, to breaker.State) { m.BreakerTransition(vendor, from.String(), to.String()) }}
}

// SettlementCalendar is the payment settlement calendar cfg configures
// (SETTLEMENT_HOLIDAYS, SETTLEMENT_DELAY). It is built here rather than in
// config, which is plumbing and imports no lifecycle package.
func SettlementCalendar(cfg config.Config) payments.Calendar {
	return payments.Calendar{Holidays: cfg.SettlementHolidays, Delay: cfg.SettlementDelay}
}

// WebhookDeliverer builds the deliverer: in production only https and no
// private addresses (but WEBHOOK_ALLOWED_NETWORKS); elsewhere anything.
// queue and m may be nil.
func WebhookDeliverer(cfg config.Config, db *gorm.DB, sealer *credentials.Sealer, queue webhooks.Queue, m *metrics.Metrics) *webhooks.Deliverer {
	guard := webhooks.Guard{}
	if cfg.Env == models.Production {
		guard = webhooks.ProductionGuard(cfg.WebhookAllowedNetworks)
	}
	return webhooks.New(webhooks.Options{DB: db, Sealer: sealer, Guard: guard, Timeout: cfg.WebhookTimeout, Queue: queue, Metrics: m,
		Schedule: webhooks.Schedule{Base: cfg.WebhookRetryBase, Cap: cfg.WebhookRetryCap, Window: cfg.WebhookRetryWindow}})
}

// Acquirer is the payment acquirer: the sandbox acquirer (sandboxpay).
func Acquirer(cfg config.Config) (*sandboxacquirer.Acquirer, error) {
	return sandboxacquirer.New(sandboxacquirer.Options{Secret: cfg.AcquirerCallbackSecret()})
}

// VendorRegistry returns the payout vendors: the sandbox vendors over HTTP
// when VENDORSIM_URL is set, otherwise in this process, their accepted
// payouts kept in the database so that the api, the workers and the admin
// CLI share them; and beside them snap:<bank> for each bank of SNAP_BANKS,
// and xendit when XENDIT_SECRET_KEY is set, asking the SNAP bank of
// XENDIT_INQUIRY_BANK for holder names.
func VendorRegistry(cfg config.Config, db *gorm.DB) (vendors.Registry, error) {
	return composeVendors(cfg, db, nil)
}

// composeVendors is VendorRegistry with guard applied to the registry
// (nil: none): a vendor that borrows another's inquiry asks the guarded
// lender, whose breaker then refuses both fast while it is down.
func composeVendors(cfg config.Config, db *gorm.DB, guard func(vendors.Registry) vendors.Registry) (vendors.Registry, error) {
	var reg vendors.Registry
	if cfg.VendorSim.URL != "" {
		var err error
		if reg, err = vendorsim.NewRegistry(cfg.VendorSim.URL, cfg.VendorSim.Secrets, vendorsim.ClientOptions{}); err != nil {
			return nil, err
		}
	} else {
		reg = sandbox.Registry(sandbox.Options{CompleteAfter: cfg.SandboxCompleteAfter, Store: sandbox.NewDBStore(db)})
	}
	for _, b := range cfg.SnapBanks {
		v, err := SnapVendor(b, db)
		if err != nil {
			return nil, err
		}
		reg[v.Name()] = v
	}
	var inquiry *vendors.InquiryRoute
	if cfg.Xendit.SecretKey != "" {
		o := xendit.Options{BaseURL: cfg.Xendit.BaseURL, SecretKey: cfg.Xendit.SecretKey, CallbackToken: cfg.Xendit.CallbackToken}
		if cfg.XenditInquiryBank != "" {
			inquiry = vendors.NewInquiryRoute(snap.BankConfig{Bank: cfg.XenditInquiryBank}.Vendor())
			o.Inquirer = inquiry
		}
		x, err := xendit.New(o)
		if err != nil {
			return nil, err
		}
		reg[x.Name()] = x
	}
	if guard != nil {
		reg = guard(reg)
	}
	if inquiry != nil {
		inquiry.Use(reg)
	}
	return reg, nil
}

// SnapVendor is the SNAP BI vendor of one configured bank. Its transfers'
// X-EXTERNAL-ID, transactionDate and referenceNo are kept in the database
// when there is one, so that every process finds them.
func SnapVendor(b snap.BankConfig, db *gorm.DB) (*snap.Vendor, error) {
	o := snap.Options{Bank: b.Bank, BaseURL: b.BaseURL, PartnerID: b.PartnerID, ClientKey: b.ClientKey,
		ClientSecret: b.ClientSecret, ChannelID: b.ChannelID, SourceAccountNo: b.SourceAccount,
		PrivateKey: b.PrivateKey, BankPublicKey: b.BankPublicKey, Notifications: b.Notifications}
	if db != nil {
		o.Store = snap.NewDBStore(db, b.Bank)
	}
	v, err := snap.New(o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Vendor(), err)
	}
	return v, nil
}

// logRailResults says, for Xendit and each SNAP bank configured, how the
// rail's results reach the service: by notification, or by status inquiry
// alone, its paid payouts then asked about returns for the return watch
// (a warning when that watch is off: a return would go unseen).
func logRailResults(log *slog.Logger, cfg config.Config, reg vendors.Registry) {
	var rails []string
	if cfg.Xendit.SecretKey != "" {
		rails = append(rails, xendit.Name)
	}
	for _, b := range cfg.SnapBanks {
		rails = append(rails, b.Vendor())
	}
	watch := cfg.PayoutReturnWatch()
	for _, name := range rails {
		v, err := reg.Get(name)
		switch {
		case err != nil:
			continue
		case vendors.Notifies(v):
			log.Info("rail results come by notification, each confirmed by status inquiry", slog.String("vendor", name))
		case watch > 0:
			log.Info("rail results come by status inquiry; returns are watched by status inquiry for the return window after payment",
				slog.String("vendor", name), slog.Duration("return_watch", watch))
		default:
			log.Warn("rail results come by status inquiry and the return watch is off (DISBURSEMENT_RETURN_WATCH=0): a return of a paid payout is not learnt",
				slog.String("vendor", name))
		}
	}
}

// SharedRedis is an asynq.RedisConnOpt that hands asynq (its server,
// scheduler, inspector, client) and asynqmon the process's go-redis pool
// instead of a pool of their own. They close what they are handed when
// they stop; that Close is a no-op here, and the pool is closed once, by
// App.Close.
type SharedRedis struct{ Client *redis.Client }

// MakeRedisClient implements asynq.RedisConnOpt.
func (s SharedRedis) MakeRedisClient() any { return unclosable{s.Client} }

type unclosable struct{ *redis.Client }

func (unclosable) Close() error { return nil }
