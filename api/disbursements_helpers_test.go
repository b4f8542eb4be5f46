package api

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
)

// Helpers shared by the disbursement rule, lifecycle and concurrency tests.

// sub returns e bound to a subtest's t, so that its helpers fail the
// subtest that called them (and from its own goroutine).
func (e *payoutEnv) sub(t *testing.T) *payoutEnv {
	b := *e.bundle
	b.t = t
	c := *e
	c.bundle = &b
	return &c
}

// createRaw posts body as it is (signed) with key ("" sends none).
func (e *payoutEnv) createRaw(key string, body []byte) response {
	e.t.Helper()
	return e.createRawAs(e.m, key, body)
}

func (e *payoutEnv) createRawAs(m merchant, key string, body []byte) response {
	e.t.Helper()
	headers := map[string]string{}
	if key != "" {
		headers["Idempotency-Key"] = key
	}
	return e.do(request{method: http.MethodPost, path: "/api/v3/disbursements", body: body, apiKey: m.apiKey, sign: m.signingSecret, headers: headers})
}

func (e *payoutEnv) createAs(m merchant, key string, p payoutBody) response {
	e.t.Helper()
	return e.createRawAs(m, key, p.json())
}

func (e *payoutEnv) quoteAs(m merchant, p payoutBody) response {
	e.t.Helper()
	return e.do(request{method: http.MethodPost, path: "/api/v3/disbursements/quote", body: p.json(), apiKey: m.apiKey, sign: m.signingSecret})
}

func (e *payoutEnv) quoteRaw(body []byte) response {
	e.t.Helper()
	return e.do(request{method: http.MethodPost, path: "/api/v3/disbursements/quote", body: body, apiKey: e.m.apiKey, sign: e.m.signingSecret})
}

// ewalletBody is a valid BIFAST payout from the simwallet wallet.
func (e *payoutEnv) ewalletBody(amount, bank, account string) payoutBody {
	return payoutBody{wallet: e.ewallet.String(), amount: amount, bank: bank, account: account, transferType: "BIFAST"}
}

// rtol is p as an RTOL payout.
func (p payoutBody) rtol() payoutBody { p.transferType = "RTOL"; return p }

// jsonBody is a valid create body as a map with set applied and the named
// fields dropped, marshalled: for bodies payoutBody cannot express.
func (e *payoutEnv) jsonBody(set map[string]any, drop ...string) []byte {
	m := map[string]any{"client_wallet_id": e.wallet.String(), "amount": "100000", "bank_code": "bca",
		"account_no": "1234567890", "transfer_type": "BIFAST"}
	for k, v := range set {
		m[k] = v
	}
	for _, k := range drop {
		delete(m, k)
	}
	b, err := json.Marshal(m)
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

// snapshot is what a refused request must leave as it was: both wallets,
// the client's stored disbursements, and the payouts the vendors accepted.
type snapshot struct {
	mainBalance, mainLocked models.Amount
	ewBalance, ewLocked     models.Amount
	disbursements           int64
	vendorSubmits           int
}

func (e *payoutEnv) snapshot() snapshot {
	e.t.Helper()
	var s snapshot
	s.mainBalance, s.mainLocked = e.balance(e.wallet)
	s.ewBalance, s.ewLocked = e.balance(e.ewallet)
	s.disbursements = e.stored()
	s.vendorSubmits = e.vendor.submitsAccepted()
	return s
}

// unchanged fails unless nothing a refusal must not touch has changed, and
// the ledger reconciles.
func (e *payoutEnv) unchanged(before snapshot) {
	e.t.Helper()
	if now := e.snapshot(); now != before {
		e.t.Fatalf("state changed:\n before %+v\n after  %+v", before, now)
	}
	e.reconciled()
}

// stored counts the client's disbursements in the database.
func (e *payoutEnv) stored() int64 {
	e.t.Helper()
	var n int64
	if err := e.db.Model(&models.Disbursement{}).Where("client_id = ?", e.m.id).Count(&n).Error; err != nil {
		e.t.Fatal(err)
	}
	return n
}

// byKey reads the client's disbursement stored under an Idempotency-Key.
func (e *payoutEnv) byKey(key string) *models.Disbursement {
	e.t.Helper()
	var d models.Disbursement
	if err := e.db.Where("client_id = ? AND idempotency_key = ?", e.m.id, key).Take(&d).Error; err != nil {
		e.t.Fatalf("disbursement with key %q: %v", key, err)
	}
	return &d
}

// wantWallet fails unless the wallet holds balance and locked (rupiah).
func (e *payoutEnv) wantWallet(wallet uuid.UUID, balance, locked int64) {
	e.t.Helper()
	b, l := e.balance(wallet)
	if b != models.Rupiah(balance) || l != models.Rupiah(locked) {
		e.t.Fatalf("wallet balance %s locked %s, want %d and %d", b, l, balance, locked)
	}
}

// wantStatus fails unless the disbursement is stored with status want.
func (e *payoutEnv) wantStatus(id string, want models.DisbursementStatus) {
	e.t.Helper()
	if got := e.status(id); got != want {
		e.t.Fatalf("disbursement %s is %s, want %s", id, got, want)
	}
}

// created expects a fresh 201 with status want and returns its body.
func (r response) created(t *testing.T, want ...models.DisbursementStatus) disbursementJSON {
	t.Helper()
	r.expect(t, http.StatusCreated, "")
	if h := r.header.Get("Idempotent-Replayed"); h != "" {
		t.Fatalf("a fresh create carries Idempotent-Replayed: %q", h)
	}
	d := r.disbursement(t)
	if !slices.Contains(want, models.DisbursementStatus(d.Status)) {
		t.Fatalf("created as %s, want %v: %s", d.Status, want, r.body)
	}
	return d
}

// replayed expects a replay answer: status, message, Idempotent-Replayed.
func (r response) replayed(t *testing.T, status int, msg string) {
	t.Helper()
	r.expect(t, status, msg)
	if h := r.header.Get("Idempotent-Replayed"); h != "true" {
		t.Fatalf("replay answered without Idempotent-Replayed: true (got %q): %s", h, r.body)
	}
}

// fields decodes a JSON object answer into a map, to see which keys exist.
func (r response) fields(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	r.decode(t, &m)
	return m
}

// wantUTC fails unless v is an RFC 3339 timestamp in UTC with a Z suffix.
func wantUTC(t *testing.T, name string, v any) {
	t.Helper()
	s, ok := v.(string)
	if !ok || !strings.HasSuffix(s, "Z") {
		t.Fatalf("%s = %v, want an RFC 3339 UTC timestamp ending in Z", name, v)
	}
	if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
		t.Fatalf("%s = %q is not RFC 3339: %v", name, s, err)
	}
}

// expireLocks runs the payout:expire task and returns how many it expired.
func (e *payoutEnv) expireLocks() int {
	e.t.Helper()
	report, err := e.svc.ExpireLocks(context.Background())
	if err != nil || report.Unhandled != 0 {
		e.t.Fatalf("expire locks: %+v %v", report, err)
	}
	return report.Expired
}

var ctxb = context.Background()
