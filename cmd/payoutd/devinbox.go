package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/client"
	"github.com/payoutd/payoutd/internal/credentials"
	"github.com/payoutd/payoutd/webhooks"
)

// The webhook inbox of `payoutd dev`: the demo client's payout and payment
// webhook URLs point at it, so a user sees every delivery (its headers,
// body, and what the inbox answered) at /dev/inbox, a page that refreshes
// itself, or as JSON at /dev/inbox.json. A mode set at /dev/inbox/mode makes
// it answer 500 or time out, to watch retries and redelivery. Only dev
// serves it; the API never does.
//
// It shows account numbers and steers dev's retries, without a login, so it
// answers only what this machine's own user sends it:
//   - every route answers only a loopback Host (421 otherwise): a page of
//     another site whose name an attacker points at 127.0.0.1 (DNS
//     rebinding) reaches the port, but its requests carry its own name;
//   - a POST is refused (403) when the browser says it comes from another
//     site or origin (Sec-Fetch-Site, Origin): that is what stops a
//     cross-site form, which can post a body that reads as JSON;
//   - a delivery is kept only when its signature verifies with the callback
//     secret of the client whose event it is (401 otherwise), so what the
//     page shows is what dev sent.

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
	// secretOf is the callback secret deliveries of the event are signed
	// with, and the event's client.
	secretOf eventSecretFunc
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
	ClientID   string            `json:"client_id"`
	Headers    map[string]string `json:"headers"`
	Body       string            `json:"body"`
	// Verified is always true: a delivery whose signature does not verify
	// is answered 401 and not kept.
	Verified bool `json:"verified"`
	// Answered is the status the inbox answered (0: it held the request
	// until the sender gave up).
	Answered int `json:"answered"`
}

// eventSecretFunc returns the client of the webhook event eventID (the
// x-event-id of a delivery) and its live callback secret;
// errUnknownEvent when this dev has no such event.
type eventSecretFunc func(ctx context.Context, eventID string) (clientID, secret string, err error)

var errUnknownEvent = errors.New("no such webhook event")

// eventCallbackSecret looks the event up in dev's database, as the sender
// does: deliveries are signed with the live credential of the event's
// client at the time they are sent. So the inbox serves every client of
// this dev whose webhook URLs point at it, each checked with its own
// secret, and still verifies after `admin client rotate`.
func eventCallbackSecret(db *gorm.DB, sealer *credentials.Sealer) eventSecretFunc {
	return func(ctx context.Context, eventID string) (string, string, error) {
		id, err := uuid.Parse(eventID)
		if err != nil {
			return "", "", errUnknownEvent
		}
		var rows []struct {
			ClientID          uuid.UUID
			CredentialID      uuid.UUID
			CallbackSecretEnc string
		}
		if err := db.WithContext(ctx).Raw(`SELECT e.client_id, cr.id AS credential_id, cr.callback_secret_enc
			FROM webhook_events e JOIN credentials cr ON cr.client_id = e.client_id AND cr.revoked_at IS NULL
			WHERE e.id = ? LIMIT 1`, id).Scan(&rows).Error; err != nil {
			return "", "", err
		}
		if len(rows) == 0 {
			return "", "", errUnknownEvent
		}
		row := rows[0]
		secret, err := sealer.Open(row.CallbackSecretEnc,
			credentials.CredentialBinding(row.ClientID, row.CredentialID, credentials.FieldCallbackSecret))
		if err != nil {
			return "", "", err
		}
		return row.ClientID.String(), secret, nil
	}
}

func newDevInbox(secretOf eventSecretFunc, senderTimeout time.Duration) *devInbox {
	return &devInbox{secretOf: secretOf, timeout: senderTimeout + 5*time.Second, mode: inboxOK}
}

// handler serves the inbox's routes, each behind guard; next serves
// everything else.
func (in *devInbox) handler(next http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+devInboxPath+"/{target}", guard(in.receive))
	mux.HandleFunc("GET "+devInboxPath, guard(in.page))
	mux.HandleFunc("GET "+devInboxPath+".json", guard(in.list))
	mux.HandleFunc("POST "+devInboxPath+"/mode", guard(in.setMode))
	mux.Handle("/", next)
	return mux
}

