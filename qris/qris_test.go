package qris_test

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/payoutd/payoutd/qris"
)

// vectors reads testdata/qris-vectors.txt: kind<TAB>payload per line.
func vectors(t testing.TB) map[string]string {
	t.Helper()
	b, err := os.ReadFile("testdata/qris-vectors.txt")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		kind, payload, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("malformed vector line %q", line)
		}
		out[kind] = payload
	}
	return out
}

// withCRC completes a payload body (everything before "6304") with a correct CRC.
func withCRC(body string) string {
	s := body + "6304"
	return s + fmt.Sprintf("%04X", qris.CRC16(s))
}

// bodyOf strips "6304" and the CRC from a payload.
func bodyOf(payload string) string { return payload[:len(payload)-8] }

var sandboxAccount = qris.MerchantAccount{
	GUID: "ID.CO.SANDBOXPAY.WWW", PAN: "936000000000000001", MerchantID: "MCH0000001", Criteria: "UMI",
}

var national = qris.MerchantAccount{GUID: "ID.CO.QRIS.WWW", MerchantID: "ID1020000000001", Criteria: "UMI"}

func TestVectors(t *testing.T) {
	t.Parallel()
	v := vectors(t)
	want := map[string]qris.Payload{
		"dynamic": {
			PayloadFormat: "01", PointOfInitiation: "12",
			MerchantAccount: sandboxAccount, National: national,
			MCC: "5812", Currency: "360", Amount: "25000", Country: "ID",
			MerchantName: "WARUNG MAJU", MerchantCity: "JAKARTA", PostalCode: "10110",
			AdditionalData: qris.AdditionalData{BillNumber: "INV-0001", TerminalLabel: "K01"},
			CRC:            "BC8A",
		},
		"static": {
			PayloadFormat: "01", PointOfInitiation: "11",
			MerchantAccount: sandboxAccount, National: national,
			MCC: "5812", Currency: "360", Country: "ID",
			MerchantName: "WARUNG MAJU", MerchantCity: "JAKARTA", PostalCode: "10110",
			CRC: "4D82",
		},
	}
	if len(v) != len(want) {
		t.Fatalf("vectors file has kinds %v, want dynamic and static", v)
	}
	for kind, w := range want {
		payload := v[kind]
		got, err := qris.Parse(payload)
		if err != nil {
			t.Fatalf("%s: Parse: %v", kind, err)
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("%s: Parse =\n%+v\nwant\n%+v", kind, got, w)
		}
		if got.NMID() != "ID1020000000001" || got.IsDynamic() != (kind == "dynamic") {
			t.Errorf("%s: NMID %q, IsDynamic %v", kind, got.NMID(), got.IsDynamic())
		}
		enc, err := qris.Encode(got)
		if err != nil || enc != payload {
			t.Errorf("%s: Encode = %q, %v; want the vector\n%q", kind, enc, err, payload)
		}
		// Encode ignores the CRC field: a stale one is recomputed.
		got.CRC = "0000"
		if enc, err := qris.Encode(got); err != nil || enc != payload {
			t.Errorf("%s: Encode with a stale CRC field = %q, %v", kind, enc, err)
		}
	}
}

