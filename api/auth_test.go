package api

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/signature"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

const windowMsg = "Request timestamp outside valid window (5 minutes)"

// TestAuthenticationFailureRules walks every row of the spec's failure
// rules table, plus the design's additions, on real routes.
func TestAuthenticationFailureRules(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.newMerchant()
	wallets := "/api/v3/wallets"
	body := []byte(`{"client_wallet_id":"x"}`)
	stale := millis(fixedNow.Add(-5*time.Minute - time.Millisecond))
	future := millis(fixedNow.Add(5*time.Minute + time.Millisecond))
	edge := millis(fixedNow.Add(-5 * time.Minute))
	holding := b.newClient(admin.ClientOptions{Name: "Holding Co", Kind: models.KindHolding})
	restricted := b.newClient(admin.ClientOptions{Name: "Restricted", AllowedIPs: "198.51.100.0/24"})
	staging := setup(t, setupOptions{env: models.Staging}).newMerchant()
	// A staging client in this server's database: a key it knows as one of
	// the other environment.
	stagingAdmin := b.admin
	stagingAdmin.Env = models.Staging
	knownStaging, err := admin.CreateClient(context.Background(), stagingAdmin, admin.ClientOptions{Name: "Staging Co"})
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name   string
		req    request
		status int
		msg    string
	}{
		{"api key missing", request{path: wallets, timestamp: true}, 401, "missing x-api-key header"},
		{"api key unknown", request{path: wallets, apiKey: "v3_live_" + strings.Repeat("ab", 24), timestamp: true}, 401, "invalid API key"},
		{"api key of the legacy generation", request{path: wallets, apiKey: "sk_live_0123456789abcdef", timestamp: true}, 401, models.ErrLegacyAPIKey.Error()},
		{"api key of the other environment, known here", request{path: wallets, apiKey: knownStaging.APIKey, timestamp: true}, 401, models.ErrWrongEnvironmentKey.Error()},
		// Its prefix alone does not make a key one of the other environment.
		{"api key with the other environment's prefix, unknown here", request{path: wallets, apiKey: staging.apiKey, timestamp: true}, 401, "invalid API key"},
		{"x-timestamp missing", request{path: wallets, apiKey: m.apiKey}, 400, windowMsg},
		{"x-timestamp malformed", request{path: wallets, apiKey: m.apiKey, headers: map[string]string{"x-timestamp": "yesterday"}}, 400, windowMsg},
		{"x-timestamp with a sign", request{path: wallets, apiKey: m.apiKey, headers: map[string]string{"x-timestamp": "+" + millis(fixedNow)}}, 400, windowMsg},
		{"x-timestamp in seconds, not ms", request{path: wallets, apiKey: m.apiKey, headers: map[string]string{"x-timestamp": jsonNumber(fixedNow.Unix())}}, 400, windowMsg},
		{"x-signature t in seconds, not ms", request{path: wallets, apiKey: m.apiKey, headers: map[string]string{"x-signature": signWithT(m.signingSecret, nil, fixedNow.Unix())}}, 401, windowMsg},
		{"x-timestamp too old", request{path: wallets, apiKey: m.apiKey, headers: map[string]string{"x-timestamp": stale}}, 400, windowMsg},
		{"x-timestamp too far ahead", request{path: wallets, apiKey: m.apiKey, headers: map[string]string{"x-timestamp": future}}, 400, windowMsg},
		{"x-timestamp exactly 5 minutes old", request{path: wallets, apiKey: m.apiKey, headers: map[string]string{"x-timestamp": edge}}, 200, ""},
		{"x-signature missing on create", request{method: "POST", path: "/api/v3/disbursements", body: body, apiKey: m.apiKey, timestamp: true}, 401, "missing x-signature header"},
		{"x-signature missing on quote", request{method: "POST", path: "/api/v3/disbursements/quote", body: body, apiKey: m.apiKey, timestamp: true}, 401, "missing x-signature header"},
		{"x-signature empty on create", request{method: "POST", path: "/api/v3/disbursements", body: body, apiKey: m.apiKey, headers: map[string]string{"x-signature": " "}}, 401, "missing x-signature header"},
		{"x-signature wrong on create", request{method: "POST", path: "/api/v3/disbursements", body: body, apiKey: m.apiKey, sign: "not-the-secret"}, 401, ""},
		{"x-signature wrong where optional", request{path: wallets, apiKey: m.apiKey, sign: "not-the-secret"}, 401, ""},
		{"x-signature wrong even with a good x-timestamp", request{path: wallets, apiKey: m.apiKey, sign: "not-the-secret", timestamp: true}, 401, ""},
		{"x-signature malformed where optional", request{path: wallets, apiKey: m.apiKey, headers: map[string]string{"x-signature": "v1=abc"}}, 401, ""},
		{"x-signature t outside the window", request{path: wallets, apiKey: m.apiKey, headers: map[string]string{"x-signature": signature.Sign(m.signingSecret, nil, fixedNow.Add(-6*time.Minute))}}, 401, windowMsg},
		{"valid x-signature makes x-timestamp irrelevant", request{path: wallets, apiKey: m.apiKey, sign: m.signingSecret, headers: map[string]string{"x-timestamp": stale}}, 200, ""},
		{"valid x-timestamp", request{path: wallets, apiKey: m.apiKey, timestamp: true}, 200, ""},
		{"holding client", request{path: wallets, apiKey: holding.apiKey, timestamp: true}, 403, errHoldingClient.Error()},
		{"holding client before timestamp checks", request{path: wallets, apiKey: holding.apiKey}, 403, errHoldingClient.Error()},
		{"source IP not allowed", request{path: wallets, apiKey: restricted.apiKey, timestamp: true}, 403, errIPNotAllowed.Error()},
		{"source IP not allowed, before the signature", request{path: wallets, apiKey: restricted.apiKey, sign: "wrong"}, 403, errIPNotAllowed.Error()},
		{"source IP allowed", request{path: wallets, apiKey: restricted.apiKey, timestamp: true, remoteIP: "198.51.100.7"}, 200, ""},
		{"X-Forwarded-For from an untrusted peer is ignored", request{path: wallets, apiKey: restricted.apiKey, timestamp: true, headers: map[string]string{"X-Forwarded-For": "198.51.100.7"}}, 403, errIPNotAllowed.Error()},
		{"Content-Encoding on a signed request", request{method: "POST", path: "/api/v3/disbursements", body: body, apiKey: m.apiKey, sign: m.signingSecret, headers: map[string]string{"Content-Encoding": "gzip"}}, 415, ""},
		{"body over 1 MiB", request{method: "POST", path: "/api/v3/disbursements", body: bytes.Repeat([]byte("a"), 1<<20+1), apiKey: m.apiKey, sign: m.signingSecret}, 413, ""},
		// Past authentication the handler answers: here, for the missing key.
		{"signed create passes authentication", request{method: "POST", path: "/api/v3/disbursements", body: body, apiKey: m.apiKey, sign: m.signingSecret}, 400, "missing Idempotency-Key header"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b.do(tc.req).expect(t, tc.status, tc.msg)
		})
	}
}

