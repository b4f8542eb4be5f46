package database_test

// Introspection of a migrated PostgreSQL or SQLite database into one
// dialect-neutral model, for TestSchemaParity. See that test for what is
// compared and why.

import (
	"database/sql"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// schema is a database's tables by name.
type schema map[string]*table

type table struct {
	columns  map[string]column
	pk       []string         // primary key columns, in key order
	indexes  map[string]index // by indexKey
	checks   []string         // fingerprints of the CHECK constraints, sorted (a multiset)
	fks      []string         // "(cols) -> table(cols) on delete X", sorted
	triggers []string         // names, sorted
}

type column struct {
	family   string // the mapped type, see pgFamily and sqliteFamily
	declared string // the type as the dialect names it, for messages
	notNull  bool
	def      string // normalised default; "" when none
}

type index struct {
	unique    bool
	columns   []string
	predicate string // fingerprint of a partial index's WHERE; "" when not partial
}

func (c column) String() string {
	s := c.family + " (" + c.declared + ")"
	if c.notNull {
		s += " NOT NULL"
	} else {
		s += " NULL"
	}
	if c.def != "" {
		s += " DEFAULT " + c.def
	}
	return s
}

func (i index) String() string {
	s := "(" + strings.Join(i.columns, ", ") + ")"
	if i.unique {
		s = "UNIQUE " + s
	}
	if i.predicate != "" {
		s += " WHERE " + i.predicate
	}
	return s
}

// indexKey names an index across dialects: an index created with CREATE
// INDEX by its own name (the same in both, since a later migration drops it
// by name); one a UNIQUE constraint implies by its columns, as each dialect
// names those its own way (clients_api_key_hash_key, sqlite_autoindex_x_1).
func indexKey(name string, byConstraint bool, columns []string) string {
	if byConstraint {
		return "unique(" + strings.Join(columns, ",") + ")"
	}
	return name
}

func (s schema) table(name string) *table {
	t := s[name]
	if t == nil {
		t = &table{columns: map[string]column{}, indexes: map[string]index{}}
		s[name] = t
	}
	return t
}

func (t *table) columnNames() map[string]bool {
	names := make(map[string]bool, len(t.columns))
	for n := range t.columns {
		names[n] = true
	}
	return names
}

// Type families. Each dialect's declared type maps to one family; the
// families are what must match. SQLite has no uuid, timestamp or json
// type: the service stores uuids and json as TEXT and times as DATETIME
// (which the driver parses back into time.Time), and SQLite's INTEGER is
// always 64-bit, so PostgreSQL's integer and bigint are one family there.
const (
	famInt   = "int"   // pg smallint, integer, bigint (serials too)  | sqlite INTEGER
	famText  = "text"  // pg text, varchar, char, uuid, json, jsonb   | sqlite TEXT
	famTime  = "time"  // pg timestamptz                               | sqlite DATETIME
	famBool  = "bool"  // pg boolean                                   | sqlite BOOLEAN
	famFloat = "float" // pg real, double precision                    | sqlite REAL
	famBytes = "bytes" // pg bytea                                     | sqlite BLOB
)

func pgFamily(dataType string) string {
	switch dataType {
	case "smallint", "integer", "bigint":
		return famInt
	case "text", "character varying", "character", "uuid", "json", "jsonb":
		return famText
	case "timestamp with time zone":
		return famTime
	case "boolean":
		return famBool
	case "real", "double precision":
		return famFloat
	case "bytea":
		return famBytes
	}
	// timestamp without time zone, numeric, arrays...: no SQLite twin
	// chosen yet. Choose one here (and in sqliteFamily) before using it.
	return "unmapped:" + dataType
}

// sqliteFamily accepts exactly the declared types the SQLite migrations
// use, spelled as they spell them: SQLite takes any word as a type and
// derives an affinity from it (UUID would get NUMERIC), and the driver
// decides from it whether a value reads back as time.Time or bool.
func sqliteFamily(declared string) string {
	switch declared {
	case "INTEGER":
		return famInt
	case "TEXT":
		return famText
	case "DATETIME":
		return famTime
	case "BOOLEAN":
		return famBool
	case "REAL":
		return famFloat
	case "BLOB":
		return famBytes
	}
	return "unmapped:" + declared
}

// ---- PostgreSQL ----

func introspectPostgres(db *sql.DB) (schema, error) {
	s := schema{}
	err := eachRow(db, `
		SELECT c.table_name, c.column_name, c.data_type, c.is_nullable = 'YES', COALESCE(c.column_default, ''), c.is_identity = 'YES'
		FROM information_schema.columns c
		JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
		WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'`,
		func(scan func(...any) error) error {
			var tbl, col, dataType, def string
			var nullable, identity bool
			if err := scan(&tbl, &col, &dataType, &nullable, &def, &identity); err != nil {
				return err
			}
			d := normaliseDefault(def)
			if identity || strings.HasPrefix(def, "nextval(") {
				d = "autoincrement"
			}
			s.table(tbl).columns[col] = column{family: pgFamily(dataType), declared: dataType, notNull: !nullable, def: d}
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("columns: %w", err)
	}
	err = eachRow(db, `
		SELECT tc.relname, ic.relname, ix.indisunique, ix.indisprimary,
		       COALESCE(pg_get_expr(ix.indpred, ix.indrelid), ''),
		       (SELECT string_agg(pg_get_indexdef(ix.indexrelid, k, true), ',' ORDER BY k)
		          FROM generate_series(1, ix.indnkeyatts) k),
		       EXISTS (SELECT 1 FROM pg_constraint con WHERE con.conindid = ix.indexrelid AND con.contype IN ('p', 'u'))
		FROM pg_index ix
		JOIN pg_class ic ON ic.oid = ix.indexrelid
		JOIN pg_class tc ON tc.oid = ix.indrelid
		JOIN pg_namespace n ON n.oid = tc.relnamespace
		WHERE n.nspname = 'public'`,
		func(scan func(...any) error) error {
			var tbl, name, pred, cols string
			var unique, primary, byConstraint bool
			if err := scan(&tbl, &name, &unique, &primary, &pred, &cols, &byConstraint); err != nil {
				return err
			}
			t := s.table(tbl)
			columns := strings.Split(cols, ",")
			if primary {
				t.pk = columns
				return nil
			}
			idx := index{unique: unique, columns: columns}
			if pred != "" {
				idx.predicate = fingerprint(pred, t.columnNames())
			}
			t.indexes[indexKey(name, byConstraint, columns)] = idx
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("indexes: %w", err)
	}
	err = eachRow(db, `
		SELECT rel.relname, con.contype, pg_get_constraintdef(con.oid),
		       COALESCE((SELECT string_agg(a.attname, ',' ORDER BY k.n) FROM unnest(con.conkey) WITH ORDINALITY k(attnum, n)
		                  JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum), ''),
		       COALESCE(frel.relname, ''),
		       COALESCE((SELECT string_agg(a.attname, ',' ORDER BY k.n) FROM unnest(con.confkey) WITH ORDINALITY k(attnum, n)
		                  JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.attnum), ''),
		       con.confdeltype
		FROM pg_constraint con
		JOIN pg_class rel ON rel.oid = con.conrelid
		JOIN pg_namespace n ON n.oid = rel.relnamespace
		LEFT JOIN pg_class frel ON frel.oid = con.confrelid
		WHERE n.nspname = 'public' AND con.contype IN ('c', 'f')`,
		func(scan func(...any) error) error {
			var tbl, kind, def, cols, ftbl, fcols, onDelete string
			if err := scan(&tbl, &kind, &def, &cols, &ftbl, &fcols, &onDelete); err != nil {
				return err
			}
			t := s.table(tbl)
			if kind == "c" {
				expr := strings.TrimSpace(strings.TrimPrefix(def, "CHECK"))
				t.checks = append(t.checks, fingerprint(expr, t.columnNames()))
				return nil
			}
			action := map[string]string{"a": "NO ACTION", "r": "RESTRICT", "c": "CASCADE", "n": "SET NULL", "d": "SET DEFAULT"}[onDelete]
			t.fks = append(t.fks, foreignKey(cols, ftbl, fcols, action))
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("constraints: %w", err)
	}
	err = eachRow(db, `
		SELECT c.relname, tg.tgname FROM pg_trigger tg
		JOIN pg_class c ON c.oid = tg.tgrelid
		JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND NOT tg.tgisinternal`,
		func(scan func(...any) error) error {
			var tbl, name string
			if err := scan(&tbl, &name); err != nil {
				return err
			}
			s.table(tbl).triggers = append(s.table(tbl).triggers, name)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("triggers: %w", err)
	}
	s.sort()
	return s, nil
}

// ---- SQLite ----

// sqliteTableInfo is what SQLite alone can be checked for: facts its
// PRAGMAs report that the parity model normalises away.
type sqliteTableInfo struct {
	// Columns of a PRIMARY KEY that is not the rowid (INTEGER PRIMARY
	// KEY) and were not declared NOT NULL: SQLite lets those hold NULL.
	nullablePK []string
	// Foreign keys whose target is not a table's primary key or a unique
	// index of it: SQLite only finds that out when the key is used.
	badFKs []string
}

func introspectSQLite(db *sql.DB) (schema, map[string]*sqliteTableInfo, error) {
	s := schema{}
	info := map[string]*sqliteTableInfo{}
	tableSQL := map[string]string{}
	err := eachRow(db, `SELECT type, name, tbl_name, COALESCE(sql, '') FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'`,
		func(scan func(...any) error) error {
			var kind, name, tbl, text string
			if err := scan(&kind, &name, &tbl, &text); err != nil {
				return err
			}
			switch kind {
			case "table":
				tableSQL[name] = text
			case "trigger":
				s.table(tbl).triggers = append(s.table(tbl).triggers, name)
			}
			return nil
		})
	if err != nil {
		return nil, nil, err
	}
	indexSQL := map[string]string{}
	if err := eachRow(db, `SELECT name, COALESCE(sql, '') FROM sqlite_master WHERE type = 'index'`, func(scan func(...any) error) error {
		var name, text string
		if err := scan(&name, &text); err != nil {
			return err
		}
		indexSQL[name] = text
		return nil
	}); err != nil {
		return nil, nil, err
	}

	for name, createSQL := range tableSQL {
		t := s.table(name)
		ti := &sqliteTableInfo{}
		info[name] = ti
		autoincrement := regexp.MustCompile(`(?i)\bAUTOINCREMENT\b`).MatchString(createSQL)
		type pkCol struct {
			name     string
			pos      int
			declared string
			notNull  bool
		}
		var pkCols []pkCol
		err := eachRow(db, `SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(?)`, func(scan func(...any) error) error {
			var col, declared string
			var notNull bool
			var def sql.NullString
			var pk int
			if err := scan(&col, &declared, &notNull, &def, &pk); err != nil {
				return err
			}
			c := column{family: sqliteFamily(declared), declared: declared, notNull: notNull, def: normaliseDefault(def.String)}
			if c.family == famBool && (c.def == "0" || c.def == "1") {
				c.def = map[string]string{"0": "false", "1": "true"}[c.def] // SQLite's booleans are 0 and 1
			}
			if pk > 0 {
				pkCols = append(pkCols, pkCol{col, pk, declared, notNull})
			}
			t.columns[col] = c
			return nil
		}, name)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: columns: %w", name, err)
		}
		slices.SortFunc(pkCols, func(a, b pkCol) int { return a.pos - b.pos })
		for _, p := range pkCols {
			t.pk = append(t.pk, p.name)
		}
		if len(pkCols) == 1 && pkCols[0].declared == "INTEGER" {
			// The rowid itself: never NULL. Without AUTOINCREMENT SQLite
			// may hand out the id of a deleted row again, which a
			// PostgreSQL sequence never does, so that shows as a
			// different default.
			c := t.columns[pkCols[0].name]
			c.notNull = true
			c.def = "rowid"
			if autoincrement {
				c.def = "autoincrement"
			}
			t.columns[pkCols[0].name] = c
		} else {
			for _, p := range pkCols {
				if !p.notNull {
					ti.nullablePK = append(ti.nullablePK, p.name)
				}
			}
		}

		type idxRow struct {
			name           string
			unique         bool
			origin         string
			partial        bool
			columns        []string
			hasExpressions bool
		}
		var rows []idxRow
		err = eachRow(db, `SELECT name, "unique", origin, partial FROM pragma_index_list(?)`, func(scan func(...any) error) error {
			var r idxRow
			if err := scan(&r.name, &r.unique, &r.origin, &r.partial); err != nil {
				return err
			}
			rows = append(rows, r)
			return nil
		}, name)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: indexes: %w", name, err)
		}
		for _, r := range rows {
			err := eachRow(db, `SELECT cid, COALESCE(name, '') FROM pragma_index_info(?) ORDER BY seqno`, func(scan func(...any) error) error {
				var cid int
				var col string
				if err := scan(&cid, &col); err != nil {
					return err
				}
				if cid < 0 {
					r.hasExpressions = true
					col = "<expression>"
				}
				r.columns = append(r.columns, col)
				return nil
			}, r.name)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: index %s: %w", name, r.name, err)
			}
			if r.origin == "pk" {
				continue
			}
			idx := index{unique: r.unique, columns: r.columns}
			if r.partial {
				idx.predicate = fingerprint(whereClause(indexSQL[r.name]), t.columnNames())
			}
			t.indexes[indexKey(r.name, r.origin == "u", r.columns)] = idx
		}

		for _, expr := range checkClauses(createSQL) {
			t.checks = append(t.checks, fingerprint(expr, t.columnNames()))
		}

		type fkCol struct {
			id, seq          int
			target, from, to string
			onDelete         string
		}
		var fkCols []fkCol
		err = eachRow(db, `SELECT id, seq, "table", "from", COALESCE("to", ''), on_delete FROM pragma_foreign_key_list(?)`, func(scan func(...any) error) error {
			var f fkCol
			if err := scan(&f.id, &f.seq, &f.target, &f.from, &f.to, &f.onDelete); err != nil {
				return err
			}
			fkCols = append(fkCols, f)
			return nil
		}, name)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: foreign keys: %w", name, err)
		}
		slices.SortFunc(fkCols, func(a, b fkCol) int { return (a.id-b.id)*1000 + a.seq - b.seq })
		for i := 0; i < len(fkCols); {
			j := i
			var from, to []string
			for ; j < len(fkCols) && fkCols[j].id == fkCols[i].id; j++ {
				from, to = append(from, fkCols[j].from), append(to, fkCols[j].to)
			}
			t.fks = append(t.fks, foreignKey(strings.Join(from, ","), fkCols[i].target, strings.Join(to, ","), fkCols[i].onDelete))
			i = j
		}
	}

	// A foreign key must name its target's primary key or a unique index
	// of it: SQLite accepts any names at CREATE time and fails only later.
	for name, t := range s {
		for _, fk := range t.fks {
			target, cols := fkTarget(fk)
			tt, ok := s[target]
			if !ok || tableSQL[target] == "" {
				info[name].badFKs = append(info[name].badFKs, fk+": no table "+target)
				continue
			}
			good := cols == strings.Join(tt.pk, ",")
			for _, idx := range tt.indexes {
				if idx.unique && idx.predicate == "" && strings.Join(idx.columns, ",") == cols {
					good = true
				}
			}
			if !good {
				info[name].badFKs = append(info[name].badFKs, fk+": not the primary key or a unique index of "+target)
			}
		}
	}
	s.sort()
	return s, info, nil
}

func foreignKey(cols, target, targetCols, onDelete string) string {
	return fmt.Sprintf("(%s) -> %s(%s) on delete %s", cols, target, targetCols, strings.ToUpper(onDelete))
}

var fkPattern = regexp.MustCompile(`-> (\w+)\(([^)]*)\)`)

func fkTarget(fk string) (string, string) {
	m := fkPattern.FindStringSubmatch(fk)
	if m == nil {
		return "", ""
	}
	return m[1], m[2]
}

func (s schema) sort() {
	for _, t := range s {
		slices.Sort(t.checks)
		slices.Sort(t.fks)
		slices.Sort(t.triggers)
	}
}

func eachRow(db *sql.DB, query string, each func(scan func(...any) error) error, args ...any) error {
	rows, err := db.Query(query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}

// ---- expressions ----

// casts matches PostgreSQL's deparsed casts ('x'::text, '-1'::bigint,
// ...::character varying[]), which SQLite's text never carries.
var casts = regexp.MustCompile(`(?i)::\s*(?:"[^"]+"|[a-z_][a-z0-9_]*(?:\s+(?:varying|precision|with|without|time|zone))*)(?:\(\d+(?:,\s*\d+)?\))?(?:\[\])?`)

// numericConst matches a number PostgreSQL deparses as a cast string: a
// negative one, or one too big for integer ('-1'::integer, '10000000000'::bigint).
var numericConst = regexp.MustCompile(`(?i)'(-?\d+(?:\.\d+)?)'::\s*(?:bigint|integer|smallint|numeric)\b`)

// normaliseDefault writes a column default the same way for both
// dialects: casts dropped, keywords lower case, the current time as now().
func normaliseDefault(def string) string {
	d := strings.TrimSpace(def)
	d = numericConst.ReplaceAllString(d, "$1")
	d = casts.ReplaceAllString(d, "")
	for len(d) > 1 && d[0] == '(' && d[len(d)-1] == ')' {
		d = strings.TrimSpace(d[1 : len(d)-1])
	}
	switch strings.ToLower(d) {
	case "true", "false", "null":
		return strings.ToLower(d)
	case "now()", "current_timestamp", "transaction_timestamp()", "datetime('now')", "(datetime('now'))":
		return "now()"
	}
	return d
}

// fingerprint reduces a CHECK or index predicate to what survives each
// dialect's rewriting of it (PostgreSQL stores `x IN ('a','b')` as
// `x = ANY (ARRAY['a'::text, 'b'::text])` and BETWEEN as two comparisons):
// the table's columns it mentions and the constants it compares them
// with, each as a sorted set. Operators and functions are not compared.
func fingerprint(expr string, columns map[string]bool) string {
	expr = numericConst.ReplaceAllString(expr, "$1")
	expr = casts.ReplaceAllString(expr, "")
	cols := map[string]bool{}
	lits := map[string]bool{}
	var prev token
	for _, tok := range tokenize(expr) {
		switch tok.kind {
		case tokIdent:
			if columns[strings.ToLower(tok.text)] {
				cols[strings.ToLower(tok.text)] = true
			}
			if l := strings.ToLower(tok.text); l == "true" || l == "false" || l == "null" {
				lits[l] = true
			}
		case tokString:
			lits["'"+tok.text+"'"] = true
		case tokNumber:
			n := tok.text
			if prev.kind == tokPunct && prev.text == "-" && prev.unary {
				n = "-" + n
			}
			if _, err := strconv.ParseFloat(n, 64); err == nil {
				lits[n] = true
			}
		}
		prev = tok
	}
	return "cols=[" + strings.Join(sortedKeys(cols), ",") + "] lits=[" + strings.Join(sortedKeys(lits), ",") + "]"
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

type tokenKind int

const (
	tokIdent tokenKind = iota + 1
	tokString
	tokNumber
	tokPunct
)

type token struct {
	kind  tokenKind
	text  string
	pos   int  // byte offset in the input
	unary bool // a '-' that starts an operand
}

// tokenize splits SQL into identifiers (bare or quoted), string literals
// (unescaped), numbers and punctuation, dropping comments and whitespace.
func tokenize(s string) []token {
	var out []token
	operandNext := true // at the start of an operand: a '-' is a sign
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				i = len(s)
			} else {
				i += end + 4
			}
		case c == '\'':
			var b strings.Builder
			j := i + 1
			for j < len(s) {
				if s[j] == '\'' {
					if j+1 < len(s) && s[j+1] == '\'' {
						b.WriteByte('\'')
						j += 2
						continue
					}
					break
				}
				b.WriteByte(s[j])
				j++
			}
			out = append(out, token{kind: tokString, text: b.String(), pos: i})
			i = j + 1
			operandNext = false
		case c == '"' || c == '`': // not SQLite's [name]: PostgreSQL writes ARRAY['a', 'b']
			closer := c
			j := strings.IndexByte(s[i+1:], closer)
			if j < 0 {
				j = len(s) - i - 1
			}
			out = append(out, token{kind: tokIdent, text: s[i+1 : i+1+j], pos: i})
			i += j + 2
			operandNext = false
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			j := i
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' || s[j] == 'e' || s[j] == 'E') {
				j++
			}
			out = append(out, token{kind: tokNumber, text: s[i:j], pos: i})
			i = j
			operandNext = false
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(s) && (s[j] == '_' || s[j] == '$' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			word := s[i:j]
			out = append(out, token{kind: tokIdent, text: word, pos: i})
			i = j
			// After a keyword such as AND or BETWEEN an operand follows.
			switch strings.ToUpper(word) {
			case "AND", "OR", "NOT", "BETWEEN", "IN", "IS", "WHEN", "THEN", "ELSE", "CHECK", "WHERE", "ANY", "ARRAY":
				operandNext = true
			default:
				operandNext = false
			}
		default:
			out = append(out, token{kind: tokPunct, text: string(c), pos: i, unary: c == '-' && operandNext})
			i++
			operandNext = c != ')' && c != ']'
		}
	}
	return out
}

