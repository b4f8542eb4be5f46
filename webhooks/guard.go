package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// ErrBlockedDestination: the URL or the address it resolves to is not one
// the service may call.
var ErrBlockedDestination = errors.New("webhook destination refused")

// Guard decides where deliveries may go.
type Guard struct {
	// RequireHTTPS refuses http:// URLs (production).
	RequireHTTPS bool
	// BlockPrivate refuses loopback, link-local, private, shared (CGNAT),
	// benchmarking, reserved, unspecified and multicast addresses, Teredo
	// and IPv4-compatible IPv6, and NAT64 or 6to4 addresses carrying a
	// refused IPv4 address (production).
	BlockPrivate bool
	// Allowed are ranges let through despite BlockPrivate
	// (WEBHOOK_ALLOWED_NETWORKS), e.g. a partner reached over a VPN.
	Allowed []netip.Prefix
}

// ProductionGuard is the guard of APP_ENV=production; staging and dev
// allow http and private addresses so merchants can test against their
// own machines.
func ProductionGuard(allowed []netip.Prefix) Guard {
	return Guard{RequireHTTPS: true, BlockPrivate: true, Allowed: allowed}
}

// CheckURL refuses a URL that is not absolute http(s), or not https when
// required. Addresses are checked when dialled (CheckAddr).
func (g Guard) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("%w: %q is not an absolute http(s) URL", ErrBlockedDestination, raw)
	}
	if g.RequireHTTPS && u.Scheme != "https" {
		return fmt.Errorf("%w: production webhooks must use https", ErrBlockedDestination)
	}
	return nil
}

// CheckAddr refuses an address the service must not call.
func (g Guard) CheckAddr(ip netip.Addr) error {
	ip = ip.Unmap()
	if !g.BlockPrivate {
		return nil
	}
	for _, p := range g.Allowed {
		if p.Contains(ip) {
			return nil
		}
	}
	// NAT64 and 6to4 addresses reach the IPv4 address they carry: they are
	// refused when that address is.
	if v4, ok := embeddedIPv4(ip); ok {
		if err := g.CheckAddr(v4); err != nil {
			return fmt.Errorf("%w: %s carries %s, a loopback, link-local, private or reserved address", ErrBlockedDestination, ip, v4)
		}
	}
	if !ip.IsValid() || ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsPrivate() || ip.IsUnspecified() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast() ||
		inAny(ip, reserved) {
		return fmt.Errorf("%w: %s is a loopback, link-local, private or reserved address", ErrBlockedDestination, ip)
	}
	return nil
}

func inAny(ip netip.Addr, prefixes []netip.Prefix) bool {
	for _, p := range prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// reserved are ranges no merchant's public endpoint lives in, beyond what
// netip's predicates cover: internal networks reach them, the internet
// does not.
var reserved = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),     // "this network" (RFC 791); Linux dials 0.x as the local host
	netip.MustParsePrefix("100.64.0.0/10"), // shared address space, carrier-grade NAT (RFC 6598)
	netip.MustParsePrefix("192.0.0.0/24"),  // IETF protocol assignments (RFC 6890)
	netip.MustParsePrefix("198.18.0.0/15"), // benchmarking (RFC 2544), often routed internally
	netip.MustParsePrefix("240.0.0.0/4"),   // reserved, and the broadcast address
	netip.MustParsePrefix("::/96"),         // IPv4-compatible addresses (deprecated, RFC 4291)
	netip.MustParsePrefix("2001::/32"),     // Teredo: the IPv4 it reaches is obfuscated, its relay not ours
	netip.MustParsePrefix("fec0::/10"),     // site-local (deprecated, RFC 3879)
}

var (
	// nat64 is the well-known NAT64 prefix 64:ff9b::/96 (RFC 6052) and
	// nat64Local the local-use 64:ff9b:1::/48 (RFC 8215): the IPv4
	// address is the last 32 bits.
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local = netip.MustParsePrefix("64:ff9b:1::/48")
	// sixToFour is 2002::/16 (RFC 3056): the IPv4 address is bits 16–47.
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// embeddedIPv4 is the IPv4 address a NAT64 or 6to4 address leads to.
func embeddedIPv4(ip netip.Addr) (netip.Addr, bool) {
	b := ip.As16()
	switch {
	case !ip.Is6():
		return netip.Addr{}, false
	case nat64.Contains(ip), nat64Local.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

// maxIdleConnsPerHost is how many idle connections to one merchant's
// host are kept for the next deliveries: as many as the worker delivers
// at once by default (64 tasks), so that a busy merchant whose backend
// speaks only HTTP/1.1 sees its connections reused instead of a fresh TLS
// handshake for all but a few deliveries of every burst (with 4 kept, 60
// of 64 were closed after each use). Over HTTP/2 one connection carries
// them all anyway.
const maxIdleConnsPerHost = 64

// HTTPClient returns a client that delivers under the guard: the address
// is checked at connect time, after DNS resolution, so a name that
// resolves (or re-resolves) to a private address is refused too. No proxy
// from the environment, no redirects (a 3xx is not a delivery).
func (g Guard) HTTPClient(timeout time.Duration) *http.Client {
	dialer := &net.Dialer{
		Timeout: timeout,
		Control: func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return fmt.Errorf("%w: %v", ErrBlockedDestination, err)
			}
			ip, err := netip.ParseAddr(host)
			if err != nil {
				return fmt.Errorf("%w: %v", ErrBlockedDestination, err)
			}
			return g.CheckAddr(ip)
		},
	}
	transport := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, addr)
		},
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		MaxIdleConnsPerHost:   maxIdleConnsPerHost,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{
		Timeout:       timeout,
		Transport:     transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
