package admin_test

import (
	"strings"
	"testing"
	"time"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/models"
)

func TestReconcile(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	_, wallet := h.merchant("100000")

	before := h.now()
	out := h.ok("reconcile")
	if out["ok"] != true || out["wallets_checked"] != float64(1) || out["transactions_checked"] != float64(1) ||
		len(out["problems"].([]any)) != 0 || len(out["warnings"].([]any)) != 0 {
		t.Fatalf("reconcile of sound books printed %v", out)
	}
	if got := out["system_accounts"].(map[string]any)[models.AccountAdjustments]; got != "-100000.0000" {
		t.Errorf("system_accounts[%s] = %v, want the opening balance's counterpart -100000.0000", models.AccountAdjustments, got)
	}
	// checked_at is the commands' clock (Deps.Now).
	if checked, _ := time.Parse(time.RFC3339Nano, out["checked_at"].(string)); checked.Before(before.Truncate(time.Microsecond)) || checked.After(h.now()) {
		t.Errorf("checked_at %v, want the clock of the run (%v)", out["checked_at"], before)
	}

	// A balance changed outside the ledger: exit 3, the report on stdout
	// naming the wallet.
	if err := h.db.Exec(`UPDATE wallets SET balance = balance + 1 WHERE id = ?`, wallet).Error; err != nil {
		t.Fatal(err)
	}
	r := h.run("reconcile")
	if r.code != admin.ExitInvariant || admin.ExitInvariant != 3 {
		t.Fatalf("reconcile of broken books exits %d, want 3; stderr %s", r.code, r.stderr)
	}
	report := oneObject(t, r.args, r.stdout)
	checkContract(t, "reconcile", report)
	// Two invariants name it: the ledger's sum and the statement's last line.
	problems := report["problems"].([]any)
	if report["ok"] != false || len(problems) != 2 || !strings.Contains(problems[0].(string), wallet) ||
		!strings.Contains(problems[1].(string), wallet) {
		t.Fatalf("reconcile of broken books printed %v", report)
	}

	h.usageError(`unexpected argument "now"`, "reconcile", "now")
	h.usageError("flag provided but not defined: -fix", "reconcile", "--fix")
}
