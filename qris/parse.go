package qris

import (
	"fmt"
	"strconv"
	"strings"
)

// Parse reads a payload and checks it: printable ASCII of at most MaxLen
// characters; well-formed data objects (ErrTruncated, ErrBadTag,
// ErrBadLength); tag 63 last with 4 hex digits (ErrCRCFormat) and the right
// CRC (ErrBadCRC); tags ascending, none repeated (ErrTagOrder); the
// mandatory tags 00, a merchant account (02-51), 52, 53, 58, 59, 60 and 63
// (ErrMissingTag); and the rules of Payload (ErrInvalidValue). Errors are
// *Error values that say where.
//
// The CRC is checked before the structure when the payload ends in
// "6304" and 4 characters, so a misread or altered character anywhere
// (a CRC detects every single-character change) reports ErrBadCRC.
func Parse(s string) (Payload, error) {
	if len(s) > MaxLen {
		return Payload{}, errAt(ErrTooLong, "", MaxLen, fmt.Sprintf("%d characters", len(s)))
	}
	if i := badChar(s); i >= 0 {
		return Payload{}, errAt(ErrCharset, "", i, fmt.Sprintf("byte 0x%02X", s[i]))
	}
	tail := len(s) >= 8 && s[len(s)-8:len(s)-4] == "6304"
	if tail {
		if err := checkCRC(s); err != nil {
			return Payload{}, err
		}
	}
	fields, err := split(s, 0, "")
	if err != nil {
		return Payload{}, err
	}
	if len(fields) == 0 {
		return Payload{}, errAt(ErrTruncated, "", 0, "empty payload")
	}
	last := fields[len(fields)-1]
	body := fields[:len(fields)-1]
	for _, f := range body {
		if f.Tag == "63" {
			return Payload{}, errAt(ErrCRCFormat, "63", f.Offset, "tag 63 is not the last data object")
		}
	}
	switch {
	case last.Tag != "63":
		return Payload{}, errAt(ErrMissingTag, "63", len(s), "the payload ends without a CRC")
	case !tail:
		return Payload{}, errAt(ErrCRCFormat, "63", last.Offset, fmt.Sprintf("length %d, want 04", len(last.Value)))
	}
	if err := checkOrder(body, ""); err != nil {
		return Payload{}, err
	}
	p, err := decode(body)
	if err != nil {
		return Payload{}, err
	}
	p.CRC = last.Value
	if _, err := p.objects(); err != nil {
		return Payload{}, locate(err, body)
	}
	return p, nil
}

// checkCRC compares the 4 hex digits at the end of s with the CRC of the rest.
func checkCRC(s string) error {
	got := s[len(s)-4:]
	if !isHex4(got) {
		return errAt(ErrCRCFormat, "63", len(s)-4, fmt.Sprintf("%q is not 4 hex digits", got))
	}
	v, _ := strconv.ParseUint(got, 16, 16)
	if want := CRC16(s[:len(s)-4]); uint16(v) != want {
		return errAt(ErrBadCRC, "63", len(s)-4, fmt.Sprintf("payload says %s, content gives %04X", strings.ToUpper(got), want))
	}
	return nil
}

// decode fills a Payload from the root data objects but the CRC.
func decode(body []field) (Payload, error) {
	var p Payload
	targets := map[string]*string{
		"00": &p.PayloadFormat, "01": &p.PointOfInitiation, "52": &p.MCC, "53": &p.Currency,
		"54": &p.Amount, "55": &p.TipIndicator, "56": &p.ConvenienceFeeFixed,
		"57": &p.ConvenienceFeePercent, "58": &p.Country, "59": &p.MerchantName,
		"60": &p.MerchantCity, "61": &p.PostalCode,
	}
	for _, f := range body {
		var err error
		switch dst, ok := targets[f.Tag]; {
		case ok:
			*dst = f.Value
		case f.Tag == "26":
			p.MerchantAccount, err = decodeAccount(f)
		case f.Tag == "51":
			p.National, err = decodeAccount(f)
		case f.Tag == "62":
			p.AdditionalData, err = decodeAdditionalData(f)
		default:
			if isTemplate(f.Tag) {
				_, err = splitTemplate(f, "")
			}
			p.Other = append(p.Other, f.TLV)
		}
		if err != nil {
			return Payload{}, err
		}
	}
	return p, nil
}

func decodeAccount(f field) (MerchantAccount, error) {
	subs, err := splitTemplate(f, "")
	if err != nil {
		return MerchantAccount{}, err
	}
	var m MerchantAccount
	for _, s := range subs {
		switch s.Tag {
		case "00":
			m.GUID = s.Value
		case "01":
			m.PAN = s.Value
		case "02":
			m.MerchantID = s.Value
		case "03":
			m.Criteria = s.Value
		default:
			m.Other = append(m.Other, s.TLV)
		}
	}
	return m, nil
}

func decodeAdditionalData(f field) (AdditionalData, error) {
	subs, err := splitTemplate(f, "")
	if err != nil {
		return AdditionalData{}, err
	}
	var a AdditionalData
	targets := map[string]*string{
		"01": &a.BillNumber, "02": &a.MobileNumber, "03": &a.StoreLabel,
		"04": &a.LoyaltyNumber, "05": &a.ReferenceLabel, "06": &a.CustomerLabel,
		"07": &a.TerminalLabel, "08": &a.Purpose, "09": &a.ConsumerDataRequest,
	}
	for _, s := range subs {
		if dst, ok := targets[s.Tag]; ok {
			*dst = s.Value
		} else {
			a.Other = append(a.Other, s.TLV)
		}
	}
	return a, nil
}

// locate gives a rule's error the offset of the data object it names.
func locate(err error, body []field) error {
	e, ok := err.(*Error)
	if !ok || e.Offset >= 0 || len(e.Tag) < 2 {
		return err
	}
	for _, f := range body {
		if f.Tag == e.Tag[:2] {
			c := *e
			c.Offset = f.Offset
			return &c
		}
	}
	return err
}