// checkClauses returns the expression of every CHECK in a CREATE TABLE
// statement as SQLite stores it (ADD COLUMN appends to that text).
func checkClauses(createSQL string) []string {
	toks := tokenize(createSQL)
	var out []string
	for i := 0; i+1 < len(toks); i++ {
		if toks[i].kind != tokIdent || !strings.EqualFold(toks[i].text, "CHECK") || toks[i+1].text != "(" || toks[i+1].kind != tokPunct {
			continue
		}
		depth := 0
		for j := i + 1; j < len(toks); j++ {
			if toks[j].kind != tokPunct {
				continue
			}
			switch toks[j].text {
			case "(":
				depth++
			case ")":
				depth--
			}
			if depth == 0 {
				out = append(out, createSQL[toks[i+1].pos+1:toks[j].pos])
				i = j
				break
			}
		}
	}
	return out
}

// whereClause returns the predicate of a CREATE INDEX ... WHERE statement.
func whereClause(createSQL string) string {
	depth := 0
	for _, tok := range tokenize(createSQL) {
		switch {
		case tok.kind == tokPunct && tok.text == "(":
			depth++
		case tok.kind == tokPunct && tok.text == ")":
			depth--
		case depth == 0 && tok.kind == tokIdent && strings.EqualFold(tok.text, "WHERE"):
			return createSQL[tok.pos+len("WHERE"):]
		}
	}
	return ""
}
