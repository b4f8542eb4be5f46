package snap

import (
	"errors"
	"testing"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
)

func TestFormatAmount(t *testing.T) {
	tests := []struct {
		in   models.Amount
		want string
		err  error
	}{
		{models.Rupiah(10000), "10000.00", nil},
		{models.Rupiah(97500), "97500.00", nil},
		{models.Amount(1_0050), "1.00", ErrAmountSubCent},
		{models.Amount(100), "0.01", nil},
		{models.Amount(12345_6700), "12345.67", nil},
		{models.Rupiah(250_000_000), "250000000.00", nil},
		{models.Amount(1), "", ErrAmountSubCent},
		{0, "", ErrAmountRange},
		{-models.Rupiah(1), "", ErrAmountRange},
		{models.MaxAmount, "", ErrAmountRange}, // 18 characters > String(16,2)
	}
	for _, tt := range tests {
		m, err := FormatAmount(tt.in)
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("FormatAmount(%d) = %+v, %v; want %v", tt.in, m, err, tt.err)
			}
			continue
		}
		if err != nil || m.Value != tt.want || m.Currency != "IDR" {
			t.Errorf("FormatAmount(%d) = %+v, %v; want %s IDR", tt.in, m, err, tt.want)
		}
	}
}

func TestParseAmount(t *testing.T) {
	good := map[string]models.Amount{
		"10000.00": models.Rupiah(10000), "0.01": 100, "0.00": 0, "97500.50": models.Amount(97500_5000),
		"9999999999999.99": models.Amount(9999999999999_9900),
	}
	for in, want := range good {
		if got, err := ParseAmount(Money{Value: in, Currency: "IDR"}); err != nil || got != want {
			t.Errorf("ParseAmount(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "10000", "10000.0", "10000.000", ".50", "1e5.00", "-1.00", "+1.00", " 1.00", "1.00 ", "1,000.00", "1.0a", "١.٠٠", "99999999999999.00", "NaN", "0x10.00", "1..00"} {
		if got, err := ParseAmount(Money{Value: in, Currency: "IDR"}); err == nil {
			t.Errorf("ParseAmount(%q) = %d, want an error", in, got)
		}
	}
	if _, err := ParseAmount(Money{Value: "1.00", Currency: "USD"}); !errors.Is(err, ErrAmountCurrency) {
		t.Errorf("USD accepted: %v", err)
	}
}

// What the adapter sends is byte for byte the minified body it hashes, in
// the documented field order.
func TestTransferRequestWire(t *testing.T) {
	raw, err := marshal(TransferRequest{
		PartnerReferenceNo: "disb-123", Amount: Money{"97500.00", "IDR"}, BeneficiaryAccountName: "SANDBOX 7890",
		BeneficiaryAccountNo: "1234567890", BeneficiaryBankCode: "014", SourceAccountNo: "8880001111",
		TransactionDate: katTimestamp, AdditionalInfo: map[string]any{"transferType": "BIFAST"},
	})
	if err != nil || string(raw) != katBody {
		t.Errorf("marshal = %s, %v\nwant %s", raw, err, katBody)
	}
}

func TestDecodeResponse(t *testing.T) {
	var r StatusResponse
	c, err := DecodeResponse(200, []byte(`{"responseCode":"2003600","responseMessage":"Successful","latestTransactionStatus":"00"}`), &r)
	if err != nil || c.Kind() != KindSuccess || c.Service != "36" || r.LatestTransactionStatus != "00" {
		t.Errorf("= %+v, %+v, %v", c, r, err)
	}
	for _, tt := range []struct {
		status int
		body   string
	}{
		{200, `{"responseCode":"4041801","responseMessage":"x"}`}, // code says 404, HTTP says 200
		{200, `{"responseCode":"200180","responseMessage":"x"}`},
		{200, `{"responseCode":"20018000"}`},
		{200, `{"responseCode":2001800}`},
		{200, `<html>bad gateway</html>`},
		{502, ``},
		{200, `{"responseCode":"abcdefg"}`},
		{200, `{"responseCode":"9991800"}`},
	} {
		if c, err := DecodeResponse(tt.status, []byte(tt.body), &r); err == nil {
			t.Errorf("DecodeResponse(%d, %s) = %+v, want an error", tt.status, tt.body, c)
		}
	}
}

func TestCodeTable(t *testing.T) {
	tests := map[string]Kind{
		"2001800": KindSuccess, "2021800": KindInProgress, "4001801": KindBadRequest, "4011800": KindUnauthorized,
		"4011801": KindTokenInvalid, "4011803": KindTokenInvalid, "4031814": KindInsufficientFunds,
		"4031818": KindInactive, "4041611": KindInvalidAccount, "4043601": KindTxNotFound,
		"4091800": KindDuplicateExternal, "4091801": KindDuplicateRef, "5001801": KindServerError,
		"5041800": KindTimeout, "4181800": KindUnknown, "2001801": KindUnknown,
		"4031800": KindExpired, "4031801": KindNotAllowed, "4031802": KindLimit, "4031805": KindDoNotHonor,
		"4031823": KindLimit,
	}
	for s, want := range tests {
		c, err := ParseCode(s)
		if err != nil || c.Kind() != want || c.String() != s {
			t.Errorf("%s: kind %v, %v; want %v", s, c.Kind(), err, want)
		}
	}
}

func FuzzParseAmount(f *testing.F) {
	for _, s := range []string{"10000.00", "0.01", "1.0", "-1.00", "9999999999999.99", "1e3.00", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAmount(Money{Value: s, Currency: "IDR"})
		if err != nil {
			return
		}
		if a < 0 || a > models.MaxAmount || a%100 != 0 {
			t.Fatalf("ParseAmount(%q) = %d", s, a)
		}
		if a == 0 {
			return
		}
		m, err := FormatAmount(a)
		if err != nil {
			t.Fatalf("FormatAmount(ParseAmount(%q)=%d): %v", s, a, err)
		}
		back, err := ParseAmount(m)
		if err != nil || back != a {
			t.Fatalf("round trip of %q: %s → %d, %v", s, m.Value, back, err)
		}
		// Canonical inputs (no leading zeros) come back byte for byte.
		if s[0] != '0' || s[1] == '.' {
			if m.Value != s {
				t.Fatalf("FormatAmount(ParseAmount(%q)) = %q", s, m.Value)
			}
		}
	})
}

func FuzzDecodeResponse(f *testing.F) {
	f.Add(200, []byte(`{"responseCode":"2003600","responseMessage":"Successful","latestTransactionStatus":"00","amount":{"value":"1.00","currency":"IDR"}}`))
	f.Add(404, []byte(`{"responseCode":"4043601","responseMessage":"Transaction Not Found"}`))
	f.Add(200, []byte(`{}`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		var r StatusResponse
		c, err := DecodeResponse(status, body, &r)
		if err != nil {
			return
		}
		if c.HTTP != status || len(c.String()) != 7 {
			t.Fatalf("accepted %s with HTTP %d", c, status)
		}
		if r.Amount != nil {
			_, _ = ParseAmount(*r.Amount)
		}
		_ = statusError(c)
	})
}

// Every 403 the table knows is the bank refusing the transfer: the payout
// fails (ErrRejected) instead of being chased with status inquiries as an
// unknown outcome; 5xx and unknown codes stay unavailable.
func TestSubmitErrorRejectsEvery403(t *testing.T) {
	for _, s := range []string{"4031800", "4031801", "4031802", "4031805", "4031809", "4031814", "4031815", "4031818", "4031823"} {
		c, _ := ParseCode(s)
		if err := submitError(c); !errors.Is(err, vendors.ErrRejected) {
			t.Errorf("%s: %v, want ErrRejected", s, err)
		}
	}
	for _, s := range []string{"5001800", "5041800", "4031899", "4181800"} {
		c, _ := ParseCode(s)
		if err := submitError(c); !errors.Is(err, vendors.ErrUnavailable) || errors.Is(err, vendors.ErrRejected) {
			t.Errorf("%s: %v, want ErrUnavailable only", s, err)
		}
	}
}
