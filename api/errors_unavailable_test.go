package api

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/payoutd/payoutd/models"
)

// A database that cannot be reached (restarting, failing over) is a 503
// the client retries, without the driver's text; any other database failure stays a 500 that names
// nothing; a domain error keeps its own status.
func TestStatusOfDatabaseFailures(t *testing.T) {
	t.Parallel()
	pg := func(code string) error {
		return &pgconn.PgError{Severity: "FATAL", Code: code, Message: "secret driver text " + code}
	}
	unavailable := errDatabaseUnavailable.Error()
	for _, tc := range []struct {
		name   string
		err    error
		status int
		msg    string
	}{
		{"bad connection", fmt.Errorf("open payout: %w", driver.ErrBadConn), http.StatusServiceUnavailable, unavailable},
		{"conn closed", pgconn.ErrConnClosed, http.StatusServiceUnavailable, unavailable},
		{"admin shutdown", pg("57P01"), http.StatusServiceUnavailable, unavailable},
		{"crash shutdown", pg("57P02"), http.StatusServiceUnavailable, unavailable},
		{"starting up", pg("57P03"), http.StatusServiceUnavailable, unavailable},
		{"connection failure", pg("08006"), http.StatusServiceUnavailable, unavailable},
		{"a domain error wrapping a lost connection", fmt.Errorf("%w: %w", models.ErrConflict, pg("57P01")), http.StatusServiceUnavailable, unavailable},
		{"syntax error", pg("42601"), http.StatusInternalServerError, "internal server error"},
		{"a domain error wrapping a refusal", fmt.Errorf("%w: %w", models.ErrInsufficientBalance, pg("23514")), http.StatusInternalServerError, "internal server error"},
		{"the vendor unavailable", models.ErrGatewayUnavailable, http.StatusServiceUnavailable, models.ErrGatewayUnavailable.Error()},
		{"an unknown error", errors.New("boom"), http.StatusInternalServerError, "internal server error"},
	} {
		status, msg, _ := statusOf(tc.err)
		if status != tc.status || msg != tc.msg {
			t.Errorf("%s: statusOf(%v) = %d %q, want %d %q", tc.name, tc.err, status, msg, tc.status, tc.msg)
		}
	}
}
