package api

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/signature"
)

type diagnosisBody struct {
	Valid       bool `json:"valid"`
	Diagnostics struct {
		ReceivedBody            *string `json:"received_body"`
		ReceivedBodyLength      *int64  `json:"received_body_length"`
		ReceivedBodySHA256      *string `json:"received_body_sha256"`
		ReceivedTimestamp       *string `json:"received_timestamp"`
		ServerTimeMS            *int64  `json:"server_time_ms"`
		WindowDeltaMS           *int64  `json:"window_delta_ms"`
		WindowOK                *bool   `json:"window_ok"`
		SignedPayloadString     *string `json:"signed_payload_string"`
		ClientProvidedSignature *string `json:"client_provided_signature"`
		SignatureVersion        string  `json:"signature_version"`
		Diagnosis               *string `json:"diagnosis"`
	} `json:"diagnostics"`
}

const checkPath = "/api/v3/debug/signature-check"

func TestSignatureCheckDiagnoses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.newMerchant()
	noSecret := b.newClient(admin.ClientOptions{Name: "No secret", NoSigningSecret: true})
	body := []byte(`{"amount":"100000","bank_code":"bca"}`)
	tNow := strconv.FormatInt(fixedNow.UnixMilli(), 10)
	good := signature.Compute(m.signingSecret, tNow, body)
	sig := func(t, v1 string) map[string]string { return map[string]string{"x-signature": "t=" + t + ",v1=" + v1} }

	cases := []struct {
		name    string
		key     string
		body    []byte
		headers map[string]string
		want    signature.Diagnosis
	}{
		{"ok", m.apiKey, body, sig(tNow, good), signature.OK},
		{"signature_mismatch: other secret", m.apiKey, body, sig(tNow, signature.Compute("other", tNow, body)), signature.SignatureMismatch},
		{"signature_mismatch: body re-serialised", m.apiKey, []byte(`{"amount": "100000","bank_code":"bca"}`), sig(tNow, good), signature.SignatureMismatch},
		{"hex_case_mismatch", m.apiKey, body, sig(tNow, strings.ToUpper(good)), signature.HexCaseMismatch},
		{"timestamp_out_of_window", m.apiKey, body, sig(strconv.FormatInt(fixedNow.Add(-10*time.Minute).UnixMilli(), 10), good), signature.TimestampOutOfWindow},
		{"malformed_timestamp", m.apiKey, body, sig("12:00", good), signature.MalformedTimestamp},
		{"missing_signature_header", m.apiKey, body, nil, signature.MissingSignatureHeader},
		{"missing_signature_header: empty", m.apiKey, body, map[string]string{"x-signature": ""}, signature.MissingSignatureHeader},
		{"malformed_signature_header: no v1", m.apiKey, body, map[string]string{"x-signature": "t=" + tNow}, signature.MalformedSignatureHeader},
		{"malformed_signature_header: short v1", m.apiKey, body, sig(tNow, "abc"), signature.MalformedSignatureHeader},
		{"malformed_signature_header: wins over malformed_timestamp", m.apiKey, body, sig("x", "abc"), signature.MalformedSignatureHeader},
		{"no_secret_provisioned", noSecret.apiKey, body, sig(tNow, good), signature.NoSecretProvisioned},
		{"content_encoding_not_supported", m.apiKey, body, map[string]string{"x-signature": "t=" + tNow + ",v1=" + good, "Content-Encoding": "gzip"}, signature.ContentEncodingNotSupported},
		{"body_too_large", m.apiKey, []byte(strings.Repeat(" ", 1<<20+1)), sig(tNow, good), signature.BodyTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := b.do(request{method: "POST", path: checkPath, apiKey: tc.key, body: tc.body, headers: tc.headers})
			r.expect(t, http.StatusOK, "")
			var d diagnosisBody
			r.decode(t, &d)
			if d.Diagnostics.Diagnosis == nil || *d.Diagnostics.Diagnosis != string(tc.want) {
				t.Fatalf("diagnosis %v, want %s; body %s", d.Diagnostics.Diagnosis, tc.want, r.body)
			}
			if d.Valid != (tc.want == signature.OK) {
				t.Fatalf("valid %v for %s", d.Valid, tc.want)
			}
			// What the server computes for these bytes must never be shown
			// unless the client sent exactly that.
			serverSig := signature.Compute(m.signingSecret, tNow, tc.body)
			sentIt := strings.Contains(tc.headers["x-signature"], serverSig)
			if !sentIt && strings.Contains(string(r.body), serverSig) {
				t.Fatal("the answer reveals the server's signature")
			}
		})
	}
}

