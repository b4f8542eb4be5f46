package qris

import (
	"errors"
	"strconv"
)

// What can be wrong with a payload. Parse and Encode return an *Error that
// wraps one of these; decide with errors.Is.
var (
	// ErrTooLong: the payload is longer than MaxLen characters.
	ErrTooLong = errors.New("payload longer than 512 characters")
	// ErrCharset: a character outside printable ASCII (0x20-0x7E), the
	// EMVCo "ans" set.
	ErrCharset = errors.New("character outside printable ASCII")
	// ErrTruncated: a data object's ID, length or value runs past the end of
	// the payload or of its template.
	ErrTruncated = errors.New("payload truncated")
	// ErrBadLength: a length that is not two digits from 01 to 99.
	ErrBadLength = errors.New("bad length")
	// ErrBadTag: an ID that is not two digits.
	ErrBadTag = errors.New("bad tag")
	// ErrTagOrder: IDs not in ascending order, or one repeated.
	ErrTagOrder = errors.New("tags out of order")
	// ErrMissingTag: a mandatory data object is absent.
	ErrMissingTag = errors.New("required tag missing")
	// ErrCRCFormat: tag 63 is not the last data object, or its value is
	// not 4 hexadecimal digits.
	ErrCRCFormat = errors.New("tag 63 must be last with 4 hex digits")
	// ErrBadCRC: the CRC in tag 63 does not match the payload: it was
	// altered or misread.
	ErrBadCRC = errors.New("CRC mismatch")
	// ErrInvalidValue: a value breaks its field's rules (too long, not
	// numeric, not an allowed code, a malformed amount).
	ErrInvalidValue = errors.New("invalid value")
)

// Error describes what is wrong with a payload and where.
type Error struct {
	Err    error  // one of the Err* sentinels of this package
	Tag    string // the data object concerned: "54", or "62.01" inside a template; may be empty
	Offset int    // byte offset in the payload, or -1 when not known (always for Encode)
	Detail string // what exactly, for people
}

func (e *Error) Error() string {
	s := "qris: "
	if e.Tag != "" {
		s += "tag " + e.Tag + ": "
	}
	if e.Offset >= 0 {
		s += "offset " + strconv.Itoa(e.Offset) + ": "
	}
	s += e.Err.Error()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap lets errors.Is match the sentinel.
func (e *Error) Unwrap() error { return e.Err }

func errAt(sentinel error, tag string, offset int, detail string) *Error {
	return &Error{Err: sentinel, Tag: tag, Offset: offset, Detail: detail}
}

func errTag(sentinel error, tag, detail string) *Error {
	return &Error{Err: sentinel, Tag: tag, Offset: -1, Detail: detail}
}
