// Package pagecursor encodes the position of a list page: the creation
// time and id of the last row a page showed. Lists run newest first,
// ordered by (created_at, id), so the next page is the rows strictly before
// that pair: rows inserted meanwhile are newer and never shift a page, and
// no row is shown twice or skipped.
package pagecursor

import (
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
)

// Cursor is the last row of a page.
type Cursor struct {
	CreatedAt time.Time
	ID        uuid.UUID
}

// ErrInvalid is a cursor that no page of this service produced.
var ErrInvalid = errors.New("invalid cursor")

// prefix versions the encoding, so that a later format can tell old
// cursors apart.
const prefix = "c1."

// Encode is the opaque form merchants pass back as starting_after.
func (c Cursor) Encode() string { return encode(prefix, c.CreatedAt, c.ID.String()) }

// Decode reads what Encode produced; anything else is ErrInvalid.
func Decode(s string) (Cursor, error) {
	t, id, ok := decode(prefix, s)
	if !ok {
		return Cursor{}, ErrInvalid
	}
	u, err := uuid.Parse(id)
	if err != nil || len(id) != 36 {
		return Cursor{}, ErrInvalid
	}
	return Cursor{CreatedAt: t.UTC(), ID: u}, nil
}

// Apply orders q newest first by the created and id columns (qualified
// when q joins), keeps the rows strictly before after (nil: from the
// newest) and asks for one row more than limit, so that Trim can tell
// whether another page follows.
func Apply(q *gorm.DB, created, id string, after *Cursor, limit int) *gorm.DB {
	if after != nil {
		q = q.Where("("+created+", "+id+") < (?, ?)", after.CreatedAt, after.ID)
	}
	return q.Order(created + " DESC, " + id + " DESC").Limit(limit + 1)
}

// Trim cuts the rows Apply read to limit and returns the cursor of the
// next page, nil when this one is the last.
func Trim[T any](rows []T, limit int, key func(*T) Cursor) ([]T, *Cursor) {
	if len(rows) <= limit {
		return rows, nil
	}
	next := key(&rows[limit-1])
	return rows[:limit], &next
}

// Line is the last line of a wallet statement page: its time and its
// number in the wallet's statement. Statements run newest first by
// (created_at, seq), as the other lists by (created_at, id).
type Line struct {
	CreatedAt time.Time
	Seq       int64
}

// linePrefix versions a statement cursor and keeps it apart from a list's.
const linePrefix = "l1."

// Encode is the opaque form merchants pass back as starting_after.
func (c Line) Encode() string { return encode(linePrefix, c.CreatedAt, strconv.FormatInt(c.Seq, 10)) }

// DecodeLine reads what Line.Encode produced; anything else is ErrInvalid.
func DecodeLine(s string) (Line, error) {
	t, seq, ok := decode(linePrefix, s)
	if !ok {
		return Line{}, ErrInvalid
	}
	n, err := strconv.ParseInt(seq, 10, 64)
	if err != nil || n <= 0 || strconv.FormatInt(n, 10) != seq {
		return Line{}, ErrInvalid
	}
	return Line{CreatedAt: t.UTC(), Seq: n}, nil
}

// encode is the form of every cursor: the version prefix, then base64 of
// the time and the row's key.
func encode(prefix string, at time.Time, key string) string {
	return prefix + base64.RawURLEncoding.EncodeToString([]byte(at.UTC().Format(time.RFC3339Nano)+"|"+key))
}

// decode reads encode's form with the given prefix: the time and the key
// as text, for the caller to parse; false for anything else.
func decode(prefix, s string) (time.Time, string, bool) {
	if !strings.HasPrefix(s, prefix) || len(s) > 200 {
		return time.Time{}, "", false
	}
	raw, err := base64.RawURLEncoding.DecodeString(s[len(prefix):])
	if err != nil {
		return time.Time{}, "", false
	}
	at, key, ok := strings.Cut(string(raw), "|")
	if !ok {
		return time.Time{}, "", false
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return time.Time{}, "", false
	}
	return t, key, true
}
