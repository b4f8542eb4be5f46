package config

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strings"

	"github.com/payoutd/payoutd/internal/safeurl"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors/xendit"
)

// The rules for the URLs of vendors, which the service sends credentials
// to (XENDIT_BASE_URL, SNAP_<B>_BASE_URL, VENDORSIM_URL). Every message
// shows a value through safeurl only: a URL may carry a key as its user
// name.

// simulatorHost is the host name of a simulator as a compose file names
// its service (`payoutd vendorsim`): one DNS label, vendorsim, xenditsim or
// snapsim, maybe with a number (vendorsim2) or a suffix after a hyphen
// (snapsim-bca). Never a dotted name: snapsim.example.com is anybody's.
var simulatorHost = regexp.MustCompile(`^(vendorsim|xenditsim|snapsim)([0-9]*|-[a-z0-9]+)$`)

// isSimulatorHost says whether host (u.Hostname()) names a simulator.
func isSimulatorHost(host string) bool { return simulatorHost.MatchString(strings.ToLower(host)) }

// isLoopback says whether host is this machine: 127.0.0.0/8, ::1 or
// localhost.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// vendorURL is one vendor URL setting to check: its variable, its value,
// an example of the wanted shape, and what travels to it.
type vendorURL struct {
	name, raw, example, carries string
}

// check applies the rules every vendor URL shares and returns the parsed
// URL: absolute http(s), no userinfo; https in production unless to
// loopback; in staging plain http only to loopback or a simulator host.
func (v vendorURL) check(env models.Environment) (*url.URL, error) {
	u, err := url.Parse(v.raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("%s: want an absolute https URL such as %s", safeurl.Setting(v.name, v.raw), v.example)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%s: a user name or password in the URL is refused; %s go in their own variables", safeurl.Setting(v.name, v.raw), v.carries)
	}
	if u.Scheme == "https" || isLoopback(u.Hostname()) {
		return u, nil
	}
	if env == models.Production {
		return nil, fmt.Errorf("%s: APP_ENV=production sends %s over https only (plain http only to 127.0.0.1, ::1 or localhost, such as a proxy on this machine)",
			safeurl.Setting(v.name, v.raw), v.carries)
	}
	if !isSimulatorHost(u.Hostname()) {
		return nil, fmt.Errorf("%s: plain http only to a loopback address (127.0.0.1, ::1, localhost) or a simulator service named vendorsim, xenditsim or snapsim (http://xenditsim:8090); %s must travel over https",
			safeurl.Setting(v.name, v.raw), v.carries)
	}
	return u, nil
}

// checkRail is check for the URL of a real rail (Xendit, a SNAP bank):
// production refuses a simulator host, whatever the scheme, since the
// operator believes the rail moves money.
func (v vendorURL) checkRail(env models.Environment) (*url.URL, error) {
	u, err := v.check(env)
	if err == nil && env == models.Production && isSimulatorHost(u.Hostname()) {
		return nil, fmt.Errorf("%s: APP_ENV=production refuses a simulator (%s): payouts would be reported paid that no provider made; point it at the provider's API, or run the simulator with APP_ENV=staging",
			safeurl.Setting(v.name, v.raw), u.Hostname())
	}
	return u, err
}

// Xendit's key prefixes: live keys move money, development (test-mode)
// keys never do.
const (
	xenditLivePrefix = "xnd_production_"
	xenditTestPrefix = "xnd_development_"
)

// checkXendit applies the environment's rules to the Xendit settings; the
// key itself is never shown.
func checkXendit(env models.Environment, key, baseURL string) error {
	var errs []error
	lower := strings.ToLower(key)
	switch {
	case env == models.Staging && strings.HasPrefix(lower, xenditLivePrefix):
		errs = append(errs, errors.New("XENDIT_SECRET_KEY is a live key (xnd_production_…), refused with APP_ENV=staging, which must move no real money: use a test-mode key (xnd_development_…) from Xendit's dashboard, or run with APP_ENV=production"))
	case env == models.Production && strings.HasPrefix(lower, xenditTestPrefix):
		errs = append(errs, errors.New("XENDIT_SECRET_KEY is a test-mode key (xnd_development_…), refused with APP_ENV=production: Xendit's test mode reports payouts paid that move no money while merchants' wallets are debited; use the live key (xnd_production_…), or run with APP_ENV=staging"))
	}
	if _, err := (vendorURL{"XENDIT_BASE_URL", baseURL, xendit.DefaultBaseURL, "the secret key"}).checkRail(env); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// checkSnapBaseURL applies the environment's rules to a SNAP bank's base
// URL. Staging cannot tell a bank's sandbox from its live API, so it
// takes a simulator or loopback only: anything else may move real money.
func checkSnapBaseURL(env models.Environment, name, raw string) error {
	u, err := (vendorURL{name, raw, "https://api.bank.example", "the bank's tokens and signatures"}).checkRail(env)
	if err != nil {
		return err
	}
	if env == models.Staging && !isLoopback(u.Hostname()) && !isSimulatorHost(u.Hostname()) {
		return fmt.Errorf("%s: APP_ENV=staging reaches SNAP banks through a simulator only (a loopback address, or a service named snapsim or vendorsim: `payoutd vendorsim --provider snap`), since any other URL may be the bank's live API and move real money; run with APP_ENV=production to reach the bank",
			safeurl.Setting(name, raw))
	}
	return nil
}

// checkVendorSimURL applies the rules to VENDORSIM_URL, the sandbox
// vendors over HTTP, which carries the simulator's bearer token.
func checkVendorSimURL(env models.Environment, raw string) error {
	_, err := (vendorURL{"VENDORSIM_URL", raw, "http://vendorsim:8090", "VENDORSIM_TOKEN and the payouts"}).check(env)
	return err
}

// checkHTTPURL checks a URL setting that is not a vendor's
// (PUBLIC_BASE_URL, PROMETHEUS_URL): absolute http(s).
func checkHTTPURL(name, raw, example string) error {
	if u, err := url.Parse(raw); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s: want an absolute http(s) URL such as %s", safeurl.Setting(name, raw), example)
	}
	return nil
}
