package snap_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/payoutd/payoutd/vendors/snap"
)

// rawToken asks the simulator for a token as a partner would, signing
// with the test key; hdr may override headers ("" deletes one).
func rawToken(t *testing.T, e *env, now time.Time, body []byte, hdr map[string]string) (int, []byte) {
	t.Helper()
	if body == nil {
		body = []byte(`{"grantType":"client_credentials"}`)
	}
	ts := snap.Timestamp(now)
	sig, err := snap.SignToken(e.key, clientKey, ts)
	if err != nil {
		t.Fatal(err)
	}
	h := map[string]string{"Content-Type": "application/json", "X-TIMESTAMP": ts, "X-CLIENT-KEY": clientKey, "X-SIGNATURE": sig}
	return send(t, e.url+snap.PathAccessToken, body, h, hdr)
}

func accessToken(t *testing.T, body []byte) string {
	t.Helper()
	var r snap.TokenResponse
	if err := json.Unmarshal(body, &r); err != nil || r.AccessToken == "" {
		t.Fatalf("no token in %s", body)
	}
	return r.AccessToken
}

// rawCall makes one signed service call; hdr may override headers.
func rawCall(t *testing.T, e *env, path, token, externalID string, body []byte, hdr map[string]string) (int, []byte) {
	t.Helper()
	ts := snap.Timestamp(e.clock.Now())
	sig, err := snap.SignService(clientSecret, "POST", path, token, body, ts)
	if err != nil {
		t.Fatal(err)
	}
	h := map[string]string{
		"Content-Type": "application/json", "X-TIMESTAMP": ts, "Authorization": "Bearer " + token,
		"X-SIGNATURE": sig, "X-PARTNER-ID": partnerID, "X-EXTERNAL-ID": externalID, "CHANNEL-ID": "95221",
	}
	return send(t, e.url+path, body, h, hdr)
}

func send(t *testing.T, url string, body []byte, h, override map[string]string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	for k, v := range override {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func code(t *testing.T, body []byte) string {
	t.Helper()
	var env snap.Envelope
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return env.ResponseCode
}

// The simulator's rules, each with its documented code.
func TestSimulatorStrictness(t *testing.T) {
	e := newEnv(t, nil)
	now := e.clock.Now()
	inq := []byte(`{"beneficiaryBankCode":"014","beneficiaryAccountNo":"1234567890"}`)

	tokenCases := []struct {
		name string
		at   time.Time
		hdr  map[string]string
		body []byte
		want string
	}{
		{"stale timestamp", now.Add(-6 * time.Minute), nil, nil, "4007301"},
		{"future timestamp", now.Add(6 * time.Minute), nil, nil, "4007301"},
		{"missing timestamp", now, map[string]string{"X-TIMESTAMP": ""}, nil, "4007302"},
		{"timestamp without offset", now, map[string]string{"X-TIMESTAMP": "2026-11-22T17:00:00"}, nil, "4007301"},
		{"wrong signature", now, map[string]string{"X-SIGNATURE": "AAAA"}, nil, "4017300"},
		{"unknown client key", now, map[string]string{"X-CLIENT-KEY": "someone"}, nil, "4017300"},
		{"wrong grant type", now, nil, []byte(`{"grantType":"password"}`), "4007301"},
		{"missing grant type", now, nil, []byte(`{}`), "4007302"},
		{"ok", now, nil, nil, "2007300"},
	}
	for _, tc := range tokenCases {
		_, b := rawToken(t, e, tc.at, tc.body, tc.hdr)
		if got := code(t, b); got != tc.want {
			t.Errorf("token %s: %s, want %s (%s)", tc.name, got, tc.want, b)
		}
	}
	_, b := rawToken(t, e, now, nil, nil)
	tok := accessToken(t, b)

	svc := []struct {
		name string
		tok  string
		ext  string
		hdr  map[string]string
		body []byte
		want string
	}{
		{"ok", tok, "1001", nil, inq, "2001600"},
		{"external id reused the same day", tok, "1001", nil, inq, "4091600"},
		{"missing token", tok, "1002", map[string]string{"Authorization": ""}, inq, "4011603"},
		{"unknown token", "forged", "1003", nil, inq, "4011601"},
		{"wrong signature", tok, "1004", map[string]string{"X-SIGNATURE": "AAAA"}, inq, "4011600"},
		{"body changed after signing", tok, "1005", nil, nil, "4011600"},
		{"partner id", tok, "1006", map[string]string{"X-PARTNER-ID": "OTHER"}, inq, "4011600"},
		{"missing channel", tok, "1007", map[string]string{"CHANNEL-ID": ""}, inq, "4001602"},
		{"non-numeric external id", tok, "12ab", nil, inq, "4001601"},
		{"missing external id", tok, "", nil, inq, "4001602"},
		{"stale timestamp", tok, "1008", map[string]string{"X-TIMESTAMP": snap.Timestamp(now.Add(-time.Hour))}, inq, "4001601"},
	}
	for _, tc := range svc {
		body := tc.body
		if tc.name == "body changed after signing" {
			// Signed over inq, sent with another account.
			ts := snap.Timestamp(e.clock.Now())
			sig, _ := snap.SignService(clientSecret, "POST", snap.PathInquiry, tok, inq, ts)
			_, b := rawCall(t, e, snap.PathInquiry, tok, tc.ext, []byte(`{"beneficiaryBankCode":"014","beneficiaryAccountNo":"1234567891"}`), map[string]string{"X-SIGNATURE": sig, "X-TIMESTAMP": ts})
			if got := code(t, b); got != tc.want {
				t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
			}
			continue
		}
		_, b := rawCall(t, e, snap.PathInquiry, tc.tok, tc.ext, body, tc.hdr)
		if got := code(t, b); got != tc.want {
			t.Errorf("%s: %s, want %s (%s)", tc.name, got, tc.want, b)
		}
	}
	// The same external id is fresh again on the next Jakarta day.
	e.clock.Advance(24 * time.Hour)
	_, b = rawToken(t, e, e.clock.Now(), nil, nil)
	tok = accessToken(t, b)
	if _, b := rawCall(t, e, snap.PathInquiry, tok, "1001", inq, nil); code(t, b) != "2001600" {
		t.Errorf("external id of yesterday refused: %s", b)
	}
	// Tokens expire.
	e.clock.Advance(tokenTTL)
	if _, b := rawCall(t, e, snap.PathInquiry, tok, "1009", inq, nil); code(t, b) != "4011601" {
		t.Errorf("expired token: %s, want 4011601", b)
	}
}
