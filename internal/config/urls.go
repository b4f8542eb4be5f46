package config

import (
	"fmt"
	"net/url"

	"github.com/payoutd/payoutd/internal/safeurl"
)

// The vendors' URLs, which credentials travel to, are checked by their
// adapters' loaders under internal/vendorurl's rules; these are the
// service's own.

// checkHTTPURL checks a URL setting that is not a vendor's
// (PUBLIC_BASE_URL, PROMETHEUS_URL): absolute http(s).
func checkHTTPURL(name, raw, example string) error {
	if u, err := url.Parse(raw); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s: want an absolute http(s) URL such as %s", safeurl.Setting(name, raw), example)
	}
	return nil
}
