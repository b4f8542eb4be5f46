package api

import (
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/signature"
)

// Signatures are used once (docs/design.md, Signatures): a signature is remembered with the
// method, path and (on a create) Idempotency-Key it was first used for.

// sigUsed is the 401 message of a signature used before for another request.
const sigUsed = "x-signature was already used; sign the request again"

// signed sends method path body with the given x-signature header as it
// is, and an Idempotency-Key when key is not empty.
func (b *bundle) signed(m merchant, method, path string, body []byte, sig, key string) response {
	b.t.Helper()
	headers := map[string]string{"x-signature": sig}
	if key != "" {
		headers["Idempotency-Key"] = key
	}
	return b.do(request{method: method, path: path, body: body, apiKey: m.apiKey, headers: headers})
}

// The audit's reproduction: one signed create body sent three times within
// the window with Idempotency-Key k1, k2, k3 paid three times. Now only
// the first is a create; the same signature with another key is refused,
// and the same signature with its own key is a retry answered as a replay.
func TestSignatureReusedWithOtherKeyIsRefused(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{})
	body := e.body("100000", "1234567890").json()
	sig := signature.Sign(e.m.signingSecret, body, e.now())

	e.signed(e.m, http.MethodPost, "/api/v3/disbursements", body, sig, "k1").created(t, models.StatusSuccess)
	after := e.snapshot()
	for _, key := range []string{"k2", "k3"} {
		e.signed(e.m, http.MethodPost, "/api/v3/disbursements", body, sig, key).expect(t, http.StatusUnauthorized, sigUsed)
	}
	e.unchanged(after)
	if n := e.stored(); n != 1 {
		t.Fatalf("%d disbursements stored, want 1", n)
	}
	e.wantWallet(e.wallet, 900000, 0)

	// A merchant retrying after a timeout sends the very same request.
	r := e.signed(e.m, http.MethodPost, "/api/v3/disbursements", body, sig, "k1")
	r.replayed(t, http.StatusOK, "")
	e.unchanged(after)
}

// A signed quote (no side effects) must not become a payout: its bytes and
// header POSTed to the create route with a key are refused.
func TestQuoteSignatureCannotCreate(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{})
	body := []byte(`{"client_wallet_id":"` + e.wallet.String() + `","amount":"100000","bank_code":"bca","account_no":"1234567890","transfer_type":"BIFAST"}`)
	sig := signature.Sign(e.m.signingSecret, body, e.now())
	e.signed(e.m, http.MethodPost, "/api/v3/disbursements/quote", body, sig, "").expect(t, http.StatusOK, "")
	before := e.snapshot()

	e.signed(e.m, http.MethodPost, "/api/v3/disbursements", body, sig, "fresh-key").expect(t, http.StatusUnauthorized, sigUsed)
	e.unchanged(before)
	// The quote itself may be asked again with it (a read, retried).
	e.signed(e.m, http.MethodPost, "/api/v3/disbursements/quote", body, sig, "").expect(t, http.StatusOK, "")
}

// A create's signature cannot be used for a quote either, nor the other way
// round once the create came first: the route is part of what is recorded.
func TestCreateSignatureCannotQuote(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{})
	body := e.body("100000", "1234567890").json()
	sig := signature.Sign(e.m.signingSecret, body, e.now())
	e.signed(e.m, http.MethodPost, "/api/v3/disbursements", body, sig, "k1").created(t, models.StatusSuccess)
	e.signed(e.m, http.MethodPost, "/api/v3/disbursements/quote", body, sig, "").expect(t, http.StatusUnauthorized, sigUsed)
}

// A signed read is bound to its path: GET /wallets's signature does not
// open a balance, and wallet A's balance signature does not open wallet B.
// Sending the same read again is a retry and works.
func TestReadSignatureIsBoundToItsPath(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{})
	sig := signature.Sign(e.m.signingSecret, nil, e.now())
	get := func(path string) response {
		return e.signed(e.m, http.MethodGet, path, nil, sig, "")
	}
	get("/api/v3/wallets").expect(t, http.StatusOK, "")
	get("/api/v3/wallets/"+e.wallet.String()+"/balance").expect(t, http.StatusUnauthorized, sigUsed)
	get("/api/v3/wallets").expect(t, http.StatusOK, "")
	get("/api/v3/wallets?page=2").expect(t, http.StatusUnauthorized, sigUsed)

	sig = signature.Sign(e.m.signingSecret, nil, e.now().Add(time.Millisecond))
	get("/api/v3/wallets/"+e.wallet.String()+"/balance").expect(t, http.StatusOK, "")
	get("/api/v3/wallets/"+e.ewallet.String()+"/balance").expect(t, http.StatusUnauthorized, sigUsed)
	get("/api/v3/wallets/"+e.wallet.String()+"/balance").expect(t, http.StatusOK, "")
}

