// Package pgdriver is the domain's driver for PostgreSQL (models.Driver):
// every statement whose text differs from SQLite's, which the domain runs
// through the driver as an operation in its own terms. Its money
// statements (money.go) keep the invariants of ledger/wallets.go; most of
// its statements bind arrays (uuid[], text[]) so that their text does not
// change with a batch's size and each connection plans them once, and
// those run on the connection outside gorm, which would expand the arrays.
//
// internal/database.Open installs it on every PostgreSQL handle.
package pgdriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/models"
)

// Driver is the PostgreSQL driver. It holds no state: one value serves
// every handle.
type Driver struct{}

var _ models.Driver = Driver{}

// New returns the driver, to install on a PostgreSQL handle (db.Use).
func New() Driver { return Driver{} }

// Name is the gorm plugin's name (models.DriverOf looks it up by it).
func (Driver) Name() string { return models.DriverName }

// Initialize does nothing: the driver needs nothing of the handle but to
// be found on it.
func (Driver) Initialize(*gorm.DB) error { return nil }

// IsRetryable reports whether err is PostgreSQL giving up a transaction
// that may simply be run again: a deadlock (40P01) or a serialization
// failure (40001).
func (Driver) IsRetryable(err error) bool { return IsRetryable(err) }

// IsRetryable is Driver.IsRetryable, for internal/database.IsRetryable.
func IsRetryable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "40P01" || pgErr.Code == "40001"
	}
	return false
}

// FindWallets reads the wallets with the ids as one uuid[]: the
// statement's text is the same for every group size, so each connection
// prepares and plans it once (a list of placeholders was a statement of
// its own for every size).
func (Driver) FindWallets(ctx context.Context, db *gorm.DB, ids []uuid.UUID) ([]models.Wallet, error) {
	rows, err := QueryDirect(ctx, db, `SELECT id, client_id, name, vendor, state, is_default, balance, locked, created_at, updated_at FROM wallets`+
		` WHERE id = ANY($1::uuid[])`, uuidArray(ids))
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

// QueryDirect runs query on db's connection (its transaction's, inside
// one) without gorm's callbacks: for the hot statements that bind arrays,
// which gorm would expand, and scan their own rows. It is logged as gorm
// logs its statements, when slow or failed for an unexpected reason and
// without its values, so that the money statements that take this way are
// seen too. The time is until the first row is ready: the statement has
// run by then (each of them writes in a data-modifying CTE, or is one
// indexed read).
func QueryDirect(ctx context.Context, db *gorm.DB, query string, args ...any) (*sql.Rows, error) {
	begin := time.Now()
	rows, err := db.Statement.ConnPool.QueryContext(ctx, query, args...)
	db.Logger.Trace(ctx, begin, func() (string, int64) { return query, -1 }, err)
	return rows, err
}

// translate turns a driver error of a statement run outside gorm into
// gorm's (a unique violation: gorm.ErrDuplicatedKey), as gorm's own
// statements report it, keeping the driver's error in the chain.
func translate(db *gorm.DB, err error) error {
	if t, ok := db.Dialector.(gorm.ErrorTranslator); ok {
		if translated := t.Translate(err); translated != err {
			return fmt.Errorf("%w: %w", translated, err)
		}
	}
	return err
}

// uuidArray is ids as pgx binds a uuid[] without a conversion per element.
func uuidArray(ids []uuid.UUID) [][16]byte {
	array := make([][16]byte, len(ids))
	for i, id := range ids {
		array[i] = id
	}
	return array
}

// inIDOrder returns the distinct ids in the order every writer locks rows
// in (the ledger's).
func inIDOrder(ids []uuid.UUID) []uuid.UUID {
	set := make(map[uuid.UUID]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	ordered := make([]uuid.UUID, 0, len(set))
	for id := range set {
		ordered = append(ordered, id)
	}
	slices.SortFunc(ordered, func(a, b uuid.UUID) int { return strings.Compare(a.String(), b.String()) })
	return ordered
}