func TestCRC16(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want uint16
	}{
		{"123456789", 0x29B1}, // the catalogued check value of CRC-16/CCITT-FALSE
		{"", 0xFFFF},          // the initial value, untouched
		{"A", 0xB915},
	} {
		if got := qris.CRC16(tt.in); got != tt.want {
			t.Errorf("CRC16(%q) = %04X, want %04X", tt.in, got, tt.want)
		}
	}
	// The vectors' CRCs are CRC16 of everything up to and including "6304".
	for kind, p := range vectors(t) {
		if got := fmt.Sprintf("%04X", qris.CRC16(p[:len(p)-4])); got != p[len(p)-4:] {
			t.Errorf("%s: CRC16 = %s, vector says %s", kind, got, p[len(p)-4:])
		}
	}
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	dyn := vectors(t)["dynamic"]
	body := bodyOf(dyn)
	long := strings.Repeat("A", 26)
	tests := []struct {
		name    string
		payload string
		want    error
		tag     string // expected Error.Tag, when checked
	}{
		{"flipped character", strings.Replace(dyn, "WARUNG", "WARUNH", 1), qris.ErrBadCRC, "63"},
		{"flipped amount digit", strings.Replace(dyn, "540525000", "540535000", 1), qris.ErrBadCRC, "63"},
		{"wrong CRC", body + "6304BC8B", qris.ErrBadCRC, "63"},
		{"non-hex CRC", body + "6304BC8G", qris.ErrCRCFormat, "63"},
		{"CRC of 3 digits", withCRC(body)[:len(dyn)-1], qris.ErrTruncated, "63"},
		{"CRC with length 05", body + "6305BC8A0", qris.ErrCRCFormat, "63"},
		{"CRC not last", withCRC(body) + "9902AB", qris.ErrCRCFormat, "63"},
		{"no CRC", body, qris.ErrMissingTag, "63"},
		{"truncated in a value", dyn[:100], qris.ErrTruncated, ""},
		{"truncated in a header", dyn[:2], qris.ErrTruncated, ""},
		{"empty", "", qris.ErrTruncated, ""},
		{"length not digits", withCRC(strings.Replace(body, "5911WARUNG", "59A1WARUNG", 1)), qris.ErrBadLength, "59"},
		{"length 00", withCRC(strings.Replace(body, "6105", "6100", 1)), qris.ErrBadLength, "61"},
		{"length past the end", withCRC(body + "9950AB"), qris.ErrTruncated, "99"},
		{"bad length in a template", withCRC(strings.Replace(body, "0108INV-0001", "01X8INV-0001", 1)), qris.ErrBadLength, "62.01"},
		{"template value truncated", withCRC(strings.Replace(body, "0703K01", "0704K01", 1)), qris.ErrTruncated, "62.07"},
		{"tag not digits", withCRC(body + "A102XY"), qris.ErrBadTag, ""},
		{"missing 52 MCC", withCRC(strings.Replace(body, "52045812", "", 1)), qris.ErrMissingTag, "52"},
		{"missing 53 currency", withCRC(strings.Replace(body, "5303360", "", 1)), qris.ErrMissingTag, "53"},
		{"missing 58 country", withCRC(strings.Replace(body, "5802ID", "", 1)), qris.ErrMissingTag, "58"},
		{"missing 59 name", withCRC(strings.Replace(body, "5911WARUNG MAJU", "", 1)), qris.ErrMissingTag, "59"},
		{"missing 60 city", withCRC(strings.Replace(body, "6007JAKARTA", "", 1)), qris.ErrMissingTag, "60"},
		{"missing 00 format", withCRC(strings.TrimPrefix(body, "000201")), qris.ErrMissingTag, "00"},
		{"missing merchant account", withCRC(cut(cut(body, "26"), "51")), qris.ErrMissingTag, "26"},
		{"missing GUID", withCRC(strings.Replace(body, "51440014ID.CO.QRIS.WWW", "5126", 1)), qris.ErrMissingTag, "51.00"},
		{"tags out of order", withCRC(strings.Replace(body, "5802ID5911WARUNG MAJU", "5911WARUNG MAJU5802ID", 1)), qris.ErrTagOrder, "58"},
		{"tag repeated", withCRC(strings.Replace(body, "5802ID", "5802ID5802ID", 1)), qris.ErrTagOrder, "58"},
		{"subtags out of order", withCRC(strings.Replace(body, "62190108INV-00010703K01", "62190703K010108INV-0001", 1)), qris.ErrTagOrder, "62.01"},
		{"amount with separator", withCRC(strings.Replace(body, "540525000", "54062.5000", 1)), qris.ErrInvalidValue, "54"},
		{"amount 3 decimals", withCRC(strings.Replace(body, "540525000", "540625.000", 1)), qris.ErrInvalidValue, "54"},
		{"amount zero", withCRC(strings.Replace(body, "540525000", "54040.00", 1)), qris.ErrInvalidValue, "54"},
		{"point of initiation 13", withCRC(strings.Replace(body, "010212", "010213", 1)), qris.ErrInvalidValue, "01"},
		{"format 02", withCRC(strings.Replace(body, "000201", "000202", 1)), qris.ErrInvalidValue, "00"},
		{"currency letters", withCRC(strings.Replace(body, "5303360", "5303IDR", 1)), qris.ErrInvalidValue, "53"},
		{"name of 26", withCRC(strings.Replace(body, "5911WARUNG MAJU", "5926"+long, 1)), qris.ErrInvalidValue, "59"},
		{"city of 16", withCRC(strings.Replace(body, "6007JAKARTA", "6016"+long[:16], 1)), qris.ErrInvalidValue, "60"},
		{"bill number of 26", withCRC(strings.Replace(body, "62190108INV-00010703K01", "62370126"+long+"0703K01", 1)), qris.ErrInvalidValue, "62.01"},
		{"non-ASCII", withCRC(strings.Replace(body, "5911WARUNG MAJU", "5911WARUNG MAJ\xc3", 1)), qris.ErrCharset, ""},
		{"control character", withCRC(strings.Replace(body, "5911WARUNG MAJU", "5911WARUNG\nMAJU", 1)), qris.ErrCharset, ""},
		{"too long", withCRC(body + "9999" + strings.Repeat("X", 99) + "9899" + strings.Repeat("X", 99) + "9799" + strings.Repeat("X", 99)), qris.ErrTooLong, ""},
	}
	for _, tt := range tests {
		_, err := qris.Parse(tt.payload)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: Parse(%q) = %v, want %v", tt.name, tt.payload, err, tt.want)
			continue
		}
		var e *qris.Error
		if !errors.As(err, &e) {
			t.Errorf("%s: error %T is not a *qris.Error", tt.name, err)
			continue
		}
		if tt.tag != "" && e.Tag != tt.tag {
			t.Errorf("%s: Error.Tag = %q, want %q (%v)", tt.name, e.Tag, tt.tag, err)
		}
	}
}

