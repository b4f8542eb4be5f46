package testenv

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// counter is an upstream that counts the POSTs it received by path.
type counter struct {
	mu    sync.Mutex
	posts int
}

func newCounter(t *testing.T) (*counter, string) {
	c := &counter{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			c.mu.Lock()
			c.posts++
			c.mu.Unlock()
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return c, srv.URL
}

func (c *counter) n() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.posts
}

// post sends a replayable POST (it carries an Idempotency-Key) through a
// client that keeps its connections, after a GET that leaves one idle.
func post(t *testing.T, base string) error {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	resp, err := client.Get(base + "/warm")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	req, _ := http.NewRequest(http.MethodPost, base+"/create", strings.NewReader(`{"a":1}`))
	req.Header.Set("Idempotency-Key", "k1")
	resp, err = client.Do(req)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return err
}

// Connections closed after each answer: the lost answer is lost on a fresh
// connection, the client is not able to resend, and the upstream acted once.
func TestLostAnswerOnAFreshConnection(t *testing.T) {
	up, url := newCounter(t)
	p := NewLostAnswers(t, url, LostAnswersOptions{Losses: []Loss{{Method: http.MethodPost, Path: "/create", Times: 1}}})
	if err := post(t, p.URL()); err == nil {
		t.Fatal("the POST got an answer; want its answer lost")
	}
	if up.n() != 1 || p.Forwarded() != 2 || p.Dropped() != 1 {
		t.Errorf("upstream got %d POSTs, proxy forwarded %d and dropped %d; want 1, 2 (GET and POST), 1", up.n(), p.Forwarded(), p.Dropped())
	}
	if p.Requests() != 2 || p.Connections() != 2 || p.Reused() != 0 {
		t.Errorf("%d requests on %d connections, %d on a reused one; want each of the 2 on its own", p.Requests(), p.Connections(), p.Reused())
	}
	if got := strings.Join(p.Seen(), ", "); got != "GET /warm, POST /create" {
		t.Errorf("Seen = %s", got)
	}
}

// Connections kept: the POST goes on the GET's connection, its answer is
// lost, and Go's transport resends it by itself on a new connection.
func TestLostAnswerOnAReusedConnectionIsResent(t *testing.T) {
	up, url := newCounter(t)
	p := NewLostAnswers(t, url, LostAnswersOptions{KeepAlive: true, Losses: []Loss{{Method: http.MethodPost, Path: "/create", Times: 1}}})
	if err := post(t, p.URL()); err != nil {
		t.Fatalf("the POST failed: %v; want the transport's resend answered", err)
	}
	if up.n() != 2 || p.Dropped() != 1 || p.Requests() != 3 || p.Connections() != 2 || p.Reused() != 1 {
		t.Errorf("upstream got %d POSTs; proxy dropped %d, %d requests on %d connections, %d on a reused one; want 2, 1, 3 on 2, 1",
			up.n(), p.Dropped(), p.Requests(), p.Connections(), p.Reused())
	}
}

// An unforwarded loss never reaches the upstream.
func TestUnforwardedLoss(t *testing.T) {
	up, url := newCounter(t)
	p := NewLostAnswers(t, url, LostAnswersOptions{Losses: []Loss{{Method: http.MethodPost, Path: "/create", Times: 1, Unforwarded: true}}})
	if err := post(t, p.URL()); err == nil {
		t.Fatal("the POST got an answer; want it lost")
	}
	if up.n() != 0 || p.Forwarded() != 1 || p.Dropped() != 1 {
		t.Errorf("upstream got %d POSTs, proxy forwarded %d, dropped %d; want 0, 1 (the GET), 1", up.n(), p.Forwarded(), p.Dropped())
	}
}
