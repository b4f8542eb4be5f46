package database_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
)

// A wallet that held money before statements began (migration 13) starts
// its statement with one opening_balance line of its balance and lock, an
// empty wallet with none, and reconcile's statement checks hold for both.
func TestStatementMigrationOpensExistingWallets(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	ctx := context.Background()
	provider, err := database.NewProvider(db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provider.DownTo(ctx, 12); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)
	client, funded, empty := models.NewID(), models.NewID(), models.NewID()
	if err := db.Exec(`INSERT INTO clients (id, name, kind, environment, withdrawals, created_at, updated_at) VALUES (?, 'Toko', ?, ?, 'active', ?, ?)`,
		client, models.KindMerchant, models.Staging, now, now).Error; err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		id              any
		balance, locked int64
	}{{funded, 5_000_000_000, 1_000_000_000}, {empty, 0, 0}} {
		if err := db.Exec(`INSERT INTO wallets (id, client_id, name, vendor, state, is_default, balance, locked, created_at, updated_at)
			VALUES (?, ?, 'W', 'simbank', 'active', false, ?, ?, ?, ?)`, w.id, client, w.balance, w.locked, now, now).Error; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := provider.Up(ctx); err != nil {
		t.Fatal(err)
	}
	var lines []models.StatementLine
	if err := db.Order("wallet_id, seq").Find(&lines).Error; err != nil {
		t.Fatal(err)
	}
	if len(lines) != 1 || lines[0].WalletID != funded || lines[0].Seq != 1 || lines[0].Kind != models.StatementOpeningBalance ||
		lines[0].BalanceAfter != 5_000_000_000 || lines[0].LockedAfter != 1_000_000_000 ||
		lines[0].BalanceChange != 5_000_000_000 || lines[0].LockedChange != 1_000_000_000 || !lines[0].CreatedAt.Equal(now) {
		t.Fatalf("lines after the migration: %+v", lines)
	}
	r, err := ledger.Reconcile(ctx, db, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.Problems {
		// The balance has no ledger entries behind it (it was written
		// directly above); the statement must be whole all the same.
		if !strings.Contains(p, "sum of its ledger entries") && !strings.Contains(p, "open disbursements") {
			t.Errorf("reconcile: %s", p)
		}
	}
}
