// Package config reads the service's configuration from the environment
// (docs/configuration.md lists it) and validates it at start with messages that name
// the variable and say what is wrong.
//
// Each vendor adapter owns its settings (their names, defaults and
// checks: xendit.LoadConfig, snap.LoadConfig, vendorsim.LoadConfig); Load
// composes them with the service's own and keeps the checks that span
// adapters (XENDIT_INQUIRY_BANK names a bank of SNAP_BANKS).
package config

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/payoutd/payoutd/internal/credentials"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors/snap"
	"github.com/payoutd/payoutd/vendors/vendorsim"
	"github.com/payoutd/payoutd/vendors/xendit"
)

// Config is the whole configuration of api, worker, migrate and admin.
type Config struct {
	DatabaseURL string
	RedisURL    string
	// RedisEvictionChecked (REDIS_EVICTION_CHECK=skip turns it off) makes
	// api and worker refuse a Redis whose maxmemory-policy may evict keys:
	// the used-signature records, task leases and outbox markers must stay
	// until they expire. Off only for a managed Redis that hides CONFIG,
	// after the operator checked the policy in its console.
	RedisEvictionChecked bool
	HTTPAddr             string
	Env                  models.Environment
	// MetricsAddr is where the worker serves /metrics (METRICS_ADDR);
	// empty, it serves none. The api serves /metrics on HTTPAddr.
	MetricsAddr string

	// SecretsKey encrypts signing and callback secrets and webhook URLs at
	// rest (32 bytes).
	SecretsKey []byte
	// SecretsKeyPrevious (SECRETS_KEY_PREVIOUS) is the key being rotated
	// away from: values sealed under it are still opened, never sealed.
	SecretsKeyPrevious []byte

	AdminUser     string
	AdminPassword string
	// OpsReadOnly mounts the queue dashboard read-only (OPS_READ_ONLY):
	// operators see the queues but cannot pause, delete or run tasks.
	OpsReadOnly bool

	// TrustedProxies are the peers whose X-Forwarded-For is believed.
	TrustedProxies []netip.Prefix

	// AuthCacheTTL is how long an API instance may keep an authenticated
	// client in memory (AUTH_CACHE_TTL; 0 reads it on every request). A
	// change announced through Redis reaches it at once; the TTL bounds a
	// lost announcement.
	AuthCacheTTL time.Duration

	DisbursementLockTTL    time.Duration
	DisbursementSubmitWait time.Duration
	// DisbursementSubmitLease bounds a vendor submit call: an unanswered
	// submit is resubmitted or expired only after it, and only when the
	// vendor does not know the payout. Longer than any vendor timeout.
	DisbursementSubmitLease time.Duration
	// SettlementDelay, when set, replaces the next-business-day rule.
	SettlementDelay time.Duration
	// SettlementHolidays are dates (Asia/Jakarta) nothing settles on,
	// besides weekends: SETTLEMENT_HOLIDAYS=2026-12-25,2027-01-01.
	SettlementHolidays   map[string]bool
	SandboxCompleteAfter time.Duration
	PublicBaseURL        string
	LogLevel             slog.Level

	// Webhook delivery: per-attempt timeout, the retry schedule (base wait,
	// cap, and the window over which attempts are made) and the networks
	// production may deliver to although private.
	WebhookTimeout         time.Duration
	WebhookRetryBase       time.Duration
	WebhookRetryCap        time.Duration
	WebhookRetryWindow     time.Duration
	WebhookAllowedNetworks []netip.Prefix

	// AcquirerSecret signs and verifies the sandbox acquirer's payment
	// notifications (ACQUIRER_SECRET); by default it is derived from
	// SECRETS_KEY, so every process of one deployment agrees on it.
	AcquirerSecret string

	// VendorSim, with its URL set, makes the service talk to the sandbox
	// vendors over HTTP (`payoutd vendorsim`) instead of in-process: its
	// Token is the bearer token of the calls and its CallbackSecret
	// verifies the simulator's callbacks. Two secrets, never equal:
	// whoever may call the vendor must not be able to sign a callback that
	// pays out.
	VendorSim vendorsim.Config

	// Xendit, with its SecretKey set, adds the xendit vendor (Xendit
	// Payouts v2) to the registry (XENDIT_*).
	Xendit xendit.Config
	// XenditInquiryBank (XENDIT_INQUIRY_BANK) names a bank of SNAP_BANKS
	// whose external account inquiry resolves the holder's name of a
	// Xendit payout's recipient: Xendit's own API has no name inquiry and
	// requires the name on every payout. Empty: merchants supply
	// account_holder_name themselves.
	XenditInquiryBank string

	// SnapBanks are the banks reached over SNAP BI (SNAP_BANKS and each
	// bank's SNAP_<B>_* variables): each adds the vendor "snap:<bank>".
	SnapBanks []snap.BankConfig

	// QuoteRateLimit is how many quotes a client may ask per minute
	// (QUOTE_RATE_LIMIT; 0: unlimited). Each quote is a real-time account
	// inquiry, so an unlimited quote enumerates accounts at full speed.
	QuoteRateLimit int
	// InquiryRefusalRateLimit is how many creates per minute a client may
	// have refused after their account inquiry (402, 422 inactive,
	// unresolved, below minimum) before further creates are refused with
	// 429 ahead of the inquiry (INQUIRY_REFUSAL_RATE_LIMIT; 0: unlimited).
	// Creates that succeed never count.
	InquiryRefusalRateLimit int
	// ClientWriteRateLimit and ClientReadRateLimit are how many requests
	// per second one client may send to the merchant routes, counted in
	// Redis across every API instance: writes (POST) and reads (GET) apart
	// (CLIENT_WRITE_RATE_LIMIT, CLIENT_READ_RATE_LIMIT; 0: unlimited). A
	// client's own setting (payoutd admin client update
	// --write-rate-limit/--read-rate-limit) replaces the default.
	ClientWriteRateLimit int
	ClientReadRateLimit  int
	// AuthFailureRateLimit is how many failed authentications (an unknown
	// or invalid API key, one of the legacy generation or the other
	// environment, a wrong x-signature) one source address may make per
	// minute before its requests are refused with 429
	// (AUTH_FAILURE_RATE_LIMIT; 0: unlimited).
	AuthFailureRateLimit int
	// PrometheusURL is the Prometheus that scrapes the service
	// (PROMETHEUS_URL, optional): the queue dashboard's graphs query it.
	PrometheusURL string
	// DatabaseMaxConns is how many PostgreSQL connections the process
	// opens at most (DATABASE_MAX_CONNS): every process takes up to this
	// many of the server's max_connections.
	DatabaseMaxConns int
	// MaxInFlight bounds the requests one API process serves at once
	// (MAX_IN_FLIGHT; 0: unbounded): beyond it a request is answered 503
	// with Retry-After at once instead of queueing behind the others.
	MaxInFlight int

	// DisbursementReturnWatch is how long a paid payout of a vendor that
	// does not notify (vendors.Notifies: the in-process sandbox, a SNAP
	// bank without notifications) is asked about a return by status
	// inquiry (DISBURSEMENT_RETURN_WATCH; 0 turns the watch off).
	DisbursementReturnWatch time.Duration

	// Each payout vendor's guard in each process (vendors/breaker): at
	// most VendorMaxConcurrency calls under way (VENDOR_MAX_CONCURRENCY),
	// a call waiting up to VendorQueueWait for a slot before it is
	// refused (VENDOR_QUEUE_WAIT); a circuit breaker that opens after
	// VendorBreakerFailures consecutive failures (VENDOR_BREAKER_FAILURES)
	// and stays open VendorBreakerOpenFor before a probe
	// (VENDOR_BREAKER_OPEN_FOR).
	VendorMaxConcurrency  int
	VendorQueueWait       time.Duration
	VendorBreakerFailures int
	VendorBreakerOpenFor  time.Duration
}