// cut removes the root data object with tag from a payload body.
func cut(body, tag string) string {
	for i := 0; i+4 <= len(body); {
		n := int(body[i+2]-'0')*10 + int(body[i+3]-'0')
		if body[i:i+2] == tag {
			return body[:i] + body[i+4+n:]
		}
		i += 4 + n
	}
	return body
}

// Every single-character change before the CRC is caught: a CRC-16 finds
// every error burst of up to 16 bits.
func TestParseDetectsEverySubstitution(t *testing.T) {
	t.Parallel()
	dyn := vectors(t)["dynamic"]
	for i := 0; i < len(dyn)-8; i++ {
		for _, c := range []byte{'0', '9', 'A', 'Z', ' ', '.'} {
			if dyn[i] == c {
				continue
			}
			s := dyn[:i] + string(c) + dyn[i+1:]
			if _, err := qris.Parse(s); !errors.Is(err, qris.ErrBadCRC) {
				t.Fatalf("offset %d set to %q: Parse = %v, want ErrBadCRC", i, c, err)
			}
		}
	}
}

// Every proper prefix of a vector is refused, none with a panic.
func TestParseRejectsEveryPrefix(t *testing.T) {
	t.Parallel()
	for kind, p := range vectors(t) {
		for n := 0; n < len(p); n++ {
			if _, err := qris.Parse(p[:n]); err == nil {
				t.Errorf("%s: prefix of %d characters parsed", kind, n)
			}
		}
	}
}

func TestErrorMessages(t *testing.T) {
	t.Parallel()
	dyn := vectors(t)["dynamic"]
	_, err := qris.Parse(strings.Replace(dyn, "WARUNG", "WARUNH", 1))
	want := fmt.Sprintf("qris: tag 63: offset %d: CRC mismatch: payload says BC8A, content gives %04X",
		len(dyn)-4, qris.CRC16(strings.Replace(dyn, "WARUNG", "WARUNH", 1)[:len(dyn)-4]))
	if err == nil || err.Error() != want {
		t.Errorf("flipped character: %v\nwant %s", err, want)
	}
	body := bodyOf(dyn)
	_, err = qris.Parse(withCRC(strings.Replace(body, "5911WARUNG", "59A1WARUNG", 1)))
	at := strings.Index(body, "59A1") + 2
	if at < 2 {
		at = strings.Index(body, "5911WARUNG") + 2
	}
	if want := fmt.Sprintf(`qris: tag 59: offset %d: bad length: "A1" is not a length from 01 to 99`, at); err == nil || err.Error() != want {
		t.Errorf("bad length: %v\nwant %s", err, want)
	}
	_, err = qris.Parse(withCRC(strings.Replace(body, "52045812", "", 1)))
	if want := "qris: tag 52: required tag missing"; err == nil || err.Error() != want {
		t.Errorf("missing tag: %v\nwant %s", err, want)
	}
}

