package database

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
)

// A database that cannot be reached, or a connection that breaks under a
// statement (a restart, a crash, a failover), is Unavailable: the API
// answers it 503 and the client retries. A refusal of the server stays a
// failure of its own kind, and a network error the database handle did not
// meet (a vendor's) is not the database's.
func TestClassifyConnectionFailures(t *testing.T) {
	t.Parallel()
	// A real connect error: nothing listens on the port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	_, connectErr := pgconn.Connect(context.Background(), "postgres://postgres@"+closed+"/postgres?sslmode=disable&connect_timeout=2")
	var connectError *pgconn.ConnectError
	if !errors.As(connectErr, &connectError) {
		t.Fatalf("connecting to a closed port: %T %v, want a *pgconn.ConnectError", connectErr, connectErr)
	}

	translate := pgDialector{postgres.New(postgres.Config{}).(*postgres.Dialector)}.Translate
	if got := translate(connectErr); got != connectErr {
		t.Errorf("Translate(connect error) = %v: a connect error is told apart as it is", got)
	}
	pg := func(code string) error {
		return &pgconn.PgError{Severity: "FATAL", Code: code, Message: "message " + code}
	}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	for _, tc := range []struct {
		name string
		err  error
		want Failure
	}{
		{"connection refused", connectErr, Unavailable},
		{"connect error, wrapped", fmt.Errorf("open postgres: %w", connectErr), Unavailable},
		{"connect error, translated", translate(connectErr), Unavailable},
		{"bad connection", fmt.Errorf("begin: %w", driver.ErrBadConn), Unavailable},
		{"connection done", sql.ErrConnDone, Unavailable},
		{"conn closed", fmt.Errorf("commit: %w", pgconn.ErrConnClosed), Unavailable},
		{"08006 connection failure", pg("08006"), Unavailable},
		{"08001 cannot establish", pg("08001"), Unavailable},
		{"57P01 admin shutdown", pg("57P01"), Unavailable},
		{"57P02 crash shutdown", pg("57P02"), Unavailable},
		{"57P03 cannot connect now", pg("57P03"), Unavailable},
		{"57P03, translated", translate(pg("57P03")), Unavailable},
		{"reset under a statement", translate(reset), Unavailable},
		{"EOF under a statement", translate(io.ErrUnexpectedEOF), Unavailable},
		{"EOF under a statement, wrapped", fmt.Errorf("open payout: %w", translate(io.EOF)), Unavailable},
		{"translated twice", translate(translate(reset)), Unavailable},
		{"unique violation, translated", translate(pg("23505")), Conflict},
		{"syntax error", translate(pg("42601")), OtherFailure},
		{"too many connections", pg("53300"), Unavailable},
		{"query canceled", pg("57014"), OtherFailure},
		{"caller's deadline under a statement", translate(context.DeadlineExceeded), NotADatabaseError},
		{"caller's cancellation under a statement", translate(context.Canceled), NotADatabaseError},
		{"a network error outside the database (a vendor's)", reset, NotADatabaseError},
		{"EOF outside the database", io.ErrUnexpectedEOF, NotADatabaseError},
		{"record not found", gorm.ErrRecordNotFound, NotADatabaseError},
	} {
		if got := Classify(tc.err); got != tc.want {
			t.Errorf("%s: Classify(%v) = %d, want %d", tc.name, tc.err, got, tc.want)
		}
	}
}

// DATABASE_URL may name several hosts, as libpq does, with
// target_session_attrs=read-write: the pool connects to whichever is the
// primary, so a promoted replica is found without a configuration change.
// Nothing listens on either host here: Open gets as far as connecting (the
// URL was accepted) and fails Unavailable, naming both.
func TestOpenAcceptsMultiHostURL(t *testing.T) {
	t.Parallel()
	var addrs []string
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, ln.Addr().String())
		ln.Close()
	}
	url := "postgres://postgres@" + addrs[0] + "," + addrs[1] + "/payoutd?sslmode=disable&target_session_attrs=read-write&connect_timeout=2"
	db, err := Open(url)
	if err == nil {
		sqlDB, _ := db.DB()
		sqlDB.Close()
		t.Fatal("Open succeeded with nothing listening")
	}
	if got := Classify(err); got != Unavailable {
		t.Fatalf("Open: %v: Classify = %d, want Unavailable", err, got)
	}
	for _, addr := range addrs {
		_, port, _ := net.SplitHostPort(addr)
		if !strings.Contains(err.Error(), port) {
			t.Errorf("Open: %v: does not name host %s: was the second host tried?", err, addr)
		}
	}
}
