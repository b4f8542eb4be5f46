package database

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"

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
	if connectionLost(err) {
		return Unavailable
	}
	switch {
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return Conflict
	case errors.Is(err, gorm.ErrForeignKeyViolated):
		return MissingReference
	case errors.Is(err, gorm.ErrCheckConstraintViolated):
		return OutOfRange
	}
	// A connection that could not be made is unavailable whatever the
	// server said (too many clients, starting up, shutting down): nothing
	// ran, and the same request succeeds once it takes connections again.
	// Not any net.Error: a vendor's timeout is not the database's.
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) {
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
		case "53300", "57P01", "57P02", "57P03", readOnlyTransaction:
			// Too many connections; an administrator's or a crash
			// shutdown ending the session; not accepting connections yet;
			// a standby where the primary was (closeOnReadOnly).
			return Unavailable
		}
		if strings.HasPrefix(pgErr.Code, "08") { // connection exception
			return Unavailable
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
