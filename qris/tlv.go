package qris

import (
	"fmt"
	"strconv"
)

// TLV is one data object as written in a payload: a two-digit ID (tag) and
// its value. A template's value is its own data objects, encoded.
type TLV struct {
	Tag   string
	Value string
}

// field is a data object found at Offset (of its tag) in the payload.
type field struct {
	TLV
	Offset int
}

// split cuts s, which starts at byte base of the payload, into data objects
// (two-digit tag, two-digit length 01-99, value). parent is the enclosing
// template's tag, "" at the root; it only names the data objects in errors.
func split(s string, base int, parent string) ([]field, error) {
	var out []field
	for i := 0; i < len(s); {
		if len(s)-i < 4 {
			return nil, errAt(ErrTruncated, parent, base+i,
				fmt.Sprintf("a data object needs a 2-digit tag and a 2-digit length, %d characters left", len(s)-i))
		}
		tag, length := s[i:i+2], s[i+2:i+4]
		if !isDigits(tag) {
			return nil, errAt(ErrBadTag, parent, base+i, fmt.Sprintf("%q is not two digits", tag))
		}
		path := joinTag(parent, tag)
		if !isDigits(length) || length == "00" {
			return nil, errAt(ErrBadLength, path, base+i+2, fmt.Sprintf("%q is not a length from 01 to 99", length))
		}
		n, _ := strconv.Atoi(length)
		if left := len(s) - i - 4; n > left {
			return nil, errAt(ErrTruncated, path, base+i,
				fmt.Sprintf("length %d but only %d characters left", n, left))
		}
		out = append(out, field{TLV{tag, s[i+4 : i+4+n]}, base + i})
		i += 4 + n
	}
	return out, nil
}

// checkOrder insists on strictly ascending tags: in order, none repeated.
func checkOrder(fs []field, parent string) error {
	for i := 1; i < len(fs); i++ {
		prev, cur := fs[i-1], fs[i]
		switch {
		case cur.Tag == prev.Tag:
			return errAt(ErrTagOrder, joinTag(parent, cur.Tag), cur.Offset, "tag repeated")
		case cur.Tag < prev.Tag:
			return errAt(ErrTagOrder, joinTag(parent, cur.Tag), cur.Offset,
				fmt.Sprintf("tag %s after tag %s; tags must ascend", cur.Tag, prev.Tag))
		}
	}
	return nil
}

// splitTemplate splits a template's value and checks its order.
func splitTemplate(f field, parent string) ([]field, error) {
	tag := joinTag(parent, f.Tag)
	subs, err := split(f.Value, f.Offset+4, tag)
	if err != nil {
		return nil, err
	}
	return subs, checkOrder(subs, tag)
}

// isTemplate reports whether a root tag holds nested data objects: the
// merchant account information templates 26-51, additional data 62, the
// merchant information language template 64 and the unreserved templates
// 80-99. Tags 02-25 (card schemes' merchant account information) and the
// reserved 65-79 are primitive.
func isTemplate(tag string) bool {
	return ("26" <= tag && tag <= "51") || tag == "62" || tag == "64" || ("80" <= tag && tag <= "99")
}

func joinTag(parent, tag string) string {
	if parent == "" {
		return tag
	}
	return parent + "." + tag
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func isHex4(s string) bool {
	if len(s) != 4 {
		return false
	}
	for i := 0; i < 4; i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// badChar returns the offset of the first byte outside printable ASCII
// (0x20-0x7E), or -1.
func badChar(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7E {
			return i
		}
	}
	return -1
}
