package api

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/signature"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// The messages of the interface specification and of the design's
// decisions, copied from their text: clients match on them, so the
// service's "error" must be exactly these. Never copy them from the code.
const (
	specWindowMsg      = "Request timestamp outside valid window (5 minutes)"
	specInsufficient   = "Insufficient balance"
	specInactive       = "bank account is inactive"
	specNotResolved    = "bank account verification failed"
	specBelowMinimum   = "withdrawal amount is below minimum: "
	specVendorFailed   = "Vendor payout request failed"
	specLockExpired    = "Withdrawal lock has expired"
	specCancelled      = "disbursement was cancelled"
	specWalletNotFound = "wallet not found"
	specSignatureUsed  = "x-signature was already used; sign the request again"
	specNoDefault      = "no default wallet configured"
)

// specRow is one condition for which the specification (or the design's
// decisions) gives a status and maybe an exact message. msg "" means the
// text only gives the status: the body must still be {"error": non-empty}.
type specRow struct {
	name   string
	send   func(e *payoutEnv) response
	status int
	msg    string
	// replay: the answer must carry Idempotent-Replayed: true.
	replay bool
	// retryAfter: the answer must carry a Retry-After in whole seconds.
	retryAfter bool
	// hint, when set, must be in the body's "hint": what a person needs to
	// learn beyond the spec's message.
	hint string
}

