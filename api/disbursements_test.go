package api

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
)

// The normal path, field by field: create answers 201 REQUESTED with the
// spec's body, the poll pays it, the wallet is debited the gross and the
// record shows when it was requested and completed.
func TestDisbursementCreatePaysOut(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{completeAfter: time.Hour})
	p := e.body("100000.00", " 1234567890 ")
	p.memo, p.referenceID = "invoice 7", "inv-7"
	r := e.create("key-1", p)
	r.expect(t, http.StatusCreated, "")
	if r.header.Get("Idempotent-Replayed") != "" {
		t.Fatal("a fresh create carries Idempotent-Replayed")
	}
	d := r.disbursement(t)
	want := disbursementJSON{ID: d.ID, ClientID: e.m.id.String(), WalletID: e.wallet.String(), Status: "REQUESTED",
		Amount: "100000", PlatformFee: "2500", NetAmount: "97500", Currency: "IDR", BankCode: "bca",
		BankName: "Bank Central Asia", AccountNo: "1234567890", AccountHolderName: "SANDBOX 7890",
		Memo: d.Memo, ReferenceID: d.ReferenceID, IdempotencyKey: "key-1"}
	if d.Memo == nil || *d.Memo != "invoice 7" || d.ReferenceID == nil || *d.ReferenceID != "inv-7" {
		t.Fatalf("memo %v reference_id %v", d.Memo, d.ReferenceID)
	}
	if d != want {
		t.Fatalf("created\n%+v\nwant\n%+v", d, want)
	}
	if balance, locked := e.balance(e.wallet); balance != models.Rupiah(1_000_000) || locked != models.Rupiah(100_000) {
		t.Fatalf("while in flight: balance %s locked %s", balance, locked)
	}
	e.drain() // still in flight: polled, rescheduled
	if e.status(d.ID) != models.StatusRequested {
		t.Fatalf("status %s before the vendor completed it", e.status(d.ID))
	}
	e.clock.Advance(2 * time.Hour)
	e.inline.EnqueuePoll(context.Background(), uuid.MustParse(d.ID), "", 0)
	e.drain()
	if balance, locked := e.balance(e.wallet); balance != models.Rupiah(900_000) || locked != 0 {
		t.Fatalf("after payout: balance %s locked %s, want 900000 and 0", balance, locked)
	}
	rec := e.get(d.ID)
	rec.expect(t, http.StatusOK, "")
	got := rec.disbursement(t)
	if got.Status != "SUCCESS" || got.RequestedAt == nil || got.CompletedAt == nil || got.IdempotencyKey != "" {
		t.Fatalf("record %s", rec.body)
	}
	e.reconciled()
}

// Idempotency rule 2 and 3: the same key and parameters answer the stored
// disbursement with 200 and Idempotent-Replayed, whatever the scale of the
// amount, the case of the bank code or the spaces around the account.
func TestDisbursementReplay(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{})
	first := e.create("key-r", e.body("100000", "1234567890"))
	first.expect(t, http.StatusCreated, "")
	e.drain()
	same := e.body("100000.0000", " 1234567890\t")
	same.bank = "BCA"
	same.memo = "a different memo is not compared"
	replay := e.create("key-r", same)
	replay.expect(t, http.StatusOK, "")
	if replay.header.Get("Idempotent-Replayed") != "true" {
		t.Fatal("replay without Idempotent-Replayed: true")
	}
	d := replay.disbursement(t)
	if d.ID != first.disbursement(t).ID || d.Status != "SUCCESS" || d.IdempotencyKey != "key-r" {
		t.Fatalf("replay answered %s", replay.body)
	}
	if balance, _ := e.balance(e.wallet); balance != models.Rupiah(900_000) {
		t.Fatalf("a replay moved money: balance %s", balance)
	}
}

// The worker in-process on the test's Redis (real Redis in CI) carries a
// create through asynq to SUCCESS.
func TestDisbursementThroughTheWorker(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{worker: true, completeAfter: 50e6})
	r := e.create("key-w", e.body("50000", "1234567890"))
	r.expect(t, http.StatusCreated, "")
	d := r.disbursement(t)
	e.eventually(d.ID, models.StatusSuccess)
	if e.submitCalls(d.ID) != 1 {
		t.Fatalf("vendor asked to pay %d times", e.submitCalls(d.ID))
	}
	e.reconciled()
}
