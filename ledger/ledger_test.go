package ledger_test

import (
	"context"
	"errors"
	"testing"

	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/testenv"
	"gorm.io/gorm"
)

func newWallet(t *testing.T, db *gorm.DB) *models.Wallet {
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
		if _, err := ledger.Adjust(ctx, db, w.ID, a, "test"); err != nil {
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
	report, err := ledger.Reconcile(ctx, db)
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
				_, err := ledger.Post(tx, ledger.Posting{Kind: "test", Entries: entries})
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
	_, err := ledger.Adjust(context.Background(), db, models.NewID(), 100, "x")
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
	if _, err := ledger.Adjust(context.Background(), db, w.ID, 100, "x"); err != nil {
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