func TestParseAcceptsLowercaseCRC(t *testing.T) {
	t.Parallel()
	dyn := vectors(t)["dynamic"]
	lower := dyn[:len(dyn)-4] + strings.ToLower(dyn[len(dyn)-4:])
	p, err := qris.Parse(lower)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if enc, err := qris.Encode(p); err != nil || enc != dyn {
		t.Errorf("Encode = %q, %v; want the uppercase vector", enc, err)
	}
}

// validPayload is a dynamic payload like the vector's.
func validPayload() qris.Payload {
	return qris.Payload{
		PayloadFormat: "01", PointOfInitiation: qris.Dynamic,
		MerchantAccount: sandboxAccount, National: national,
		MCC: "5812", Currency: qris.CurrencyIDR, Amount: "25000", Country: qris.CountryID,
		MerchantName: "WARUNG MAJU", MerchantCity: "JAKARTA", PostalCode: "10110",
		AdditionalData: qris.AdditionalData{BillNumber: "INV-0001", TerminalLabel: "K01"},
	}
}

func TestEncodeMatchesVector(t *testing.T) {
	t.Parallel()
	got, err := qris.Encode(validPayload())
	if want := vectors(t)["dynamic"]; err != nil || got != want {
		t.Errorf("Encode = %q, %v\nwant %q", got, err, want)
	}
}

func TestEncodeRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*qris.Payload)
		want   error
		tag    string
	}{
		{"name of 26", func(p *qris.Payload) { p.MerchantName = strings.Repeat("N", 26) }, qris.ErrInvalidValue, "59"},
		{"city of 16", func(p *qris.Payload) { p.MerchantCity = strings.Repeat("C", 16) }, qris.ErrInvalidValue, "60"},
		{"no name", func(p *qris.Payload) { p.MerchantName = "" }, qris.ErrMissingTag, "59"},
		{"no MCC", func(p *qris.Payload) { p.MCC = "" }, qris.ErrMissingTag, "52"},
		{"no merchant account", func(p *qris.Payload) { p.MerchantAccount, p.National = qris.MerchantAccount{}, qris.MerchantAccount{} }, qris.ErrMissingTag, "26"},
		{"account without GUID", func(p *qris.Payload) { p.MerchantAccount.GUID = "" }, qris.ErrMissingTag, "26.00"},
		{"PAN with letters", func(p *qris.Payload) { p.MerchantAccount.PAN = "93600A" }, qris.ErrInvalidValue, "26.01"},
		{"point of initiation", func(p *qris.Payload) { p.PointOfInitiation = "13" }, qris.ErrInvalidValue, "01"},
		{"amount with comma", func(p *qris.Payload) { p.Amount = "25,000" }, qris.ErrInvalidValue, "54"},
		{"amount negative", func(p *qris.Payload) { p.Amount = "-5" }, qris.ErrInvalidValue, "54"},
		{"amount of 14", func(p *qris.Payload) { p.Amount = "12345678901234" }, qris.ErrInvalidValue, "54"},
		{"country lowercase", func(p *qris.Payload) { p.Country = "id" }, qris.ErrInvalidValue, "58"},
		{"non-ASCII name", func(p *qris.Payload) { p.MerchantName = "KAFÉ" }, qris.ErrCharset, "59"},
		{"value of 100", func(p *qris.Payload) { p.MerchantAccount.MerchantID = strings.Repeat("M", 100) }, qris.ErrInvalidValue, "26.02"},
		{"template over 99", func(p *qris.Payload) { p.MerchantAccount.MerchantID = strings.Repeat("M", 60) }, qris.ErrInvalidValue, "26"},
		{"typed tag in Other", func(p *qris.Payload) { p.Other = []qris.TLV{{"54", "1"}} }, qris.ErrInvalidValue, "54"},
		{"CRC in Other", func(p *qris.Payload) { p.Other = []qris.TLV{{"63", "ABCD"}} }, qris.ErrInvalidValue, "63"},
		{"Other out of order", func(p *qris.Payload) { p.Other = []qris.TLV{{"99", "A"}, {"80", "0001A"}} }, qris.ErrTagOrder, "80"},
		{"Other repeated", func(p *qris.Payload) { p.Other = []qris.TLV{{"99", "A"}, {"99", "B"}} }, qris.ErrTagOrder, "99"},
		{"Other empty value", func(p *qris.Payload) { p.Other = []qris.TLV{{"99", ""}} }, qris.ErrBadLength, "99"},
		{"Other bad tag", func(p *qris.Payload) { p.Other = []qris.TLV{{"9", "A"}} }, qris.ErrBadTag, ""},
		{"Other malformed template", func(p *qris.Payload) { p.Other = []qris.TLV{{"80", "0005AB"}} }, qris.ErrTruncated, "80.00"},
		{"sub Other typed", func(p *qris.Payload) { p.AdditionalData.Other = []qris.TLV{{"01", "X"}} }, qris.ErrInvalidValue, "62.01"},
		{"too long", func(p *qris.Payload) {
			p.Other = []qris.TLV{{"65", strings.Repeat("X", 99)}, {"66", strings.Repeat("X", 99)}, {"67", strings.Repeat("X", 99)}, {"68", strings.Repeat("X", 99)}}
		}, qris.ErrTooLong, ""},
	}
	for _, tt := range tests {
		p := validPayload()
		tt.change(&p)
		s, err := qris.Encode(p)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: Encode = %q, %v; want %v", tt.name, s, err, tt.want)
			continue
		}
		var e *qris.Error
		if !errors.As(err, &e) || e.Tag != tt.tag || e.Offset != -1 {
			t.Errorf("%s: error %#v, want a *qris.Error for tag %q without offset", tt.name, err, tt.tag)
		}
	}
}

