package ledger_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

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

// One posting batch over many wallets (one statement on PostgreSQL) moves
// each wallet by exactly its own entries and releases, and a batch one of
// whose wallets cannot take its change is refused as a whole, naming that
// wallet: every wallet is as it was.
func TestPostAllOverManyWallets(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	ctx := context.Background()
	var wallets []*models.Wallet
	for range 5 {
		w := newWallet(t, db)
		if _, err := ledger.Adjust(ctx, db, testNow, w.ID, models.Rupiah(1_000), "fund"); err != nil {
			t.Fatal(err)
		}
		if err := db.Exec(`UPDATE wallets SET locked = ? WHERE id = ?`, int64(models.Rupiah(300)), w.ID).Error; err != nil {
			t.Fatal(err)
		}
		wallets = append(wallets, w)
	}
	payout := func(w *models.Wallet, gross int64) ledger.Posting {
		return ledger.Posting{Kind: "payout", Memo: "test", Entries: []ledger.Entry{
			{Account: models.WalletAccount(w.ID), Amount: -models.Rupiah(gross)},
			{Account: models.VendorClearingAccount("simbank"), Amount: models.Rupiah(gross)},
		}}
	}
	post := func(ps []ledger.Posting, rs []ledger.Release) error {
		return db.Transaction(func(tx *gorm.DB) error {
			_, err := ledger.PostAll(tx, testNow, ps, rs)
			return err
		})
	}
	var ps []ledger.Posting
	var rs []ledger.Release
	for i, w := range wallets {
		gross := int64(100 * (i + 1)) // 100 … 500
		ps = append(ps, payout(w, gross), payout(w, 10))
		rs = append(rs, ledger.Release{WalletID: w.ID, Amount: models.Rupiah(min(gross, 300))})
	}
	if err := post(ps, rs); err != nil {
		t.Fatal(err)
	}
	store := models.NewStore(db)
	for i, w := range wallets {
		got, err := store.FindWallet(ctx, w.ID)
		gross := int64(100 * (i + 1))
		if err != nil || got.Balance != models.Rupiah(1_000-gross-10) || got.Locked != models.Rupiah(300-min(gross, 300)) {
			t.Fatalf("wallet %d: %+v %v", i, got, err)
		}
	}
	// The fourth wallet's lock is 0 now: releasing 1 from it is refused.
	before := make([]models.Wallet, len(wallets))
	for i, w := range wallets {
		got, _ := store.FindWallet(ctx, w.ID)
		before[i] = *got
	}
	err := post([]ledger.Posting{payout(wallets[0], 1), payout(wallets[1], 1)},
		[]ledger.Release{{WalletID: wallets[0].ID, Amount: models.Rupiah(1)}, {WalletID: wallets[3].ID, Amount: models.Rupiah(1)}})
	if err == nil || !strings.Contains(err.Error(), wallets[3].ID.String()) {
		t.Fatalf("a release beyond wallet 3's lock: %v, want an error naming it", err)
	}
	err = post([]ledger.Posting{payout(wallets[0], 1), {Kind: "adjustment", Memo: "test", Entries: []ledger.Entry{
		{Account: models.WalletAccount(wallets[2].ID), Amount: models.MaxBalance},
		{Account: models.AccountAdjustments, Amount: -models.MaxBalance}}}}, nil)
	if !errors.Is(err, models.ErrBalanceLimit) || !strings.Contains(err.Error(), wallets[2].ID.String()) {
		t.Fatalf("a change past wallet 2's bound: %v, want ErrBalanceLimit naming it", err)
	}
	for i, w := range wallets {
		if got, _ := store.FindWallet(ctx, w.ID); got.Balance != before[i].Balance || got.Locked != before[i].Locked {
			t.Fatalf("wallet %d changed by a refused batch: %+v, was %+v", i, got, before[i])
		}
	}
}

// ReleaseLocks over many wallets gives each its own summed release, and a
// release beyond one wallet's lock is *LockShortError for that wallet.
func TestReleaseLocksOverManyWallets(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	var ids []uuid.UUID
	for range 3 {
		w := newWallet(t, db)
		if err := db.Exec(`UPDATE wallets SET balance = ?, locked = ? WHERE id = ?`,
			int64(models.Rupiah(500)), int64(models.Rupiah(500)), w.ID).Error; err != nil {
			t.Fatal(err)
		}
		ids = append(ids, w.ID)
	}
	release := func(rs ...ledger.Release) error {
		return db.Transaction(func(tx *gorm.DB) error { return ledger.ReleaseLocks(tx, rs, testNow) })
	}
	if err := release(ledger.Release{WalletID: ids[0], Amount: models.Rupiah(100)}, ledger.Release{WalletID: ids[0], Amount: models.Rupiah(50)},
		ledger.Release{WalletID: ids[1], Amount: models.Rupiah(500)}, ledger.Release{WalletID: ids[2], Amount: models.Rupiah(1)}); err != nil {
		t.Fatal(err)
	}
	want := []models.Amount{models.Rupiah(350), 0, models.Rupiah(499)}
	for i, id := range ids {
		if got, err := models.NewStore(db).FindWallet(context.Background(), id); err != nil || got.Locked != want[i] {
			t.Fatalf("wallet %d: %+v %v, want locked %s", i, got, err, want[i])
		}
	}
	err := release(ledger.Release{WalletID: ids[0], Amount: models.Rupiah(1)}, ledger.Release{WalletID: ids[1], Amount: models.Rupiah(1)})
	var short *ledger.LockShortError
	if !errors.As(err, &short) || short.WalletID != ids[1] || short.Amount != models.Rupiah(1) {
		t.Fatalf("release beyond wallet 1's lock: %v, want *LockShortError for it", err)
	}
}
