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
// for the next. Each call's own deadline comes from its context.
func NewHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 0 // no bound across hosts; per host below
	t.MaxIdleConnsPerHost = maxIdleConnsPerHost
	t.IdleConnTimeout = 90 * time.Second
	return &http.Client{Transport: t}
}