// guard answers only requests of this machine's own user: a loopback Host
// on every route and, on a POST, nothing a browser says comes from another
// site or origin.
func guard(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			// 421 Misdirected Request: this server does not serve that name.
			port := "PORT"
			if addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
				if _, p, err := net.SplitHostPort(addr.String()); err == nil {
					port = p
				}
			}
			inboxRefusal(w, http.StatusMisdirectedRequest,
				fmt.Sprintf("the dev inbox answers only a loopback Host (127.0.0.1, [::1] or localhost), not %q", r.Host),
				fmt.Sprintf("open http://127.0.0.1:%s/dev/inbox on this machine; from another, forward the port (ssh -L %s:127.0.0.1:%s)", port, port, port))
			return
		}
		if r.Method == http.MethodPost {
			if reason := crossSite(r); reason != "" {
				inboxRefusal(w, http.StatusForbidden, reason, "use the inbox page's buttons, or curl on this machine")
				return
			}
		}
		h(w, r)
	}
}

// loopbackHost says whether hostport (a Host header, or an Origin's host)
// names this machine: localhost or a loopback address, any port. An
// attacker's page cannot make a browser send an address literal as Host
// unless it is itself served from that address.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, port, err := net.SplitHostPort(hostport); err == nil {
		if port == "" || strings.Trim(port, "0123456789") != "" {
			return false
		}
		host = h
	} else {
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// crossSite is why r is refused as coming from another site or origin, ""
// when it is not. A browser sends Sec-Fetch-Site on every request (the
// inbox's own page posts "same-origin"; an address typed or a bookmark is
// "none"); curl and dev's own webhook sender send none. "same-site" is
// refused too: for the inbox that is another port of this machine, another
// program's page. Origin covers the browsers without Sec-Fetch-Site: when
// present it must be the inbox's own (a sandboxed page's "null" is not).
// The content type cannot be relied on: a cross-site form with enctype
// text/plain posts a body that parses as JSON.
func crossSite(r *http.Request) string {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
	default:
		return fmt.Sprintf("the dev inbox refuses requests from another site (Sec-Fetch-Site: %s)", site)
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !loopbackHost(u.Host) || !strings.EqualFold(u.Host, r.Host) {
			return fmt.Sprintf("the dev inbox refuses requests from another origin (Origin: %s)", origin)
		}
	}
	return ""
}

// maxDelivery is the largest delivery body the inbox reads.
const maxDelivery = 1 << 20

// receive keeps a delivery whose signature verifies and answers it as the
// mode says; anything else is answered 401 and not kept.
func (in *devInbox) receive(w http.ResponseWriter, r *http.Request) {
	target := r.PathValue("target")
	if target != "payouts" && target != "payments" {
		inboxError(w, http.StatusNotFound, "not found")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxDelivery+1))
	if err != nil {
		inboxError(w, http.StatusBadRequest, "could not read the body")
		return
	}
	if len(body) > maxDelivery {
		inboxError(w, http.StatusRequestEntityTooLarge, "the body is over 1 MiB")
		return
	}
	eventID := r.Header.Get(webhooks.EventIDHeader)
	clientID, reason, status := in.verify(r.Context(), eventID, r.Header, body)
	if reason != "" {
		slog.WarnContext(r.Context(), "dev inbox: refused a delivery", slog.String("event_id", eventID), slog.String("reason", reason))
		inboxRefusal(w, status, reason, "only deliveries payoutd dev signed for its own clients' events are shown")
		return
	}
	d := inboxDelivery{ReceivedAt: time.Now().UTC(), Target: target, EventID: eventID, ClientID: clientID,
		Headers: map[string]string{}, Body: string(body), Verified: true}
	for _, h := range []string{"Content-Type", "User-Agent", webhooks.SignatureHeader, webhooks.EventIDHeader} {
		d.Headers[h] = r.Header.Get(h)
	}
	var envelope struct {
		Event string `json:"event"`
	}
	json.Unmarshal(body, &envelope)
	d.Event = envelope.Event
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

// verify checks a delivery's signature with the callback secret of its
// event's client; on a refusal it returns why and the status to answer.
func (in *devInbox) verify(ctx context.Context, eventID string, header http.Header, body []byte) (clientID, reason string, status int) {
	if header.Get(webhooks.SignatureHeader) == "" {
		return "", "no " + webhooks.SignatureHeader + " header: the delivery is not signed", http.StatusUnauthorized
	}
	clientID, secret, err := in.secretOf(ctx, eventID)
	switch {
	case errors.Is(err, errUnknownEvent):
		return "", fmt.Sprintf("%s %q names no webhook event of this dev", webhooks.EventIDHeader, eventID), http.StatusUnauthorized
	case err != nil:
		slog.ErrorContext(ctx, "dev inbox: looking up the event's callback secret failed", slog.Any("error", err))
		return "", "the inbox could not look up the event's callback secret", http.StatusServiceUnavailable
	}
	if err := client.VerifyWebhook(secret, header, body, time.Now()); err != nil {
		return "", fmt.Sprintf("%s does not verify with the callback secret of the event's client: %v", webhooks.SignatureHeader, err),
			http.StatusUnauthorized
	}
	return clientID, "", 0
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
	w.Header().Set("X-Content-Type-Options", "nosniff") // never read as a script by another site's page
	json.NewEncoder(w).Encode(in.snapshot())
}