// Unknown tags and subtags survive a round trip, in tag order.
func TestUnknownTagsRoundTrip(t *testing.T) {
	t.Parallel()
	p := validPayload()
	p.Other = []qris.TLV{
		{"04", "5204123412341234"},               // a card scheme's primitive merchant account
		{"27", "0010ID.CO.BANK0212ID0987654321"}, // another acquirer's template
		{"64", "0002ID0111WARUNG MAJU"},          // language template
		{"99", "0004TEST"},
	}
	p.MerchantAccount.Other = []qris.TLV{{"04", "EXTRA"}}
	p.AdditionalData.Other = []qris.TLV{{"10", "TAX123"}, {"50", "0004ABCD"}}
	p.TipIndicator = "01"
	enc, err := qris.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, piece := range []string{"0002010102120416520412341234", "5303360540525000550201", "0405EXTRA", "1006TAX1235008", "64210002ID", "99080004TEST6304"} {
		if !strings.Contains(enc, piece) {
			t.Errorf("Encode = %q, missing %q", enc, piece)
		}
	}
	got, err := qris.Parse(enc)
	if err != nil {
		t.Fatalf("Parse(%q): %v", enc, err)
	}
	p.CRC = enc[len(enc)-4:]
	if !reflect.DeepEqual(got, p) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, p)
	}
}

func TestAmounts(t *testing.T) {
	t.Parallel()
	for _, a := range []string{"1", "25000", "98.73", "0.5", "10000000.00", "9999999999999"} {
		p := validPayload()
		p.Amount = a
		enc, err := qris.Encode(p)
		if err != nil {
			t.Errorf("amount %q: %v", a, err)
			continue
		}
		if got, err := qris.Parse(enc); err != nil || got.Amount != a {
			t.Errorf("amount %q: Parse = %q, %v", a, got.Amount, err)
		}
	}
	for _, a := range []string{"0", "0.00", "1.", ".5", "1.234", "1e5", "+5", " 5", "25.000,00"} {
		p := validPayload()
		p.Amount = a
		if _, err := qris.Encode(p); !errors.Is(err, qris.ErrInvalidValue) {
			t.Errorf("amount %q: Encode error %v, want ErrInvalidValue", a, err)
		}
	}
}
