// Package config reads the service's configuration from the environment,
// as DESIGN.md lists it, and validates it at start with messages that name
// the variable and say what is wrong.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/payoutd/payoutd/credentials"
	"github.com/payoutd/payoutd/models"
)

// Config is the whole configuration of api, worker, migrate and admin.
type Config struct {
	DatabaseURL string
	RedisURL    string
	HTTPAddr    string
	Env         models.Environment

	// SecretsKey encrypts signing and callback secrets at rest (32 bytes).
	SecretsKey []byte

	AdminUser     string
	AdminPassword string

	// TrustedProxies are the peers whose X-Forwarded-For is believed.
	TrustedProxies []netip.Prefix

	DisbursementLockTTL    time.Duration
	DisbursementSubmitWait time.Duration
	// SettlementDelay, when set, replaces the next-business-day rule.
	SettlementDelay      time.Duration
	SandboxCompleteAfter time.Duration
	PublicBaseURL        string
	LogLevel             slog.Level
}

// Defaults are the values used when a variable is unset.
func Defaults() Config {
	return Config{
		HTTPAddr:               ":8080",
		Env:                    models.Production,
		DisbursementLockTTL:    30 * time.Minute,
		DisbursementSubmitWait: 5 * time.Second,
		SandboxCompleteAfter:   2 * time.Second,
		PublicBaseURL:          "http://localhost:8080",
		LogLevel:               slog.LevelInfo,
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
	str("ADMIN_USER", &c.AdminUser)
	str("ADMIN_PASSWORD", &c.AdminPassword)
	str("PUBLIC_BASE_URL", &c.PublicBaseURL)
	dur("DISBURSEMENT_LOCK_TTL", &c.DisbursementLockTTL)
	dur("DISBURSEMENT_SUBMIT_WAIT", &c.DisbursementSubmitWait)
	dur("SETTLEMENT_DELAY", &c.SettlementDelay)
	dur("SANDBOX_COMPLETE_AFTER", &c.SandboxCompleteAfter)

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
	if v := strings.TrimSpace(getenv("TRUSTED_PROXIES")); v != "" {
		prefixes, err := models.ParseCIDRList(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("TRUSTED_PROXIES: %w", err))
		} else {
			c.TrustedProxies = prefixes
		}
	}
	if v := strings.TrimSpace(getenv("LOG_LEVEL")); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			errs = append(errs, fmt.Errorf("LOG_LEVEL=%q: want debug, info, warn or error", v))
		}
	}
	if u, err := url.Parse(c.PublicBaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("PUBLIC_BASE_URL=%q: want an absolute http(s) URL", c.PublicBaseURL))
	}
	return c, errors.Join(errs...)
}

// Needs says which parts of the configuration a subcommand uses.
type Needs struct {
	Database bool
	Redis    bool
	Secrets  bool
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
	if n.Secrets && c.SecretsKey == nil {
		errs = append(errs, fmt.Errorf("SECRETS_KEY is required (APP_ENV=%s): 64 hex characters, e.g. from `openssl rand -hex 32`; `payoutd dev` makes its own", c.Env))
	}
	return errors.Join(errs...)
}

// Sealer returns the encrypter of secrets at rest, keyed by SECRETS_KEY.
func (c Config) Sealer() (*credentials.Sealer, error) {
	if c.SecretsKey == nil {
		return nil, errors.New("SECRETS_KEY is required")
	}
	return credentials.NewSealer(c.SecretsKey)
}
