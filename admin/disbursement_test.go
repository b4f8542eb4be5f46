package admin_test

import (
	"fmt"
	"strings"
	"testing"
)

// checkRecord checks the values of a printed disbursement record against
// the payout the fixtures made: 100,000 IDR gross over BIFAST (fee 2,500),
// to bca, with reference inv-<account>.
func checkRecord(t *testing.T, out map[string]any, id, client, wallet, account, status string) {
	t.Helper()
	want := map[string]any{"id": id, "client_id": client, "wallet_id": wallet, "status": status,
		"amount": "100000", "platform_fee": "2500", "net_amount": "97500", "currency": "IDR",
		"bank_code": "bca", "account_no": account, "reference_id": "inv-" + account}
	for k, v := range want {
		if out[k] != v {
			t.Errorf("%s = %#v, want %#v", k, out[k], v)
		}
	}
	if out["bank_name"] == "" || !strings.HasPrefix(out["account_holder_name"].(string), "SANDBOX ") {
		t.Errorf("bank_name %q, account_holder_name %q: want the bank's name and the inquiry's holder", out["bank_name"], out["account_holder_name"])
	}
	if t.Failed() {
		t.FailNow()
	}
}

func TestDisbursementApprove(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	client, wallet := h.merchant("1000000")
	h.ok("client", "update", "--client", client, "--review-threshold", "50000")
	waiting := h.payout(client, wallet, "1234567890")
	if waiting.Status != "PENDING_VERIFICATION" {
		t.Fatalf("payout above the review threshold is %s", waiting.Status)
	}

	out := h.ok("disbursement", "approve", "--id", waiting.ID.String())
	checkRecord(t, out, waiting.ID.String(), client, wallet, "1234567890", "VERIFIED")
	if out["requested_at"] != nil || out["completed_at"] != nil || out["failed_reason"] != nil {
		t.Fatalf("an approved payout not yet sent printed %v", out)
	}

	h.usageError("--id is required", "disbursement", "approve")
	h.usageError("--id must be a UUID", "disbursement", "approve", "--id", "42")
	h.fails(1, "disbursement not found", "disbursement", "approve", "--id", unknownID)
	h.fails(1, "disbursement status change refused: VERIFIED → VERIFIED for "+waiting.ID.String(), "disbursement", "approve", "--id", waiting.ID.String())
}

func TestDisbursementCancel(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	client, wallet := h.merchant("1000000")
	open := h.payout(client, wallet, "1234567891")

	out := h.ok("disbursement", "cancel", "--id", open.ID.String())
	checkRecord(t, out, open.ID.String(), client, wallet, "1234567891", "CANCELLED")
	if out["completed_at"] == nil || out["requested_at"] != nil {
		t.Fatalf("a cancelled payout printed %v", out)
	}
	// The lock is released: reconcile finds the books in order.
	if r := h.ok("reconcile"); r["ok"] != true {
		t.Fatalf("reconcile after cancel: %v", r)
	}

	h.usageError("--id is required", "disbursement", "cancel")
	h.usageError("--id must be a UUID", "disbursement", "cancel", "--id", "not-a-uuid")
	h.fails(1, "disbursement not found", "disbursement", "cancel", "--id", unknownID)
	h.fails(1, "disbursement status change refused: CANCELLED → CANCELLED for "+open.ID.String(), "disbursement", "cancel", "--id", open.ID.String())
}

