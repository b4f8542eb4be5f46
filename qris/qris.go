// Package qris encodes and parses QRIS payloads: the text inside an
// Indonesian payment QR code, in EMVCo's merchant-presented mode.
//
// A payload is a sequence of data objects, each a two-digit ID (tag), a
// two-digit length (01-99) and a value; tags 26-51 (merchant account
// information) and 62 (additional data) are templates whose value is itself
// a sequence of data objects. The last data object is the CRC, tag 63: four
// uppercase hexadecimal digits of CRC-16/CCITT-FALSE computed over the whole
// payload up to and including "6304".
//
//	00 02 01                           payload format indicator
//	01 02 12                           point of initiation: 11 static, 12 dynamic
//	26 .. 00 ID.CO.SANDBOXPAY.WWW ...  the acquirer's merchant account
//	51 .. 00 ID.CO.QRIS.WWW 02 NMID    the QRIS national merchant id
//	52 04 5812                         merchant category code
//	53 03 360                          currency (IDR)
//	54 05 25000                        amount, dynamic QRIS only
//	58 02 ID  59 .. name  60 .. city  61 .. postal code
//	62 .. 01 bill number ...           additional data
//	63 04 BC8A                         CRC
//
// Encode writes the data objects in ascending tag order with the CRC last
// and Parse insists on the same order, so whatever Parse accepts Encode
// writes back byte for byte (unknown tags and subtags are kept, in order, in
// the Other fields). The one exception: Parse accepts a CRC in lowercase
// hexadecimal and Encode always writes uppercase. Both apply the same rules
// (see Payload), so a payload that parses always encodes.
//
// Values are printable ASCII, the EMVCo "ans" character set; payloads with
// UTF-8 in the merchant information language template (64) are refused.
package qris

import (
	"fmt"
	"slices"
	"strings"
)

// MaxLen is the longest payload EMVCo allows, in characters.
const MaxLen = 512

// Values of the fields QRIS fixes.
const (
	PayloadFormatV1 = "01"             // tag 00
	Static          = "11"             // tag 01: the same QR for every payment, payer enters the amount
	Dynamic         = "12"             // tag 01: one QR for one payment, with its amount
	NationalGUID    = "ID.CO.QRIS.WWW" // tag 51 subtag 00
	CurrencyIDR     = "360"            // tag 53, ISO 4217 numeric
	CountryID       = "ID"             // tag 58, ISO 3166-1 alpha-2
)

// Payload is a QRIS payload's content. Empty strings are absent data
// objects; a template with no field set is absent.
//
// Parse and Encode enforce: PayloadFormat "01"; PointOfInitiation absent,
// "11" or "12"; at least one merchant account information (tags 02-51);
// MCC 4 digits; Currency 3 digits; Amount a plain decimal greater than zero
// of at most 13 characters, no thousands separators, "." and 1 or 2
// decimals only when needed ("25000", "98.73"); TipIndicator absent, "01",
// "02" or "03"; Country 2 uppercase letters; MerchantName 1-25 characters;
// MerchantCity 1-15; PostalCode at most 10; every value at most 99
// characters of printable ASCII.
type Payload struct {
	PayloadFormat     string          // 00, "01"
	PointOfInitiation string          // 01, Static or Dynamic; optional
	MerchantAccount   MerchantAccount // 26, the acquirer's template
	National          MerchantAccount // 51, QRIS: GUID NationalGUID, MerchantID the NMID
	MCC               string          // 52, merchant category code, e.g. "5812"
	Currency          string          // 53, "360" for IDR
	// Amount (54) as QRIS writes it: "25000" (IDR has no minor unit in
	// QRIS), or with "." and up to 2 decimals. Absent in static QRIS.
	Amount                string
	TipIndicator          string         // 55: "01" payer enters a tip, "02" fixed fee, "03" percentage fee
	ConvenienceFeeFixed   string         // 56, with TipIndicator "02"
	ConvenienceFeePercent string         // 57, with TipIndicator "03"
	Country               string         // 58, "ID"
	MerchantName          string         // 59, at most 25 characters
	MerchantCity          string         // 60, at most 15 characters
	PostalCode            string         // 61, at most 10 characters
	AdditionalData        AdditionalData // 62
	// CRC (63) as Parse read it. Encode ignores it and computes the CRC.
	CRC string
	// Other holds the data objects of any other tag, in ascending order, as
	// written (a template's value is its encoded data objects): tags 02-25
	// and 27-50 (other merchant account information), 64, 65-99.
	Other []TLV
}

// MerchantAccount is a merchant account information template (tags 26-51).
type MerchantAccount struct {
	GUID       string // 00, the acquirer's reverse domain name, e.g. "ID.CO.QRIS.WWW"; at most 32
	PAN        string // 01, merchant PAN, digits, at most 19 (936... for QRIS)
	MerchantID string // 02, merchant id; in tag 51 the NMID
	Criteria   string // 03, merchant criteria: UMI, UKE, UME, UBE or URE
	Other      []TLV  // other subtags, ascending
}

// AdditionalData is the additional data field template (tag 62). Each
// value is at most 25 characters, ConsumerDataRequest at most 3.
type AdditionalData struct {
	BillNumber          string // 01, invoice or bill number
	MobileNumber        string // 02
	StoreLabel          string // 03
	LoyaltyNumber       string // 04
	ReferenceLabel      string // 05
	CustomerLabel       string // 06
	TerminalLabel       string // 07
	Purpose             string // 08, purpose of transaction
	ConsumerDataRequest string // 09, e.g. "AME"
	Other               []TLV  // other subtags (10-99), ascending
}

// IsDynamic reports whether the payload is for one payment (tag 01 "12").
func (p Payload) IsDynamic() bool { return p.PointOfInitiation == Dynamic }

