package admin_test

import (
	"testing"
)

// noPreviousKey is rotate-key's answer without SECRETS_KEY_PREVIOUS.
const noPreviousKey = "SECRETS_KEY_PREVIOUS is not set: set SECRETS_KEY to the new key and SECRETS_KEY_PREVIOUS to the old one (on every process first, see README: Rotating SECRETS_KEY), then run rotate-key"

func TestSecretsRotateKey(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// Sealed under the first key: a signing and a callback secret, two
	// webhook URLs; a second client without a signing secret.
	h.ok("client", "create", "--name", "Toko", "--payout-webhook-url", "https://merchant.example/payouts",
		"--payment-webhook-url", "https://merchant.example/payments")
	h.ok("client", "create", "--name", "Tanpa Tanda", "--no-signing-secret")

	h.fails(1, noPreviousKey, "secrets", "rotate-key")

	h.setEnv("SECRETS_KEY", newSecretsKey)
	h.setEnv("SECRETS_KEY_PREVIOUS", testSecretsKey)
	out := h.ok("secrets", "rotate-key")
	want := map[string]any{"key_id": h.deps.Sealer.CurrentKeyID(), "checked": float64(5), "resealed": float64(5),
		"already_current": float64(0), "legacy": float64(0), "unreadable": float64(0)}
	for k, v := range want {
		if out[k] != v {
			t.Errorf("rotate-key printed %s = %#v, want %#v", k, out[k], v)
		}
	}
	if values := out["unreadable_values"].([]any); len(values) != 0 {
		t.Errorf("unreadable_values %v, want []", values)
	}
	// Run again (after an interruption, say): everything is current.
	again := h.ok("secrets", "rotate-key")
	if again["checked"] != float64(5) || again["resealed"] != float64(0) || again["already_current"] != float64(5) {
		t.Errorf("a second rotate-key printed %v", again)
	}
	// Under the new key alone everything opens: reconcile has nothing to say.
	h.setEnv("SECRETS_KEY_PREVIOUS", "")
	if r := h.ok("reconcile"); r["ok"] != true || len(r["warnings"].([]any)) != 0 {
		t.Errorf("reconcile after the rotation: %v", r)
	}

	h.usageError(`unexpected argument "now"`, "secrets", "rotate-key", "now")
	h.usageError("flag provided but not defined: -key", "secrets", "rotate-key", "--key", newSecretsKey)
}
