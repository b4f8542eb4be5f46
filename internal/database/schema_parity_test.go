package database_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/internal/testenv"
)

// TestSchemaParity migrates a fresh SQLite database and (with
// TEST_DATABASE_URL, always in CI) a fresh PostgreSQL one, reads both back
// from their catalogs and compares them in one model: tables; columns with
// their type family (pgFamily, sqliteFamily), nullability and default;
// primary keys; indexes (unique, ordered columns, partial predicate);
// CHECK constraints; foreign keys; triggers. A column, index or constraint
// added to one dialect's migrations only fails here, unless allowedDrift
// says why the dialects differ on purpose.
//
// CHECKs and partial-index predicates are compared by fingerprint: the
// columns they mention and the constants they compare them with. Each
// dialect rewrites the expression text its own way (PostgreSQL stores IN
// as = ANY (ARRAY[...]) and BETWEEN as two comparisons), so operators are
// not compared; a CHECK that changes only its operator is not caught.
// Column order and index sort order are not compared either.
//
// SQLite keeps migration files of its own rather than having them
// generated from PostgreSQL's. A generator would have to be a migration
// compiler: SQLite cannot ALTER a constraint, so changing a CHECK is a
// table rebuild (00006) with the foreign keys off and the table's indexes
// and triggers restated; PL/pgSQL triggers become SQLite triggers of
// another shape (00001); and a range CHECK added to an existing table
// becomes a trigger, since adding a CHECK would also be a rebuild (00007).
// Six of the eight migrations so far would need one of those special
// cases, and a hand-written twin is easier to review than a generator.
// This test is what keeps the twins honest; TestDialectsHaveTheSameMigrations
// keeps them version for version, which this test does not see.
func TestSchemaParity(t *testing.T) {
	t.Parallel()
	lite, info := sqliteSchema(t)

	t.Run("sqlite well-formed", func(t *testing.T) {
		for _, name := range sortedKeysOf(lite) {
			if ignoredTables[name] != "" {
				continue
			}
			tbl := lite[name]
			if len(tbl.pk) == 0 {
				t.Errorf("%s: no primary key", name)
			}
			for _, col := range sortedKeysOf(tbl.columns) {
				if c := tbl.columns[col]; strings.HasPrefix(c.family, "unmapped:") {
					t.Errorf("%s.%s: declared type %q is none of INTEGER, TEXT, DATETIME, BOOLEAN, REAL, BLOB", name, col, c.declared)
				}
			}
			for _, col := range info[name].nullablePK {
				t.Errorf("%s.%s: a PRIMARY KEY other than INTEGER PRIMARY KEY accepts NULL in SQLite: declare it NOT NULL", name, col)
			}
			for _, fk := range info[name].badFKs {
				t.Errorf("%s: foreign key %s", name, fk)
			}
			for _, check := range tbl.checks {
				if strings.HasPrefix(check, "cols=[]") {
					t.Errorf("%s: CHECK mentions none of the table's columns: %s", name, check)
				}
			}
			for key, idx := range tbl.indexes {
				if slices.Contains(idx.columns, "<expression>") {
					t.Errorf("%s: index %s is on an expression, which the parity model does not compare", name, key)
				}
			}
		}
	})

	t.Run("postgres matches sqlite", func(t *testing.T) {
		if os.Getenv("TEST_DATABASE_URL") == "" && os.Getenv("CI") != "true" {
			t.Skip("TEST_DATABASE_URL is not set: only the SQLite schema was checked; " +
				"tables, columns, types, nullability, defaults, indexes, CHECKs, foreign keys and triggers were NOT compared with PostgreSQL")
		}
		db := testenv.DB(t) // under CI=true without TEST_DATABASE_URL this fails
		if database.DialectOfDB(db) != database.Postgres {
			t.Fatal("testenv.DB did not give PostgreSQL")
		}
		sqlDB, err := db.DB()
		if err != nil {
			t.Fatal(err)
		}
		pg, err := introspectPostgres(sqlDB)
		if err != nil {
			t.Fatalf("read the PostgreSQL schema: %v", err)
		}
		seen := map[string]bool{}
		for _, d := range compareSchemas(pg, lite) {
			if _, ok := allowedDrift[d]; ok {
				seen[d] = true
				continue
			}
			t.Errorf("schema drift: %s", d)
		}
		for d := range allowedDrift {
			if !seen[d] {
				t.Errorf("allowedDrift: %q no longer differs: remove the entry", d)
			}
		}
	})
}

// ignoredTables are not the service's schema.
var ignoredTables = map[string]string{
	"goose_db_version": "goose's own bookkeeping; goose creates it per dialect with its own types",
	// sqlite_sequence, sqlite_stat*: SQLite's internal tables, never read
	// (introspectSQLite leaves out every sqlite_ name).
}