// PayoutReturnWatch is DisbursementReturnWatch as payouts.Options takes
// it: negative for off.
func (c Config) PayoutReturnWatch() time.Duration {
	if c.DisbursementReturnWatch == 0 {
		return -1
	}
	return c.DisbursementReturnWatch
}

// Defaults are the values used when a variable is unset.
func Defaults() Config {
	return Config{
		HTTPAddr:                ":8080",
		RedisEvictionChecked:    true,
		Env:                     models.Production,
		AuthCacheTTL:            2 * time.Second,
		DisbursementLockTTL:     30 * time.Minute,
		DisbursementSubmitWait:  5 * time.Second,
		DisbursementSubmitLease: 30 * time.Second,
		DisbursementReturnWatch: 72 * time.Hour,
		WebhookTimeout:          10 * time.Second,
		WebhookRetryBase:        30 * time.Second,
		WebhookRetryCap:         6 * time.Hour,
		WebhookRetryWindow:      72 * time.Hour,
		SandboxCompleteAfter:    2 * time.Second,
		PublicBaseURL:           "http://localhost:8080",
		LogLevel:                slog.LevelInfo,
		QuoteRateLimit:          60,
		ClientWriteRateLimit:    100,
		ClientReadRateLimit:     200,
		MaxInFlight:             256,
		DatabaseMaxConns:        32,
		InquiryRefusalRateLimit: 60,
		AuthFailureRateLimit:    30,
		Xendit:                  xendit.DefaultConfig(),
		VendorMaxConcurrency:    64,
		VendorQueueWait:         time.Second,
		VendorBreakerFailures:   5,
		VendorBreakerOpenFor:    10 * time.Second,
	}
}

