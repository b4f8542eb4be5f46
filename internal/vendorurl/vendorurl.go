// Package vendorurl holds the rules for the URLs of vendors, which the
// service sends credentials to (XENDIT_BASE_URL, SNAP_<B>_BASE_URL,
// VENDORSIM_URL). Each adapter's configuration applies them to its own
// settings, so that one URL is judged alike whichever adapter it belongs
// to, and the simulators' host names are known in one place. Every
// message shows a value through safeurl only: a URL may carry a key as
// its user name.
package vendorurl

import (
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strings"

	"github.com/payoutd/payoutd/internal/safeurl"
	"github.com/payoutd/payoutd/models"
)

// simulatorHost is the host name of a simulator as a compose file names
// its service (`payoutd vendorsim`): one DNS label, vendorsim, xenditsim or
// snapsim, maybe with a number (vendorsim2) or a suffix after a hyphen
// (snapsim-bca). Never a dotted name: snapsim.example.com is anybody's.
var simulatorHost = regexp.MustCompile(`^(vendorsim|xenditsim|snapsim)([0-9]*|-[a-z0-9]+)$`)

// IsSimulatorHost says whether host (u.Hostname()) names a simulator.
func IsSimulatorHost(host string) bool { return simulatorHost.MatchString(strings.ToLower(host)) }

// IsLoopback says whether host is this machine: 127.0.0.0/8, ::1 or
// localhost.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// Setting is one vendor URL setting to check: its variable, its value, an
// example of the wanted shape, and what travels to it.
type Setting struct {
	Name, Raw, Example, Carries string
}

// Check applies the rules every vendor URL shares and returns the parsed
// URL: absolute http(s), no userinfo; https in production unless to
// loopback; in staging plain http only to loopback or a simulator host.
func (v Setting) Check(env models.Environment) (*url.URL, error) {
	u, err := url.Parse(v.Raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("%s: want an absolute https URL such as %s", safeurl.Setting(v.Name, v.Raw), v.Example)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%s: a user name or password in the URL is refused; %s go in their own variables", safeurl.Setting(v.Name, v.Raw), v.Carries)
	}
	if u.Scheme == "https" || IsLoopback(u.Hostname()) {
		return u, nil
	}
	if env == models.Production {
		return nil, fmt.Errorf("%s: APP_ENV=production sends %s over https only (plain http only to 127.0.0.1, ::1 or localhost, such as a proxy on this machine)",
			safeurl.Setting(v.Name, v.Raw), v.Carries)
	}
	if !IsSimulatorHost(u.Hostname()) {
		return nil, fmt.Errorf("%s: plain http only to a loopback address (127.0.0.1, ::1, localhost) or a simulator service named vendorsim, xenditsim or snapsim (http://xenditsim:8090); %s must travel over https",
			safeurl.Setting(v.Name, v.Raw), v.Carries)
	}
	return u, nil
}

// CheckRail is Check for the URL of a real rail (Xendit, a SNAP bank):
// production refuses a simulator host, whatever the scheme, since the
// operator believes the rail moves money.
func (v Setting) CheckRail(env models.Environment) (*url.URL, error) {
	u, err := v.Check(env)
	if err == nil && env == models.Production && IsSimulatorHost(u.Hostname()) {
		return nil, fmt.Errorf("%s: APP_ENV=production refuses a simulator (%s): payouts would be reported paid that no provider made; point it at the provider's API, or run the simulator with APP_ENV=staging",
			safeurl.Setting(v.Name, v.Raw), u.Hostname())
	}
	return u, err
}
