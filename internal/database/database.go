// Package database opens the service's database, PostgreSQL in production or
// a pure-Go SQLite file for `payoutd dev` and tests, and applies the versioned
// migrations of each dialect (goose, embedded in the binary).
//
// Both dialects carry the same schema: migrations/postgres and
// migrations/sqlite hold the same versions (TestDialectsHaveTheSameMigrations)
// and, once migrated, the same tables, columns, indexes and constraints
// (TestSchemaParity, which also says why SQLite keeps its own files).
package database

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/glebarez/sqlite"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/payoutd/payoutd/internal/database/pgdriver"
	"github.com/payoutd/payoutd/internal/database/sqlitedriver"
)

//go:embed migrations/postgres/*.sql migrations/sqlite/*.sql
var migrations embed.FS

// Dialect is the kind of database behind a URL.
type Dialect string

const (
	Postgres Dialect = "postgres"
	SQLite   Dialect = "sqlite"
)

// DialectOf tells which database a URL names: postgres:// or postgresql://
// for PostgreSQL, sqlite:// or file: for SQLite.
func DialectOf(databaseURL string) (Dialect, error) {
	switch {
	case strings.HasPrefix(databaseURL, "postgres://"), strings.HasPrefix(databaseURL, "postgresql://"):
		return Postgres, nil
	case strings.HasPrefix(databaseURL, "sqlite://"), strings.HasPrefix(databaseURL, "file:"):
		return SQLite, nil
	}
	return "", errors.New("DATABASE_URL must start with postgres://, postgresql://, sqlite:// or file:")
}

// Open connects to the database named by databaseURL and installs the
// domain's driver of its dialect (models.Driver: pgdriver or sqlitedriver),
// which every session and transaction of the handle shares. It does not
// migrate.
func Open(databaseURL string) (*gorm.DB, error) { return OpenWith(databaseURL, Options{}) }

// Options adjust OpenWith for a program that runs the service's code on a
// clock and a connection of its own: the deterministic simulation.
type Options struct {
	// Now is the clock of the timestamps gorm fills in (created_at,
	// updated_at); nil: the wall clock, in UTC.
	Now func() time.Time
	// SQLiteDriver is the database/sql driver SQLite is opened with (one
	// registered to wrap the pure-Go driver); "": the pure-Go driver.
	SQLiteDriver string
}

// OpenWith is Open with o.
func OpenWith(databaseURL string, o Options) (*gorm.DB, error) {
	dialect, err := DialectOf(databaseURL)
	if err != nil {
		return nil, err
	}
	cfg := &gorm.Config{
		// The service opens its own transactions where money moves; gorm's
		// implicit one around every single write only costs round trips.
		SkipDefaultTransaction: true,
		TranslateError:         true,
		Logger: newLogger(logger.NewSlogLogger(slog.Default(), logger.Config{
			SlowThreshold:             slowThreshold,
			LogLevel:                  logger.Warn,
			IgnoreRecordNotFoundError: true,
			ParameterizedQueries:      true, // never log values: they may be secrets or account numbers
		})),
		NowFunc: func() time.Time { return time.Now().UTC() },
	}
	if o.Now != nil {
		cfg.NowFunc = func() time.Time { return o.Now().UTC() }
	}
	switch dialect {
	case Postgres:
		connConfig, err := pgx.ParseConfig(databaseURL)
		if err != nil {
			return nil, fmt.Errorf("DATABASE_URL: %w", err)
		}
		connConfig.OnPgError = closeOnReadOnly(connConfig.OnPgError)
		pool := stdlib.OpenDB(*connConfig, stdlib.OptionAfterConnect(registerTypes))
		dialector := postgres.New(postgres.Config{Conn: pool}).(*postgres.Dialector)
		db, err := gorm.Open(pgDialector{dialector}, cfg)
		if err != nil {
			pool.Close()
			return nil, fmt.Errorf("open postgres: %w", err)
		}
		if err := db.Use(pgdriver.New()); err != nil {
			pool.Close()
			return nil, fmt.Errorf("open postgres: %w", err)
		}
		sqlDB, err := db.DB()
		if err != nil {
			return nil, err
		}
		sqlDB.SetMaxOpenConns(DefaultMaxConns)
		sqlDB.SetMaxIdleConns(DefaultMaxConns)
		sqlDB.SetConnMaxIdleTime(5 * time.Minute)
		return db, nil
	default:
		db, err := gorm.Open(&sqlite.Dialector{DriverName: o.SQLiteDriver, DSN: sqliteDSN(databaseURL)}, cfg)
		if err != nil {
			return nil, fmt.Errorf("open sqlite: %w", err)
		}
		if err := db.Use(sqlitedriver.New()); err != nil {
			return nil, fmt.Errorf("open sqlite: %w", err)
		}
		sqlDB, err := db.DB()
		if err != nil {
			return nil, err
		}
		// SQLite has one writer. A single connection serialises every
		// transaction, so a conditional update can never race and nothing
		// sees "database is locked".
		sqlDB.SetMaxOpenConns(1)
		return db, nil
	}
}

