package qris_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/payoutd/payoutd/qris"
)

var sentinels = []error{
	qris.ErrTooLong, qris.ErrCharset, qris.ErrTruncated, qris.ErrBadLength, qris.ErrBadTag,
	qris.ErrTagOrder, qris.ErrMissingTag, qris.ErrCRCFormat, qris.ErrBadCRC, qris.ErrInvalidValue,
}

// checkError: every refusal is a *qris.Error wrapping one of the sentinels.
func checkError(t *testing.T, what string, err error) {
	t.Helper()
	var e *qris.Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: error %T %v is not a *qris.Error", what, err, err)
	}
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return
		}
	}
	t.Fatalf("%s: error %v wraps no sentinel", what, err)
}

// FuzzParse: Parse never panics, and whatever it accepts Encode writes back
// identically (the CRC in uppercase), which parses to the same fields. Each
// input is tried as it is and, so that mutations get past the CRC, as a
// body completed with "6304" and its CRC.
func FuzzParse(f *testing.F) {
	for _, p := range vectors(f) {
		f.Add(p)
		f.Add(p[:len(p)-4] + strings.ToLower(p[len(p)-4:]))
		f.Add(bodyOf(p))
		f.Add(bodyOf(p) + "64210002ID0111WARUNG MAJU99080004TEST")
		f.Add(bodyOf(p)[:60])
		f.Add(p[:len(p)/2])
	}
	f.Add("")
	f.Add("6304FFFF")
	f.Fuzz(func(t *testing.T, s string) {
		parseEncodeParse(t, s)
		parseEncodeParse(t, withCRC(s))
	})
}

func parseEncodeParse(t *testing.T, s string) {
	t.Helper()
	p, err := qris.Parse(s)
	if err != nil {
		checkError(t, "Parse", err)
		return
	}
	enc, err := qris.Encode(p)
	if err != nil {
		t.Fatalf("Parse(%q) accepted, Encode refused: %v", s, err)
	}
	if want := s[:len(s)-4] + strings.ToUpper(s[len(s)-4:]); enc != want {
		t.Fatalf("Encode(Parse(s)) = %q\nwant %q", enc, want)
	}
	again, err := qris.Parse(enc)
	if err != nil {
		t.Fatalf("Parse(Encode(Parse(s))): %v", err)
	}
	p.CRC = strings.ToUpper(p.CRC)
	if !reflect.DeepEqual(again, p) {
		t.Fatalf("fields changed:\n%+v\n%+v", p, again)
	}
}

// FuzzRoundTrip: a Payload built from arbitrary field values either
// encodes to a payload that parses back to the same fields, or is refused
// with a *qris.Error.
func FuzzRoundTrip(f *testing.F) {
	f.Add(true, "25000", "WARUNG MAJU", "JAKARTA", "INV-0001", "K01", "5812", "99", "0004TEST")
	f.Add(false, "", "TOKO", "BANDUNG", "", "", "5411", "", "")
	f.Add(true, "98.73", "A", "B", "A1B2C3D4", "T", "0000", "04", "1234")
	f.Add(true, "0", "", "", "", "", "", "63", "ABCD")
	f.Fuzz(func(t *testing.T, dynamic bool, amount, name, city, bill, terminal, mcc, otherTag, otherValue string) {
		p := validPayload()
		p.PointOfInitiation = qris.Static
		if dynamic {
			p.PointOfInitiation = qris.Dynamic
		}
		p.Amount, p.MerchantName, p.MerchantCity, p.MCC = amount, name, city, mcc
		p.AdditionalData = qris.AdditionalData{BillNumber: bill, TerminalLabel: terminal}
		if otherTag != "" || otherValue != "" {
			p.Other = []qris.TLV{{Tag: otherTag, Value: otherValue}}
		}
		enc, err := qris.Encode(p)
		if err != nil {
			checkError(t, "Encode", err)
			return
		}
		got, err := qris.Parse(enc)
		if err != nil {
			t.Fatalf("Encode gave %q, Parse refused it: %v", enc, err)
		}
		p.CRC = enc[len(enc)-4:]
		if !reflect.DeepEqual(got, p) {
			t.Fatalf("round trip of %q:\n got %+v\nwant %+v", enc, got, p)
		}
	})
}
