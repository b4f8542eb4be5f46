package admin_test

import (
	"testing"
)

// The review queue: disbursement list --status PENDING_VERIFICATION shows
// the payouts waiting for an operator, newest first, page by page, across
// clients or for one.
func TestDisbursementListIsTheReviewQueue(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	client, wallet := h.merchant("10000000")
	h.ok("client", "update", "--client", client, "--review-threshold", "50000")
	var waiting []string
	for _, account := range []string{"1234567890", "1234567891", "1234567892"} {
		waiting = append(waiting, h.payout(client, wallet, account).ID.String())
	}
	other, otherWallet := h.merchant("1000000")
	h.payout(other, otherWallet, "1234567893") // no review threshold: VERIFIED

	page := h.ok("disbursement", "list", "--status", "PENDING_VERIFICATION", "--limit", "2")
	data := page["data"].([]any)
	if len(data) != 2 || page["has_more"] != true || data[0].(map[string]any)["id"] != waiting[2] || data[1].(map[string]any)["id"] != waiting[1] {
		t.Fatalf("first page of the review queue: %v", page)
	}
	rest := h.ok("disbursement", "list", "--status", "PENDING_VERIFICATION", "--limit", "2", "--starting-after", page["next_cursor"].(string))
	if data := rest["data"].([]any); len(data) != 1 || data[0].(map[string]any)["id"] != waiting[0] || rest["has_more"] != false || rest["next_cursor"] != nil {
		t.Fatalf("last page of the review queue: %v", rest)
	}
	if all := h.ok("disbursement", "list"); len(all["data"].([]any)) != 4 {
		t.Fatalf("every client's disbursements: %v", all)
	}
	if mine := h.ok("disbursement", "list", "--client", other); len(mine["data"].([]any)) != 1 {
		t.Fatalf("one client's disbursements: %v", mine)
	}
	h.usageError("--status must be one of [PENDING_VERIFICATION VERIFIED REQUESTED SUCCESS FAILED EXPIRED CANCELLED RETURNED]", "disbursement", "list", "--status", "WAITING")
	h.usageError("--limit must be from 1 to 500", "disbursement", "list", "--limit", "0")
	h.usageError("--starting-after must be the next_cursor of a previous page", "disbursement", "list", "--starting-after", "x")
	h.usageError("--client must be a UUID", "disbursement", "list", "--client", "42")
}

func TestPaymentList(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	client, _ := h.merchant("1")
	first := h.payment(client, 20000)
	second := h.payment(client, 30000)
	out := h.ok("payment", "list", "--status", "PENDING", "--client", client)
	data := out["data"].([]any)
	if len(data) != 2 || data[0].(map[string]any)["payment_id"] != second.String() || data[1].(map[string]any)["payment_id"] != first.String() {
		t.Fatalf("payment list: %v", out)
	}
	if paid := h.ok("payment", "list", "--status", "SUCCESS"); len(paid["data"].([]any)) != 0 {
		t.Fatalf("no payment is paid: %v", paid)
	}
}
