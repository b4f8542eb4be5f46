package ledger_test

import (
	"context"
	"net/url"
	"testing"

	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
)

// Behind PgBouncer in transaction pooling a connection's prepared
// statements do not follow it from one transaction to the next, so
// DATABASE_URL names a query mode of pgx that prepares none
// (default_query_exec_mode=exec, simple_protocol or cache_describe). In
// the first two pgx picks each parameter's type from its Go type; the
// money statements bind arrays of wallet ids, which must still reach the
// database as uuid[]: each wallet's balance moves and reconcile is clean.
func TestMoneyWritesInPoolerQueryModes(t *testing.T) {
	t.Parallel()
	_, dbURL := testenv.DBWithURL(t)
	if dialect, _ := database.DialectOf(dbURL); dialect != database.Postgres {
		t.Skip("a setting of pgx, PostgreSQL's driver: TEST_DATABASE_URL runs it")
	}
	ctx := context.Background()
	for _, mode := range []string{"exec", "simple_protocol", "cache_describe"} {
		t.Run(mode, func(t *testing.T) {
			u, err := url.Parse(dbURL)
			if err != nil {
				t.Fatal(err)
			}
			q := u.Query()
			q.Set("default_query_exec_mode", mode)
			u.RawQuery = q.Encode()
			db, err := database.Open(u.String())
			if err != nil {
				t.Fatal(err)
			}
			sqlDB, _ := db.DB()
			defer sqlDB.Close()

			w := newWallet(t, db)
			if _, err := ledger.Adjust(ctx, db, testNow, w.ID, models.Rupiah(150_000), "fund"); err != nil {
				t.Fatalf("adjust: %v", err)
			}
			if _, err := ledger.Adjust(ctx, db, testNow, w.ID, -models.Rupiah(40_000), "take back"); err != nil {
				t.Fatalf("adjust: %v", err)
			}
			got, err := models.NewStore(db).FindWallet(ctx, w.ID)
			if err != nil || got.Balance != models.Rupiah(110_000) {
				t.Fatalf("wallet after two adjustments: %+v %v; want a balance of 110000", got, err)
			}
			if report, err := ledger.Reconcile(ctx, db, testNow); err != nil || !report.OK {
				t.Fatalf("reconcile %+v %v", report, err)
			}
		})
	}
}
