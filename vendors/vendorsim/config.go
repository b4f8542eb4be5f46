package vendorsim

import (
	"errors"
	"strings"

	"github.com/payoutd/payoutd/internal/vendorurl"
	"github.com/payoutd/payoutd/models"
)

// Config is how the service reaches `payoutd vendorsim` over HTTP, if at
// all (VENDORSIM_*, see docs/configuration.md): with URL set, the sandbox
// vendors are its clients instead of in-process.
type Config struct {
	// URL is the simulator (VENDORSIM_URL).
	URL string
	// Secrets are VENDORSIM_TOKEN and VENDORSIM_CALLBACK_SECRET, required
	// with URL and never equal.
	Secrets
}

// LoadConfig reads the VENDORSIM_* settings through getenv, starting from
// base: a variable unset or blank leaves its setting as it was. It refuses
// the single secret it used to take, and checks the URL and secrets only
// when URL is set, the URL under env's (APP_ENV's) rules.
func LoadConfig(getenv func(string) string, env models.Environment, base Config) (Config, error) {
	c := base
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }
	for _, s := range []struct {
		name string
		dst  *string
	}{{"VENDORSIM_URL", &c.URL}, {"VENDORSIM_TOKEN", &c.Token}, {"VENDORSIM_CALLBACK_SECRET", &c.CallbackSecret}} {
		if v := get(s.name); v != "" {
			*s.dst = v
		}
	}
	var errs []error
	if get("VENDORSIM_SECRET") != "" {
		// Refused rather than ignored: it used to be both secrets.
		errs = append(errs, errors.New("VENDORSIM_SECRET is no longer read: set VENDORSIM_TOKEN (the bearer token) and VENDORSIM_CALLBACK_SECRET (the callback key), two different secrets, here and on `payoutd vendorsim`"))
	}
	if c.URL == "" {
		return c, errors.Join(errs...)
	}
	if _, err := (vendorurl.Setting{Name: "VENDORSIM_URL", Raw: c.URL, Example: "http://vendorsim:8090", Carries: "VENDORSIM_TOKEN and the payouts"}).Check(env); err != nil {
		errs = append(errs, err)
	}
	switch {
	case c.Token == "" || c.CallbackSecret == "":
		errs = append(errs, errors.New("VENDORSIM_TOKEN and VENDORSIM_CALLBACK_SECRET are required with VENDORSIM_URL (the two secrets `payoutd vendorsim` was started with)"))
	case c.Token == c.CallbackSecret:
		errs = append(errs, errors.New("VENDORSIM_TOKEN and VENDORSIM_CALLBACK_SECRET must differ: a token that can call the vendor must not sign its callbacks"))
	}
	return c, errors.Join(errs...)
}