// Load reads the configuration through getenv (os.Getenv in main), starting
// from base. Every problem is reported, not only the first.
func Load(getenv func(string) string, base Config) (Config, error) {
	c := base
	l := &loader{getenv: getenv}
	l.environment(&c)
	l.backends(&c)
	l.http(&c)
	l.operators(&c)
	l.workerMetrics(&c)
	l.secrets(&c)
	l.disbursements(&c)
	l.settlement(&c)
	l.webhooks(&c)
	l.vendorSim(&c)
	l.vendorGuards(&c)
	l.xendit(&c)
	l.snap(&c)
	l.xenditInquiryBank(&c)
	return c, errors.Join(l.errs...)
}

// loader reads variables through getenv and collects every problem it
// finds; a variable that is unset or blank leaves its setting as it was.
type loader struct {
	getenv func(string) string
	errs   []error
}

func (l *loader) get(name string) string { return strings.TrimSpace(l.getenv(name)) }

func (l *loader) fail(err error) { l.errs = append(l.errs, err) }

func (l *loader) str(name string, dst *string) {
	if v := l.get(name); v != "" {
		*dst = v
	}
}

func (l *loader) dur(name string, dst *time.Duration) {
	v := l.get(name)
	if v == "" {
		return
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		l.fail(fmt.Errorf("%s=%q: want a non-negative Go duration such as 10s, 30m or 24h", name, v))
		return
	}
	*dst = d
}

func (l *loader) perMinute(name string, dst *int) {
	v := l.get(name)
	if v == "" {
		return
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		l.fail(fmt.Errorf("%s=%q: want a whole number of requests per minute, 0 or more (0 turns the limit off)", name, v))
		return
	}
	*dst = n
}

// count reads a whole number of unit, 0 or more (0 turns the bound off).
func (l *loader) count(name, unit string, dst *int) {
	v := l.get(name)
	if v == "" {
		return
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		l.fail(fmt.Errorf("%s=%q: want a whole number of %s, 0 or more (0 turns the limit off)", name, v, unit))
		return
	}
	*dst = n
}

func (l *loader) cidrs(name string, dst *[]netip.Prefix) {
	v := l.get(name)
	if v == "" {
		return
	}
	prefixes, err := models.ParseCIDRList(v)
	if err != nil {
		l.fail(fmt.Errorf("%s: %w", name, err))
		return
	}
	*dst = prefixes
}

// environment reads APP_ENV and LOG_LEVEL.
func (l *loader) environment(c *Config) {
	if v := l.get("APP_ENV"); v != "" {
		env, err := models.ParseEnvironment(v)
		if err != nil {
			l.fail(fmt.Errorf("APP_ENV: %w", err))
		} else {
			c.Env = env
		}
	}
	if v := l.get("LOG_LEVEL"); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			l.fail(fmt.Errorf("LOG_LEVEL=%q: want debug, info, warn or error", v))
		}
	}
}

// backends reads where the database and Redis are; Check says whether a
// subcommand needs them.
func (l *loader) backends(c *Config) {
	l.str("DATABASE_URL", &c.DatabaseURL)
	l.str("REDIS_URL", &c.RedisURL)
	switch v := l.get("REDIS_EVICTION_CHECK"); v {
	case "":
	case "enforce":
		c.RedisEvictionChecked = true
	case "skip":
		c.RedisEvictionChecked = false
	default:
		l.fail(fmt.Errorf("REDIS_EVICTION_CHECK=%q: want enforce (the default) or skip (a managed Redis that hides CONFIG, its maxmemory-policy checked to be noeviction by hand)", v))
	}
}

