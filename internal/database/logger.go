package database

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/payoutd/payoutd/internal/database/pgdriver"
)

// slowThreshold is when a statement is slow enough to log.
const slowThreshold = 200 * time.Millisecond

// quietLogger logs only what an operator should see: slow statements and
// errors the caller does not expect. gorm's own logger renders every
// statement before it decides not to log it (a few per cent of a request's
// CPU), and logs a duplicate key at error level although the service
// relies on unique indexes to detect a twin create.
type quietLogger struct {
	logger.Interface
}

func newLogger(inner logger.Interface) logger.Interface { return quietLogger{inner} }

// LogMode keeps the wrapper around the inner logger's new mode.
func (l quietLogger) LogMode(level logger.LogLevel) logger.Interface {
	return quietLogger{l.Interface.LogMode(level)}
}

// Trace hands a statement to the inner logger only when it is slow or
// failed for an unexpected reason.
func (l quietLogger) Trace(ctx context.Context, begin time.Time, fc func() (string, int64), err error) {
	if time.Since(begin) <= slowThreshold && (err == nil || expected(err)) {
		return
	}
	l.Interface.Trace(ctx, begin, fc, err)
}

// ParamsFilter passes gorm's request to leave values out of logged
// statements on to the inner logger (ParameterizedQueries). gorm looks for
// it on the logger it holds; embedding the interface would hide it, and
// slow statements would be logged with their values: hashes, account
// numbers, secrets.
func (l quietLogger) ParamsFilter(ctx context.Context, sql string, params ...any) (string, []any) {
	if f, ok := l.Interface.(gorm.ParamsFilter); ok {
		return f.ParamsFilter(ctx, sql, params...)
	}
	return sql, nil
}

// Raw(...).Scan runs its statement under gorm's trace recorder, which
// renders the statement with the values of its own filter, not the
// logger's (ParameterizedQueries is not asked), and then hands that text
// to the logger: a slow or failed Scan logged its values. Every gorm
// handle of the process renders statements without values instead; the
// recorder's text is only ever logged.
func init() {
	logger.RecorderParamsFilter = func(_ context.Context, sql string, _ ...any) (string, []any) { return sql, nil }
}

// expected errors are answers the caller handles: no row, a duplicate key.
func expected(err error) bool {
	if errors.Is(err, gorm.ErrRecordNotFound) || errors.Is(err, gorm.ErrDuplicatedKey) {
		return true
	}
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// QueryDirect runs query on db's connection (its transaction's, inside
// one) without gorm's callbacks, logged as gorm logs its statements: the
// PostgreSQL driver's (pgdriver.QueryDirect, which says why), for the
// statements outside the domain that take the same way.
func QueryDirect(ctx context.Context, db *gorm.DB, query string, args ...any) (*sql.Rows, error) {
	return pgdriver.QueryDirect(ctx, db, query, args...)
}
