package api

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/signature"
)

// The used-signature records in Redis are the fast first check; the
// creates that move money also keep their signature in the database,
// unique per client. These tests lose Redis's records (as a volatile-*
// eviction policy or a Sentinel failover would) and send the signature
// again.

// forgetSignatures deletes every used-signature record of m from Redis.
func (b *bundle) forgetSignatures(m merchant) int {
	b.t.Helper()
	ctx := context.Background()
	keys, err := b.redis.Keys(ctx, "sigused:"+m.id.String()+":*").Result()
	if err != nil {
		b.t.Fatal(err)
	}
	if len(keys) > 0 {
		if err := b.redis.Del(ctx, keys...).Err(); err != nil {
			b.t.Fatal(err)
		}
	}
	return len(keys)
}

// The audit's second reproduction: the same v1 signature, its Redis record
// deleted, created three payouts under new keys. Now the database refuses
// it: one payout, and the balance debited once.
func TestLostSignatureRecordCannotCreateTwice(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{})
	body := e.body("100000", "1234567890").json()
	sig := signature.Sign(e.m.signingSecret, body, e.now())

	e.signed(e.m, http.MethodPost, "/api/v3/disbursements", body, sig, "k1").created(t, models.StatusSuccess)
	after := e.snapshot()
	for _, key := range []string{"k2", "k3"} {
		if n := e.forgetSignatures(e.m); n == 0 {
			t.Fatal("no signature record in Redis to lose")
		}
		e.signed(e.m, http.MethodPost, "/api/v3/disbursements", body, sig, key).expect(t, http.StatusUnauthorized, sigUsed)
	}
	e.unchanged(after)
	if n := e.stored(); n != 1 {
		t.Fatalf("%d disbursements stored, want 1", n)
	}
	e.wantWallet(e.wallet, 900000, 0)

	// The merchant's own retry, its record lost too, is still the replay.
	e.forgetSignatures(e.m)
	e.signed(e.m, http.MethodPost, "/api/v3/disbursements", body, sig, "k1").replayed(t, http.StatusOK, "")
	e.unchanged(after)
}

// A payment create has no Idempotency-Key: the same signed request again,
// its Redis record lost or not, answers the payment it created (200,
// Idempotent-Replayed) and creates nothing.
func TestSignedPaymentCreatesOnce(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{})
	body := []byte(`{"price": 50000, "playerId": "player-7"}`)
	for _, scheme := range []string{"v1", "v2"} {
		at := e.now().Add(time.Millisecond)
		sig := signature.Sign(e.m.signingSecret, body, at)
		if scheme == "v2" {
			sig = signature.SignV2(e.m.signingSecret, signature.Request{Method: http.MethodPost, Target: "/api/v1/payments", Body: body}, at)
		}
		first := e.signed(e.m, http.MethodPost, "/api/v1/payments", body, sig, "")
		first.expect(t, http.StatusCreated, "")
		var created, again paymentCreated
		first.decode(t, &created)
		for _, lose := range []bool{false, true} {
			if lose {
				e.forgetSignatures(e.m)
			}
			r := e.signed(e.m, http.MethodPost, "/api/v1/payments", body, sig, "")
			r.expect(t, http.StatusOK, "")
			if r.header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("%s, record lost %v: the repeated create is not marked as a replay", scheme, lose)
			}
			r.decode(t, &again)
			if again.Data.OrderID != created.Data.OrderID || again.Data.QRPayload != created.Data.QRPayload {
				t.Fatalf("%s, record lost %v: answered payment %s, want %s", scheme, lose, again.Data.OrderID, created.Data.OrderID)
			}
		}
	}
	var n int64
	if err := e.db.Model(&models.Payment{}).Where("client_id = ?", e.m.id).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("%d payments stored, want 2 (one per signature)", n)
	}
}

// v2 signs the Idempotency-Key, the method and the path: a copy of a
// signed create sent under another key (the first audit's front-run)
// fails verification and creates nothing; the merchant's own request then
// creates the one payout.
func TestV2SignatureCannotMoveToAnotherKey(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{})
	body := e.body("100000", "1234567890").json()
	req := signature.Request{Method: http.MethodPost, Target: "/api/v3/disbursements", IdempotencyKey: "order-1", Body: body}
	sig := signature.SignV2(e.m.signingSecret, req, e.now())
	before := e.snapshot()

	e.signed(e.m, http.MethodPost, "/api/v3/disbursements", body, sig, "attacker-key").expect(t, http.StatusUnauthorized, "")
	quote := e.signed(e.m, http.MethodPost, "/api/v3/disbursements/quote", body, sig, "")
	quote.expect(t, http.StatusUnauthorized, "")
	e.unchanged(before)
	if quote.errBody == sigUsed {
		t.Fatalf("the moved signature was refused as used, want as invalid: %s", quote.body)
	}

	e.signed(e.m, http.MethodPost, "/api/v3/disbursements", body, sig, "order-1").created(t, models.StatusSuccess)
	if n := e.stored(); n != 1 {
		t.Fatalf("%d disbursements stored, want 1", n)
	}
	e.signed(e.m, http.MethodPost, "/api/v3/disbursements", body, sig, "order-1").replayed(t, http.StatusOK, "")
}

