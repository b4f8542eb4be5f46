package admin_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
)

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// unknownID is a well-formed id nothing has.
const unknownID = "6f1c2a9e-8d4b-4c3e-9a7f-1b2c3d4e5f60"

// checkIssued checks the key and secrets create and rotate-credentials
// print: a staging key, secrets of 64 lowercase hex characters, all
// different.
func checkIssued(t *testing.T, out map[string]any, withSigningSecret bool) {
	t.Helper()
	key, _ := out["api_key"].(string)
	if !strings.HasPrefix(key, "v3_test_") || len(key) < len("v3_test_")+32 {
		t.Errorf("api_key %q: want a staging V3 key (v3_test_...)", key)
	}
	callback, _ := out["callback_secret"].(string)
	if !hex64.MatchString(callback) {
		t.Errorf("callback_secret %q: want 64 lowercase hex characters", callback)
	}
	if !withSigningSecret {
		if out["signing_secret"] != nil {
			t.Errorf("signing_secret %v: want null for --no-signing-secret", out["signing_secret"])
		}
		return
	}
	signing, _ := out["signing_secret"].(string)
	if !hex64.MatchString(signing) || signing == callback {
		t.Errorf("signing_secret %q: want 64 lowercase hex characters, not the callback secret", signing)
	}
}

func TestClientCreate(t *testing.T) {
	t.Parallel()
	h := newHarness(t)

	out := h.ok("client", "create", "--name", "Warung Maju", "--allowed-ips", "203.0.113.0/24",
		"--payout-webhook-url", "https://merchant.example/payouts", "--payment-webhook-url", "https://merchant.example/payments")
	checkIssued(t, out, true)
	id := out["client_id"].(string)
	if shown := h.ok("client", "show", "--client", id); shown["client_id"] != id || shown["name"] != "Warung Maju" ||
		shown["kind"] != "merchant" || !slices.Equal(shown["allowed_ips"].([]any), []any{"203.0.113.0/24"}) {
		t.Fatalf("the created client shows as %v", shown)
	}

	bare := h.ok("client", "create", "--name", "Tanpa Tanda", "--kind", "holding", "--no-signing-secret")
	checkIssued(t, bare, false)
	if bare["client_id"] == id {
		t.Fatal("two clients got one id")
	}
	if h.ok("client", "show", "--client", bare["client_id"].(string))["kind"] != "holding" {
		t.Fatal("--kind holding not kept")
	}

	h.usageError("--name is required", "client", "create")
	h.usageError("--name is required", "client", "create", "--kind", "merchant")
	h.usageError("flag provided but not defined: -nme", "client", "create", "--nme", "typo")
	h.usageError(`unexpected argument "extra"`, "client", "create", "--name", "X", "extra")
	h.fails(1, `--kind must be merchant or holding, not "bank"`, "client", "create", "--name", "X", "--kind", "bank")
	h.fails(1, "--payout-webhook-url must be an absolute http(s) URL", "client", "create", "--name", "X", "--payout-webhook-url", "merchant.example/hook")
}

func TestClientRotateCredentials(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	created := h.ok("client", "create", "--name", "Toko", "--no-signing-secret")
	id := created["client_id"].(string)

	rotated := h.ok("client", "rotate-credentials", "--client", id)
	if rotated["client_id"] != id {
		t.Fatalf("rotate-credentials of %s printed client_id %v", id, rotated["client_id"])
	}
	// All three are new, the signing secret too although the client had
	// none (docs/design.md, Admin CLI contract: all three rotated).
	checkIssued(t, rotated, true)
	again := h.ok("client", "rotate-credentials", "--client", id)
	for _, k := range []string{"api_key", "signing_secret", "callback_secret"} {
		if again[k] == rotated[k] || rotated[k] == created[k] {
			t.Errorf("%s not rotated: %v, %v, %v", k, created[k], rotated[k], again[k])
		}
	}
	// API instances are told of the creation (they may remember its key
	// as unknown) and of each rotation, so the old key stops at once.
	if changed := h.changedClients(); len(changed) != 3 || changed[0].String() != id || changed[1].String() != id || changed[2].String() != id {
		t.Errorf("ClientChanged told %v, want %s three times", changed, id)
	}

	h.usageError("--client is required", "client", "rotate-credentials")
	h.usageError("--client must be a UUID", "client", "rotate-credentials", "--client", "nope")
	h.fails(1, "client not found", "client", "rotate-credentials", "--client", unknownID)
}

