package ledger_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
	"gorm.io/gorm"
)

func newWallet(t testing.TB, db *gorm.DB) *models.Wallet {
	t.Helper()
	store := models.NewStore(db)
	now := models.Now()
	c := &models.Client{ID: models.NewID(), Name: "Toko", Kind: models.KindMerchant, Environment: models.Staging,
		Withdrawals: models.WithdrawalsActive, CreatedAt: now, UpdatedAt: now}
	cred := &models.Credential{ID: models.NewID(), APIKeyHash: models.NewID().String(), APIKeyPrefix: "v3_test_", CallbackSecretEnc: "x", CreatedAt: now}
	if err := store.CreateClient(context.Background(), c, cred); err != nil {
		t.Fatal(err)
	}
	w := &models.Wallet{ID: models.NewID(), ClientID: c.ID, Name: "Main", Vendor: "simbank", State: models.WalletActive, CreatedAt: now, UpdatedAt: now}
	if err := store.CreateWallet(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	return w
}

func TestAdjustWritesBalancedEntriesWithTheBalance(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	w := newWallet(t, db)
	ctx := context.Background()
	for _, a := range []models.Amount{models.Rupiah(100_000), -models.Rupiah(2_500), 5} {
		if _, err := ledger.Adjust(ctx, db, models.Now(), w.ID, a, "test"); err != nil {
			t.Fatal(err)
		}
	}
	got, err := models.NewStore(db).FindWallet(ctx, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := models.Rupiah(97_500) + 5; got.Balance != want {
		t.Fatalf("balance %s, want %s", got.Balance.Fixed4(), want.Fixed4())
	}
	var entries []models.LedgerEntry
	db.Order("id").Find(&entries)
	if len(entries) != 6 {
		t.Fatalf("%d entries, want 2 per adjustment", len(entries))
	}
	var sum models.Amount
	for _, e := range entries {
		sum += e.Amount
	}
	if sum != 0 {
		t.Fatalf("ledger sums to %s, want 0", sum)
	}
	report, err := ledger.Reconcile(ctx, db, models.Now())
	if err != nil || !report.OK {
		t.Fatalf("reconcile: %v %+v", err, report)
	}
	if report.SystemAccounts[models.AccountAdjustments] != "-97500.0005" {
		t.Fatalf("adjustments account %v", report.SystemAccounts)
	}
}

func TestPostRefusesUnbalancedPostings(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	w := newWallet(t, db)
	cases := map[string][]ledger.Entry{
		"one entry":   {{Account: w.LedgerAccount(), Amount: 10}},
		"not zero":    {{Account: w.LedgerAccount(), Amount: 10}, {Account: models.AccountAdjustments, Amount: -9}},
		"zero amount": {{Account: w.LedgerAccount(), Amount: 0}, {Account: models.AccountAdjustments, Amount: 0}},
	}
	for name, entries := range cases {
		t.Run(name, func(t *testing.T) {
			err := db.Transaction(func(tx *gorm.DB) error {
				_, err := ledger.Post(tx, models.Now(), ledger.Posting{Kind: "test", Entries: entries})
				return err
			})
			if err == nil {
				t.Fatal("unbalanced posting accepted")
			}
		})
	}
	var n int64
	db.Model(&models.LedgerEntry{}).Count(&n)
	if n != 0 {
		t.Fatalf("%d entries written by refused postings", n)
	}
}

func TestAdjustUnknownWalletWritesNothing(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	_, err := ledger.Adjust(context.Background(), db, models.Now(), models.NewID(), 100, "x")
	if !errors.Is(err, models.ErrWalletNotFound) {
		t.Fatalf("err %v, want ErrWalletNotFound", err)
	}
	var n int64
	db.Model(&models.LedgerTransaction{}).Count(&n)
	if n != 0 {
		t.Fatal("a ledger transaction was written for an unknown wallet")
	}
}

func TestLedgerIsAppendOnly(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	w := newWallet(t, db)
	if _, err := ledger.Adjust(context.Background(), db, models.Now(), w.ID, 100, "x"); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`UPDATE ledger_entries SET amount = amount + 1`,
		`DELETE FROM ledger_entries`,
		`UPDATE ledger_transactions SET memo = 'changed'`,
		`DELETE FROM ledger_transactions`,
	} {
		if err := db.Exec(stmt).Error; err == nil {
			t.Errorf("%s succeeded; the ledger must refuse it", stmt)
		}
	}
}

// PostAll applies several postings to two wallets, each wallet's changes
// summed into one balance and one lock release; a release larger than the
// lock refuses the whole call, so the caller's transaction rolls back and
// nothing of it is left.
func TestPostAllSumsPerWalletAndGuardsLocks(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	a, b := newWallet(t, db), newWallet(t, db)
	ctx := context.Background()
	for _, w := range []*models.Wallet{a, b} {
		if _, err := ledger.Adjust(ctx, db, models.Now(), w.ID, models.Rupiah(1_000_000), "funding"); err != nil {
			t.Fatal(err)
		}
		if err := db.Exec(`UPDATE wallets SET locked = ? WHERE id = ?`, int64(models.Rupiah(300_000)), w.ID).Error; err != nil {
			t.Fatal(err)
		}
	}
	payout := func(w *models.Wallet, gross models.Amount) ledger.Posting {
		return ledger.Posting{Kind: "payout", Reference: models.NewID().String(), Entries: []ledger.Entry{
			{Account: models.WalletAccount(w.ID), Amount: -gross},
			{Account: models.VendorClearingAccount("simbank"), Amount: gross},
		}}
	}
	postings := []ledger.Posting{payout(a, models.Rupiah(100_000)), payout(b, models.Rupiah(50_000)), payout(a, models.Rupiah(100_000))}
	releases := []ledger.Release{{WalletID: a.ID, Amount: models.Rupiah(100_000)}, {WalletID: b.ID, Amount: models.Rupiah(50_000)},
		{WalletID: a.ID, Amount: models.Rupiah(100_000)}}
	var ids []uuid.UUID
	err := db.Transaction(func(tx *gorm.DB) (err error) {
		ids, err = ledger.PostAll(tx, models.Now(), postings, releases)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 3 || ids[0] == ids[2] {
		t.Fatalf("transaction ids %v, want 3 distinct", ids)
	}
	store := models.NewStore(db)
	for _, want := range []struct {
		w               *models.Wallet
		balance, locked models.Amount
	}{{a, models.Rupiah(800_000), models.Rupiah(100_000)}, {b, models.Rupiah(950_000), models.Rupiah(250_000)}} {
		got, err := store.FindWallet(ctx, want.w.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Balance != want.balance || got.Locked != want.locked {
			t.Errorf("wallet: balance %s locked %s, want %s and %s", got.Balance, got.Locked, want.balance, want.locked)
		}
	}

	var before int64
	db.Model(&models.LedgerEntry{}).Count(&before)
	err = db.Transaction(func(tx *gorm.DB) error {
		_, err := ledger.PostAll(tx, models.Now(), []ledger.Posting{payout(a, models.Rupiah(200_000))},
			[]ledger.Release{{WalletID: a.ID, Amount: models.Rupiah(200_000)}})
		return err
	})
	if err == nil {
		t.Fatal("released 200000 from a lock of 100000")
	}
	var after int64
	db.Model(&models.LedgerEntry{}).Count(&after)
	if got, _ := store.FindWallet(ctx, a.ID); after != before || got.Balance != models.Rupiah(800_000) || got.Locked != models.Rupiah(100_000) {
		t.Errorf("refused release left entries %d→%d, wallet %s/%s", before, after, got.Balance, got.Locked)
	}
}