// A signature is recorded even when its request is refused: the retry with
// the same key gets today's answer again (402), another key gets 401.
func TestRefusedCreateSignatureRetriesAlike(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{})
	body := e.body("5000000", "1234567890").json() // more than the 1,000,000 funded
	sig := signature.Sign(e.m.signingSecret, body, e.now())
	before := e.snapshot()
	e.signed(e.m, http.MethodPost, "/api/v3/disbursements", body, sig, "k1").expect(t, http.StatusPaymentRequired, "Insufficient balance")
	e.signed(e.m, http.MethodPost, "/api/v3/disbursements", body, sig, "k1").expect(t, http.StatusPaymentRequired, "Insufficient balance")
	e.signed(e.m, http.MethodPost, "/api/v3/disbursements", body, sig, "k2").expect(t, http.StatusUnauthorized, sigUsed)
	e.unchanged(before)
}

// The diagnostic endpoint neither consumes a signature nor launders one: a
// signature checked there still creates once; a signature used on a create
// and then checked there keeps its create retry and stays refused for any
// other key.
func TestSignatureCheckNeitherConsumesNorLaunders(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{})
	body := e.body("100000", "1234567890").json()
	sig := signature.Sign(e.m.signingSecret, body, e.now())
	check := func() {
		t.Helper()
		r := e.signed(e.m, http.MethodPost, checkPath, body, sig, "")
		r.expect(t, http.StatusOK, "")
		var d diagnosisBody
		r.decode(t, &d)
		if !d.Valid {
			t.Fatalf("signature-check: %s", r.body)
		}
	}
	check()
	e.signed(e.m, http.MethodPost, "/api/v3/disbursements", body, sig, "k1").created(t, models.StatusSuccess)
	check()
	e.signed(e.m, http.MethodPost, "/api/v3/disbursements", body, sig, "k1").replayed(t, http.StatusOK, "")
	e.signed(e.m, http.MethodPost, "/api/v3/disbursements", body, sig, "k2").expect(t, http.StatusUnauthorized, sigUsed)
	if n := e.stored(); n != 1 {
		t.Fatalf("%d disbursements stored, want 1", n)
	}
}

// deadRedis is a client of a Redis that never answers.
func deadRedis(t *testing.T) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// When the replay store cannot answer, a signed create (money) and a signed
// payment create are refused with 503 and nothing is stored; signed reads
// and the quote (no side effects) are let through.
func TestReplayStoreDown(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOptions{redis: deadRedis(t), now: time.Now, configure: func(c *config.Config) { c.DisbursementSubmitWait = 0 }})
	m := b.newMerchant()
	wallet := b.newWallet(m.id, "Main", "simbank", false)
	b.fund(wallet, "1000000")
	const unavailable = "signature replay check unavailable; retry shortly"
	body := []byte(`{"client_wallet_id":"` + wallet.String() + `","amount":"100000","bank_code":"bca","account_no":"1234567890","transfer_type":"BIFAST"}`)

	r := b.do(request{method: http.MethodPost, path: "/api/v3/disbursements", body: body, apiKey: m.apiKey, sign: m.signingSecret,
		headers: map[string]string{"Idempotency-Key": "k1"}})
	r.expect(t, http.StatusServiceUnavailable, unavailable)
	payment := []byte(`{"price": 150000, "playerId": "player-1"}`)
	b.do(request{method: http.MethodPost, path: "/api/v1/payments", body: payment, apiKey: m.apiKey, sign: m.signingSecret}).
		expect(t, http.StatusServiceUnavailable, unavailable)
	for _, model := range []any{&models.Disbursement{}, &models.Payment{}} {
		var n int64
		if err := b.db.Model(model).Where("client_id = ?", m.id).Count(&n).Error; err != nil || n != 0 {
			t.Fatalf("%T: %d stored (%v), want none", model, n, err)
		}
	}

	b.do(request{path: "/api/v3/wallets/" + wallet.String() + "/balance", apiKey: m.apiKey, sign: m.signingSecret}).expect(t, http.StatusOK, "")
	b.do(request{method: http.MethodPost, path: "/api/v3/disbursements/quote", body: body, apiKey: m.apiKey, sign: m.signingSecret}).
		expect(t, http.StatusOK, "")
	// A request authenticated by x-timestamp has no signature to remember.
	b.do(request{method: http.MethodPost, path: "/api/v1/payments", body: payment, apiKey: m.apiKey, timestamp: true}).expect(t, http.StatusCreated, "")
}
