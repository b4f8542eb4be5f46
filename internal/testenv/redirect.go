package testenv

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Sink is a loopback server that a test's redirects point to: another
// host than the one the client called, reached over plain http. It
// records every request that reaches it, which a client that follows no
// redirect never sends, and answers with answer (nil: 200 and no body),
// e.g. a forged success.
type Sink struct {
	srv    *httptest.Server
	answer http.HandlerFunc

	mu  sync.Mutex
	got []*http.Request
}

// NewSink starts a Sink; it stops with the test.
func NewSink(t testing.TB, answer http.HandlerFunc) *Sink {
	s := &Sink{answer: answer}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.got = append(s.got, r.Clone(r.Context()))
		s.mu.Unlock()
		if s.answer != nil {
			s.answer(w, r)
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// Redirect answers every request with status and a Location on the sink,
// same path and query.
func (s *Sink) Redirect(status int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", s.srv.URL+r.URL.RequestURI())
		w.WriteHeader(status)
	}
}

// Requests are the requests that reached the sink.
func (s *Sink) Requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.got...)
}

// Check fails the test if any request reached the sink, naming those of
// headers it carried.
func (s *Sink) Check(t testing.TB, headers ...string) {
	t.Helper()
	for _, r := range s.Requests() {
		var carried []string
		for _, h := range headers {
			if r.Header.Get(h) != "" {
				carried = append(carried, h)
			}
		}
		t.Errorf("a redirect was followed: %s %s reached the other host, carrying %v", r.Method, r.URL, carried)
	}
}
