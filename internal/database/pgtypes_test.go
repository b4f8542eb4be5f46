package database_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/internal/testenv"
)

// A uuid.UUID parameter reaches the database as that UUID, whether the
// statement takes a uuid (pgx's fast path on PostgreSQL) or text (the
// driver.Valuer's string), and a uuid column matches it.
func TestUUIDParametersRoundTrip(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	if err := db.Exec(`CREATE TABLE uuid_probe (id uuid PRIMARY KEY, label text NOT NULL)`).Error; err != nil {
		t.Fatal(err)
	}
	for _, id := range []uuid.UUID{uuid.Nil, uuid.MustParse("6f1c2a9e-8d4b-4c3e-9a7f-1b2c3d4e5f60"), uuid.New()} {
		if err := db.Exec(`INSERT INTO uuid_probe (id, label) VALUES (?, ?)`, id, id.String()).Error; err != nil {
			t.Fatalf("insert %s: %v", id, err)
		}
		var label string
		if err := db.Raw(`SELECT label FROM uuid_probe WHERE id = ?`, id).Row().Scan(&label); err != nil || label != id.String() {
			t.Fatalf("select by %s: %q, %v", id, label, err)
		}
		var asText string
		if err := db.Raw(`SELECT CAST(? AS text)`, id).Row().Scan(&asText); err != nil || asText != id.String() {
			t.Fatalf("%s as text: %q, %v", id, asText, err)
		}
		var back uuid.UUID
		if err := db.Raw(`SELECT id FROM uuid_probe WHERE label = ?`, id.String()).Row().Scan(&back); err != nil || back != id {
			t.Fatalf("read back %s: %s, %v", id, back, err)
		}
	}
}
