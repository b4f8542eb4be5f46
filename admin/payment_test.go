package admin_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestPaymentSimulate(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	client, _ := h.merchant("")
	paid := h.payment(client, 20_000)

	out := h.ok("payment", "simulate", "--id", paid.String(), "--status", "SUCCESS")
	if out["payment_id"] != paid.String() || out["result"] != "applied" || out["status"] != "SUCCESS" ||
		out["paid_at"] == nil || len(out["retrieval_reference_no"].(string)) != 12 || out["settle_at"] == nil {
		t.Fatalf("payment simulate SUCCESS printed %v", out)
	}
	// A second, contradicting result is recorded late, not applied.
	if out := h.ok("payment", "simulate", "--id", paid.String(), "--status", "FAILED"); out["result"] != "recorded_late" || out["status"] != "SUCCESS" {
		t.Fatalf("payment simulate FAILED after SUCCESS printed %v", out)
	}
	failed := h.payment(client, 30_000)
	out = h.ok("payment", "simulate", "--id", failed.String(), "--status", "FAILED")
	if out["payment_id"] != failed.String() || out["result"] != "applied" || out["status"] != "FAILED" ||
		out["paid_at"] != nil || out["retrieval_reference_no"] != nil || out["settle_at"] != nil {
		t.Fatalf("payment simulate FAILED printed %v", out)
	}

	h.usageError("--id is required", "payment", "simulate", "--status", "SUCCESS")
	h.usageError("--status must be SUCCESS or FAILED", "payment", "simulate", "--id", paid.String())
	h.usageError("--status must be SUCCESS or FAILED", "payment", "simulate", "--id", paid.String(), "--status", "PAID")
	h.fails(1, "payment not found", "payment", "simulate", "--id", unknownID, "--status", "SUCCESS")
}

// refusedSettlement makes a paid payment whose settlement the ledger
// refused: the wallet is at its maximum balance when the sweep settles it.
// It returns the payment and the wallet.
func (h *harness) refusedSettlement() (payment uuid.UUID, wallet string) {
	h.t.Helper()
	client, wallet := h.merchant("100000000000000") // models.MaxBalance
	payment = h.payment(client, 20_000)
	h.ok("payment", "simulate", "--id", payment.String(), "--status", "SUCCESS")
	h.advance(5 * 24 * time.Hour) // past the next business day
	if _, err := h.deps.Payments.Sweep(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	return payment, wallet
}

func TestPaymentShow(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	client, _ := h.merchant("")
	pending := h.payment(client, 20_000)

	out := h.ok("payment", "show", "--id", pending.String())
	want := map[string]any{"payment_id": pending.String(), "client_id": client, "status": "PENDING",
		"amount": "20000", "platform_fee": "140", "net_amount": "19860", // 0.7 %
		"paid_at": nil, "settled_at": nil, "settlement_error": nil, "hold_reason": nil, "reported_amount": nil}
	for k, v := range want {
		if out[k] != v {
			t.Errorf("payment show %s = %#v, want %#v", k, out[k], v)
		}
	}

	// What needs an operator shows: the refused settlement.
	refused, _ := h.refusedSettlement()
	out = h.ok("payment", "show", "--id", refused.String())
	if out["status"] != "SUCCESS" || out["settled_at"] != nil || out["paid_at"] == nil ||
		!strings.Contains(fmt.Sprint(out["settlement_error"]), "maximum") {
		t.Fatalf("payment show of a refused settlement printed %v", out)
	}

	h.usageError("--id is required", "payment", "show")
	h.usageError("--id must be a UUID", "payment", "show", "--id", "order-1")
	h.fails(1, "payment not found", "payment", "show", "--id", unknownID)
}

func TestPaymentSettle(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	payment, wallet := h.refusedSettlement()
	id := payment.String()

	// Still no room: refused again, said so, nothing printed.
	h.fails(1, fmt.Sprintf("payment %s: settlement refused: wallet balance would pass its maximum of ±100000000000000 IDR: "+
		"wallet %s holds 100000000000000.0000, a change of 19860.0000 would make it 100000000019860.0000", id, wallet),
		"payment", "settle", "--id", id)
	// The operator makes room, then settles.
	h.ok("wallet", "adjust", "--wallet", wallet, "--amount", "-1000000", "--memo", "paid out by hand")
	out := h.ok("payment", "settle", "--id", id)
	if out["payment_id"] != id || out["status"] != "SUCCESS" || out["settled_at"] == nil || out["settlement_error"] != nil ||
		out["net_amount"] != "19860" {
		t.Fatalf("payment settle printed %v", out)
	}
	if r := h.ok("reconcile"); r["ok"] != true {
		t.Fatalf("reconcile after the settlement: %v", r)
	}

	h.usageError("--id is required", "payment", "settle")
	h.usageError("--id must be a UUID", "payment", "settle", "--id", "x")
	h.fails(1, fmt.Sprintf("payment %s: payment not found", unknownID), "payment", "settle", "--id", unknownID)
	h.fails(1, fmt.Sprintf("payment %s: payment %s has no refused settlement", id, id), "payment", "settle", "--id", id)
}
