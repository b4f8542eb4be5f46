package database

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	sqlitedriver "github.com/glebarez/go-sqlite"
	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"
)

// Failure says what kind of database failure an error is, so that callers
// can tell an operator or a client what happened in their own words: the
// driver's text (SQL, constraint and index names, SQLSTATE) is for the log
// only.
type Failure int

const (
	// NotADatabaseError: err is not a database or driver failure.
	NotADatabaseError Failure = iota
	// Conflict: a unique constraint refused the write.
	Conflict
	// MissingReference: a foreign key refused the write.
	MissingReference
	// OutOfRange: a CHECK constraint refused the write.
	OutOfRange
	// Unavailable: the database could not be reached or the connection
	// broke.
	Unavailable
	// OtherFailure: any other error of the database or its driver.
	OtherFailure
)

// Classify tells whether err carries a database or driver failure, and of
// which kind.
func Classify(err error) Failure {
	if err == nil {
		return NotADatabaseError
	}
	switch {
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return Conflict
	case errors.Is(err, gorm.ErrForeignKeyViolated):
		return MissingReference
	case errors.Is(err, gorm.ErrCheckConstraintViolated):
		return OutOfRange
	}
	// Before the server's refusals: a failed connect wraps the server's
	// answer (57P03 while it starts) as a PgError.
	if connectionFailure(err) {
		return Unavailable
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505":
			return Conflict
		case "23503":
			return MissingReference
		case "23514":
			return OutOfRange
		}
		return OtherFailure
	}
	var liteErr *sqlitedriver.Error
	if errors.As(err, &liteErr) {
		// SQLite's extended result codes of constraint failures.
		switch liteErr.Code() {
		case 1555, 2067: // SQLITE_CONSTRAINT_PRIMARYKEY, _UNIQUE
			return Conflict
		case 787: // SQLITE_CONSTRAINT_FOREIGNKEY
			return MissingReference
		case 275: // SQLITE_CONSTRAINT_CHECK
			return OutOfRange
		}
		return OtherFailure
	}
	if errors.Is(err, sql.ErrTxDone) || errors.Is(err, gorm.ErrInvalidField) ||
		errors.Is(err, gorm.ErrInvalidTransaction) || errors.Is(err, gorm.ErrInvalidDB) {
		return OtherFailure
	}
	return NotADatabaseError
}

// connectionFailure reports whether err says the database could not be
// reached or the connection broke, rather than that the database refused
// a statement: a restart, a crash or a failover in progress. Not any
// net.Error: a vendor's timeout is not the database's; a network error
// counts only when the database handle itself marked it (lostConnection).
func connectionFailure(err error) bool {
	var connErr *pgconn.ConnectError
	var lost *lostConnection
	if errors.As(err, &connErr) || errors.As(err, &lost) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, sql.ErrConnDone) || errors.Is(err, pgconn.ErrConnClosed) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"): // connection exception
			return true
		case pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03":
			// admin_shutdown, crash_shutdown, cannot_connect_now: the
			// server is stopping, crashed or is still starting up.
			return true
		}
	}
	return false
}

// lostConnection marks a network error met by a statement of the
// PostgreSQL handle (pgDialector.Translate): the connection broke under
// it, so it is the database's failure and not, say, a vendor's.
type lostConnection struct{ err error }

func (e *lostConnection) Error() string { return "database connection lost: " + e.err.Error() }
func (e *lostConnection) Unwrap() error { return e.err }

// brokenConnection reports whether err, returned by the driver, is the
// network failing under a statement: the server went away (EOF, reset,
// refused) or stopped answering. The caller's own cancellation or
// deadline is not.
func brokenConnection(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNREFUSED)
}
