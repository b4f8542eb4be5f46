package sim

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/payoutd/payoutd/client"
)

// merchant is the merchant's webhook receiver, as the deliverer's HTTP
// transport: a request travels (parked), is checked with the Go SDK's
// verification as a merchant's backend would, and its answer travels back
// (parked). It is sometimes down, sometimes fails, and sometimes its
// answer is lost after it took the event.
type merchant struct {
	w      *World
	secret string // the client's callback secret
	// received counts each event id the receiver took (at least once is
	// the promise; more is allowed).
	received map[string]int
	// bad is the first delivery that did not verify.
	bad error
}

func (m *merchant) RoundTrip(req *http.Request) (*http.Response, error) {
	w := m.w
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	o := w.sched.current()
	o.deadline = w.clock.callDeadline(req.Context(), callTimeout)
	defer func() { o.deadline = time.Time{} }()
	ev, verr := client.ParseWebhook(m.secret, req.Header, body, w.clock.Now())
	name := "event"
	if verr == nil {
		name = ev.Event + " " + w.name(ev.EventID)
	}
	if _, why := w.sched.park("webhook " + name + " sent"); why != goOn {
		return nil, fmt.Errorf("sim: webhook: no answer")
	}
	if w.chance(w.cfg.ReceiverDownRate) {
		w.logf("merchant: %s refused (down)", name)
		return nil, fmt.Errorf("sim: webhook: connection refused")
	}
	if verr != nil {
		if m.bad == nil {
			m.bad = fmt.Errorf("a webhook the merchant cannot verify: %v", verr)
		}
		return respond(req, http.StatusUnauthorized), nil
	}
	if w.chance(w.cfg.ReceiverDownRate) {
		w.logf("merchant: %s answered 500", name)
		return respond(req, http.StatusInternalServerError), nil
	}
	m.received[ev.EventID]++
	w.logf("merchant: %s received (%d)", name, m.received[ev.EventID])
	if _, why := w.sched.park("webhook " + name + " answered"); why != goOn || w.chance(w.cfg.LostAnswerRate) {
		return nil, fmt.Errorf("sim: webhook: answer lost")
	}
	return respond(req, http.StatusNoContent), nil
}

func respond(req *http.Request, code int) *http.Response {
	return &http.Response{StatusCode: code, Status: http.StatusText(code), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(nil)), Request: req}
}