func TestTrustedProxyForwardsClientIP(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOptions{env: models.Production, trustedProxies: "10.0.0.0/8"})
	m := b.newClient(admin.ClientOptions{AllowedIPs: "198.51.100.7"})
	via := func(peer, xff string) response {
		return b.do(request{path: "/api/v3/wallets", apiKey: m.apiKey, timestamp: true, remoteIP: peer,
			headers: map[string]string{"X-Forwarded-For": xff}})
	}
	via("10.1.2.3", "198.51.100.7").expect(t, 200, "")
	via("10.1.2.3", "192.0.2.1").expect(t, 403, errIPNotAllowed.Error())
	// A peer outside TRUSTED_PROXIES cannot claim another address.
	via("192.0.2.50", "198.51.100.7").expect(t, 403, errIPNotAllowed.Error())
}

func TestClientWithoutSigningSecret(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.newClient(admin.ClientOptions{NoSigningSecret: true})
	b.do(request{path: "/api/v3/wallets", apiKey: m.apiKey, timestamp: true}).expect(t, 200, "")
	b.do(request{path: "/api/v3/wallets", apiKey: m.apiKey, sign: "anything"}).expect(t, 401, errNoSigningSecret.Error())
	b.do(request{method: "POST", path: "/api/v3/disbursements", body: []byte(`{}`), apiKey: m.apiKey, timestamp: true}).expect(t, 401, "missing x-signature header")
}

