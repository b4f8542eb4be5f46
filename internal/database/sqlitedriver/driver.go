// Package sqlitedriver is the domain's driver for SQLite (models.Driver),
// the embedded database of `payoutd dev` and of the test suites without
// TEST_DATABASE_URL: every statement whose text differs from PostgreSQL's.
// SQLite has one writer, which holds the whole database: there are no row
// locks to take, and a claim never waits for another. It has no
// data-modifying CTEs either, so what PostgreSQL writes in one statement
// is here a few statements of the caller's transaction (or of one of the
// driver's own), in the same order.
//
// internal/database.Open installs it on every SQLite handle.
package sqlitedriver

import (
	"context"
	"slices"
	"strings"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/models"
)

// Driver is the SQLite driver. It holds no state: one value serves every
// handle.
type Driver struct{}

var _ models.Driver = Driver{}

// New returns the driver, to install on a SQLite handle (db.Use).
func New() Driver { return Driver{} }

// Name is the gorm plugin's name (models.DriverOf looks it up by it).
func (Driver) Name() string { return models.DriverName }

// Initialize does nothing: the driver needs nothing of the handle but to
// be found on it.
func (Driver) Initialize(*gorm.DB) error { return nil }

// IsRetryable is false: SQLite's one writer never makes a transaction a
// deadlock victim, and its busy wait covers a writer's turn.
func (Driver) IsRetryable(error) bool { return false }

// FindWallets reads the wallets with the ids as a list of placeholders.
func (Driver) FindWallets(ctx context.Context, db *gorm.DB, ids []uuid.UUID) ([]models.Wallet, error) {
	rows, err := db.WithContext(ctx).Raw(`SELECT id, client_id, name, vendor, state, is_default, balance, locked, created_at, updated_at FROM wallets`+
		` WHERE id IN ?`, ids).Rows()
	if err != nil {
		return nil, models.TranslateDBError(db, err)
	}
	defer rows.Close()
	wallets := make([]models.Wallet, 0, len(ids))
	for rows.Next() {
		var w models.Wallet
		if err := rows.Scan(&w.ID, &w.ClientID, &w.Name, &w.Vendor, &w.State, &w.IsDefault, &w.Balance, &w.Locked, &w.CreatedAt, &w.UpdatedAt); err != nil {
			return nil, models.TranslateDBError(db, err)
		}
		wallets = append(wallets, w)
	}
	if err := rows.Err(); err != nil {
		return nil, models.TranslateDBError(db, err)
	}
	return wallets, nil
}

// inIDOrder returns the keys of m in the order every writer updates
// wallets in (the ledger's).
func inIDOrder[V any](m map[uuid.UUID]V) []uuid.UUID {
	ids := make([]uuid.UUID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return strings.Compare(a.String(), b.String()) })
	return ids
}
