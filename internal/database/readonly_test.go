package database_test

import (
	"testing"

	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/internal/testenv"
)

// A server that refuses writes as read-only (a primary demoted to a standby
// under a connection that PgBouncer on its host kept open through a
// switchover) is Unavailable, so the request is answered 503 and retried,
// and the connection is closed: the next write gets a new one (which
// target_session_attrs=read-write leads to the new primary) instead of
// being refused again on the same one. Here the one connection of the
// pool is made read-only for its session, as a standby's are.
func TestReadOnlyServerIsLeftForANewConnection(t *testing.T) {
	t.Parallel()
	_, dbURL := testenv.DBWithURL(t)
	if dialect, _ := database.DialectOf(dbURL); dialect != database.Postgres {
		t.Skip("PostgreSQL's standbys: TEST_DATABASE_URL runs it")
	}
	db, err := database.Open(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := db.DB()
	defer sqlDB.Close()
	sqlDB.SetMaxOpenConns(1)
	if err := db.Exec(`CREATE TABLE read_only_probe (n int)`).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Exec(`SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY`).Error; err != nil {
		t.Fatal(err)
	}
	err = db.Exec(`INSERT INTO read_only_probe VALUES (1)`).Error
	if err == nil {
		t.Fatal("a write on a read-only session went through")
	}
	if got := database.Classify(err); got != database.Unavailable {
		t.Errorf("Classify(%v) = %v, want Unavailable (a 503 the client retries)", err, got)
	}
	if err := db.Exec(`INSERT INTO read_only_probe VALUES (2)`).Error; err != nil {
		t.Fatalf("the write after it: %v; want it on a new, writable connection", err)
	}
}