func TestSignatureCheckDiagnostics(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.newMerchant()
	body := []byte(`{"hello":"dunia"}`)
	tSent := fixedNow.Add(-90 * time.Second)
	tText := strconv.FormatInt(tSent.UnixMilli(), 10)
	header := "t=" + tText + ",v1=" + strings.Repeat("0", 64)
	r := b.do(request{method: "POST", path: checkPath, apiKey: m.apiKey, body: body, headers: map[string]string{"x-signature": header}})
	r.expect(t, 200, "")
	var d diagnosisBody
	r.decode(t, &d)
	dg := d.Diagnostics
	sum := sha256.Sum256(body)
	checks := []struct {
		name string
		ok   bool
	}{
		{"received_body", dg.ReceivedBody != nil && *dg.ReceivedBody == string(body)},
		{"received_body_length", dg.ReceivedBodyLength != nil && *dg.ReceivedBodyLength == int64(len(body))},
		{"received_body_sha256", dg.ReceivedBodySHA256 != nil && *dg.ReceivedBodySHA256 == hex.EncodeToString(sum[:])},
		{"received_timestamp", dg.ReceivedTimestamp != nil && *dg.ReceivedTimestamp == tText},
		{"server_time_ms", dg.ServerTimeMS != nil && *dg.ServerTimeMS == fixedNow.UnixMilli()},
		{"window_delta_ms", dg.WindowDeltaMS != nil && *dg.WindowDeltaMS == -90000},
		{"window_ok", dg.WindowOK != nil && *dg.WindowOK},
		{"signed_payload_string", dg.SignedPayloadString != nil && *dg.SignedPayloadString == tText+"."+string(body)},
		{"client_provided_signature", dg.ClientProvidedSignature != nil && *dg.ClientProvidedSignature == header},
		{"diagnosis", dg.Diagnosis != nil && *dg.Diagnosis == "signature_mismatch"},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("diagnostics.%s wrong in %s", c.name, r.body)
		}
	}
	secret := m.signingSecret
	expected := signature.Compute(secret, tText, body)
	if strings.Contains(string(r.body), expected) {
		t.Fatal("the server's signature leaked into the diagnostic")
	}
}

func TestSignatureCheckAuthenticatesFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	holding := b.newClient(admin.ClientOptions{Kind: models.KindHolding})
	restricted := b.newClient(admin.ClientOptions{AllowedIPs: "192.0.2.0/24"})
	b.do(request{method: "POST", path: checkPath, body: []byte(`{}`)}).expect(t, 401, "missing x-api-key header")
	b.do(request{method: "POST", path: checkPath, apiKey: "v3_live_nope", body: []byte(`{}`)}).expect(t, 401, "invalid API key")
	b.do(request{method: "POST", path: checkPath, apiKey: holding.apiKey, body: []byte(`{}`)}).expect(t, 403, errHoldingClient.Error())
	b.do(request{method: "POST", path: checkPath, apiKey: restricted.apiKey, body: []byte(`{}`)}).expect(t, 403, errIPNotAllowed.Error())
}

func TestSignatureCheckRateLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.newMerchant()
	other := b.newMerchant()
	check := func(key string) response {
		return b.do(request{method: "POST", path: checkPath, apiKey: key, body: []byte(`{}`)})
	}
	for i := 1; i <= 20; i++ {
		if r := check(m.apiKey); r.status != 200 {
			t.Fatalf("request %d of 20: status %d %s", i, r.status, r.body)
		}
	}
	r := check(m.apiKey)
	r.expect(t, http.StatusTooManyRequests, models.ErrRateLimited.Error())
	retry, err := strconv.Atoi(r.header.Get("Retry-After"))
	if err != nil || retry < 1 || retry > 60 {
		t.Fatalf("Retry-After %q, want whole seconds from 1 to 60", r.header.Get("Retry-After"))
	}
	// The limit is per client.
	check(other.apiKey).expect(t, 200, "")
}