func TestClientUpdate(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	id := h.ok("client", "create", "--name", "Toko", "--allowed-ips", "198.51.100.7")["client_id"].(string)

	out := h.ok("client", "update", "--client", id, "--allowed-ips", "203.0.113.0/24,198.51.100.7",
		"--payout-webhook-url", "https://hook:s3cret@merchant.example/payouts?token=t0ken",
		"--payment-webhook-url", "https://merchant.example/payments/t0ken",
		"--withdrawals", "suspended", "--review-threshold", "50000000", "--bifast-fee", "3000", "--rtol-fee", "7000",
		"--bifast-min-net", "20000", "--rtol-min-net", "25000", "--payment-fee-bps", "125", "--refund-fee-on-return", "true")
	want := map[string]any{"client_id": id, "name": "Toko", "withdrawals": "suspended", "review_threshold": "50000000",
		"bifast_fee": "3000", "rtol_fee": "7000", "bifast_min_net": "20000", "rtol_min_net": "25000",
		"payment_fee_bps": float64(125), "refund_fee_on_return": true,
		// Webhook URLs in their display form only: no credentials, path or query.
		"payout_webhook_url": "https://xxxxx@merchant.example/…", "payment_webhook_url": "https://merchant.example/…"}
	for k, v := range want {
		if out[k] != v {
			t.Errorf("client update printed %s = %#v, want %#v", k, out[k], v)
		}
	}
	if ips := out["allowed_ips"].([]any); len(ips) != 2 {
		t.Errorf("allowed_ips %v, want the two given", ips)
	}
	if strings.Contains(h.lastStdout(), "s3cret") || strings.Contains(h.lastStdout(), "t0ken") {
		t.Errorf("client update printed a webhook URL's secret: %s", h.lastStdout())
	}
	// What update printed is what is stored.
	if shown := h.ok("client", "show", "--client", id); !sameFields(shown, out) {
		t.Errorf("client show after update %v, update printed %v", shown, out)
	}
	// Only the settings given change; "off" clears the review threshold.
	if off := h.ok("client", "update", "--client", id, "--review-threshold", "off"); off["review_threshold"] != nil || off["bifast_fee"] != "3000" {
		t.Errorf("--review-threshold off printed %v", off)
	}
	if changed := h.changedClients(); len(changed) != 3 || changed[0].String() != id {
		t.Errorf("ClientChanged told %v, want %s for the creation and each update", changed, id)
	}

	// --require-signature-v2 is a switch: alone it turns on, =false off.
	if on := h.ok("client", "update", "--client", id, "--require-signature-v2"); on["require_signature_v2"] != true || on["bifast_fee"] != "3000" {
		t.Errorf("--require-signature-v2 printed %v", on)
	}
	if off := h.ok("client", "update", "--client", id, "--require-signature-v2=false"); off["require_signature_v2"] != false {
		t.Errorf("--require-signature-v2=false printed %v", off)
	}
	h.fails(1, "--require-signature-v2: must be true or false", "client", "update", "--client", id, "--require-signature-v2=yes")

	h.usageError("--client is required", "client", "update", "--withdrawals", "active")
	h.usageError("nothing to update: give at least one setting", "client", "update", "--client", id)
	h.fails(1, "client not found", "client", "update", "--client", unknownID, "--withdrawals", "active")
	h.fails(1, "--withdrawals: must be active or suspended", "client", "update", "--client", id, "--withdrawals", "paused")
	h.fails(1, "--bifast-fee: must be a whole number of rupiah", "client", "update", "--client", id, "--bifast-fee", "2500.5")
	h.fails(1, "--payment-fee-bps: must be from 0 to 10000 basis points", "client", "update", "--client", id, "--payment-fee-bps", "10001")
}

func TestClientShow(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	created := h.ok("client", "create", "--name", "Toko Baru", "--payout-webhook-url", "https://hook:s3cret@merchant.example/payouts")
	id := created["client_id"].(string)
	h.ok("client", "rotate-credentials", "--client", id)

	out := h.ok("client", "show", "--client", id)
	// The defaults of models/client.go (docs/design.md, Fees and minimums).
	want := map[string]any{"client_id": id, "name": "Toko Baru", "kind": "merchant", "withdrawals": "active",
		"review_threshold": nil, "bifast_fee": "2500", "rtol_fee": "6500", "bifast_min_net": "10000", "rtol_min_net": "10000",
		"payment_fee_bps": float64(70), "refund_fee_on_return": false,
		"payout_webhook_url": "https://xxxxx@merchant.example/…", "payment_webhook_url": ""}
	for k, v := range want {
		if out[k] != v {
			t.Errorf("client show printed %s = %#v, want %#v", k, out[k], v)
		}
	}
	if ips := out["allowed_ips"].([]any); len(ips) != 0 {
		t.Errorf("allowed_ips %v, want [] (none set)", ips)
	}
	// Never the key or the secrets (the harness checks every value printed
	// by create and rotate-credentials), nor the webhook URL's password.
	if strings.Contains(h.lastStdout(), "s3cret") {
		t.Errorf("client show printed the webhook URL's password: %s", h.lastStdout())
	}

	h.usageError("--client is required", "client", "show")
	h.usageError("--client must be a UUID", "client", "show", "--client", id+"x")
	h.fails(1, "client not found", "client", "show", "--client", unknownID)
}

func (h *harness) changedClients() []uuid.UUID {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.changed)
}

func (h *harness) lastStdout() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.transcript[len(h.transcript)-1].stdout
}

// sameFields reports whether a and b hold the same JSON values.
func sameFields(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !jsonEqual(v, b[k]) {
			return false
		}
	}
	return true
}

func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, jsonEqual)
	case map[string]any:
		y, ok := b.(map[string]any)
		return ok && sameFields(x, y)
	}
	return a == b
}