// setMode takes the JSON body {"mode": "ok"|"fail"|"timeout"}, whatever
// the Content-Type says: `curl -d` labels it a form. A form-encoded body is
// refused. The JSON body is not what keeps other sites out (guard is); it
// only spares a mode switch by an old browser that sends neither header
// guard reads, from a plain form.
func (in *devInbox) setMode(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 1024))
	var body struct {
		Mode string `json:"mode"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		inboxRefusal(w, http.StatusBadRequest, fmt.Sprintf(`the body must be JSON such as {"mode":"fail"} (mode %s, %s or %s)`, inboxOK, inboxFail, inboxTimeout),
			`curl -s -X POST $BASE/dev/inbox/mode -d '{"mode":"fail"}'`)
		return
	}
	mode := body.Mode
	if mode != inboxOK && mode != inboxFail && mode != inboxTimeout {
		inboxError(w, http.StatusBadRequest, fmt.Sprintf("mode must be %s, %s or %s", inboxOK, inboxFail, inboxTimeout))
		return
	}
	in.mu.Lock()
	in.mode = mode
	in.mu.Unlock()
	if r.Header.Get("Sec-Fetch-Mode") == "navigate" || strings.Contains(r.Header.Get("Accept"), "text/html") {
		http.Redirect(w, r, devInboxPath, http.StatusSeeOther) // the page's buttons: back to the page
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"mode":%q}`, mode)
}

func (in *devInbox) page(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// Never in another site's frame: its buttons could be clicked through
	// a disguise, and the click would be same-origin.
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "frame-ancestors 'none'")
	inboxPage.Execute(w, in.snapshot())
}

// inboxPage is the inbox as a page that reloads itself every 2 s; no
// script, no external resource. Its buttons post JSON without a script: a
// text/plain form sends name=value, and each button's name and value make
// that {"mode":"fail","_":"="}.
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
pre{margin:0;white-space:pre-wrap;font-size:12px}.ok{color:#17702b}
form{display:inline}button{margin-right:.3em}
</style></head><body>
<h1>Webhook inbox</h1>
<p>The demo client's webhooks arrive here; only those whose signature verifies with the callback secret of the event's client are shown.
Mode: <strong id="mode">{{.Mode}}</strong>
<form method="post" action="/dev/inbox/mode" enctype="text/plain"><button name='{"mode":"ok","_":"' value='"}'>answer 200</button><button name='{"mode":"fail","_":"' value='"}'>answer 500</button><button name='{"mode":"timeout","_":"' value='"}'>time out</button></form>
— also as <a href="/dev/inbox.json">JSON</a>; this page reloads every 2 s.</p>
<table><thead><tr><th>#</th><th>received</th><th>event</th><th>signature</th><th>answered</th><th>body</th></tr></thead><tbody>
{{range .Deliveries}}<tr class="delivery"><td>{{.Seq}}</td><td>{{.ReceivedAt.Format "15:04:05.000"}}<br>{{.Target}}</td>
<td>{{.Event}}<br><small>{{.EventID}}</small></td>
<td><span class="ok">verified</span><br><small>client {{.ClientID}}</small></td>
<td>{{if .Answered}}{{.Answered}}{{else}}timed out{{end}}</td><td><pre>{{pretty .Body}}</pre></td></tr>
{{else}}<tr><td colspan="6">Nothing yet: create a payout or a payment.</td></tr>{{end}}
</tbody></table></body></html>
`))

// inboxError answers {"error": msg}, as every error of the service does.
func inboxError(w http.ResponseWriter, status int, msg string) {
	inboxRefusal(w, status, msg, "")
}

// inboxRefusal answers {"error": msg, "hint": hint}: what to do instead
// goes beside the error, never in it.
func inboxRefusal(w http.ResponseWriter, status int, msg, hint string) {
	body := map[string]string{"error": msg}
	if hint != "" {
		body["hint"] = hint
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}