// TestSpecMessages sends, for every status and message the interface
// specification and the design's decisions list, a request that meets the
// condition, and checks the status, the exact "error" text where one is
// given, and that every error body is a JSON object whose "error" is a
// non-empty string (a hint for a person may ride in another field).
func TestSpecMessages(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{funds: "100000000", lockTTL: time.Minute})
	ctx := context.Background()
	now := e.clock.Now
	ms := func(d time.Duration) string { return strconv.FormatInt(now().Add(d).UnixMilli(), 10) }
	wallets := "/api/v3/wallets"
	createPath, quotePath := "/api/v3/disbursements", "/api/v3/disbursements/quote"
	checkPath := "/api/v3/debug/signature-check"

	// Other callers, on the same server.
	other := e.newMerchant()
	otherWallet := e.newWallet(other.id, "Other", sandbox.SimBank, false)
	e.fund(otherWallet, "1000000")
	provisioning := e.newWallet(e.m.id, "Not yet", sandbox.SimBank, true)
	holding := e.newClient(admin.ClientOptions{Name: "Holding Co", Kind: models.KindHolding})
	restricted := e.newClient(admin.ClientOptions{Name: "Restricted", AllowedIPs: "198.51.100.0/24"})
	noWallet := e.newMerchant()
	suspended := e.newMerchant()
	suspendedWallet := e.newWallet(suspended.id, "Main", sandbox.SimBank, false)
	e.fund(suspendedWallet, "1000000")
	if _, err := admin.UpdateClient(ctx, e.admin, suspended.id, map[string]string{"withdrawals": string(models.WithdrawalsSuspended)}); err != nil {
		t.Fatal(err)
	}
	// A key issued for staging, stored in this database: a key the server
	// knows as one of the other environment.
	stagingAdmin := e.admin
	stagingAdmin.Env = models.Staging
	stagingCreds, err := admin.CreateClient(ctx, stagingAdmin, admin.ClientOptions{Name: "Staging Co"})
	if err != nil {
		t.Fatal(err)
	}
	limited := e.newMerchant()

	// Replays by stored status (idempotency rule 3). A create at or above
	// the review threshold waits in PENDING_VERIFICATION, which an operator
	// may cancel and whose lock expires after the lock TTL.
	e.update(map[string]string{"review-threshold": "10000000"})
	expiredBody := e.body("10000000", "1000000021")
	e.create("will-expire", expiredBody).created(t, models.StatusPendingVerification)
	cancelledBody := e.body("10000000", "1000000022")
	cancelled := e.create("will-cancel", cancelledBody).created(t, models.StatusPendingVerification)
	if _, err := e.svc.Cancel(ctx, uuid.MustParse(cancelled.ID), "spec test"); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute + time.Second)
	if n := e.expireLocks(); n != 1 {
		t.Fatalf("expired %d locks, want 1", n)
	}
	failedBody := e.body("100000", "1000000003")
	originalBody := e.body("100000", "1234500001")
	e.create("original", originalBody).created(t, models.StatusVerified, models.StatusRequested, models.StatusSuccess)
	mine := e.create("mine", e.body("100000", "1234500002")).created(t, models.StatusVerified, models.StatusRequested, models.StatusSuccess)

	// send is a request with a signature of the caller's choosing.
	send := func(e *payoutEnv, method, path string, body []byte, apiKey string, headers map[string]string) response {
		return e.do(request{method: method, path: path, body: body, apiKey: apiKey, headers: headers})
	}
	signedAt := func(secret string, body []byte, t string) string {
		return "t=" + t + ",v1=" + signature.Compute(secret, t, body)
	}
	validBody := e.body("100000", "1234500003").json()
	anyUUID := uuid.NewString()

	rows := []specRow{
		// Authentication: failure rules.
		{name: "x-api-key missing", status: 401, send: func(e *payoutEnv) response {
			return e.do(request{path: wallets, timestamp: true})
		}},
		{name: "x-api-key invalid", status: 401, send: func(e *payoutEnv) response {
			return e.do(request{path: wallets, apiKey: "v3_live_" + strings.Repeat("0", 48), timestamp: true})
		}},
		{name: "x-api-key of the legacy generation", status: 401, send: func(e *payoutEnv) response {
			return e.do(request{path: wallets, apiKey: "sk_live_0123456789abcdef", timestamp: true})
		}},
		{name: "x-api-key of the other environment (known there)", status: 401, send: func(e *payoutEnv) response {
			return e.do(request{path: wallets, apiKey: stagingCreds.APIKey, timestamp: true})
		}},
		// A bogus key is invalid whatever its prefix: it must get the
		// same answer as any other unknown key.
		{name: "x-api-key bogus with the other environment's prefix", status: 401, hint: `the prefix of staging keys`, send: func(e *payoutEnv) response {
			want := e.do(request{path: wallets, apiKey: "v3_live_abc", timestamp: true})
			got := e.do(request{path: wallets, apiKey: "v3_test_abc", timestamp: true})
			if got.errBody != want.errBody {
				e.t.Errorf("error %q, want the invalid-key message %q", got.errBody, want.errBody)
			}
			return got
		}},
		{name: "x-timestamp missing", status: 400, msg: specWindowMsg, hint: "x-timestamp header is missing", send: func(e *payoutEnv) response {
			return e.do(request{path: wallets, apiKey: e.m.apiKey})
		}},
		{name: "x-timestamp malformed", status: 400, msg: specWindowMsg, hint: "not a Unix time in milliseconds", send: func(e *payoutEnv) response {
			return send(e, "GET", wallets, nil, e.m.apiKey, map[string]string{"x-timestamp": "yesterday"})
		}},
		{name: "x-timestamp outside the window (old)", status: 400, msg: specWindowMsg, hint: "behind the server's clock; the window is 5 minutes", send: func(e *payoutEnv) response {
			return send(e, "GET", wallets, nil, e.m.apiKey, map[string]string{"x-timestamp": ms(-6 * time.Minute)})
		}},
		{name: "x-timestamp outside the window (ahead)", status: 400, msg: specWindowMsg, send: func(e *payoutEnv) response {
			return send(e, "GET", wallets, nil, e.m.apiKey, map[string]string{"x-timestamp": ms(6 * time.Minute)})
		}},
		{name: "x-timestamp in seconds", status: 400, msg: specWindowMsg, hint: "looks like seconds", send: func(e *payoutEnv) response {
			return send(e, "GET", wallets, nil, e.m.apiKey, map[string]string{"x-timestamp": strconv.FormatInt(now().Unix(), 10)})
		}},
		{name: "x-timestamp outside the window on a wallet endpoint", status: 400, msg: specWindowMsg, send: func(e *payoutEnv) response {
			return send(e, "GET", wallets+"/"+e.wallet.String()+"/balance", nil, e.m.apiKey, map[string]string{"x-timestamp": ms(-6 * time.Minute)})
		}},
		{name: "x-timestamp ignored when x-signature is valid", status: 200, send: func(e *payoutEnv) response {
			return e.do(request{path: wallets, apiKey: e.m.apiKey, sign: e.m.signingSecret, headers: map[string]string{"x-timestamp": "stale"}})
		}},
		{name: "signed GET with t outside the window", status: 401, msg: specWindowMsg, send: func(e *payoutEnv) response {
			return send(e, "GET", wallets, nil, e.m.apiKey, map[string]string{"x-signature": signedAt(e.m.signingSecret, nil, ms(-6*time.Minute))})
		}},
		{name: "signed GET with t in seconds", status: 401, msg: specWindowMsg, hint: "looks like seconds", send: func(e *payoutEnv) response {
			return send(e, "GET", wallets, nil, e.m.apiKey, map[string]string{"x-signature": signedAt(e.m.signingSecret, nil, strconv.FormatInt(now().Unix(), 10))})
		}},
		{name: "signed create with t outside the window", status: 401, msg: specWindowMsg, send: func(e *payoutEnv) response {
			return send(e, "POST", createPath, validBody, e.m.apiKey, map[string]string{"Idempotency-Key": "stale-t",
				"x-signature": signedAt(e.m.signingSecret, validBody, ms(-6*time.Minute))})
		}},
		{name: "signed create with t in seconds", status: 401, msg: specWindowMsg, hint: "looks like seconds", send: func(e *payoutEnv) response {
			return send(e, "POST", createPath, validBody, e.m.apiKey, map[string]string{"Idempotency-Key": "seconds-t",
				"x-signature": signedAt(e.m.signingSecret, validBody, strconv.FormatInt(now().Unix(), 10))})
		}},
		{name: "x-signature missing on create", status: 401, send: func(e *payoutEnv) response {
			return e.do(request{method: "POST", path: createPath, body: validBody, apiKey: e.m.apiKey, timestamp: true, headers: map[string]string{"Idempotency-Key": "nosig"}})
		}},
		{name: "x-signature missing on quote", status: 401, send: func(e *payoutEnv) response {
			return e.do(request{method: "POST", path: quotePath, body: validBody, apiKey: e.m.apiKey, timestamp: true})
		}},
		{name: "x-signature invalid on create", status: 401, hint: "signature_mismatch; POST /api/v3/debug/signature-check", send: func(e *payoutEnv) response {
			return e.do(request{method: "POST", path: createPath, body: validBody, apiKey: e.m.apiKey, sign: "not-the-secret", headers: map[string]string{"Idempotency-Key": "badsig"}})
		}},
		{name: "x-signature invalid on quote", status: 401, send: func(e *payoutEnv) response {
			return e.do(request{method: "POST", path: quotePath, body: validBody, apiKey: e.m.apiKey, sign: "not-the-secret"})
		}},
		{name: "x-signature invalid where optional (wallets)", status: 401, send: func(e *payoutEnv) response {
			return e.do(request{path: wallets, apiKey: e.m.apiKey, sign: "not-the-secret", timestamp: true})
		}},
		{name: "x-signature invalid where optional (get disbursement)", status: 401, send: func(e *payoutEnv) response {
			return e.do(request{path: createPath + "/" + mine.ID, apiKey: e.m.apiKey, sign: "not-the-secret", timestamp: true})
		}},
		{name: "signature used again with another Idempotency-Key", status: 401, msg: specSignatureUsed, send: func(e *payoutEnv) response {
			body := e.body("100000", "1234500004").json()
			sig := signature.Sign(e.m.signingSecret, body, e.signTime())
			send(e, "POST", createPath, body, e.m.apiKey, map[string]string{"Idempotency-Key": "first-use", "x-signature": sig}).
				expectShape(e.t, 201, "")
			return send(e, "POST", createPath, body, e.m.apiKey, map[string]string{"Idempotency-Key": "second-use", "x-signature": sig})
		}},
		{name: "signature used again on another route", status: 401, msg: specSignatureUsed, send: func(e *payoutEnv) response {
			sig := signature.Sign(e.m.signingSecret, nil, e.signTime())
			send(e, "GET", wallets, nil, e.m.apiKey, map[string]string{"x-signature": sig}).expectShape(e.t, 200, "")
			return send(e, "GET", wallets+"/"+e.wallet.String()+"/banks", nil, e.m.apiKey, map[string]string{"x-signature": sig})
		}},
		{name: "holding client", status: 403, send: func(e *payoutEnv) response {
			return e.do(request{path: wallets, apiKey: holding.apiKey, timestamp: true})
		}},
		{name: "source IP not allowed", status: 403, send: func(e *payoutEnv) response {
			return e.do(request{path: wallets, apiKey: restricted.apiKey, timestamp: true})
		}},
		{name: "source IP not allowed on create", status: 403, send: func(e *payoutEnv) response {
			return e.do(request{method: "POST", path: createPath, body: validBody, apiKey: restricted.apiKey, sign: restricted.signingSecret,
				headers: map[string]string{"Idempotency-Key": "ip"}})
		}},
		// Limits and the design's errors.
		{name: "body over 1 MiB on create", status: 413, send: func(e *payoutEnv) response {
			return e.do(request{method: "POST", path: createPath, body: bytes.Repeat([]byte(" "), 1<<20+1), apiKey: e.m.apiKey, sign: e.m.signingSecret,
				headers: map[string]string{"Idempotency-Key": "big"}})
		}},
		{name: "body over 1 MiB on quote", status: 413, send: func(e *payoutEnv) response {
			return e.do(request{method: "POST", path: quotePath, body: bytes.Repeat([]byte(" "), 1<<20+1), apiKey: e.m.apiKey, sign: e.m.signingSecret})
		}},
		{name: "Content-Encoding on create", status: 415, send: func(e *payoutEnv) response {
			return e.do(request{method: "POST", path: createPath, body: validBody, apiKey: e.m.apiKey, sign: e.m.signingSecret,
				headers: map[string]string{"Idempotency-Key": "gz", "Content-Encoding": "gzip"}})
		}},
		{name: "Content-Encoding on quote", status: 415, send: func(e *payoutEnv) response {
			return e.do(request{method: "POST", path: quotePath, body: validBody, apiKey: e.m.apiKey, sign: e.m.signingSecret,
				headers: map[string]string{"Content-Encoding": "gzip"}})
		}},
		// Create: idempotency rules.
		{name: "rule 1: Idempotency-Key missing", status: 400, send: func(e *payoutEnv) response {
			return e.create("", e.body("100000", "1234500005"))
		}},
		{name: "Idempotency-Key over 64 characters", status: 400, send: func(e *payoutEnv) response {
			return e.create(strings.Repeat("k", 65), e.body("100000", "1234500005"))
		}},
		{name: "rule 2: replay of a stored create", status: 200, replay: true, send: func(e *payoutEnv) response {
			return e.create("original", originalBody)
		}},
		{name: "rule 3: fresh create the vendor rejects", status: 503, msg: specVendorFailed, send: func(e *payoutEnv) response {
			return e.create("failed", failedBody)
		}},
		{name: "rule 3: replay of FAILED", status: 503, msg: specVendorFailed, replay: true, send: func(e *payoutEnv) response {
			return e.create("failed", failedBody)
		}},
		{name: "rule 3: replay of EXPIRED", status: 410, msg: specLockExpired, replay: true, send: func(e *payoutEnv) response {
			return e.create("will-expire", expiredBody)
		}},
		{name: "rule 3: replay of CANCELLED", status: 409, msg: specCancelled, replay: true, send: func(e *payoutEnv) response {
			return e.create("will-cancel", cancelledBody)
		}},
		{name: "rule 4: same key, other amount", status: 422, send: func(e *payoutEnv) response {
			return e.create("original", e.body("100001", "1234500001"))
		}},
		{name: "rule 4: same key, other account", status: 422, send: func(e *payoutEnv) response {
			return e.create("original", e.body("100000", "1234500009"))
		}},
		{name: "rule 4: same key, other transfer type", status: 422, send: func(e *payoutEnv) response {
			return e.create("original", originalBody.rtol())
		}},
		{name: "rule 4: same key, scale and case and spaces differ (a replay)", status: 200, replay: true, send: func(e *payoutEnv) response {
			p := originalBody
			p.amount, p.bank, p.account = "100000.00", "BCA", " "+p.account+" "
			return e.create("original", p)
		}},
		// Create: the rest of its error table.
		{name: "402 insufficient balance", status: 402, msg: specInsufficient, send: func(e *payoutEnv) response {
			return e.create("too-much", e.body("200000000", "1234500006"))
		}},
		{name: "422 account inactive", status: 422, msg: specInactive, send: func(e *payoutEnv) response {
			return e.create("inactive", e.body("100000", "1000000001"))
		}},
		{name: "422 account not resolved", status: 422, msg: specNotResolved, send: func(e *payoutEnv) response {
			return e.create("unresolved", e.body("100000", "1000000002"))
		}},
		{name: "422 e-wallet number not local format", status: 422, msg: specNotResolved, send: func(e *payoutEnv) response {
			return e.create("ew-bad", e.ewalletBody("100000", "dana", "628123456789"))
		}},
		{name: "422 below minimum (BIFAST)", status: 422, msg: specBelowMinimum + "12500", send: func(e *payoutEnv) response {
			return e.create("small", e.body("12499", "1234500007"))
		}},
		{name: "422 below minimum (RTOL)", status: 422, msg: specBelowMinimum + "16500", send: func(e *payoutEnv) response {
			return e.create("small-rtol", e.body("16499", "1234500007").rtol())
		}},
		{name: "422 bank code unsupported", status: 422, send: func(e *payoutEnv) response {
			return e.create("dana-on-bank", e.body("100000", "081234567890").withBank("dana"))
		}},
		{name: "400 transfer_type missing", status: 400, send: func(e *payoutEnv) response {
			return e.createRaw("no-tt", e.jsonBody(nil, "transfer_type"))
		}},
		{name: "400 transfer_type invalid", status: 400, send: func(e *payoutEnv) response {
			return e.createRaw("bad-tt", e.jsonBody(map[string]any{"transfer_type": "SKN"}))
		}},
		{name: "400 amount with a fraction of a rupiah", status: 400, send: func(e *payoutEnv) response {
			return e.createRaw("frac", e.jsonBody(map[string]any{"amount": "100000.5"}))
		}},
		{name: "400 amount zero", status: 400, send: func(e *payoutEnv) response {
			return e.createRaw("zero", e.jsonBody(map[string]any{"amount": "0"}))
		}},
		{name: "400 amount above 10^14", status: 400, send: func(e *payoutEnv) response {
			return e.createRaw("huge", e.jsonBody(map[string]any{"amount": "100000000000001"}))
		}},
		{name: "400 account_no not digits", status: 400, send: func(e *payoutEnv) response {
			return e.createRaw("letters", e.jsonBody(map[string]any{"account_no": "12345abc"}))
		}},
		{name: "400 memo over 255", status: 400, send: func(e *payoutEnv) response {
			return e.createRaw("memo", e.jsonBody(map[string]any{"memo": strings.Repeat("m", 256)}))
		}},
		{name: "400 reference_id over 64", status: 400, send: func(e *payoutEnv) response {
			return e.createRaw("ref", e.jsonBody(map[string]any{"reference_id": strings.Repeat("r", 65)}))
		}},
		{name: "403 withdrawals suspended", status: 403, send: func(e *payoutEnv) response {
			p := e.body("100000", "1234500008").withWallet(suspendedWallet)
			return e.createAs(suspended, "suspended", p)
		}},
		{name: "404 another client's wallet on create", status: 404, send: func(e *payoutEnv) response {
			return e.create("not-mine", e.body("100000", "1234500008").withWallet(otherWallet))
		}},
		{name: "503 inquiry gateway unavailable", status: 503, send: func(e *payoutEnv) response {
			return e.create("gateway", e.body("100000", "1000000006"))
		}},
		// Quote.
		{name: "quote 400 transfer_type missing", status: 400, send: func(e *payoutEnv) response {
			return e.quoteRaw(e.jsonBody(nil, "transfer_type"))
		}},
		{name: "quote 422 below minimum", status: 422, msg: specBelowMinimum + "12500", send: func(e *payoutEnv) response {
			return e.quote(e.body("12499", "1234500007"))
		}},
		{name: "quote 422 account inactive", status: 422, msg: specInactive, send: func(e *payoutEnv) response {
			return e.quote(e.body("100000", "1000000001"))
		}},
		{name: "quote 422 account not resolved", status: 422, msg: specNotResolved, send: func(e *payoutEnv) response {
			return e.quote(e.body("100000", "1000000002"))
		}},
		{name: "quote 402 insufficient balance", status: 402, msg: specInsufficient, send: func(e *payoutEnv) response {
			return e.quote(e.body("200000000", "1234500007"))
		}},
		{name: "quote 403 withdrawals suspended", status: 403, send: func(e *payoutEnv) response {
			return e.quoteAs(suspended, e.body("100000", "1234500008").withWallet(suspendedWallet))
		}},
		{name: "quote 404 another client's wallet", status: 404, send: func(e *payoutEnv) response {
			return e.quote(e.body("100000", "1234500008").withWallet(otherWallet))
		}},
		{name: "quote 503 gateway unavailable", status: 503, send: func(e *payoutEnv) response {
			return e.quote(e.body("100000", "1000000006"))
		}},
		// Get disbursement.
		{name: "get disbursement of another client", status: 404, send: func(e *payoutEnv) response {
			return e.do(request{path: createPath + "/" + mine.ID, apiKey: other.apiKey, sign: other.signingSecret})
		}},
		// Wallet endpoints.
		{name: "balance of another client's wallet", status: 404, msg: specWalletNotFound, send: func(e *payoutEnv) response {
			return e.do(request{path: wallets + "/" + otherWallet.String() + "/balance", apiKey: e.m.apiKey, timestamp: true})
		}},
		{name: "balance of a wallet that does not exist", status: 404, msg: specWalletNotFound, send: func(e *payoutEnv) response {
			return e.do(request{path: wallets + "/" + anyUUID + "/balance", apiKey: e.m.apiKey, timestamp: true})
		}},
		{name: "balance of a wallet not fully provisioned", status: 404, msg: specWalletNotFound, send: func(e *payoutEnv) response {
			return e.do(request{path: wallets + "/" + provisioning.String() + "/balance", apiKey: e.m.apiKey, timestamp: true})
		}},
		{name: "banks of another client's wallet", status: 404, msg: specWalletNotFound, send: func(e *payoutEnv) response {
			return e.do(request{path: wallets + "/" + otherWallet.String() + "/banks", apiKey: e.m.apiKey, timestamp: true})
		}},
		{name: "balance: wallet_id not a UUID", status: 400, send: func(e *payoutEnv) response {
			return e.do(request{path: wallets + "/not-a-uuid/balance", apiKey: e.m.apiKey, timestamp: true})
		}},
		{name: "banks: wallet_id not a UUID", status: 400, send: func(e *payoutEnv) response {
			return e.do(request{path: wallets + "/not-a-uuid/banks", apiKey: e.m.apiKey, timestamp: true})
		}},
		// Payments. The spec gives no status for these; a rejected input
		// is a validation error, 400, as everywhere else in the spec.
		{name: "payment price below 15000", status: 400, send: func(e *payoutEnv) response {
			return e.createPayment(e.m, `{"price": 14999, "playerId": "p1"}`)
		}},
		{name: "payment price of 15000 is accepted", status: 201, send: func(e *payoutEnv) response {
			return e.createPayment(e.m, `{"price": 15000, "playerId": "p1"}`)
		}},
		{name: "payment expiresIn above 3600", status: 400, send: func(e *payoutEnv) response {
			return e.createPayment(e.m, `{"price": 15000, "playerId": "p1", "expiresIn": 3601}`)
		}},
		{name: "payment expiresIn below 60", status: 400, send: func(e *payoutEnv) response {
			return e.createPayment(e.m, `{"price": 15000, "playerId": "p1", "expiresIn": 59}`)
		}},
		{name: "payment without a default wallet", status: 422, msg: specNoDefault, send: func(e *payoutEnv) response {
			return e.createPayment(noWallet, `{"price": 15000, "playerId": "p1"}`)
		}},
		{name: "payment x-timestamp missing", status: 400, msg: specWindowMsg, send: func(e *payoutEnv) response {
			return e.do(request{method: "POST", path: "/api/v1/payments", body: []byte(`{"price": 15000, "playerId": "p1"}`), apiKey: e.m.apiKey})
		}},
		// Signature check.
		{name: "signature check without x-api-key", status: 401, send: func(e *payoutEnv) response {
			return e.do(request{method: "POST", path: checkPath, body: []byte(`{}`)})
		}},
		{name: "signature check answers 200 for a body over 1 MiB", status: 200, send: func(e *payoutEnv) response {
			return e.do(request{method: "POST", path: checkPath, body: bytes.Repeat([]byte(" "), 1<<20+1), apiKey: e.m.apiKey, sign: e.m.signingSecret})
		}},
		{name: "signature check answers 200 for Content-Encoding", status: 200, send: func(e *payoutEnv) response {
			return e.do(request{method: "POST", path: checkPath, body: []byte(`{}`), apiKey: e.m.apiKey, sign: e.m.signingSecret,
				headers: map[string]string{"Content-Encoding": "gzip"}})
		}},
		{name: "signature check 429 beyond 20 a minute", status: 429, retryAfter: true, send: func(e *payoutEnv) response {
			for i := 1; i <= 20; i++ {
				e.do(request{method: "POST", path: checkPath, body: []byte(`{}`), apiKey: limited.apiKey}).expectShape(e.t, 200, "")
			}
			return e.do(request{method: "POST", path: checkPath, body: []byte(`{}`), apiKey: limited.apiKey})
		}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			r := row.send(e.sub(t))
			r.expectShape(t, row.status, row.msg)
			if row.replay && r.header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("no Idempotent-Replayed: true on a replay")
			}
			if row.hint != "" && !strings.Contains(r.hint, row.hint) {
				t.Errorf("hint %q, want it to say %q", r.hint, row.hint)
			}
			if row.retryAfter {
				if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 {
					t.Errorf("Retry-After %q, want whole seconds", r.header.Get("Retry-After"))
				}
			}
		})
	}
}

// expectShape reports (without stopping) unless r has the status and, for
// an error status, a JSON object body whose "error" is a non-empty string,
// exactly msg when msg is given; other fields must be strings.
func (r response) expectShape(t testing.TB, status int, msg string) {
	t.Helper()
	if r.status != status {
		t.Errorf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if r.status < 400 {
		return
	}
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Errorf("error body is not a JSON object: %s", r.body)
		return
	}
	got, ok := m["error"].(string)
	if !ok || got == "" {
		t.Errorf(`error body has no non-empty string "error": %s`, r.body)
	}
	for k, v := range m {
		if _, ok := v.(string); !ok {
			t.Errorf("error body field %q is not a string: %s", k, r.body)
		}
	}
	if msg != "" && got != msg {
		t.Errorf("error %q, want exactly %q", got, msg)
	}
}

// withWallet is p paying from another wallet.
func (p payoutBody) withWallet(w uuid.UUID) payoutBody { p.wallet = w.String(); return p }

// withBank is p to another bank code.
func (p payoutBody) withBank(code string) payoutBody { p.bank = code; return p }
