package models_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
)

// FindClientWallet scans its row by hand: it must read every column as
// the ORM does, on both databases, and hide what the caller may not see.
func TestFindClientWalletReadsEveryColumn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := models.NewStore(testenv.DB(t))
	now := models.Now()
	owner := &models.Client{ID: models.NewID(), Name: "Toko", Kind: models.KindMerchant, Environment: models.Production,
		Withdrawals: models.WithdrawalsActive, CreatedAt: now, UpdatedAt: now}
	cred := &models.Credential{ID: models.NewID(), APIKeyHash: "hash-" + owner.ID.String(), APIKeyPrefix: "v3_live_0000",
		CallbackSecretEnc: "sealed", CreatedAt: now}
	if err := store.CreateClient(ctx, owner, cred); err != nil {
		t.Fatal(err)
	}
	w := &models.Wallet{ID: models.NewID(), ClientID: owner.ID, Name: "Main", Vendor: "simbank", State: models.WalletActive,
		Balance: 123_4567, Locked: 2_5000, CreatedAt: now, UpdatedAt: now.Add(time.Second)}
	if err := store.CreateWallet(ctx, w); err != nil {
		t.Fatal(err)
	}
	// Balance and Locked are not written by CreateWallet (the ledger
	// moves them): set them as a posting would.
	if err := store.DB.Exec("UPDATE wallets SET balance = ?, locked = ? WHERE id = ?", w.Balance, w.Locked, w.ID).Error; err != nil {
		t.Fatal(err)
	}
	want, err := store.FindWallet(ctx, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := store.FindClientWallet(ctx, owner.ID, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != want.ID || got.ClientID != want.ClientID || got.Name != want.Name || got.Vendor != want.Vendor ||
		got.State != want.State || got.IsDefault != want.IsDefault || !got.IsDefault ||
		got.Balance != 123_4567 || got.Locked != 2_5000 ||
		!got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) || got.CreatedAt.IsZero() {
		t.Fatalf("FindClientWallet read\n %+v\nFindWallet read\n %+v", got, want)
	}

	if _, err := store.FindClientWallet(ctx, models.NewID(), w.ID); !errors.Is(err, models.ErrWalletNotFound) {
		t.Fatalf("another client's wallet: %v, want ErrWalletNotFound", err)
	}
	if err := store.DB.Exec("UPDATE wallets SET state = ? WHERE id = ?", models.WalletProvisioning, w.ID).Error; err != nil {
		t.Fatal(err)
	}
	if _, err := store.FindClientWallet(ctx, owner.ID, w.ID); !errors.Is(err, models.ErrWalletNotFound) {
		t.Fatalf("a provisioning wallet: %v, want ErrWalletNotFound", err)
	}
}