func TestRotatedCredentials(t *testing.T) {
	t.Parallel()
	b := setup(t)
	old := b.newMerchant()
	wallet := b.newWallet(old.id, "Main", sandbox.SimBank, false)
	path := "/api/v3/wallets/" + wallet.String() + "/balance"
	b.do(request{path: path, apiKey: old.apiKey, sign: old.signingSecret}).expect(t, 200, "")

	rotated, err := admin.RotateCredentials(context.Background(), b.admin, old.id)
	if err != nil {
		t.Fatal(err)
	}
	if rotated.APIKey == old.apiKey || *rotated.SigningSecret == old.signingSecret || rotated.CallbackSecret == old.callbackSecret {
		t.Fatal("rotation must replace the key and both secrets")
	}
	b.do(request{path: path, apiKey: old.apiKey, sign: old.signingSecret}).expect(t, 401, "invalid API key")
	b.do(request{path: path, apiKey: rotated.APIKey, sign: *rotated.SigningSecret}).expect(t, 200, "")
	b.do(request{path: path, apiKey: rotated.APIKey, sign: old.signingSecret}).expect(t, 401, "")
	b.do(request{path: path, apiKey: rotated.APIKey, timestamp: true}).expect(t, 200, "")
}

func TestUnknownRoutesAndMethods(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do(request{path: "/api/v3/nothing-here"}).expect(t, 404, "not found")
	b.do(request{path: "/"}).expect(t, 404, "not found")
	b.do(request{method: "DELETE", path: "/api/v3/wallets"}).expect(t, 405, "method not allowed")
}

func TestRequestIDHeader(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.do(request{path: "/healthz"})
	if len(r.header.Get("X-Request-Id")) < 16 {
		t.Fatalf("X-Request-Id missing: %q", r.header.Get("X-Request-Id"))
	}
	r = b.do(request{path: "/healthz", headers: map[string]string{"X-Request-Id": "caller-chosen-id-123"}})
	if got := r.header.Get("X-Request-Id"); got != "caller-chosen-id-123" {
		t.Fatalf("caller's X-Request-Id not kept: %q", got)
	}
	r = b.do(request{path: "/healthz", headers: map[string]string{"X-Request-Id": "bad id\nwith newline"}})
	if got := r.header.Get("X-Request-Id"); strings.ContainsAny(got, " \n") || got == "" {
		t.Fatalf("unsafe X-Request-Id echoed: %q", got)
	}
}

func TestOpsEndpoints(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do(request{path: "/healthz"}).expect(t, http.StatusOK, "")
	b.do(request{path: "/readyz"}).expect(t, http.StatusOK, "")
}

// signWithT is an x-signature whose t is the raw value t (a client's
// mistake: seconds where milliseconds are meant).
func signWithT(secret string, body []byte, t int64) string {
	ts := strconv.FormatInt(t, 10)
	return "t=" + ts + ",v1=" + signature.Compute(secret, ts, body)
}

// A path with a trailing slash is not another resource: it answers the
// API's JSON 404, not a redirect with an HTML body.
func TestTrailingSlashAnswersJSON(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.newMerchant()
	for _, path := range []string{"/api/v3/wallets/", "/api/v3/disbursements/quote/"} {
		r := b.do(request{path: path, apiKey: m.apiKey, timestamp: true})
		r.expect(t, http.StatusNotFound, models.ErrNotFound.Error())
		if loc := r.header.Get("Location"); loc != "" {
			t.Errorf("%s redirects to %s", path, loc)
		}
	}
}

// The signature check names the fix of a t sent in seconds.
func TestSignatureCheckHintsAtSeconds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.newMerchant()
	body := []byte(`{"hello":"dunia"}`)
	r := b.do(request{method: http.MethodPost, path: "/api/v3/debug/signature-check", body: body, apiKey: m.apiKey,
		headers: map[string]string{"x-signature": signWithT(m.signingSecret, body, fixedNow.Unix())}})
	var got signatureCheckResponse
	r.decode(t, &got)
	if got.Valid || got.Diagnostics.Diagnosis != "timestamp_out_of_window" || !strings.Contains(got.Diagnostics.Hint, "Unix milliseconds") {
		t.Fatalf("signature check of t in seconds: %s", r.body)
	}
	r = b.do(request{method: http.MethodPost, path: "/api/v3/debug/signature-check", body: body, apiKey: m.apiKey, sign: m.signingSecret})
	got = signatureCheckResponse{}
	r.decode(t, &got)
	if !got.Valid || strings.Contains(string(r.body), `"hint"`) {
		t.Fatalf("a valid signature got a hint: %s", r.body)
	}
}
