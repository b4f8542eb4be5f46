package database_test

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/payoutd/payoutd/internal/database"
)

// A PostgreSQL that cannot take a connection now (max_connections reached,
// starting up, shutting down) or that ends one (an administrator's
// shutdown, a crash) is unavailable, not an unknown failure: nothing was
// written, and the same request succeeds once it takes connections again.
// The API answers it 503 (retry) instead of 500.
func TestClassifyRefusedAndEndedConnectionsAsUnavailable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		code string
		// atStartup: the server refuses the connection; otherwise it
		// accepts it and ends it at the first query.
		atStartup bool
	}{
		{"too many clients", "53300", true},
		{"the database is starting up", "57P03", true},
		{"an administrator's shutdown", "57P01", false},
		{"a crash shutdown", "57P02", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// database/sql over pgx, as database.Open's pool (which also
			// runs a first query of its own).
			db := openPool(t, fakePostgres(t, tc.code, tc.atStartup))
			_, err := db.ExecContext(context.Background(), "SELECT 1")
			if err == nil {
				t.Fatal("the query succeeded")
			}
			if got := database.Classify(err); got != database.Unavailable {
				t.Errorf("Classify(%v) = %d, want Unavailable (%d)", err, got, database.Unavailable)
			}
		})
	}
	// A connection nobody answers is unavailable as it always was.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	db := openPool(t, "postgres://postgres@"+addr+"/x?sslmode=disable&connect_timeout=5")
	if _, err := db.ExecContext(context.Background(), "SELECT 1"); database.Classify(err) != database.Unavailable {
		t.Errorf("connection refused: Classify(%v) = %d, want Unavailable", err, database.Classify(err))
	}
	// And the database's refusals of a statement stay what they were.
	if got := database.Classify(errors.New("not a database error")); got != database.NotADatabaseError {
		t.Errorf("Classify(a plain error) = %d", got)
	}
}

// openPool opens a database/sql pool over pgx without connecting.
func openPool(t *testing.T, url string) *sql.DB {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { db.Close() })
	return db
}

// fakePostgres serves PostgreSQL's wire protocol on loopback and fails
// every connection with a FATAL error of code: at its startup, or
// (atStartup false) at its first query, after a successful startup.
func fakePostgres(t *testing.T, code string, atStartup bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	fatal := &pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: code, Message: "fake server: " + code}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				be := pgproto3.NewBackend(conn, conn)
				if _, err := be.ReceiveStartupMessage(); err != nil {
					return
				}
				if !atStartup {
					be.Send(&pgproto3.AuthenticationOk{})
					be.Send(&pgproto3.ParameterStatus{Name: "server_version", Value: "16.0"})
					be.Send(&pgproto3.ParameterStatus{Name: "standard_conforming_strings", Value: "on"})
					be.Send(&pgproto3.ParameterStatus{Name: "client_encoding", Value: "UTF8"})
					be.Send(&pgproto3.BackendKeyData{ProcessID: 1, SecretKey: []byte{0, 0, 0, 2}})
					be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
					if be.Flush() != nil {
						return
					}
					if _, err := be.Receive(); err != nil {
						return
					}
				}
				be.Send(fatal)
				be.Flush()
			}()
		}
	}()
	return "postgres://postgres@" + ln.Addr().String() + "/fake?sslmode=disable&connect_timeout=5"
}