// A spec (v1) client's reads signed in the same millisecond share one
// signature (a GET's body is empty), so only the first path gets through;
// v2 reads of different paths in the same millisecond each have their own.
func TestV2ReadsInOneMillisecond(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{})
	at := e.now()
	paths := []string{"/api/v3/wallets", "/api/v3/wallets/" + e.wallet.String() + "/balance", "/api/v3/wallets/" + e.ewallet.String() + "/balance"}
	for _, p := range paths {
		sig := signature.SignV2(e.m.signingSecret, signature.Request{Method: http.MethodGet, Target: p}, at)
		e.signed(e.m, http.MethodGet, p, nil, sig, "").expect(t, http.StatusOK, "")
		// The very same read again is a retry.
		e.signed(e.m, http.MethodGet, p, nil, sig, "").expect(t, http.StatusOK, "")
	}
	v1 := signature.Sign(e.m.signingSecret, nil, at.Add(time.Millisecond))
	e.signed(e.m, http.MethodGet, paths[0], nil, v1, "").expect(t, http.StatusOK, "")
	e.signed(e.m, http.MethodGet, paths[1], nil, v1, "").expect(t, http.StatusUnauthorized, sigUsed)
}

// A client made to require v2 has its v1 signatures refused, on the
// enforcing routes and in the diagnosis; v2 works, and unsigned reads with
// x-timestamp still do.
func TestRequireSignatureV2(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{})
	if err := e.db.Model(&models.Client{}).Where("id = ?", e.m.id).Update("require_signature_v2", true).Error; err != nil {
		t.Fatal(err)
	}
	if e.server.principals != nil {
		e.server.principals.Forget(e.m.id)
	}
	body := e.body("100000", "1234567890").json()
	before := e.snapshot()
	v1 := signature.Sign(e.m.signingSecret, body, e.now())
	e.signed(e.m, http.MethodPost, "/api/v3/disbursements", body, v1, "k1").expect(t, http.StatusUnauthorized, "")
	e.unchanged(before)

	r := e.signed(e.m, http.MethodPost, checkPath, body, signature.Sign(e.m.signingSecret, body, e.now().Add(time.Millisecond)), "")
	r.expect(t, http.StatusOK, "")
	var d diagnosisBody
	r.decode(t, &d)
	if d.Valid || *d.Diagnostics.Diagnosis != string(signature.V2Required) {
		t.Fatalf("signature-check of a v1 signature: %s", r.body)
	}

	v2 := signature.SignV2(e.m.signingSecret, signature.Request{Method: http.MethodPost, Target: "/api/v3/disbursements",
		IdempotencyKey: "k1", Body: body}, e.now())
	e.signed(e.m, http.MethodPost, "/api/v3/disbursements", body, v2, "k1").created(t, models.StatusSuccess)
	e.do(request{path: "/api/v3/wallets", apiKey: e.m.apiKey, timestamp: true}).expect(t, http.StatusOK, "")
}

// The signature check diagnoses v2 as it does v1: the canonical string the
// server built is shown, and a v2 signed for another key is a mismatch.
func TestSignatureCheckDiagnosesV2(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{})
	body := []byte(`{"hello":"dunia"}`)
	req := signature.Request{Method: http.MethodPost, Target: checkPath, Body: body}
	for _, tc := range []struct {
		name string
		req  signature.Request
		want signature.Diagnosis
	}{
		{"signed for this request", req, signature.OK},
		{"signed with a key not sent", signature.Request{Method: req.Method, Target: req.Target, IdempotencyKey: "k", Body: body}, signature.SignatureMismatch},
		{"signed for another path", signature.Request{Method: req.Method, Target: "/api/v3/disbursements", Body: body}, signature.SignatureMismatch},
	} {
		at := e.now()
		r := e.signed(e.m, http.MethodPost, checkPath, body, signature.SignV2(e.m.signingSecret, tc.req, at), "")
		r.expect(t, http.StatusOK, "")
		var d diagnosisBody
		r.decode(t, &d)
		if *d.Diagnostics.Diagnosis != string(tc.want) || d.Diagnostics.SignatureVersion != "v2" {
			t.Errorf("%s: diagnosis %s (%s), want %s (v2)", tc.name, *d.Diagnostics.Diagnosis, d.Diagnostics.SignatureVersion, tc.want)
		}
		if want := signature.CanonicalV2(millis(at), req); *d.Diagnostics.SignedPayloadString != want {
			t.Errorf("%s: signed_payload_string %q, want the canonical string %q", tc.name, *d.Diagnostics.SignedPayloadString, want)
		}
	}
}
