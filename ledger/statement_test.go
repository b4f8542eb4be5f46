package ledger_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
)

// Each way money moves leaves its statement line, with what it belongs to
// and the balance and lock after it: a payment's settlement, a lock, a
// paid payout (its debit and fee carry the lock, so available does not
// move twice), a release, an adjustment. Pages run newest first and the
// export oldest first; both show the same lines.
func TestStatementLinesOfEachMovement(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	ctx := context.Background()
	w := newWallet(t, db)
	now := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	payment, paid, unpaid := models.NewID(), models.NewID(), models.NewID()
	step := func(f func(tx *gorm.DB) error) {
		t.Helper()
		now = now.Add(time.Second)
		if err := db.Transaction(f); err != nil {
			t.Fatal(err)
		}
	}
	rp := models.Rupiah
	step(func(tx *gorm.DB) error {
		_, err := ledger.Post(tx, now, ledger.Posting{Kind: "settlement", Memo: "payment p-1", Reference: payment.String(), Entries: []ledger.Entry{
			{Account: models.AccountAcquirerClearing, Amount: -rp(1_000_000)}, {Account: models.WalletAccount(w.ID), Amount: rp(993_000)},
			{Account: models.AccountPlatformFees, Amount: rp(7_000)}}})
		return err
	})
	step(func(tx *gorm.DB) error {
		ok, err := ledger.LockFunds(tx, w.ID, []ledger.Lock{{DisbursementID: paid, Amount: rp(100_000)}, {DisbursementID: unpaid, Amount: rp(50_000)}}, now)
		if err == nil && !ok {
			t.Fatal("lock refused")
		}
		return err
	})
	step(func(tx *gorm.DB) error {
		_, err := ledger.PostAll(tx, now, []ledger.Posting{{Kind: "payout", Reference: paid.String(), Entries: []ledger.Entry{
			{Account: models.WalletAccount(w.ID), Amount: -rp(97_500), Line: models.StatementPayoutDebited},
			{Account: models.VendorClearingAccount("simbank"), Amount: rp(97_500)},
			{Account: models.WalletAccount(w.ID), Amount: -rp(2_500), Line: models.StatementFee},
			{Account: models.AccountPlatformFees, Amount: rp(2_500)}}}},
			[]ledger.Release{{WalletID: w.ID, Amount: rp(100_000), DisbursementID: paid}})
		return err
	})
	step(func(tx *gorm.DB) error {
		return ledger.ReleaseLocks(tx, []ledger.Release{{WalletID: w.ID, Amount: rp(50_000), DisbursementID: unpaid}}, now)
	})
	now = now.Add(time.Second)
	if _, err := ledger.Adjust(ctx, db, now, w.ID, -rp(3_000), "correction"); err != nil {
		t.Fatal(err)
	}

	type line struct {
		kind                      models.StatementKind
		balance, locked           models.Amount // changes
		balanceAfter, lockedAfter models.Amount
		ref                       uuid.UUID
	}
	want := []line{
		{models.StatementPaymentSettled, rp(993_000), 0, rp(993_000), 0, payment},
		{models.StatementPayoutLocked, 0, rp(100_000), rp(993_000), rp(100_000), paid},
		{models.StatementPayoutLocked, 0, rp(50_000), rp(993_000), rp(150_000), unpaid},
		{models.StatementPayoutDebited, -rp(97_500), -rp(97_500), rp(895_500), rp(52_500), paid},
		{models.StatementFee, -rp(2_500), -rp(2_500), rp(893_000), rp(50_000), paid},
		{models.StatementPayoutReleased, 0, -rp(50_000), rp(893_000), 0, unpaid},
		{models.StatementAdjustment, -rp(3_000), 0, rp(890_000), 0, uuid.Nil},
	}
	var exported []models.StatementLine
	if err := ledger.ExportStatement(ctx, db, w.ID, time.Time{}, time.Time{}, func(l *models.StatementLine) error {
		exported = append(exported, *l)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(exported) != len(want) {
		t.Fatalf("%d lines, want %d: %+v", len(exported), len(want), exported)
	}
	for i, l := range exported {
		ref := uuid.Nil
		switch {
		case l.DisbursementID != nil:
			ref = *l.DisbursementID
		case l.PaymentID != nil:
			ref = *l.PaymentID
		}
		got := line{l.Kind, l.BalanceChange, l.LockedChange, l.BalanceAfter, l.LockedAfter, ref}
		if got != want[i] || l.Seq != int64(i+1) {
			t.Errorf("line %d: %+v, want %+v", l.Seq, got, want[i])
		}
		if (l.Kind == models.StatementPayoutLocked || l.Kind == models.StatementPayoutReleased) != (l.LedgerTransactionID == nil) {
			t.Errorf("line %d (%s): ledger transaction %v", l.Seq, l.Kind, l.LedgerTransactionID)
		}
	}

	// Pages of 3, newest first, are the export backwards.
	var paged []models.StatementLine
	f := ledger.StatementFilter{Limit: 3}
	for {
		rows, next, err := ledger.Statement(ctx, db, w.ID, f)
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, rows...)
		if next == nil {
			break
		}
		f.After = next
	}
	if len(paged) != len(exported) {
		t.Fatalf("paged %d lines, exported %d", len(paged), len(exported))
	}
	for i, l := range paged {
		if l.Seq != exported[len(exported)-1-i].Seq {
			t.Errorf("page line %d is %d, want %d", i, l.Seq, exported[len(exported)-1-i].Seq)
		}
	}
	// The postings have no payment or disbursement rows behind them, so
	// reconcile names the system accounts; the statement must be whole.
	r, err := ledger.Reconcile(ctx, db, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.Problems {
		if strings.Contains(p, "statement") || strings.Contains(p, "wallet ") {
			t.Errorf("reconcile: %s", p)
		}
	}
}
