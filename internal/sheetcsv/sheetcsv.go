// Package sheetcsv writes CSV files meant to be opened in a spreadsheet,
// safe from CSV injection (formula injection): a cell of free text is
// never run as a formula, whichever separator the spreadsheet splits the
// file on.
//
// A file has two kinds of cell. A number the service wrote (Number) is
// written bare, so that a spreadsheet reads it as a number, a negative
// amount included. Every other cell (Text) is always double-quoted, its
// quotes doubled, and neutralised: wherever a spreadsheet could start a
// cell inside it, a formula character (=, +, -, @, a tab or a carriage
// return, as OWASP's "CSV Injection" lists) gets a leading apostrophe, which makes the spreadsheet show the rest as
// text. A cell can start at the first character and after each ',', ';',
// tab, carriage return or line feed: a spreadsheet set to ';' (common
// where the decimal mark is a comma, Indonesia included) splits the
// file's quoted cells at their semicolons and ignores the quotes.
package sheetcsv

import (
	"bufio"
	"io"
	"regexp"
	"strings"
	"unicode"
)

// Cell is one cell of a row: Text or Number.
type Cell struct {
	s      string
	number bool
}

// Text is a cell of free text (or of anything not a plain number).
func Text(s string) Cell { return Cell{s: s} }

// TextRow is the cells of a row of text (a header).
func TextRow(names ...string) []Cell {
	cells := make([]Cell, len(names))
	for i, n := range names {
		cells[i] = Text(n)
	}
	return cells
}

// Number is a cell of a decimal the service wrote, such as "-2500.0000":
// written bare. Anything that is not a plain decimal is written as Text,
// so that a caller's mistake cannot open a hole.
func Number(s string) Cell { return Cell{s: s, number: plainNumber.MatchString(s)} }

// plainNumber is an optional minus, digits and an optional fraction:
// nothing a spreadsheet could read as a formula or a date.
var plainNumber = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)

// Encode is the cell as written in the file.
func (c Cell) Encode() string {
	if c.number {
		return c.s
	}
	return EncodeText(c.s)
}

// EncodeText is s as a Text cell: neutralised, double-quoted, its quotes
// doubled.
func EncodeText(s string) string {
	return `"` + strings.ReplaceAll(Neutralise(s), `"`, `""`) + `"`
}

// Neutralise puts an apostrophe before each formula character that starts
// a cell a spreadsheet could see in s: at the start of s, or after one of
// the separators, past any spaces and double quotes (a spreadsheet may
// trim the first and take the second for a field's quoting). Nothing else
// of s changes.
func Neutralise(s string) string {
	var b strings.Builder
	changed := false
	last := 0 // s[:last] is in b
	atStart := true
	for i, r := range s {
		if atStart && formulaStart(r) {
			if !changed {
				b.Grow(len(s) + 4)
				changed = true
			}
			b.WriteString(s[last:i])
			b.WriteByte('\'')
			last = i
		}
		switch {
		case separator(r):
			atStart = true
		case atStart && (r == '"' || unicode.IsSpace(r)):
			// still before the cell's first character
		default:
			atStart = false
		}
	}
	if !changed {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// formulaStart reports whether a cell starting with r may be run as a
// formula.
func formulaStart(r rune) bool {
	switch r {
	case '=', '+', '-', '@', '\t', '\r':
		return true
	}
	return false
}

// separator reports whether a spreadsheet may start a new cell after r.
func separator(r rune) bool {
	switch r {
	case ',', ';', '\t', '\r', '\n':
		return true
	}
	return false
}

// Writer writes rows of cells, each ended by a line feed.
type Writer struct {
	w   *bufio.Writer
	err error
}

// NewWriter returns a Writer on w; call Flush at the end.
func NewWriter(w io.Writer) *Writer { return &Writer{w: bufio.NewWriter(w)} }

// Write writes one row. An error is sticky: once writing failed, every
// later Write and Flush returns it.
func (w *Writer) Write(cells ...Cell) error {
	for i, c := range cells {
		if w.err != nil {
			return w.err
		}
		if i > 0 {
			w.err = w.w.WriteByte(',')
		}
		if w.err == nil {
			_, w.err = w.w.WriteString(c.Encode())
		}
	}
	if w.err == nil {
		w.err = w.w.WriteByte('\n')
	}
	return w.err
}

// Flush writes what is buffered and returns the first error met.
func (w *Writer) Flush() error {
	if w.err == nil {
		w.err = w.w.Flush()
	}
	return w.err
}
