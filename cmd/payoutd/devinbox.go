package main

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/payoutd/payoutd/client"
	"github.com/payoutd/payoutd/webhooks"
)

// The webhook inbox of `payoutd dev`: the demo client's payout and payment
// webhook URLs point at it, so a user sees every signed delivery (its
// headers, body, whether the signature verifies with the demo's callback
// secret, and what the inbox answered) at /dev/inbox, a page that refreshes
// itself, or as JSON at /dev/inbox.json. A mode set at /dev/inbox/mode makes
// it answer 500 or time out, to watch retries and redelivery. Only dev
// serves it; the API never does.

// devInboxPath is where the inbox lives on dev's API address.
const devInboxPath = "/dev/inbox"

// inboxKeep is how many deliveries the inbox shows, newest first.
const inboxKeep = 200

// Inbox modes: what the inbox answers a delivery.
const (
	inboxOK      = "ok"      // 200
	inboxFail    = "fail"    // 500: payoutd retries
	inboxTimeout = "timeout" // no answer within WEBHOOK_TIMEOUT: payoutd retries
)

// devInbox holds the deliveries received.
type devInbox struct {
	callbackSecret string
	// timeout is how long a delivery is held in timeout mode (longer than
	// the sender's WEBHOOK_TIMEOUT).
	timeout time.Duration

	mu         sync.Mutex
	mode       string
	deliveries []inboxDelivery // newest first
	seq        int
}

// inboxDelivery is one delivery as the inbox saw it.
type inboxDelivery struct {
	Seq        int               `json:"seq"`
	ReceivedAt time.Time         `json:"received_at"`
	Target     string            `json:"target"` // payouts or payments
	EventID    string            `json:"event_id"`
	Event      string            `json:"event"`
	Headers    map[string]string `json:"headers"`
	Body       string            `json:"body"`
	// Verified says whether the signature verifies with the demo client's
	// callback secret; VerifyError says why not.
	Verified    bool   `json:"verified"`
	VerifyError string `json:"verify_error,omitempty"`
	// Answered is the status the inbox answered (0: it held the request
	// until the sender gave up).
	Answered int `json:"answered"`
}

func newDevInbox(callbackSecret string, senderTimeout time.Duration) *devInbox {
	return &devInbox{callbackSecret: callbackSecret, timeout: senderTimeout + 5*time.Second, mode: inboxOK}
}

// handler serves the inbox's routes; next serves everything else.
func (in *devInbox) handler(next http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+devInboxPath+"/{target}", in.receive)
	mux.HandleFunc("GET "+devInboxPath, in.page)
	mux.HandleFunc("GET "+devInboxPath+".json", in.list)
	mux.HandleFunc("POST "+devInboxPath+"/mode", in.setMode)
	mux.Handle("/", next)
	return mux
}