// NMID is the QRIS national merchant id (tag 51 subtag 02).
func (p Payload) NMID() string { return p.National.MerchantID }

func (m MerchantAccount) fields() []TLV {
	return []TLV{{"00", m.GUID}, {"01", m.PAN}, {"02", m.MerchantID}, {"03", m.Criteria}}
}

func (a AdditionalData) fields() []TLV {
	return []TLV{
		{"01", a.BillNumber}, {"02", a.MobileNumber}, {"03", a.StoreLabel},
		{"04", a.LoyaltyNumber}, {"05", a.ReferenceLabel}, {"06", a.CustomerLabel},
		{"07", a.TerminalLabel}, {"08", a.Purpose}, {"09", a.ConsumerDataRequest},
	}
}

// fields lists the typed root data objects other than templates, in tag order.
func (p Payload) fields() []TLV {
	return []TLV{
		{"00", p.PayloadFormat}, {"01", p.PointOfInitiation},
		{"52", p.MCC}, {"53", p.Currency}, {"54", p.Amount}, {"55", p.TipIndicator},
		{"56", p.ConvenienceFeeFixed}, {"57", p.ConvenienceFeePercent}, {"58", p.Country},
		{"59", p.MerchantName}, {"60", p.MerchantCity}, {"61", p.PostalCode},
	}
}

// Encode writes p as a payload: its data objects in ascending tag order,
// then "6304" and the CRC in 4 uppercase hex digits. It refuses a payload
// that breaks the rules of Payload with an *Error.
func Encode(p Payload) (string, error) {
	objs, err := p.objects()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, o := range objs {
		fmt.Fprintf(&b, "%s%02d%s", o.Tag, len(o.Value), o.Value)
	}
	b.WriteString("6304")
	s := b.String()
	s += fmt.Sprintf("%04X", CRC16(s))
	if len(s) > MaxLen {
		return "", errTag(ErrTooLong, "", fmt.Sprintf("%d characters", len(s)))
	}
	return s, nil
}

// objects checks p and returns its root data objects but the CRC, sorted.
func (p Payload) objects() ([]TLV, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	typed := map[string]bool{"26": true, "51": true, "62": true, "63": true}
	var objs []TLV
	for _, f := range p.fields() {
		typed[f.Tag] = true
		if f.Value != "" {
			objs = append(objs, f)
		}
	}
	templates := []struct {
		tag    string
		fields []TLV
		other  []TLV
	}{
		{"26", p.MerchantAccount.fields(), p.MerchantAccount.Other},
		{"51", p.National.fields(), p.National.Other},
		{"62", p.AdditionalData.fields(), p.AdditionalData.Other},
	}
	for _, t := range templates {
		v, err := encodeTemplate(t.tag, t.fields, t.other)
		if err != nil {
			return nil, err
		}
		if v != "" {
			objs = append(objs, TLV{t.tag, v})
		}
	}
	others, err := checkOther("", p.Other, typed)
	if err != nil {
		return nil, err
	}
	for _, o := range others {
		if isTemplate(o.Tag) {
			if _, err := splitTemplate(field{TLV: o, Offset: -4}, ""); err != nil {
				return nil, noOffset(err)
			}
		}
	}
	objs = append(objs, others...)
	slices.SortStableFunc(objs, func(a, b TLV) int { return strings.Compare(a.Tag, b.Tag) })
	for _, o := range objs {
		if err := checkValue(o.Tag, o.Value); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// encodeTemplate writes a template's set fields and its other subtags in
// ascending order; "" when nothing is set.
func encodeTemplate(tag string, fields, other []TLV) (string, error) {
	typed := map[string]bool{}
	var subs []TLV
	for _, f := range fields {
		typed[f.Tag] = true
		if f.Value != "" {
			subs = append(subs, f)
		}
	}
	others, err := checkOther(tag, other, typed)
	if err != nil {
		return "", err
	}
	subs = append(subs, others...)
	slices.SortStableFunc(subs, func(a, b TLV) int { return strings.Compare(a.Tag, b.Tag) })
	var b strings.Builder
	for _, s := range subs {
		if err := checkValue(joinTag(tag, s.Tag), s.Value); err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s%02d%s", s.Tag, len(s.Value), s.Value)
	}
	return b.String(), nil
}

// checkOther checks the Other data objects of a template (parent "" is the
// root): two-digit tags that no typed field owns, ascending, non-empty.
func checkOther(parent string, other []TLV, typed map[string]bool) ([]TLV, error) {
	for i, o := range other {
		path := joinTag(parent, o.Tag)
		switch {
		case len(o.Tag) != 2 || !isDigits(o.Tag):
			return nil, errTag(ErrBadTag, parent, fmt.Sprintf("%q in Other is not two digits", o.Tag))
		case typed[o.Tag]:
			return nil, errTag(ErrInvalidValue, path, "tag has its own field; it cannot be in Other")
		case o.Value == "":
			return nil, errTag(ErrBadLength, path, "empty value in Other")
		case i > 0 && o.Tag <= other[i-1].Tag:
			return nil, errTag(ErrTagOrder, path, "Other must list tags in ascending order, each once")
		}
	}
	return other, nil
}

// checkValue: at most 99 characters of printable ASCII.
func checkValue(tag, v string) error {
	if len(v) > 99 {
		return errTag(ErrInvalidValue, tag, fmt.Sprintf("%d characters; a value holds at most 99", len(v)))
	}
	if i := badChar(v); i >= 0 {
		return errTag(ErrCharset, tag, fmt.Sprintf("%q at position %d", v[i], i))
	}
	return nil
}

func noOffset(err error) error {
	if e, ok := err.(*Error); ok {
		c := *e
		c.Offset = -1
		return &c
	}
	return err
}
