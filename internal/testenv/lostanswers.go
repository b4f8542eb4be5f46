package testenv

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// LostAnswers is an HTTP/1.1 reverse proxy on loopback in front of a
// vendor's simulator that loses chosen answers: a request that matches a
// Loss is forwarded, the simulator acts on it (a payout is created, a
// transfer accepted) and its answer is read, then the client's connection
// is closed without a byte of answer, as when a network drops the answer
// on its way back. A Loss may instead drop the request unforwarded: lost
// before the vendor could act.
//
// Unless KeepAlive, every answer closes its connection (Connection:
// close), so every request arrives on a connection of its own and a lost
// answer is always lost on a fresh connection: Go's transport resends a
// replayable request (a GET, or a POST with an Idempotency-Key header)
// only when a reused connection breaks, so the client cannot resend it by
// itself and its caller sees the unknown outcome.
type LostAnswers struct {
	srv      *httptest.Server
	upstream string
	client   *http.Client

	mu          sync.Mutex
	losses      []Loss
	lost        []int    // per loss: requests it took
	seen        []string // "METHOD /path" of each request, in order
	connections int
	reused      int // requests on a connection that had carried one before
	forwarded   int
	dropped     int
}

// Loss chooses requests whose answer is lost.
type Loss struct {
	Method string // e.g. http.MethodPost
	Path   string // the URL's path, exactly (the query is not compared)
	// Times is how many of the matching requests, the first ones, lose
	// their answer; those after are served.
	Times int
	// Unforwarded drops the request itself: the simulator never sees it.
	Unforwarded bool
}

// LostAnswersOptions configure a LostAnswers.
type LostAnswersOptions struct {
	Losses []Loss
	// KeepAlive keeps connections open for the client's next requests, so
	// that a lost answer may be lost on a reused connection (which Go's
	// transport may resend by itself). Off: each answer closes its
	// connection.
	KeepAlive bool
}

// NewLostAnswers starts a LostAnswers in front of upstream (a base URL
// such as an httptest.Server's); it stops with the test.
func NewLostAnswers(t testing.TB, upstream string, o LostAnswersOptions) *LostAnswers {
	p := &LostAnswers{
		upstream: strings.TrimRight(upstream, "/"),
		client:   &http.Client{Transport: &http.Transport{}},
		losses:   append([]Loss(nil), o.Losses...),
		lost:     make([]int, len(o.Losses)),
	}
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(p.serve))
	p.srv.Config.SetKeepAlivesEnabled(o.KeepAlive)
	p.srv.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, connRequests{}, new(int))
	}
	p.srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			p.mu.Lock()
			p.connections++
			p.mu.Unlock()
		}
	}
	p.srv.Start()
	t.Cleanup(func() {
		p.srv.Close()
		p.client.CloseIdleConnections()
	})
	return p
}

// URL is the proxy's base URL, for the client in place of upstream's.
func (p *LostAnswers) URL() string { return p.srv.URL }

// Requests is how many requests reached the proxy.
func (p *LostAnswers) Requests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.seen)
}

// Seen is every request that reached the proxy, in order of arrival, as
// its method and path ("POST /v2/payouts"; no query).
func (p *LostAnswers) Seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

// Connections is how many connections the proxy accepted.
func (p *LostAnswers) Connections() int { return p.count(&p.connections) }

// Reused is how many requests arrived on a connection that had carried
// a request before: 0 unless KeepAlive.
func (p *LostAnswers) Reused() int { return p.count(&p.reused) }

// Forwarded is how many requests were forwarded to the simulator, their
// answer delivered or not.
func (p *LostAnswers) Forwarded() int { return p.count(&p.forwarded) }

// Dropped is how many requests got no answer: forwarded then dropped, or
// dropped unforwarded.
func (p *LostAnswers) Dropped() int { return p.count(&p.dropped) }

func (p *LostAnswers) count(n *int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return *n
}

// take reports whether r's answer is to be lost, and whether r is to be
// dropped unforwarded, counting it against its Loss.
func (p *LostAnswers) take(r *http.Request) (lose, unforwarded bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, r.Method+" "+r.URL.Path)
	n := r.Context().Value(connRequests{}).(*int) // guarded by mu too
	*n++
	if *n > 1 {
		p.reused++
	}
	for i, l := range p.losses {
		if l.Method == r.Method && l.Path == r.URL.Path && p.lost[i] < l.Times {
			p.lost[i]++
			return true, l.Unforwarded
		}
	}
	return false, false
}

func (p *LostAnswers) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	lose, unforwarded := p.take(r)
	if lose && unforwarded {
		p.drop(w)
		return
	}
	// Not the client's context: the simulator acts on the request even if
	// the client has given up meanwhile.
	req, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), r.Method, p.upstream+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	for k, vs := range r.Header {
		if !hopByHop[http.CanonicalHeaderKey(k)] {
			req.Header[k] = vs
		}
	}
	resp, err := p.client.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	p.mu.Lock()
	p.forwarded++
	p.mu.Unlock()
	switch {
	case lose:
		p.drop(w)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	for k, vs := range resp.Header {
		if !hopByHop[http.CanonicalHeaderKey(k)] {
			w.Header()[k] = vs
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

// drop counts a lost answer, then closes the client's connection without
// writing anything on it.
func (p *LostAnswers) drop(w http.ResponseWriter) {
	p.mu.Lock()
	p.dropped++
	p.mu.Unlock()
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // closes the connection, as the server can
	}
	_ = conn.Close()
}

// connRequests keys a connection's count of requests in its context.
type connRequests struct{}

// hopByHop are the headers of one connection, not forwarded (RFC 9110
// section 7.6.1).
var hopByHop = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Proxy-Authenticate": true,
	"Proxy-Authorization": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
}
