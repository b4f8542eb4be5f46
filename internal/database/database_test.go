package database_test

import (
	"io/fs"
	"reflect"
	"testing"

	"github.com/payoutd/payoutd/internal/database"
)

// TestDialectsHaveTheSameMigrations: `payoutd dev` and the tests on SQLite
// must run the schema production runs, version for version.
func TestDialectsHaveTheSameMigrations(t *testing.T) {
	names := func(d database.Dialect) []string {
		files, err := database.MigrationFiles(d)
		if err != nil {
			t.Fatal(err)
		}
		entries, err := fs.ReadDir(files, ".")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}
	pg, lite := names(database.Postgres), names(database.SQLite)
	if len(pg) == 0 || !reflect.DeepEqual(pg, lite) {
		t.Fatalf("postgres migrations %v differ from sqlite %v", pg, lite)
	}
}

func TestDialectOf(t *testing.T) {
	for url, want := range map[string]database.Dialect{
		"postgres://u@h/db":   database.Postgres,
		"postgresql://u@h/db": database.Postgres,
		"sqlite:///tmp/x.db":  database.SQLite,
		"file:x.db":           database.SQLite,
	} {
		if got, err := database.DialectOf(url); err != nil || got != want {
			t.Errorf("DialectOf(%q) = %v, %v", url, got, err)
		}
	}
	if _, err := database.DialectOf("mysql://x"); err == nil {
		t.Error("mysql:// accepted")
	}
}