func TestDisbursementLateResults(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// None: an empty array, not null.
	if out := h.ok("disbursement", "late-results"); len(out["late_results"].([]any)) != 0 || out["total_count"] != float64(0) {
		t.Fatalf("late-results with none printed %v", out)
	}
	client, wallet := h.merchant("1000000")
	d := h.requested(client, wallet)
	h.ok("sandbox", "complete", "--id", d.ID.String(), "--status", "SUCCESS")
	id := h.lateResult(d)

	out := h.ok("disbursement", "late-results")
	results := out["late_results"].([]any)
	if len(results) != 1 || out["total_count"] != float64(1) {
		t.Fatalf("late-results printed %v", out)
	}
	r := results[0].(map[string]any)
	want := map[string]any{"id": float64(id), "disbursement_id": d.ID.String(), "vendor": "simbank", "vendor_reference": d.VendorReference,
		"stored_status": "SUCCESS", "reported_status": "FAILED", "reason": "recipient bank returned the transfer",
		"source": "callback", "seen_count": float64(2), "resolved_at": nil, "resolved_by": nil, "note": nil}
	for k, v := range want {
		if r[k] != v {
			t.Errorf("late result %s = %#v, want %#v", k, r[k], v)
		}
	}
	// Resolved, it leaves the default list and stays in --all.
	h.ok("disbursement", "resolve-late-result", "--id", fmt.Sprint(id), "--note", "checked")
	if out := h.ok("disbursement", "late-results"); out["total_count"] != float64(0) {
		t.Fatalf("late-results after resolving printed %v", out)
	}
	if out := h.ok("disbursement", "late-results", "--all"); out["total_count"] != float64(1) {
		t.Fatalf("late-results --all printed %v", out)
	}

	h.usageError(`unexpected argument "open"`, "disbursement", "late-results", "open")
	h.usageError("flag provided but not defined: -limit", "disbursement", "late-results", "--limit", "5")
}

func TestDisbursementResolveLateResult(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	client, wallet := h.merchant("1000000")
	d := h.requested(client, wallet)
	h.ok("sandbox", "complete", "--id", d.ID.String(), "--status", "SUCCESS")
	id := h.lateResult(d)

	out := h.ok("disbursement", "resolve-late-result", "--id", fmt.Sprint(id), "--note", "  vendor confirmed the reversal; wallet adjusted ")
	if out["id"] != float64(id) || out["disbursement_id"] != d.ID.String() || out["note"] != "vendor confirmed the reversal; wallet adjusted" ||
		out["resolved_at"] == nil || !strings.HasPrefix(out["resolved_by"].(string), "operator") {
		t.Fatalf("resolve-late-result printed %v", out)
	}

	h.usageError("--id must be the number of a late result (payoutd admin disbursement late-results)",
		"disbursement", "resolve-late-result", "--note", "x")
	h.usageError("--id must be the number of a late result (payoutd admin disbursement late-results)",
		"disbursement", "resolve-late-result", "--id", d.ID.String(), "--note", "x")
	h.usageError("--note is required: say what was found with the vendor and what was done",
		"disbursement", "resolve-late-result", "--id", fmt.Sprint(id))
	h.fails(1, fmt.Sprintf("late vendor result not found: %d", id+1000), "disbursement", "resolve-late-result", "--id", fmt.Sprint(id+1000), "--note", "x")
	// Resolving twice keeps the first note and says who resolved it.
	h.fails(1, fmt.Sprintf("late vendor result is already resolved: %d was resolved at %s by %s", id, out["resolved_at"], out["resolved_by"]),
		"disbursement", "resolve-late-result", "--id", fmt.Sprint(id), "--note", "again")
}

func TestSandboxComplete(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	client, wallet := h.merchant("1000000")

	paid := h.requested(client, wallet)
	out := h.ok("sandbox", "complete", "--id", paid.ID.String(), "--status", "SUCCESS")
	checkRecord(t, out, paid.ID.String(), client, wallet, "1000000005", "SUCCESS")
	if out["requested_at"] == nil || out["completed_at"] == nil || out["failed_reason"] != nil {
		t.Fatalf("a payout completed as paid printed %v", out)
	}

	failed := h.requested(client, wallet)
	out = h.ok("sandbox", "complete", "--id", failed.ID.String(), "--status", "FAILED", "--reason", "account closed")
	checkRecord(t, out, failed.ID.String(), client, wallet, "1000000005", "FAILED")
	if out["failed_reason"] != "account closed" || out["completed_at"] == nil {
		t.Fatalf("a payout completed as failed printed %v", out)
	}

	h.usageError("--id is required", "sandbox", "complete", "--status", "SUCCESS")
	h.usageError("--status must be SUCCESS or FAILED", "sandbox", "complete", "--id", paid.ID.String())
	h.usageError("--status must be SUCCESS or FAILED", "sandbox", "complete", "--id", paid.ID.String(), "--status", "PAID")
	h.fails(1, "disbursement not found", "sandbox", "complete", "--id", unknownID, "--status", "SUCCESS")
	h.fails(1, fmt.Sprintf("disbursement status change refused: %s is SUCCESS, only a REQUESTED payout can be completed", paid.ID),
		"sandbox", "complete", "--id", paid.ID.String(), "--status", "FAILED")
}