// http reads the API server's settings: its address and public URL, the
// proxies it believes, how long it caches a client, and its rate limits.
func (l *loader) http(c *Config) {
	l.str("HTTP_ADDR", &c.HTTPAddr)
	l.str("PUBLIC_BASE_URL", &c.PublicBaseURL)
	if err := checkHTTPURL("PUBLIC_BASE_URL", c.PublicBaseURL, "https://pay.example.com"); err != nil {
		l.fail(err)
	}
	l.cidrs("TRUSTED_PROXIES", &c.TrustedProxies)
	l.dur("AUTH_CACHE_TTL", &c.AuthCacheTTL)
	if c.AuthCacheTTL > time.Minute {
		l.fail(fmt.Errorf("AUTH_CACHE_TTL=%s: at most 1m (a lost change announcement keeps a rotated key working that long)", c.AuthCacheTTL))
	}
	l.perMinute("QUOTE_RATE_LIMIT", &c.QuoteRateLimit)
	l.perMinute("INQUIRY_REFUSAL_RATE_LIMIT", &c.InquiryRefusalRateLimit)
	l.perMinute("AUTH_FAILURE_RATE_LIMIT", &c.AuthFailureRateLimit)
	l.count("CLIENT_WRITE_RATE_LIMIT", "requests per second", &c.ClientWriteRateLimit)
	l.count("CLIENT_READ_RATE_LIMIT", "requests per second", &c.ClientReadRateLimit)
	l.count("MAX_IN_FLIGHT", "requests", &c.MaxInFlight)
	l.count("DATABASE_MAX_CONNS", "connections", &c.DatabaseMaxConns)
	l.str("PROMETHEUS_URL", &c.PrometheusURL)
	if c.PrometheusURL != "" {
		if err := checkHTTPURL("PROMETHEUS_URL", c.PrometheusURL, "http://prometheus:9090"); err != nil {
			l.fail(err)
		}
	}
}

// operators reads who may use the operators' routes and whether the queue
// dashboard is read-only.
func (l *loader) operators(c *Config) {
	l.str("ADMIN_USER", &c.AdminUser)
	l.str("ADMIN_PASSWORD", &c.AdminPassword)
	if v := l.get("OPS_READ_ONLY"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			l.fail(fmt.Errorf("OPS_READ_ONLY=%q: want true or false", v))
		} else {
			c.OpsReadOnly = b
		}
	}
}

// workerMetrics reads where the worker serves /metrics, which answers only
// to the operators: it comes after operators.
func (l *loader) workerMetrics(c *Config) {
	l.str("METRICS_ADDR", &c.MetricsAddr)
	if c.MetricsAddr == "" {
		return
	}
	if _, port, err := net.SplitHostPort(c.MetricsAddr); err != nil || port == "" {
		l.fail(fmt.Errorf("METRICS_ADDR=%q: want host:port or :port, such as :9090", c.MetricsAddr))
	}
	if c.AdminUser == "" || c.AdminPassword == "" {
		l.fail(errors.New("METRICS_ADDR needs ADMIN_USER and ADMIN_PASSWORD: /metrics answers only to them"))
	} else if err := c.checkAdminPassword(); err != nil {
		l.fail(err)
	}
}

// secrets reads the keys secrets are sealed under and the sandbox
// acquirer's notification secret.
func (l *loader) secrets(c *Config) {
	if v := l.get("SECRETS_KEY"); v != "" {
		key, err := credentials.ParseSecretsKey(v)
		if err != nil {
			l.fail(err)
		} else {
			c.SecretsKey = key
		}
	}
	if v := l.get("SECRETS_KEY_PREVIOUS"); v != "" {
		key, err := credentials.ParseSecretsKey(v)
		if err != nil {
			l.fail(fmt.Errorf("SECRETS_KEY_PREVIOUS: %w", err))
		} else {
			c.SecretsKeyPrevious = key
		}
	}
	l.str("ACQUIRER_SECRET", &c.AcquirerSecret)
}

// disbursements reads the payout lifecycle's timings, the sandbox
// vendor's among them.
func (l *loader) disbursements(c *Config) {
	l.dur("DISBURSEMENT_LOCK_TTL", &c.DisbursementLockTTL)
	l.dur("DISBURSEMENT_SUBMIT_WAIT", &c.DisbursementSubmitWait)
	l.dur("DISBURSEMENT_SUBMIT_LEASE", &c.DisbursementSubmitLease)
	l.dur("DISBURSEMENT_RETURN_WATCH", &c.DisbursementReturnWatch)
	l.dur("SANDBOX_COMPLETE_AFTER", &c.SandboxCompleteAfter)
}

