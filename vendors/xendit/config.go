package xendit

import (
	"errors"
	"strings"

	"github.com/payoutd/payoutd/internal/vendorurl"
	"github.com/payoutd/payoutd/models"
)

// Config is the Xendit vendor's configuration (XENDIT_*, see
// docs/configuration.md): with SecretKey set, the registry has the xendit
// vendor.
type Config struct {
	// SecretKey is the secret API key (XENDIT_SECRET_KEY).
	SecretKey string
	// CallbackToken verifies Xendit's webhooks (XENDIT_CALLBACK_TOKEN,
	// required with SecretKey and never equal to it).
	CallbackToken string
	// BaseURL is the API (XENDIT_BASE_URL): https, or http to a loopback
	// or simulator host only (`payoutd vendorsim --provider xendit`).
	BaseURL string
}

// DefaultConfig is the configuration when no variable is set: no vendor,
// and Xendit's API.
func DefaultConfig() Config { return Config{BaseURL: DefaultBaseURL} }

// Xendit's key prefixes: live keys move money, development (test-mode)
// keys never do.
const (
	livePrefix = "xnd_production_"
	testPrefix = "xnd_development_"
)

// LoadConfig reads the Xendit settings through getenv, starting from base:
// a variable unset or blank leaves its setting as it was. Without
// XENDIT_SECRET_KEY there is no xendit vendor and the other two are not
// checked; with it, env (APP_ENV) decides which key and which URL are
// accepted. Every problem is reported, and no message shows a secret.
func LoadConfig(getenv func(string) string, env models.Environment, base Config) (Config, error) {
	c := base
	for _, s := range []struct {
		name string
		dst  *string
	}{{"XENDIT_SECRET_KEY", &c.SecretKey}, {"XENDIT_CALLBACK_TOKEN", &c.CallbackToken}, {"XENDIT_BASE_URL", &c.BaseURL}} {
		if v := strings.TrimSpace(getenv(s.name)); v != "" {
			*s.dst = v
		}
	}
	if c.SecretKey == "" {
		if c.CallbackToken != "" {
			return c, errors.New("XENDIT_CALLBACK_TOKEN is set without XENDIT_SECRET_KEY: set both (the secret API key and the webhook Verification Token from Xendit's dashboard) to connect Xendit, or neither")
		}
		return c, nil
	}
	var errs []error
	switch {
	case c.CallbackToken == "":
		errs = append(errs, errors.New("XENDIT_CALLBACK_TOKEN is required with XENDIT_SECRET_KEY: the webhook Verification Token of Xendit's dashboard, which Xendit's callbacks carry as x-callback-token"))
	case c.CallbackToken == c.SecretKey:
		errs = append(errs, errors.New("XENDIT_CALLBACK_TOKEN and XENDIT_SECRET_KEY must differ: whoever can call Xendit must not be able to forge its callbacks"))
	}
	if err := checkEnvironment(env, c.SecretKey, c.BaseURL); err != nil {
		errs = append(errs, err)
	}
	return c, errors.Join(errs...)
}

// checkEnvironment applies the environment's rules to the Xendit
// settings; the key itself is never shown.
func checkEnvironment(env models.Environment, key, baseURL string) error {
	var errs []error
	lower := strings.ToLower(key)
	switch {
	case env == models.Staging && strings.HasPrefix(lower, livePrefix):
		errs = append(errs, errors.New("XENDIT_SECRET_KEY is a live key (xnd_production_…), refused with APP_ENV=staging, which must move no real money: use a test-mode key (xnd_development_…) from Xendit's dashboard, or run with APP_ENV=production"))
	case env == models.Production && strings.HasPrefix(lower, testPrefix):
		errs = append(errs, errors.New("XENDIT_SECRET_KEY is a test-mode key (xnd_development_…), refused with APP_ENV=production: Xendit's test mode reports payouts paid that move no money while merchants' wallets are debited; use the live key (xnd_production_…), or run with APP_ENV=staging"))
	}
	if _, err := (vendorurl.Setting{Name: "XENDIT_BASE_URL", Raw: baseURL, Example: DefaultBaseURL, Carries: "the secret key"}).CheckRail(env); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
