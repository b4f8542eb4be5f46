package sheetcsv

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
	"unicode"
)

// Each free-text cell is quoted, its quotes doubled, and every place a
// spreadsheet could start a cell inside it defused; numbers stay bare.
func TestEncode(t *testing.T) {
	for _, tc := range []struct {
		name string
		cell Cell
		want string
	}{
		// The audit's playerId in a settlement's memo: with ';' as the
		// separator the second cell was =2+5 and the third @SUM(1;1).
		{"audit", Text("payment x;=2+5;@SUM(1;1)"), `"payment x;'=2+5;'@SUM(1;1)"`},
		{"plain", Text("disbursement bca BIFAST"), `"disbursement bca BIFAST"`},
		{"empty", Text(""), `""`},
		{"leading =", Text(`=HYPERLINK("http://x","y")`), `"'=HYPERLINK(""http://x"",""y"")"`},
		{"leading +", Text("+62 812"), `"'+62 812"`},
		{"leading -", Text("-2+3"), `"'-2+3"`},
		{"leading @", Text("@SUM(A1)"), `"'@SUM(A1)"`},
		{"leading tab", Text("\t=1"), "\"'\t'=1\""},
		{"leading CR", Text("\r=1"), "\"'\r'=1\""},
		{"after comma", Text("a,=1"), `"a,'=1"`},
		{"after comma and spaces", Text("a,  +1"), `"a,  '+1"`},
		{"after semicolon", Text("a;-1"), `"a;'-1"`},
		{"after tab", Text("a\t@x"), "\"a\t'@x\""},
		{"after newline", Text("line one\n=cmd|' /C calc'!A0"), "\"line one\n'=cmd|' /C calc'!A0\""},
		{"after CRLF", Text("a\r\n-1"), "\"a\r\n'-1\""},
		{"after a quote", Text(`a;"=1+1`), `"a;""'=1+1"`},
		{"not after a letter", Text("a=b+c-d@e"), `"a=b+c-d@e"`},
		{"quotes", Text(`say "hi"`), `"say ""hi"""`},
		{"apostrophe kept", Text("'=1"), `"'=1"`},
		{"unicode", Text("Budi Santoso 🙂;=1 ＝2"), "\"Budi Santoso 🙂;'=1 ＝2\""},
		{"non-breaking space", Text("a;\u00a0=1"), "\"a;\u00a0'=1\""},
		{"repeated separators", Text(";;=;"), `";;'=;"`},
		{"number", Number("1000000.0000"), "1000000.0000"},
		{"negative number", Number("-2500.0000"), "-2500.0000"},
		{"whole number", Number("42"), "42"},
		{"not a number", Number("-2+3"), `"'-2+3"`},
		{"not a number either", Number("1e5"), `"1e5"`},
		{"empty number", Number(""), `""`},
	} {
		if got := tc.cell.Encode(); got != tc.want {
			t.Errorf("%s: %q encodes as %q, want %q", tc.name, tc.cell.s, got, tc.want)
		}
	}
}

// A row is the cells' encodings joined by commas, ended by a line feed.
func TestWriter(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	if err := w.Write(TextRow("seq", "description")...); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(Number("7"), Number("-2500.0000"), Text("=1")); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := "\"seq\",\"description\"\n7,-2500.0000,\"'=1\"\n"; buf.String() != want {
		t.Errorf("wrote %q, want %q", buf.String(), want)
	}
}

// FuzzEncodeText checks the invariants of a text cell for any string:
// a CSV reader gets the neutralised text back as one field, whether it
// splits on ',' or ';'; taking the apostrophes out of both gives the same
// text (nothing but apostrophes was added); and no piece a spreadsheet
// could make a cell of starts with a formula character.
func FuzzEncodeText(f *testing.F) {
	for _, s := range []string{"", "payment x;=2+5;@SUM(1;1)", "=1", "a,\t-1", "say \"hi\"\r\n+1", "Budi 🙂", "a;\"=1", "\xff=1;=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Neutralise(s)
		if strings.ReplaceAll(out, "'", "") != strings.ReplaceAll(s, "'", "") {
			t.Fatalf("Neutralise(%q) = %q changed more than apostrophes", s, out)
		}
		if unsafe := formulaCell(out); unsafe != "" {
			t.Fatalf("Neutralise(%q) = %q leaves a cell starting %q", s, out, unsafe)
		}
		enc := EncodeText(s)
		for _, comma := range []rune{',', ';'} {
			r := csv.NewReader(strings.NewReader(enc + "\n"))
			r.Comma = comma
			rec, err := r.Read()
			// encoding/csv drops a carriage return before a line feed.
			if want := strings.ReplaceAll(out, "\r\n", "\n"); err != nil || len(rec) != 1 || rec[0] != want {
				t.Fatalf("EncodeText(%q) = %q reads back with %q as %q, %v; want [%q]", s, enc, comma, rec, err, want)
			}
		}
	})
}

// formulaCell is the first piece of s, split where a spreadsheet may
// start a cell, that begins (past spaces and quotes) with a formula
// character; "" when there is none.
func formulaCell(s string) string {
	for _, piece := range strings.FieldsFunc(s, separator) {
		rest := strings.TrimLeftFunc(piece, func(r rune) bool { return r == '"' || unicode.IsSpace(r) })
		if rest != "" && strings.ContainsRune("=+-@", []rune(rest)[0]) {
			return piece
		}
	}
	return ""
}