// settlement reads the payment settlement calendar: a fixed delay, or the
// holidays the next-business-day rule skips.
func (l *loader) settlement(c *Config) {
	l.dur("SETTLEMENT_DELAY", &c.SettlementDelay)
	if v := l.get("SETTLEMENT_HOLIDAYS"); v != "" {
		days, err := parseHolidays(v)
		if err != nil {
			l.fail(fmt.Errorf("SETTLEMENT_HOLIDAYS: %w", err))
		} else {
			c.SettlementHolidays = days
		}
	}
}

// parseHolidays reads SETTLEMENT_HOLIDAYS: dates as YYYY-MM-DD separated
// by commas, keyed as payments.Calendar.Holidays wants them.
func parseHolidays(s string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		d, err := time.Parse(time.DateOnly, part)
		if err != nil {
			return nil, fmt.Errorf("holiday %q: want a date such as 2026-12-25", part)
		}
		out[d.Format(time.DateOnly)] = true
	}
	return out, nil
}

// webhooks reads webhook delivery: the attempt timeout and retry schedule,
// none of which may be zero, and the private networks production may
// deliver to.
func (l *loader) webhooks(c *Config) {
	schedule := []struct {
		name string
		dst  *time.Duration
	}{
		{"WEBHOOK_TIMEOUT", &c.WebhookTimeout},
		{"WEBHOOK_RETRY_BASE", &c.WebhookRetryBase},
		{"WEBHOOK_RETRY_CAP", &c.WebhookRetryCap},
		{"WEBHOOK_RETRY_WINDOW", &c.WebhookRetryWindow},
	}
	for _, s := range schedule {
		l.dur(s.name, s.dst)
	}
	for _, s := range schedule {
		if *s.dst <= 0 {
			l.fail(fmt.Errorf("%s must be greater than zero", s.name))
		}
	}
	l.cidrs("WEBHOOK_ALLOWED_NETWORKS", &c.WebhookAllowedNetworks)
}

// vendorSim reads how to reach `payoutd vendorsim` over HTTP, if at all
// (vendorsim.LoadConfig).
func (l *loader) vendorSim(c *Config) {
	var err error
	c.VendorSim, err = vendorsim.LoadConfig(l.getenv, c.Env, c.VendorSim)
	l.adapter(err)
}

// adapter collects what an adapter's loader reported, if anything.
func (l *loader) adapter(err error) {
	if err != nil {
		l.fail(err)
	}
}

// vendorGuards reads each vendor's concurrency bound and circuit breaker;
// none may be zero.
func (l *loader) vendorGuards(c *Config) {
	l.positive("VENDOR_MAX_CONCURRENCY", &c.VendorMaxConcurrency, "calls under way to one vendor from one process, such as 64")
	l.positive("VENDOR_BREAKER_FAILURES", &c.VendorBreakerFailures, "consecutive failures that open a vendor's breaker, such as 5")
	l.dur("VENDOR_QUEUE_WAIT", &c.VendorQueueWait)
	l.dur("VENDOR_BREAKER_OPEN_FOR", &c.VendorBreakerOpenFor)
	if c.VendorQueueWait <= 0 {
		l.fail(errors.New("VENDOR_QUEUE_WAIT must be greater than zero (how long a vendor call waits for a slot, such as 1s)"))
	}
	if c.VendorBreakerOpenFor <= 0 {
		l.fail(errors.New("VENDOR_BREAKER_OPEN_FOR must be greater than zero (how long an open breaker refuses calls before a probe, such as 10s)"))
	}
}

// positive reads a whole number of at least 1; what names what it counts.
func (l *loader) positive(name string, dst *int, what string) {
	v := l.get(name)
	if v == "" {
		return
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		l.fail(fmt.Errorf("%s=%q: want a whole number, 1 or more: %s", name, v, what))
		return
	}
	*dst = n
}

// xendit reads the Xendit settings (xendit.LoadConfig).
func (l *loader) xendit(c *Config) {
	var err error
	c.Xendit, err = xendit.LoadConfig(l.getenv, c.Env, c.Xendit)
	l.adapter(err)
}

// snap reads SNAP_BANKS and each bank's variables (snap.LoadConfig).
func (l *loader) snap(c *Config) {
	banks, err := snap.LoadConfig(l.getenv, c.Env)
	c.SnapBanks = append(c.SnapBanks, banks...)
	l.adapter(err)
}

