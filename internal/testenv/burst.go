package testenv

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Burst is an HTTP/1.1 server on loopback for tests of connection reuse:
// it holds each request until a whole burst is under way at once, so that
// a client needs one connection per request of a burst, and counts the
// connections it accepts. A client that keeps a burst's connections opens
// none for the next one; with few kept idle, it opens a new connection
// (over https, a new TLS handshake) for most requests of every burst.
type Burst struct {
	srv  *httptest.Server
	size int

	mu       sync.Mutex
	newConns int
	arrived  int
	allIn    chan struct{}
}

// NewBurst starts a Burst server whose bursts are size requests; it stops
// with the test.
func NewBurst(t testing.TB, size int) *Burst {
	b := &Burst{size: size, allIn: make(chan struct{})}
	b.srv = httptest.NewUnstartedServer(http.HandlerFunc(b.hold))
	b.srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			b.mu.Lock()
			b.newConns++
			b.mu.Unlock()
		}
	}
	b.srv.Start()
	t.Cleanup(b.srv.Close)
	return b
}

func (b *Burst) hold(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	b.mu.Lock()
	b.arrived++
	wait := b.allIn
	if b.arrived%b.size == 0 {
		close(b.allIn)
		b.allIn = make(chan struct{})
	}
	b.mu.Unlock()
	select { // every request of the burst is under way at once
	case <-wait:
	case <-time.After(5 * time.Second):
	}
}

// Send sends one burst through client, size POSTs at once, each read to
// its end and closed, and returns how many connections the server
// accepted meanwhile.
func (b *Burst) Send(t testing.TB, client *http.Client) (opened int) {
	t.Helper()
	b.mu.Lock()
	before := b.newConns
	b.mu.Unlock()
	var wg sync.WaitGroup
	for range b.size {
		wg.Go(func() {
			resp, err := client.Post(b.srv.URL, "application/json", strings.NewReader(`{}`))
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	wg.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.newConns - before
}