// allowedDrift lists, exactly as compareSchemas writes them, the
// differences between the dialects that are on purpose, each with its
// reason. Everything else compareSchemas finds fails the test.
var allowedDrift = map[string]string{
	// The append-only ledger: one PL/pgSQL function behind a trigger per
	// table in PostgreSQL; SQLite triggers cannot tell UPDATE from DELETE
	// in one body (no TG_OP), so each table has two (00001).
	"ledger_entries trigger only in postgres: ledger_entries_append_only":           appendOnly,
	"ledger_transactions trigger only in postgres: ledger_transactions_append_only": appendOnly,
	"ledger_entries trigger only in sqlite: ledger_entries_no_update":               appendOnly,
	"ledger_entries trigger only in sqlite: ledger_entries_no_delete":               appendOnly,
	"ledger_transactions trigger only in sqlite: ledger_transactions_no_update":     appendOnly,
	"ledger_transactions trigger only in sqlite: ledger_transactions_no_delete":     appendOnly,

	// Money bounds (00007): PostgreSQL bounds wallets with CHECKs and its
	// BIGINT columns refuse anything not an integer. SQLite would store an
	// overflowed sum as a REAL, and adding a CHECK to a table is a rebuild,
	// so there triggers refuse a non-integer or out-of-range value on every
	// money column (wallets, ledger entries, disbursements, payments).
	"wallets CHECK only in postgres: cols=[balance] lits=[-1000000000000000000,1000000000000000000]": moneyBounds,
	"wallets CHECK only in postgres: cols=[locked] lits=[0,1000000000000000000]":                     moneyBounds,
	"wallets trigger only in sqlite: wallets_money_insert":                                           moneyBounds,
	"wallets trigger only in sqlite: wallets_money_update":                                           moneyBounds,
	"ledger_entries trigger only in sqlite: ledger_entries_money_insert":                             moneyBounds,
	"ledger_entries trigger only in sqlite: ledger_entries_money_update":                             moneyBounds,
	"disbursements trigger only in sqlite: disbursements_money_insert":                               moneyBounds,
	"disbursements trigger only in sqlite: disbursements_money_update":                               moneyBounds,
	"payments trigger only in sqlite: payments_money_insert":                                         moneyBounds,
	"payments trigger only in sqlite: payments_money_update":                                         moneyBounds,
}

const (
	appendOnly  = "append-only ledger: one trigger per table in PostgreSQL, one per table and operation in SQLite"
	moneyBounds = "money bounds: CHECKs and BIGINT in PostgreSQL, triggers in SQLite (00007)"
)

// compareSchemas lists every difference between the PostgreSQL and the
// SQLite schema, one line each, sorted.
func compareSchemas(pg, lite schema) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	for _, name := range union(mapsKeys(pg), mapsKeys(lite)) {
		if ignoredTables[name] != "" {
			continue
		}
		p, l := pg[name], lite[name]
		switch {
		case p == nil:
			add("table %s only in sqlite", name)
			continue
		case l == nil:
			add("table %s only in postgres", name)
			continue
		}
		for _, col := range union(mapsKeys(p.columns), mapsKeys(l.columns)) {
			pc, inP := p.columns[col]
			lc, inL := l.columns[col]
			switch {
			case !inL:
				add("%s.%s only in postgres: %s", name, col, pc)
			case !inP:
				add("%s.%s only in sqlite: %s", name, col, lc)
			default:
				if pc.family != lc.family {
					add("%s.%s type: postgres %s (%s), sqlite %s (%s)", name, col, pc.family, pc.declared, lc.family, lc.declared)
				}
				if pc.notNull != lc.notNull {
					add("%s.%s nullability: postgres %s, sqlite %s", name, col, nullWord(pc.notNull), nullWord(lc.notNull))
				}
				if pc.def != lc.def {
					add("%s.%s default: postgres %q, sqlite %q", name, col, pc.def, lc.def)
				}
			}
		}
		if !slices.Equal(p.pk, l.pk) {
			add("%s primary key: postgres (%s), sqlite (%s)", name, strings.Join(p.pk, ", "), strings.Join(l.pk, ", "))
		}
		for _, key := range union(mapsKeys(p.indexes), mapsKeys(l.indexes)) {
			pi, inP := p.indexes[key]
			li, inL := l.indexes[key]
			switch {
			case !inL:
				add("%s index %s only in postgres: %s", name, key, pi)
			case !inP:
				add("%s index %s only in sqlite: %s", name, key, li)
			case pi.String() != li.String():
				add("%s index %s: postgres %s, sqlite %s", name, key, pi, li)
			}
		}
		for _, c := range multisetMinus(p.checks, l.checks) {
			add("%s CHECK only in postgres: %s", name, c)
		}
		for _, c := range multisetMinus(l.checks, p.checks) {
			add("%s CHECK only in sqlite: %s", name, c)
		}
		for _, fk := range multisetMinus(p.fks, l.fks) {
			add("%s foreign key only in postgres: %s", name, fk)
		}
		for _, fk := range multisetMinus(l.fks, p.fks) {
			add("%s foreign key only in sqlite: %s", name, fk)
		}
		for _, tg := range multisetMinus(p.triggers, l.triggers) {
			add("%s trigger only in postgres: %s", name, tg)
		}
		for _, tg := range multisetMinus(l.triggers, p.triggers) {
			add("%s trigger only in sqlite: %s", name, tg)
		}
	}
	slices.Sort(out)
	return out
}

// sqliteSchema migrates a fresh SQLite database of the test's own
// (whatever TEST_DATABASE_URL says) and reads its schema.
func sqliteSchema(t *testing.T) (schema, map[string]*sqliteTableInfo) {
	t.Helper()
	db, err := database.Open("sqlite://" + filepath.Join(t.TempDir(), "parity.db"))
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sqlDB.Close() })
	if _, err := database.Migrate(context.Background(), db); err != nil {
		t.Fatalf("migrate SQLite: %v", err)
	}
	s, info, err := introspectSQLite(sqlDB)
	if err != nil {
		t.Fatalf("read the SQLite schema: %v", err)
	}
	return s, info
}

func nullWord(notNull bool) string {
	if notNull {
		return "NOT NULL"
	}
	return "NULL"
}

func mapsKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

func union(a, b []string) []string {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

// multisetMinus returns the elements of a not matched one for one in b.
func multisetMinus(a, b []string) []string {
	left := map[string]int{}
	for _, x := range b {
		left[x]++
	}
	var out []string
	for _, x := range a {
		if left[x] > 0 {
			left[x]--
			continue
		}
		out = append(out, x)
	}
	return out
}

func sortedKeysOf[V any](m map[string]V) []string {
	keys := mapsKeys(m)
	slices.Sort(keys)
	return keys
}
