package api

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/payoutd/payoutd/models"
)

// A database that cannot take or keep a connection (max_connections
// reached, restarting, a broken connection) is answered 503 with
// Retry-After: nothing was stored, and the client's retry, with its
// Idempotency-Key, is what succeeds once the database is back. Any other
// database failure stays a 500, its text in the log only.
func TestDatabaseUnavailableIs503(t *testing.T) {
	gin.SetMode(gin.TestMode)
	for _, tc := range []struct {
		name       string
		err        error
		want       int
		retryAfter bool
	}{
		{"broken connection", fmt.Errorf("%w: insert disbursement: %w", models.ErrConflict, driver.ErrBadConn), http.StatusServiceUnavailable, true},
		{"too many clients", fmt.Errorf("lookup: %w", &pgconn.PgError{Severity: "FATAL", Code: "53300"}), http.StatusServiceUnavailable, true},
		{"another database failure", fmt.Errorf("insert: %w", &pgconn.PgError{Severity: "ERROR", Code: "42601"}), http.StatusInternalServerError, false},
	} {
		r := gin.New()
		r.GET("/", func(c *gin.Context) { fail(c, tc.err) })
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		var body errorResponse
		if w.Code != tc.want || json.Unmarshal(w.Body.Bytes(), &body) != nil || body.Error == "" {
			t.Errorf("%s: %d %s; want %d with an {\"error\"} body", tc.name, w.Code, w.Body, tc.want)
		}
		if got := w.Header().Get("Retry-After") != ""; got != tc.retryAfter {
			t.Errorf("%s: Retry-After %q", tc.name, w.Header().Get("Retry-After"))
		}
	}
}