// pgDialector is gorm's PostgreSQL dialect that also marks, among the
// errors of its statements, those of a connection that broke under them
// (lostConnection): a network error is the database's only when the
// database handle met it, so Classify can call it Unavailable without
// mistaking a vendor's network error for the database's. gorm passes
// every statement's error, a begin's and a commit's through Translate.
type pgDialector struct{ *postgres.Dialector }

func (d pgDialector) Translate(err error) error {
	if Classify(err) == Unavailable { // already told apart: a connect error, a marked one
		return err
	}
	if translated := d.Dialector.Translate(err); translated != err {
		return translated
	}
	if brokenConnection(err) {
		return &lostConnection{err: err}
	}
	return err
}

// sqliteDSN turns sqlite:///path/to.db (or file:path) into the driver's DSN
// with the pragmas the service relies on: foreign keys, WAL and a busy wait.
func sqliteDSN(databaseURL string) string {
	path := strings.TrimPrefix(databaseURL, "sqlite://")
	path = strings.TrimPrefix(path, "file:")
	query := ""
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path, query = path[:i], path[i+1:]
	}
	values, _ := url.ParseQuery(query)
	values.Add("_pragma", "foreign_keys(1)")
	values.Add("_pragma", "journal_mode(WAL)")
	values.Add("_pragma", "busy_timeout(10000)")
	values.Add("_txlock", "immediate")
	return "file:" + path + "?" + values.Encode()
}

// DialectOfDB tells which dialect an open gorm handle speaks.
func DialectOfDB(db *gorm.DB) Dialect {
	if db.Dialector.Name() == "postgres" {
		return Postgres
	}
	return SQLite
}

// Migrate applies every pending migration of the database's dialect and
// returns the versions it applied.
func Migrate(ctx context.Context, db *gorm.DB) ([]int64, error) {
	provider, err := newProvider(db)
	if err != nil {
		return nil, err
	}
	results, err := provider.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	applied := make([]int64, 0, len(results))
	for _, r := range results {
		applied = append(applied, r.Source.Version)
	}
	return applied, nil
}

// PendingMigrations reports how many migrations are not applied yet.
func PendingMigrations(ctx context.Context, db *gorm.DB) (int, error) {
	provider, err := newProvider(db)
	if err != nil {
		return 0, err
	}
	status, err := provider.Status(ctx)
	if err != nil {
		return 0, err
	}
	pending := 0
	for _, s := range status {
		if s.State == goose.StatePending {
			pending++
		}
	}
	return pending, nil
}

func newProvider(db *gorm.DB) (*goose.Provider, error) {
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	dialect := DialectOfDB(db)
	files, err := MigrationFiles(dialect)
	if err != nil {
		return nil, err
	}
	gooseDialect := goose.DialectPostgres
	if dialect == SQLite {
		gooseDialect = goose.DialectSQLite3
	}
	return goose.NewProvider(gooseDialect, sqlDB, files)
}

// MigrationFiles returns the migrations of one dialect.
func MigrationFiles(dialect Dialect) (fs.FS, error) {
	return fs.Sub(migrations, "migrations/"+string(dialect))
}

// IsRetryable reports whether err is PostgreSQL giving up a transaction
// that may simply be run again: a deadlock (40P01) or a serialization
// failure (40001).
func IsRetryable(err error) bool { return pgdriver.IsRetryable(err) }

// DefaultMaxConns is how many PostgreSQL connections a process opens at
// most unless DATABASE_MAX_CONNS says otherwise (LimitConns).
const DefaultMaxConns = 32

// LimitConns sets how many connections db opens at most (and keeps idle):
// every process of a deployment takes up to this many of PostgreSQL's
// max_connections. SQLite keeps its single connection.
func LimitConns(db *gorm.DB, n int) error {
	if n <= 0 || db.Dialector.Name() != "postgres" {
		return nil
	}
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	sqlDB.SetMaxOpenConns(n)
	sqlDB.SetMaxIdleConns(n)
	return nil
}