// receive records a delivery and answers it as the mode says.
func (in *devInbox) receive(w http.ResponseWriter, r *http.Request) {
	target := r.PathValue("target")
	if target != "payouts" && target != "payments" {
		inboxError(w, http.StatusNotFound, "not found")
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	d := inboxDelivery{ReceivedAt: time.Now().UTC(), Target: target, EventID: r.Header.Get(webhooks.EventIDHeader),
		Headers: map[string]string{}, Body: string(body)}
	for _, h := range []string{"Content-Type", "User-Agent", webhooks.SignatureHeader, webhooks.EventIDHeader} {
		d.Headers[h] = r.Header.Get(h)
	}
	var envelope struct {
		Event string `json:"event"`
	}
	json.Unmarshal(body, &envelope)
	d.Event = envelope.Event
	if err := client.VerifyWebhook(in.callbackSecret, r.Header, body, time.Now()); err != nil {
		d.VerifyError = err.Error()
	} else {
		d.Verified = true
	}
	in.mu.Lock()
	mode := in.mode
	switch mode {
	case inboxFail:
		d.Answered = http.StatusInternalServerError
	case inboxTimeout:
		d.Answered = 0
	default:
		d.Answered = http.StatusOK
	}
	in.seq++
	d.Seq = in.seq
	in.deliveries = append([]inboxDelivery{d}, in.deliveries...)
	if len(in.deliveries) > inboxKeep {
		in.deliveries = in.deliveries[:inboxKeep]
	}
	in.mu.Unlock()
	switch mode {
	case inboxTimeout:
		select {
		case <-r.Context().Done(): // the sender gave up
		case <-time.After(in.timeout):
		}
	case inboxFail:
		inboxError(w, http.StatusInternalServerError, "the dev inbox is set to fail")
	default:
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"received":true}`))
	}
}

// snapshot is the inbox as the page and the JSON show it.
type inboxSnapshot struct {
	Mode       string          `json:"mode"`
	Deliveries []inboxDelivery `json:"deliveries"`
}

func (in *devInbox) snapshot() inboxSnapshot {
	in.mu.Lock()
	defer in.mu.Unlock()
	return inboxSnapshot{Mode: in.mode, Deliveries: append([]inboxDelivery(nil), in.deliveries...)}
}

func (in *devInbox) list(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(in.snapshot())
}

// setMode takes {"mode": "ok"|"fail"|"timeout"}, or a form field mode
// (the page's buttons).
func (in *devInbox) setMode(w http.ResponseWriter, r *http.Request) {
	mode := r.FormValue("mode")
	if mode == "" {
		var body struct {
			Mode string `json:"mode"`
		}
		json.NewDecoder(io.LimitReader(r.Body, 1024)).Decode(&body)
		mode = body.Mode
	}
	if mode != inboxOK && mode != inboxFail && mode != inboxTimeout {
		inboxError(w, http.StatusBadRequest, fmt.Sprintf("mode must be %s, %s or %s", inboxOK, inboxFail, inboxTimeout))
		return
	}
	in.mu.Lock()
	in.mode = mode
	in.mu.Unlock()
	if r.FormValue("mode") != "" { // the page's form: back to the page
		http.Redirect(w, r, devInboxPath, http.StatusSeeOther)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"mode":%q}`, mode)
}

func (in *devInbox) page(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	inboxPage.Execute(w, in.snapshot())
}

// inboxPage is the inbox as a page that reloads itself every 2 s; no
// script, no external resource.
var inboxPage = template.Must(template.New("inbox").Funcs(template.FuncMap{
	"pretty": func(s string) string {
		var v any
		if json.Unmarshal([]byte(s), &v) != nil {
			return s
		}
		b, _ := json.MarshalIndent(v, "", "  ")
		return string(b)
	},
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="2">
<title>payoutd dev — webhook inbox</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.4em;text-align:left;vertical-align:top}
pre{margin:0;white-space:pre-wrap;font-size:12px}.ok{color:#17702b}.bad{color:#b00020}
form{display:inline}button{margin-right:.3em}
</style></head><body>
<h1>Webhook inbox</h1>
<p>The demo client's webhooks arrive here, signed with its callback secret.
Mode: <strong id="mode">{{.Mode}}</strong>
<form method="post" action="/dev/inbox/mode"><button name="mode" value="ok">answer 200</button><button name="mode" value="fail">answer 500</button><button name="mode" value="timeout">time out</button></form>
— also as <a href="/dev/inbox.json">JSON</a>; this page reloads every 2 s.</p>
<table><thead><tr><th>#</th><th>received</th><th>event</th><th>signature</th><th>answered</th><th>body</th></tr></thead><tbody>
{{range .Deliveries}}<tr class="delivery"><td>{{.Seq}}</td><td>{{.ReceivedAt.Format "15:04:05.000"}}<br>{{.Target}}</td>
<td>{{.Event}}<br><small>{{.EventID}}</small></td>
<td>{{if .Verified}}<span class="ok">verified</span>{{else}}<span class="bad">{{.VerifyError}}</span>{{end}}</td>
<td>{{if .Answered}}{{.Answered}}{{else}}timed out{{end}}</td><td><pre>{{pretty .Body}}</pre></td></tr>
{{else}}<tr><td colspan="6">Nothing yet: create a payout or a payment.</td></tr>{{end}}
</tbody></table></body></html>
`))

// inboxError answers {"error": msg}, as every error of the service does.
func inboxError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
