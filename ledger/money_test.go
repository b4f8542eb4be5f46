package ledger_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
)

// testNow is the callers' clock in these tests, far from the wall clock.
var testNow = time.Date(2031, 3, 4, 5, 6, 7, 123456000, time.UTC)

// A wallet's balance stays within ±models.MaxBalance: a posting that would
// take it past either bound is refused with ErrBalanceLimit and changes
// nothing; at the bound itself it is applied.
func TestWalletBalanceStopsAtItsMaximum(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	ctx := context.Background()
	for _, sign := range []models.Amount{1, -1} {
		w := newWallet(t, db)
		if _, err := ledger.Adjust(ctx, db, testNow, w.ID, sign*models.MaxBalance, "to the bound"); err != nil {
			t.Fatalf("adjust to %s: %v", (sign * models.MaxBalance).Fixed4(), err)
		}
		_, err := ledger.Adjust(ctx, db, testNow, w.ID, sign, "one unit past it")
		if !errors.Is(err, models.ErrBalanceLimit) {
			t.Fatalf("adjust past the bound: %v, want ErrBalanceLimit", err)
		}
		got, err := models.NewStore(db).FindWallet(ctx, w.ID)
		if err != nil || got.Balance != sign*models.MaxBalance {
			t.Fatalf("after the refused posting: %+v %v", got, err)
		}
	}
	if report, err := ledger.Reconcile(ctx, db, testNow); err != nil || !report.OK {
		t.Fatalf("reconcile %+v %v", report, err)
	}
}

// Reconcile sums without overflowing: ten wallets at their maximum put
// -10^15 IDR (-10^19 units, beyond int64) in the adjustments account; the
// report shows it exactly instead of failing.
func TestReconcileSumsBeyondInt64(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	ctx := context.Background()
	for range 10 {
		w := newWallet(t, db)
		if _, err := ledger.Adjust(ctx, db, testNow, w.ID, models.MaxBalance, "fund"); err != nil {
			t.Fatal(err)
		}
	}
	report, err := ledger.Reconcile(ctx, db, testNow)
	if err != nil || !report.OK {
		t.Fatalf("reconcile %+v %v", report, err)
	}
	if got := report.SystemAccounts[models.AccountAdjustments]; got != "-1000000000000000.0000" {
		t.Fatalf("adjustments account %q", got)
	}
}

// The database keeps money columns integers within range, whatever writes
// them: an out-of-range value and an overflowing sum are refused on both
// backends, and on SQLite (which silently turns an overflowing integer sum
// into REAL) a REAL is refused too.
func TestStoredMoneyStaysIntegerAndInRange(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	w := newWallet(t, db)
	refused := []string{
		`UPDATE wallets SET balance = 1000000000000000001 WHERE id = ?`,
		`UPDATE wallets SET balance = -1000000000000000001 WHERE id = ?`,
		`UPDATE wallets SET locked = 1000000000000000001 WHERE id = ?`,
		`UPDATE wallets SET locked = -1 WHERE id = ?`,
		`UPDATE wallets SET balance = balance + 9223372036854775807 WHERE id = ?`,
		`UPDATE wallets SET balance = 9223372036854775807 WHERE id = ?`,
	}
	if database.DialectOfDB(db) == database.SQLite {
		refused = append(refused, `UPDATE wallets SET balance = 0.5 WHERE id = ?`)
	}
	for _, stmt := range refused {
		if err := db.Exec(stmt, w.ID).Error; err == nil {
			t.Errorf("%s: accepted", stmt)
		}
	}
	if database.DialectOfDB(db) == database.SQLite {
		for _, amount := range []any{0.5, 1e19} {
			err := db.Exec(`INSERT INTO ledger_transactions (id, kind, memo, reference, created_at) VALUES (?, 'x', '', '', ?);
				INSERT INTO ledger_entries (transaction_id, account, amount, created_at) VALUES (?, 'system:x', ?, ?)`,
				models.NewID(), testNow, models.NewID(), amount, testNow).Error
			if err == nil {
				t.Errorf("ledger entry of %v accepted", amount)
			}
		}
	}
	got, err := models.NewStore(db).FindWallet(context.Background(), w.ID)
	if err != nil || got.Balance != 0 || got.Locked != 0 {
		t.Fatalf("wallet after refused writes: %+v %v", got, err)
	}
}

// The ledger takes its time from its caller (the service's injected
// clock), never the wall clock: it is what lands in the transactions, the
// entries and the wallet, and what reconcile reports and judges by.
func TestLedgerUsesTheCallersClock(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	ctx := context.Background()
	w := newWallet(t, db)
	if _, err := ledger.Adjust(ctx, db, testNow, w.ID, models.Rupiah(1), "fund"); err != nil {
		t.Fatal(err)
	}
	var entries []models.LedgerEntry
	var txns []models.LedgerTransaction
	db.Find(&entries)
	db.Find(&txns)
	if len(entries) != 2 || len(txns) != 1 {
		t.Fatalf("%d entries, %d transactions", len(entries), len(txns))
	}
	for _, e := range entries {
		if !e.CreatedAt.Equal(testNow) {
			t.Errorf("entry created_at %s, want %s", e.CreatedAt, testNow)
		}
	}
	if !txns[0].CreatedAt.Equal(testNow) {
		t.Errorf("transaction created_at %s, want %s", txns[0].CreatedAt, testNow)
	}
	if got, _ := models.NewStore(db).FindWallet(ctx, w.ID); !got.UpdatedAt.Equal(testNow) {
		t.Errorf("wallet updated_at %s, want %s", got.UpdatedAt, testNow)
	}
	report, err := ledger.Reconcile(ctx, db, testNow)
	if err != nil || !report.CheckedAt.Equal(testNow) {
		t.Fatalf("reconcile %+v %v", report, err)
	}
}

// A value that cannot be in a money column (written before the triggers
// existed, or by hand) makes reconcile report a failed invariant, not fail.
func TestReconcileReportsImpossibleStoredValues(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	if database.DialectOfDB(db) != database.SQLite {
		t.Skip("only SQLite can hold a REAL in an integer column")
	}
	w := newWallet(t, db)
	if err := db.Exec(`DROP TRIGGER wallets_money_update`).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Exec(`UPDATE wallets SET balance = 1e19 WHERE id = ?`, w.ID).Error; err != nil {
		t.Fatal(err)
	}
	report, err := ledger.Reconcile(context.Background(), db, testNow)
	if err != nil || report.OK || !strings.Contains(strings.Join(report.Problems, "\n"), w.ID.String()) {
		t.Fatalf("reconcile %+v %v", report, err)
	}
}
