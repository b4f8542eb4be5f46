package ledger_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// moneyFiles are the files allowed to write wallets' balance or lock and
// the ledger, relative to the module root: each database driver's money
// statements, under the invariants of ledger/wallets.go. Each maps to the
// moneyWrites (by index) the patterns must find in it, so that a pattern
// that stopped matching the code it guards fails too.
var moneyFiles = map[string][]int{
	"internal/database/pgdriver/money.go":     {0, 1},
	"internal/database/sqlitedriver/money.go": {0, 2},
}

// moneyWrite is a way Go code can write money, with a sample it must
// catch (so that a broken pattern cannot pass silently).
type moneyWrite struct {
	what   string
	re     *regexp.Regexp
	inner  *regexp.Regexp // if set, what re's first group must contain too
	sample string
}

var moneyWrites = []moneyWrite{
	{
		"SQL setting wallets.balance or wallets.locked",
		// The SET list of an UPDATE of wallets (with or without an alias),
		// up to its FROM, WHERE or RETURNING, or the end of the string.
		regexp.MustCompile(`(?is)\bUPDATE\s+wallets\b(?:\s+(?:AS\s+)?\w+)?\s+SET\b(.*?)(?:\bFROM\b|\bWHERE\b|\bRETURNING\b|;|` + "`" + `|$)`),
		regexp.MustCompile(`(?i)(?:^|[\s,.])(?:balance|locked)\s*=`),
		"UPDATE wallets w SET updated_at = now(), locked = w.locked + 1 WHERE id = $1",
	},
	{
		"SQL inserting into the ledger or a wallet's statement",
		regexp.MustCompile(`(?is)\bINSERT\s+INTO\s+"?(?:ledger_(?:transactions|entries)|wallet_statement)\b`), nil,
		`INSERT INTO wallet_statement (wallet_id, seq) VALUES (?, ?)`,
	},
	{
		"a ledger or statement row built in Go (for gorm to insert)",
		regexp.MustCompile(`models\.(?:Ledger(?:Transaction|Entry)|StatementLine)\{\s*\w`), nil,
		`line := models.StatementLine{WalletID: id}`,
	},
	{
		"gorm writing a wallet's balance or locked column",
		// Update("locked", …), UpdateColumn, or a map entry "locked": … of
		// Updates.
		regexp.MustCompile(`\bUpdate(?:Column)?\(\s*"(?:balance|locked)"\s*,|[{,]\s*"(?:balance|locked)"\s*:`), nil,
		`tx.Model(&w).Updates(map[string]any{"locked": gorm.Expr("locked - ?", n)})`,
	},
}

// find returns where src holds the write: each match of re whose first
// group, if inner is set, contains inner.
func (w moneyWrite) find(src []byte) [][]int {
	var out [][]int
	for _, m := range w.re.FindAllSubmatchIndex(src, -1) {
		if w.inner == nil || w.inner.Match(src[m[2]:m[3]]) {
			out = append(out, m)
		}
	}
	return out
}

// Every write of money is in moneyFiles, the drivers' money statements,
// under the invariants written at the top of ledger/wallets.go: no other
// non-test .go file of the module may contain SQL that sets
// wallets.balance or wallets.locked, SQL or gorm code that inserts ledger
// rows, or a gorm update of those columns. Code elsewhere calls the ledger
// (Post, LockFunds, ReleaseLocks, OpenDisbursements).
func TestMoneySQLStaysInMoneyFiles(t *testing.T) {
	for _, w := range moneyWrites {
		if len(w.find([]byte(w.sample))) == 0 {
			t.Fatalf("the pattern for %s misses its sample %q", w.what, w.sample)
		}
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the module root is not %s: %v", root, err)
	}
	scanned := 0
	seen := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		scanned++
		if expect, ok := moneyFiles[rel]; ok {
			// The patterns see the writes where they belong.
			seen[rel] = true
			for _, w := range expect {
				if w := moneyWrites[w]; len(w.find(src)) == 0 {
					t.Errorf("%s: no %s found: is the pattern still right?", rel, w.what)
				}
			}
			return nil
		}
		for _, w := range moneyWrites {
			for _, loc := range w.find(src) {
				line := 1 + strings.Count(string(src[:loc[0]]), "\n")
				t.Errorf("%s:%d: %s outside the drivers' money files: move it there, under the invariants of ledger/wallets.go", rel, line, w.what)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for f := range moneyFiles {
		if !seen[f] {
			t.Errorf("%s, a money file, is gone: update moneyFiles", f)
		}
	}
	if scanned < 50 {
		t.Fatalf("scanned only %d .go files under %s", scanned, root)
	}
}
