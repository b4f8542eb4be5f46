package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/signature"
)

// The dev inbox answers only this machine's own user: another site's page
// (a cross-site form, a name rebound to 127.0.0.1) can neither read it nor
// switch its mode, and nobody can post a delivery dev did not sign. The
// README's curl and the page's own buttons still switch the mode.
func TestDevInboxAnswersOnlyItsOwnMachine(t *testing.T) {
	env := map[string]string{"HTTP_ADDR": "127.0.0.1:0", "DEV_DATA_DIR": t.TempDir(), "LOG_LEVEL": "error",
		"SANDBOX_COMPLETE_AFTER": "100ms"}
	banner, _ := runDevUntil(t, env)
	base := bannerField(t, banner, `Ready in \S+ at (http://\S+)`)
	port := base[strings.LastIndex(base, ":")+1:]
	clientID := bannerField(t, banner, `client_id\s+([0-9a-f-]{36})`)
	callbackSecret := bannerField(t, banner, `callback_secret\s+([0-9a-f]{64})`)

	send := func(method, path, body string, header map[string]string) (int, string, http.Header) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		for k, v := range header {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultTransport.RoundTrip(req) // redirects not followed
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b), resp.Header
	}
	mode := func() string {
		t.Helper()
		code, body, _ := send(http.MethodGet, "/dev/inbox.json", "", nil)
		var snap inboxSnapshot
		if code != http.StatusOK || json.Unmarshal([]byte(body), &snap) != nil {
			t.Fatalf("GET /dev/inbox.json: %d %s", code, body)
		}
		return snap.Mode
	}

	// A page of attacker.example whose name resolves to 127.0.0.1 reaches
	// the port; its requests carry its own Host, and every inbox route
	// refuses them with why.
	foreign := map[string]string{"Host": "attacker.example:" + port, "Content-Type": "application/json"}
	for _, r := range []struct{ method, path, body string }{
		{http.MethodGet, "/dev/inbox", ""},
		{http.MethodGet, "/dev/inbox.json", ""},
		{http.MethodPost, "/dev/inbox/mode", `{"mode":"fail"}`},
		{http.MethodPost, "/dev/inbox/payouts", `{"event":"disbursement.success"}`},
		{http.MethodPost, "/dev/inbox/payments", `{"event":"payment.success"}`},
	} {
		code, body, _ := send(r.method, r.path, r.body, foreign)
		var e struct{ Error, Hint string }
		if code != http.StatusMisdirectedRequest || json.Unmarshal([]byte(body), &e) != nil ||
			!strings.Contains(e.Error, "loopback Host") || !strings.Contains(e.Hint, "127.0.0.1:"+port) {
			t.Errorf("%s %s with Host attacker.example: %d %s; want 421 saying only a loopback Host is answered", r.method, r.path, code, body)
		}
	}
	for _, host := range []string{"localhost:" + port, "[::1]:" + port, "127.0.0.1:" + port} {
		if code, body, _ := send(http.MethodGet, "/dev/inbox.json", "", map[string]string{"Host": host}); code != http.StatusOK {
			t.Errorf("GET /dev/inbox.json with Host %s: %d %s", host, code, body)
		}
	}

	// Cross-site posts, as browsers send them, are refused.
	for name, h := range map[string]map[string]string{
		"a cross-site form": {"Content-Type": "application/x-www-form-urlencoded", "Sec-Fetch-Site": "cross-site",
			"Origin": "http://evil.example"},
		"a cross-site text/plain form posting JSON": {"Content-Type": "text/plain", "Sec-Fetch-Site": "cross-site",
			"Origin": "http://evil.example"},
		"a browser without Sec-Fetch-Site":      {"Content-Type": "text/plain", "Origin": "http://evil.example"},
		"another port of this machine":          {"Content-Type": "text/plain", "Sec-Fetch-Site": "same-site", "Origin": "http://localhost:3000"},
		"a sandboxed page":                      {"Content-Type": "text/plain", "Origin": "null"},
		"another origin claiming a loopback IP": {"Content-Type": "text/plain", "Origin": "http://127.0.0.2:" + port},
	} {
		for _, body := range []string{"mode=fail", `{"mode":"fail","_":"="}`} {
			code, got, _ := send(http.MethodPost, "/dev/inbox/mode", body, h)
			if code != http.StatusForbidden || !strings.Contains(got, `"error":"the dev inbox refuses requests from another`) {
				t.Errorf("%s posting %s: %d %s; want 403", name, body, code, got)
			}
		}
	}
	if m := mode(); m != inboxOK {
		t.Errorf("after the refused requests the inbox mode is %q, want ok", m)
	}

	// README's command as written (curl -d sends it as a form); without
	// curl, the same request made in Go.
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	cmd := regexp.MustCompile("curl -s -X POST \\$BASE/dev/inbox/mode -d '\\{\"mode\":\"fail\"\\}'").Find(readme)
	if cmd == nil {
		t.Fatal("README.md no longer shows curl -s -X POST $BASE/dev/inbox/mode -d '{\"mode\":\"fail\"}'")
	}
	if _, err := exec.LookPath("curl"); err == nil {
		out, err := exec.Command("bash", "-c", "BASE="+base+"; "+string(cmd)).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != `{"mode":"fail"}` {
			t.Errorf("README's %s: %v %s", cmd, err, out)
		}
	} else {
		code, body, _ := send(http.MethodPost, "/dev/inbox/mode", `{"mode":"fail"}`,
			map[string]string{"Content-Type": "application/x-www-form-urlencoded", "User-Agent": "curl/8.5.0", "Accept": "*/*"})
		if code != http.StatusOK || body != `{"mode":"fail"}` {
			t.Errorf("README's curl body sent as a form: %d %s", code, body)
		}
	}
	if m := mode(); m != inboxFail {
		t.Errorf("after README's curl the mode is %q, want fail", m)
	}
	if code, body, _ := send(http.MethodPost, "/dev/inbox/mode", "mode=ok",
		map[string]string{"Content-Type": "application/x-www-form-urlencoded"}); code != http.StatusBadRequest || !strings.Contains(body, "must be JSON") {
		t.Errorf("a form-encoded mode: %d %s; want 400", code, body)
	}

	// The page's "answer 200" button, posted as a browser posts it: the
	// text/plain encoding of the button's name and value, same-origin.
	_, page, pageHeader := send(http.MethodGet, "/dev/inbox", "", nil)
	if pageHeader.Get("X-Frame-Options") != "DENY" {
		t.Errorf("the page may be framed by another site: X-Frame-Options %q", pageHeader.Get("X-Frame-Options"))
	}
	button := regexp.MustCompile(`<form method="post" action="/dev/inbox/mode" enctype="text/plain">.*?<button name='([^']*)' value='([^']*)'>answer 200</button>`).FindStringSubmatch(page)
	if button == nil {
		t.Errorf("the page has no text/plain form with an \"answer 200\" button:\n%s", page)
	} else {
		code, body, header := send(http.MethodPost, "/dev/inbox/mode", button[1]+"="+button[2]+"\r\n", map[string]string{
			"Content-Type": "text/plain", "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "navigate", "Origin": base,
			"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
		if code != http.StatusSeeOther || header.Get("Location") != "/dev/inbox" || mode() != inboxOK {
			t.Errorf("the page's answer 200 button: %d %s (Location %q), mode %q", code, body, header.Get("Location"), mode())
		}
	}

	// A real delivery, then forgeries: none is answered 2xx or shown.
	walletID := bannerField(t, banner, `wallets\s+([0-9a-f-]{36})`)
	payout := []byte(`{"client_wallet_id":"` + walletID + `","amount":"100000","bank_code":"bca","account_no":"1234567890","transfer_type":"BIFAST"}`)
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v3/disbursements", bytes.NewReader(payout))
	req.Header.Set("x-api-key", bannerField(t, banner, `api_key\s+(v3_test_[0-9a-f]+)`))
	req.Header.Set("x-signature", signature.Sign(bannerField(t, banner, `signing_secret\s+([0-9a-f]{64})`), payout, time.Now()))
	req.Header.Set("Idempotency-Key", "guard-1")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create a payout: %v %v", resp, err)
	}
	resp.Body.Close()
	real := waitInbox(t, base, func(d inboxDelivery) bool {
		return d.Event == "disbursement.success" && strings.Contains(d.Body, "1234567890")
	})
	if _, list, _ := send(http.MethodGet, "/dev/inbox.json", "", nil); !real.Verified || !strings.Contains(list, `"client_id":"`+clientID+`"`) {
		t.Errorf("the genuine delivery: %+v; want verified, of the demo client %s:\n%s", real, clientID, list)
	}

	forged := strings.Replace(real.Body, "1234567890", "9999999999", 1)
	now := time.Now()
	for name, h := range map[string]map[string]string{
		"unsigned":                            {"x-event-id": uuid.NewString()},
		"unsigned, of a real event":           {"x-event-id": real.EventID},
		"signed with another secret":          {"x-event-id": real.EventID, "x-callback-signature": signature.Sign(strings.Repeat("ab", 32), []byte(forged), now)},
		"the real signature on another body":  {"x-event-id": real.EventID, "x-callback-signature": real.Headers["x-callback-signature"]},
		"signed right but of no event of dev": {"x-event-id": uuid.NewString(), "x-callback-signature": signature.Sign(callbackSecret, []byte(forged), now)},
		"signed right an hour ago":            {"x-event-id": real.EventID, "x-callback-signature": signature.Sign(callbackSecret, []byte(forged), now.Add(-time.Hour))},
	} {
		h["Content-Type"] = "application/json"
		code, body, _ := send(http.MethodPost, "/dev/inbox/payouts", forged, h)
		if code != http.StatusUnauthorized || !strings.Contains(body, `"error":`) {
			t.Errorf("a forged delivery (%s): %d %s; want 401", name, code, body)
		}
	}
	_, list, _ := send(http.MethodGet, "/dev/inbox.json", "", nil)
	if strings.Contains(list, "9999999999") {
		t.Fatalf("the inbox shows a forged delivery:\n%s", list)
	}
}
