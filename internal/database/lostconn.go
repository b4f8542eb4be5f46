package database

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// connectionLost reports whether err is a connection that broke under a
// statement (a restart, a crash, a failover): one the PostgreSQL handle
// marked (lostConnection), or one pgx had already closed. Classify calls it
// Unavailable, as it does a connection that could not be made.
func connectionLost(err error) bool {
	var lost *lostConnection
	return errors.As(err, &lost) || errors.Is(err, pgconn.ErrConnClosed)
}

// lostConnection marks a network error met by a statement of the
// PostgreSQL handle (pgDialector.Translate): the connection broke under
// it, so it is the database's failure and not, say, a vendor's, whose
// network errors Classify leaves alone.
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

// readOnlyTransaction is PostgreSQL's refusal of a write on a server that
// takes none: a standby, such as a primary demoted under a connection that
// a pooler (PgBouncer on the old primary's host) kept open.
const readOnlyTransaction = "25006"

// closeOnReadOnly wraps pgx's handler of the server's errors (next, which
// closes the connection on a FATAL one) so that a connection refused a
// write as read-only is closed too: the pool then makes a new one, which
// target_session_attrs=read-write leads to the primary of the moment,
// instead of failing every write that lands on the old one. Classify calls
// the refusal Unavailable: the request is answered 503 and retried.
func closeOnReadOnly(next pgconn.PgErrorHandler) pgconn.PgErrorHandler {
	return func(conn *pgconn.PgConn, pgErr *pgconn.PgError) bool {
		if pgErr.Code == readOnlyTransaction {
			return false
		}
		return next == nil || next(conn, pgErr)
	}
}
