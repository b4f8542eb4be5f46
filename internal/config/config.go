// Package config reads the service's configuration from the environment,
// as DESIGN.md lists it, and validates it at start with messages that name
// the variable and say what is wrong.
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
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/payoutd/payoutd/internal/credentials"
	"github.com/payoutd/payoutd/models"
)

// Config is the whole configuration of api, worker, migrate and admin.
type Config struct {
	DatabaseURL string
	RedisURL    string
	HTTPAddr    string
	Env         models.Environment
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

	// VendorSimURL, when set, makes the service talk to the sandbox vendors
	// over HTTP (`payoutd vendorsim`) instead of in-process;
	// VendorSimToken is the bearer token of the calls and
	// VendorSimCallbackSecret verifies the simulator's callbacks. Two
	// secrets, never equal: whoever may call the vendor must not be able to
	// sign a callback that pays out.
	VendorSimURL            string
	VendorSimToken          string
	VendorSimCallbackSecret string

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

	// DisbursementReturnWatch is how long a paid payout of a vendor that
	// does not call back is asked about a return by the bank
	// (DISBURSEMENT_RETURN_WATCH; 0 turns the watch off).
	DisbursementReturnWatch time.Duration
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
		InquiryRefusalRateLimit: 60,
	}
}

// Load reads the configuration through getenv (os.Getenv in main), starting
// from base. Every problem is reported, not only the first.
func Load(getenv func(string) string, base Config) (Config, error) {
	c := base
	var errs []error
	str := func(name string, dst *string) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			*dst = v
		}
	}
	dur := func(name string, dst *time.Duration) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a non-negative Go duration such as 10s, 30m or 24h", name, v))
			return
		}
		*dst = d
	}
	str("DATABASE_URL", &c.DatabaseURL)
	str("REDIS_URL", &c.RedisURL)
	str("HTTP_ADDR", &c.HTTPAddr)
	str("METRICS_ADDR", &c.MetricsAddr)
	str("ADMIN_USER", &c.AdminUser)
	str("ADMIN_PASSWORD", &c.AdminPassword)
	str("PUBLIC_BASE_URL", &c.PublicBaseURL)
	str("VENDORSIM_URL", &c.VendorSimURL)
	str("ACQUIRER_SECRET", &c.AcquirerSecret)
	str("VENDORSIM_TOKEN", &c.VendorSimToken)
	str("VENDORSIM_CALLBACK_SECRET", &c.VendorSimCallbackSecret)
	if strings.TrimSpace(getenv("VENDORSIM_SECRET")) != "" {
		// Refused rather than ignored: it used to be both secrets.
		errs = append(errs, errors.New("VENDORSIM_SECRET is no longer read: set VENDORSIM_TOKEN (the bearer token) and VENDORSIM_CALLBACK_SECRET (the callback key), two different secrets, here and on `payoutd vendorsim`"))
	}
	dur("AUTH_CACHE_TTL", &c.AuthCacheTTL)
	dur("DISBURSEMENT_LOCK_TTL", &c.DisbursementLockTTL)
	dur("DISBURSEMENT_SUBMIT_WAIT", &c.DisbursementSubmitWait)
	dur("DISBURSEMENT_SUBMIT_LEASE", &c.DisbursementSubmitLease)
	dur("DISBURSEMENT_RETURN_WATCH", &c.DisbursementReturnWatch)
	dur("SETTLEMENT_DELAY", &c.SettlementDelay)
	dur("SANDBOX_COMPLETE_AFTER", &c.SandboxCompleteAfter)
	dur("WEBHOOK_TIMEOUT", &c.WebhookTimeout)
	dur("WEBHOOK_RETRY_BASE", &c.WebhookRetryBase)
	dur("WEBHOOK_RETRY_CAP", &c.WebhookRetryCap)
	dur("WEBHOOK_RETRY_WINDOW", &c.WebhookRetryWindow)
	perMinute := func(name string, dst *int) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a whole number of requests per minute, 0 or more (0 turns the limit off)", name, v))
			return
		}
		*dst = n
	}
	perMinute("QUOTE_RATE_LIMIT", &c.QuoteRateLimit)
	perMinute("INQUIRY_REFUSAL_RATE_LIMIT", &c.InquiryRefusalRateLimit)

	if v := strings.TrimSpace(getenv("OPS_READ_ONLY")); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("OPS_READ_ONLY=%q: want true or false", v))
		} else {
			c.OpsReadOnly = b
		}
	}
	if v := strings.TrimSpace(getenv("APP_ENV")); v != "" {
		env, err := models.ParseEnvironment(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("APP_ENV: %w", err))
		} else {
			c.Env = env
		}
	}
	if v := strings.TrimSpace(getenv("SECRETS_KEY")); v != "" {
		key, err := credentials.ParseSecretsKey(v)
		if err != nil {
			errs = append(errs, err)
		} else {
			c.SecretsKey = key
		}
	}
	if v := strings.TrimSpace(getenv("SECRETS_KEY_PREVIOUS")); v != "" {
		key, err := credentials.ParseSecretsKey(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("SECRETS_KEY_PREVIOUS: %w", err))
		} else {
			c.SecretsKeyPrevious = key
		}
	}
	if v := strings.TrimSpace(getenv("TRUSTED_PROXIES")); v != "" {
		prefixes, err := models.ParseCIDRList(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("TRUSTED_PROXIES: %w", err))
		} else {
			c.TrustedProxies = prefixes
		}
	}
	if v := strings.TrimSpace(getenv("SETTLEMENT_HOLIDAYS")); v != "" {
		days, err := parseHolidays(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("SETTLEMENT_HOLIDAYS: %w", err))
		} else {
			c.SettlementHolidays = days
		}
	}
	if v := strings.TrimSpace(getenv("WEBHOOK_ALLOWED_NETWORKS")); v != "" {
		prefixes, err := models.ParseCIDRList(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("WEBHOOK_ALLOWED_NETWORKS: %w", err))
		} else {
			c.WebhookAllowedNetworks = prefixes
		}
	}
	for name, d := range map[string]time.Duration{"WEBHOOK_TIMEOUT": c.WebhookTimeout, "WEBHOOK_RETRY_BASE": c.WebhookRetryBase,
		"WEBHOOK_RETRY_CAP": c.WebhookRetryCap, "WEBHOOK_RETRY_WINDOW": c.WebhookRetryWindow} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be greater than zero", name))
		}
	}
	if v := strings.TrimSpace(getenv("LOG_LEVEL")); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			errs = append(errs, fmt.Errorf("LOG_LEVEL=%q: want debug, info, warn or error", v))
		}
	}
	if c.AuthCacheTTL > time.Minute {
		errs = append(errs, fmt.Errorf("AUTH_CACHE_TTL=%s: at most 1m (a lost change announcement keeps a rotated key working that long)", c.AuthCacheTTL))
	}
	if u, err := url.Parse(c.PublicBaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("PUBLIC_BASE_URL=%q: want an absolute http(s) URL", c.PublicBaseURL))
	}
	if c.MetricsAddr != "" {
		if _, port, err := net.SplitHostPort(c.MetricsAddr); err != nil || port == "" {
			errs = append(errs, fmt.Errorf("METRICS_ADDR=%q: want host:port or :port, such as :9090", c.MetricsAddr))
		}
		if c.AdminUser == "" || c.AdminPassword == "" {
			errs = append(errs, errors.New("METRICS_ADDR needs ADMIN_USER and ADMIN_PASSWORD: /metrics answers only to them"))
		} else if err := c.checkAdminPassword(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.VendorSimURL != "" {
		if u, err := url.Parse(c.VendorSimURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("VENDORSIM_URL=%q: want an absolute http(s) URL such as http://vendorsim:8090", c.VendorSimURL))
		}
		switch {
		case c.VendorSimToken == "" || c.VendorSimCallbackSecret == "":
			errs = append(errs, errors.New("VENDORSIM_TOKEN and VENDORSIM_CALLBACK_SECRET are required with VENDORSIM_URL (the two secrets `payoutd vendorsim` was started with)"))
		case c.VendorSimToken == c.VendorSimCallbackSecret:
			errs = append(errs, errors.New("VENDORSIM_TOKEN and VENDORSIM_CALLBACK_SECRET must differ: a token that can call the vendor must not sign its callbacks"))
		}
	}
	return c, errors.Join(errs...)
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
