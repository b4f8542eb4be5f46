package qris

import (
	"fmt"
	"regexp"
	"strings"
)

// amountSyntax: digits, optionally "." and 1 or 2 decimals; no sign, no
// exponent, no thousands separators.
var amountSyntax = regexp.MustCompile(`^[0-9]+(\.[0-9]{1,2})?$`)

// percentSyntax: a convenience fee percentage such as "2" or "2.5".
var percentSyntax = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

// check applies the rules of Payload (documented there) to the typed fields.
func (p Payload) check() error {
	checks := []func() error{
		func() error { return oneOf("00", p.PayloadFormat, true, PayloadFormatV1) },
		func() error { return oneOf("01", p.PointOfInitiation, false, Static, Dynamic) },
		func() error { return checkAccount("26", p.MerchantAccount) },
		func() error { return checkAccount("51", p.National) },
		p.checkHasAccount,
		func() error { return digits("52", p.MCC, 4) },
		func() error { return digits("53", p.Currency, 3) },
		func() error { return amount("54", p.Amount) },
		func() error { return oneOf("55", p.TipIndicator, false, "01", "02", "03") },
		func() error { return amount("56", p.ConvenienceFeeFixed) },
		func() error { return pattern("57", p.ConvenienceFeePercent, percentSyntax, 5) },
		p.checkCountry,
		func() error { return text("59", p.MerchantName, true, 25) },
		func() error { return text("60", p.MerchantCity, true, 15) },
		func() error { return text("61", p.PostalCode, false, 10) },
		p.checkAdditionalData,
	}
	for _, c := range checks {
		if err := c(); err != nil {
			return err
		}
	}
	return nil
}

func (p Payload) checkHasAccount() error {
	if !p.MerchantAccount.empty() || !p.National.empty() {
		return nil
	}
	for _, o := range p.Other {
		if "02" <= o.Tag && o.Tag <= "51" {
			return nil
		}
	}
	return errTag(ErrMissingTag, "26", "no merchant account information (tags 02-51)")
}

func (p Payload) checkCountry() error {
	if p.Country == "" {
		return errTag(ErrMissingTag, "58", "country code")
	}
	if len(p.Country) != 2 || strings.Trim(p.Country, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
		return errTag(ErrInvalidValue, "58", fmt.Sprintf("country %q is not two uppercase letters", p.Country))
	}
	return nil
}

func (p Payload) checkAdditionalData() error {
	for _, f := range p.AdditionalData.fields() {
		limit := 25
		if f.Tag == "09" {
			limit = 3
		}
		if err := text("62."+f.Tag, f.Value, false, limit); err != nil {
			return err
		}
	}
	return nil
}

func (m MerchantAccount) empty() bool {
	return m.GUID == "" && m.PAN == "" && m.MerchantID == "" && m.Criteria == "" && len(m.Other) == 0
}

// checkAccount: a present template has a GUID of at most 32 characters and
// a PAN, if any, of at most 19 digits.
func checkAccount(tag string, m MerchantAccount) error {
	if m.empty() {
		return nil
	}
	if err := text(tag+".00", m.GUID, true, 32); err != nil {
		return err
	}
	if m.PAN != "" {
		if len(m.PAN) > 19 || !isDigits(m.PAN) {
			return errTag(ErrInvalidValue, tag+".01", fmt.Sprintf("merchant PAN %q is not at most 19 digits", m.PAN))
		}
	}
	return nil
}

func oneOf(tag, v string, required bool, allowed ...string) error {
	if v == "" {
		if required {
			return errTag(ErrMissingTag, tag, "")
		}
		return nil
	}
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return errTag(ErrInvalidValue, tag, fmt.Sprintf("%q is not one of %s", v, strings.Join(allowed, ", ")))
}

func digits(tag, v string, n int) error {
	if v == "" {
		return errTag(ErrMissingTag, tag, "")
	}
	if len(v) != n || !isDigits(v) {
		return errTag(ErrInvalidValue, tag, fmt.Sprintf("%q is not %d digits", v, n))
	}
	return nil
}

func amount(tag, v string) error {
	if err := pattern(tag, v, amountSyntax, 13); err != nil || v == "" {
		return err
	}
	if strings.Trim(v, "0.") == "" {
		return errTag(ErrInvalidValue, tag, fmt.Sprintf("amount %q is not greater than zero", v))
	}
	return nil
}

func pattern(tag, v string, re *regexp.Regexp, limit int) error {
	if v == "" {
		return nil
	}
	if len(v) > limit || !re.MatchString(v) {
		return errTag(ErrInvalidValue, tag,
			fmt.Sprintf("%q is not a plain decimal of at most %d characters", v, limit))
	}
	return nil
}

func text(tag, v string, required bool, limit int) error {
	if v == "" {
		if required {
			return errTag(ErrMissingTag, tag, "")
		}
		return nil
	}
	if len(v) > limit {
		return errTag(ErrInvalidValue, tag, fmt.Sprintf("%d characters; at most %d allowed", len(v), limit))
	}
	return nil
}
