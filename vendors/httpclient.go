package vendors

import (
	"net/http"
	"time"
)

// maxIdleConnsPerHost is how many idle connections to a vendor's API a
// process keeps for its next calls: as many as it makes at once by
// default (VENDOR_MAX_CONCURRENCY, 64). Go's default keeps 2, so under
// load all but two calls of every burst (the worker's submits and polls,
// the API's inline submits) opened a new connection, and to a real rail a
// new TLS handshake, paid in the merchant's wait.
const maxIdleConnsPerHost = 64

// NewHTTPClient returns the HTTP client a vendor's API client uses unless
// given one: Go's default transport (proxy from the environment, HTTP/2
// when offered, its dial and TLS timeouts) keeping a burst's connections
// for the next, following no redirect (NoRedirects). Each call's own
// deadline comes from its context.
func NewHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 0 // no bound across hosts; per host below
	t.MaxIdleConnsPerHost = maxIdleConnsPerHost
	t.IdleConnTimeout = 90 * time.Second
	return &http.Client{Transport: t, CheckRedirect: refuseRedirect}
}

// NoRedirects returns a copy of c (same transport, same connections) that
// follows no redirect: a 3xx comes back to the adapter as the answer,
// which it takes for an unknown outcome. Following one would resend a
// call, with its signature, token or API key, to wherever the Location
// says (another host, or http:// after https://), and could take that
// host's answer for the vendor's. Every vendor adapter applies it to the
// client it is given.
func NoRedirects(c *http.Client) *http.Client {
	cp := *c
	cp.CheckRedirect = refuseRedirect
	return &cp
}

func refuseRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
