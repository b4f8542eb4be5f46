package pagecursor

import (
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestRoundTrip(t *testing.T) {
	c := Cursor{CreatedAt: time.Date(2026, 11, 26, 10, 0, 0, 123456000, time.UTC), ID: uuid.New()}
	got, err := Decode(c.Encode())
	if err != nil || !got.CreatedAt.Equal(c.CreatedAt) || got.ID != c.ID {
		t.Fatalf("Decode(Encode(%v)) = %v, %v", c, got, err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(Cursor{CreatedAt: time.Unix(1, 0), ID: uuid.New()}.Encode())
	f.Add("c1.")
	f.Add("c1.!!!")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Decode(s)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes to a cursor that decodes the same.
		again, err := Decode(c.Encode())
		if err != nil || !again.CreatedAt.Equal(c.CreatedAt) || again.ID != c.ID {
			t.Fatalf("%q decoded to %v, which does not round-trip: %v, %v", s, c, again, err)
		}
	})
}

func FuzzDecodeLine(f *testing.F) {
	f.Add(Line{CreatedAt: time.Unix(1, 0), Seq: 42}.Encode())
	f.Add(Cursor{CreatedAt: time.Unix(1, 0), ID: uuid.New()}.Encode())
	f.Add("l1.")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := DecodeLine(s)
		if err != nil {
			return
		}
		if c.Seq <= 0 {
			t.Fatalf("%q decoded to line %d", s, c.Seq)
		}
		again, err := DecodeLine(c.Encode())
		if err != nil || !again.CreatedAt.Equal(c.CreatedAt) || again.Seq != c.Seq {
			t.Fatalf("%q decoded to %v, which does not round-trip: %v, %v", s, c, again, err)
		}
	})
}

// A list's cursor is not a statement's, nor the other way round: a cursor
// passed to the wrong list is refused, not read as some other position.
func TestCursorsOfListsAndStatementsDoNotMix(t *testing.T) {
	line := Line{CreatedAt: time.Unix(1, 0), Seq: 7}
	if _, err := Decode(line.Encode()); err == nil {
		t.Fatal("a statement cursor decoded as a list cursor")
	}
	if _, err := DecodeLine(Cursor{CreatedAt: time.Unix(1, 0), ID: uuid.New()}.Encode()); err == nil {
		t.Fatal("a list cursor decoded as a statement cursor")
	}
	got, err := DecodeLine(line.Encode())
	if err != nil || got.Seq != 7 || !got.CreatedAt.Equal(line.CreatedAt) {
		t.Fatalf("round trip: %v, %v", got, err)
	}
}