// xenditInquiryBank reads XENDIT_INQUIRY_BANK, which must name a bank
// configured in SNAP_BANKS, and only with Xendit configured.
func (l *loader) xenditInquiryBank(c *Config) {
	l.str("XENDIT_INQUIRY_BANK", &c.XenditInquiryBank)
	c.XenditInquiryBank = strings.ToLower(strings.TrimSpace(c.XenditInquiryBank))
	if c.XenditInquiryBank == "" {
		return
	}
	if c.Xendit.SecretKey == "" {
		l.fail(errors.New("XENDIT_INQUIRY_BANK is set without XENDIT_SECRET_KEY: it names the SNAP bank that resolves holder names for Xendit payouts"))
		return
	}
	for _, b := range c.SnapBanks {
		if b.Bank == c.XenditInquiryBank {
			return
		}
	}
	l.fail(fmt.Errorf("XENDIT_INQUIRY_BANK=%s is not a configured SNAP bank: list it in SNAP_BANKS with its SNAP_%s_* variables, or leave XENDIT_INQUIRY_BANK empty (merchants then send account_holder_name)",
		c.XenditInquiryBank, strings.ToUpper(c.XenditInquiryBank)))
}

// Needs says which parts of the configuration a subcommand uses.
type Needs struct {
	Database bool
	Redis    bool
	Secrets  bool
	// Operators: the subcommand serves the operators' routes (/ops,
	// /debug, /metrics) behind ADMIN_USER / ADMIN_PASSWORD.
	Operators bool
}

// MinAdminPasswordLength is the shortest ADMIN_PASSWORD a server of the
// operators' routes accepts: basic auth is guessable online, and the
// routes pause payouts.
const MinAdminPasswordLength = 12

// checkAdminPassword refuses a configured ADMIN_PASSWORD that is too
// short; an empty one leaves the operators' routes answering 401 to all.
// The message never shows the password.
func (c Config) checkAdminPassword() error {
	if n := utf8.RuneCountInString(c.AdminPassword); n > 0 && n < MinAdminPasswordLength {
		return fmt.Errorf("ADMIN_PASSWORD is too short (%d characters): at least %d, e.g. from `openssl rand -hex 16`; it guards the queue dashboard, /metrics and /debug/pprof",
			n, MinAdminPasswordLength)
	}
	return nil
}

// Check reports what a subcommand needs and is missing. The service refuses
// to run without SECRETS_KEY in production and in staging alike: secrets
// would otherwise be sealed with a key anyone can derive.
func (c Config) Check(n Needs) error {
	var errs []error
	if n.Database && c.DatabaseURL == "" {
		errs = append(errs, errors.New("DATABASE_URL is required (postgres://user:pass@host:5432/db?sslmode=disable)"))
	}
	if n.Redis && c.RedisURL == "" {
		errs = append(errs, errors.New("REDIS_URL is required (redis://host:6379/0)"))
	}
	if n.Operators {
		if err := c.checkAdminPassword(); err != nil {
			errs = append(errs, err)
		}
	}
	if n.Secrets && c.SecretsKey == nil {
		errs = append(errs, fmt.Errorf("SECRETS_KEY is required (APP_ENV=%s): 64 hex characters, e.g. from `openssl rand -hex 32`; `payoutd dev` makes its own", c.Env))
	}
	return errors.Join(errs...)
}

// AcquirerCallbackSecret is ACQUIRER_SECRET, or one derived from
// SECRETS_KEY when it is unset.
func (c Config) AcquirerCallbackSecret() string {
	if c.AcquirerSecret != "" {
		return c.AcquirerSecret
	}
	mac := hmac.New(sha256.New, c.SecretsKey)
	mac.Write([]byte("payoutd sandbox acquirer notifications"))
	return hex.EncodeToString(mac.Sum(nil))
}

// CheckoutTokenKey keys the tokens that bind a staging checkout page's
// "Simulate payment" to its payment; derived from SECRETS_KEY, so every API
// instance agrees on it and it is never the key itself.
func (c Config) CheckoutTokenKey() []byte {
	mac := hmac.New(sha256.New, c.SecretsKey)
	mac.Write([]byte("payoutd checkout simulate token"))
	return mac.Sum(nil)
}

// Sealer returns the encrypter of secrets at rest: it seals under
// SECRETS_KEY and, during a rotation, also opens what SECRETS_KEY_PREVIOUS
// sealed.
func (c Config) Sealer() (*credentials.Sealer, error) {
	if c.SecretsKey == nil {
		return nil, errors.New("SECRETS_KEY is required")
	}
	s, err := credentials.NewSealer(c.SecretsKey)
	if err != nil || c.SecretsKeyPrevious == nil {
		return s, err
	}
	return s.WithPrevious(c.SecretsKeyPrevious)
}
