package sandboxacquirer_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/qris"
	"github.com/payoutd/payoutd/signature"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandboxacquirer"
)

const secret = "5f1c0e0a8a6b4b1e9d2c7f3a6e5d4c3b2a1908f7e6d5c4b3a291807f6e5d4c3b"

var (
	clock     = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	paymentID = uuid.MustParse("3f2504e0-4f89-41d3-9a0c-0305e82c3301")
)

func newAcquirer(t *testing.T, o sandboxacquirer.Options) *sandboxacquirer.Acquirer {
	t.Helper()
	if o.Secret == "" {
		o.Secret = secret
	}
	o.Now = func() time.Time { return clock }
	a, err := sandboxacquirer.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func request() vendors.QRRequest {
	return vendors.QRRequest{
		PaymentID: paymentID, Amount: models.Rupiah(25000),
		MerchantName: "Warung Maju", MerchantCity: "Jakarta", ExpiresAt: clock.Add(15 * time.Minute),
	}
}

func TestDynamicQR(t *testing.T) {
	t.Parallel()
	a := newAcquirer(t, sandboxacquirer.Options{PostalCode: "10110", TerminalLabel: "K01"})
	if a.Name() != "sandboxpay" {
		t.Errorf("Name = %q", a.Name())
	}
	s, err := a.DynamicQR(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	p, err := qris.Parse(s)
	if err != nil {
		t.Fatalf("qris.Parse(%q): %v", s, err)
	}
	want := qris.Payload{
		PayloadFormat: "01", PointOfInitiation: "12",
		MerchantAccount: qris.MerchantAccount{GUID: "ID.CO.SANDBOXPAY.WWW", PAN: "936000000000000001", MerchantID: "MCH0000001", Criteria: "UMI"},
		National:        qris.MerchantAccount{GUID: "ID.CO.QRIS.WWW", MerchantID: "ID1020000000001", Criteria: "UMI"},
		MCC:             "5812", Currency: "360", Amount: "25000", Country: "ID",
		MerchantName: "WARUNG MAJU", MerchantCity: "JAKARTA", PostalCode: "10110",
		AdditionalData: qris.AdditionalData{BillNumber: "3F2504E0", TerminalLabel: "K01"},
		CRC:            s[len(s)-4:],
	}
	if !equalPayload(p, want) {
		t.Errorf("DynamicQR payload:\n got %+v\nwant %+v", p, want)
	}
	// The sandbox's merchant is the one of the QRIS test vectors: only the
	// bill number and the CRC differ from the dynamic vector.
	vector := "00020101021226670020ID.CO.SANDBOXPAY.WWW01189360000000000000010210MCH00000010303UMI51440014ID.CO.QRIS.WWW0215ID10200000000010303UMI5204581253033605405250005802ID5911WARUNG MAJU6007JAKARTA61051011062190108INV-00010703K016304BC8A"
	if got := strings.Replace(s[:len(s)-4], "3F2504E0", "INV-0001", 1); got != vector[:len(vector)-4] {
		t.Errorf("DynamicQR = %q\nvector     %q", s, vector)
	}
	again, err := a.DynamicQR(context.Background(), request())
	if err != nil || again != s {
		t.Errorf("second DynamicQR = %q, %v; want the same payload", again, err)
	}
}

func equalPayload(a, b qris.Payload) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func TestDynamicQRAmounts(t *testing.T) {
	t.Parallel()
	a := newAcquirer(t, sandboxacquirer.Options{})
	for _, tt := range []struct {
		amount models.Amount
		want   string
	}{
		{models.Rupiah(1), "1"},
		{models.Rupiah(10_000_000), "10000000"},
		{models.Rupiah(9_999_999_999_999), "9999999999999"},
	} {
		r := request()
		r.Amount = tt.amount
		s, err := a.DynamicQR(context.Background(), r)
		if err != nil {
			t.Errorf("amount %s: %v", tt.amount, err)
			continue
		}
		if p, err := qris.Parse(s); err != nil || p.Amount != tt.want {
			t.Errorf("amount %s: tag 54 %q, %v; want %q", tt.amount, p.Amount, err, tt.want)
		}
	}
}

func TestDynamicQRSanitises(t *testing.T) {
	t.Parallel()
	a := newAcquirer(t, sandboxacquirer.Options{})
	tests := []struct{ name, city, wantName, wantCity string }{
		{"Warung Makan Sederhana Bu Siti Jaya Abadi", "Kota Administrasi Jakarta Selatan", "WARUNG MAKAN SEDERHANA BU", "KOTA ADMINISTRA"},
		{"  Café   Señor\tÑoño ", "Bandung\n", "CAFE SENOR NONO", "BANDUNG"},
		{"咖啡 Kopi ☕ Susu", "", "KOPI SUSU", "JAKARTA"},
		{"ABCDEFGHIJKLMNOPQRSTUVWX YZ", "日本", "ABCDEFGHIJKLMNOPQRSTUVWX", "JAKARTA"},
		{"Toko \"A&B\" 24/7", "Yogyakarta", "TOKO \"A&B\" 24/7", "YOGYAKARTA"},
		{"咖啡店", "Jakarta", "MERCHANT", "JAKARTA"}, // nothing QRIS carries: the default name
		{" ", "", "MERCHANT", "JAKARTA"},
	}
	for _, tt := range tests {
		r := request()
		r.MerchantName, r.MerchantCity = tt.name, tt.city
		s, err := a.DynamicQR(context.Background(), r)
		if err != nil {
			t.Errorf("%q: %v", tt.name, err)
			continue
		}
		p, err := qris.Parse(s)
		if err != nil || p.MerchantName != tt.wantName || p.MerchantCity != tt.wantCity {
			t.Errorf("%q, %q: name %q city %q (%v); want %q, %q", tt.name, tt.city, p.MerchantName, p.MerchantCity, err, tt.wantName, tt.wantCity)
		}
	}
}

func TestSanitize(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in    string
		limit int
		want  string
	}{
		{"warung maju", 25, "WARUNG MAJU"},
		{"Škoda Łódź", 25, "SKODA LODZ"},
		{"a\u00a0b", 25, "A B"},
		{"😀", 25, ""},
		{"", 25, ""},
		{"abc def", 4, "ABC"},
		{"abc", 0, ""},
	} {
		if got := sandboxacquirer.Sanitize(tt.in, tt.limit); got != tt.want {
			t.Errorf("Sanitize(%q, %d) = %q, want %q", tt.in, tt.limit, got, tt.want)
		}
	}
}

func TestDynamicQRRefuses(t *testing.T) {
	t.Parallel()
	a := newAcquirer(t, sandboxacquirer.Options{})
	tests := []struct {
		name   string
		change func(*vendors.QRRequest)
		msg    string
	}{
		{"fraction of a rupiah", func(r *vendors.QRRequest) { r.Amount = models.Rupiah(25000) + 5000 }, "amount 25000.5 has a fraction of a rupiah; QRIS carries whole rupiah"},
		{"one ten-thousandth", func(r *vendors.QRRequest) { r.Amount = 1 }, "fraction of a rupiah"},
		{"zero", func(r *vendors.QRRequest) { r.Amount = 0 }, "not greater than zero"},
		{"negative", func(r *vendors.QRRequest) { r.Amount = models.Rupiah(-1) }, "not greater than zero"},
		{"beyond 13 digits", func(r *vendors.QRRequest) { r.Amount = models.Rupiah(10_000_000_000_000) }, "above the 9999999999999"},
		{"no payment id", func(r *vendors.QRRequest) { r.PaymentID = uuid.Nil }, "payment id is missing"},
	}
	for _, tt := range tests {
		r := request()
		tt.change(&r)
		s, err := a.DynamicQR(context.Background(), r)
		if !errors.Is(err, vendors.ErrInvalidQRRequest) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: DynamicQR = %q, %v; want ErrInvalidQRRequest saying %q", tt.name, s, err, tt.msg)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := a.DynamicQR(ctx, request()); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	t.Parallel()
	for _, o := range []sandboxacquirer.Options{
		{},
		{Secret: secret, MCC: "58"},
		{Secret: secret, MerchantPAN: "93600A"},
		{Secret: secret, NMID: strings.Repeat("N", 90)},
		{Secret: secret, PostalCode: "12345678901"},
	} {
		if _, err := sandboxacquirer.New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
	a, err := sandboxacquirer.New(sandboxacquirer.Options{Secret: secret, MCC: "5411", NMID: "ID1234567890123", AcquirerDomain: "ID.CO.OTHER.WWW", DefaultCity: "surabaya"})
	if err != nil {
		t.Fatal(err)
	}
	r := request()
	r.MerchantCity = ""
	s, err := a.DynamicQR(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	p, err := qris.Parse(s)
	if err != nil || p.MCC != "5411" || p.NMID() != "ID1234567890123" || p.MerchantAccount.GUID != "ID.CO.OTHER.WWW" || p.MerchantCity != "SURABAYA" {
		t.Errorf("configured payload %+v, %v", p, err)
	}
}

var rrnSyntax = regexp.MustCompile(`^[0-9]{12}$`)

func TestCallbackRoundTrip(t *testing.T) {
	t.Parallel()
	a := newAcquirer(t, sandboxacquirer.Options{})
	paidAt := clock.Add(-30 * time.Second)
	tests := []vendors.AcquirerResult{
		{PaymentID: paymentID, Status: "SUCCESS", RetrievalReferenceNo: "612310000042", PaidAt: paidAt},
		{PaymentID: paymentID, Status: "FAILED", FailureReason: "payer's bank declined"},
		{PaymentID: paymentID, Status: "FAILED"},
	}
	for _, want := range tests {
		h, body := a.SignCallback(want)
		if h.Get("Content-Type") != "application/json" {
			t.Errorf("Content-Type %q", h.Get("Content-Type"))
		}
		if sig := h.Get("x-acquirer-signature"); !regexp.MustCompile(`^t=1795341600000,v1=[0-9a-f]{64}$`).MatchString(sig) {
			t.Errorf("signature header %q", sig)
		}
		got, err := a.ParseCallback(h, body, clock.Add(time.Second))
		if err != nil || got != want {
			t.Errorf("ParseCallback(%s) = %+v, %v; want %+v", body, got, err, want)
		}
	}
	// The body has exactly the five fields, paid_at null unless paid.
	_, body := a.SignCallback(tests[1])
	var fields map[string]any
	if err := json.Unmarshal(body, &fields); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"payment_id": paymentID.String(), "status": "FAILED", "retrieval_reference_no": "",
		"paid_at": nil, "failure_reason": "payer's bank declined"}
	if len(fields) != len(want) {
		t.Errorf("body %s, want the fields %v", body, want)
	}
	for k, v := range want {
		if fields[k] != v {
			t.Errorf("body %s: %s = %v, want %v", body, k, fields[k], v)
		}
	}
	_, body = a.SignCallback(tests[0])
	if !strings.Contains(string(body), `"paid_at":"2026-11-22T09:59:30Z"`) {
		t.Errorf("paid_at not RFC 3339 UTC: %s", body)
	}
}

func TestSignCallbackFillsSuccess(t *testing.T) {
	t.Parallel()
	a := newAcquirer(t, sandboxacquirer.Options{})
	h, body := a.SignCallback(vendors.AcquirerResult{PaymentID: paymentID, Status: vendors.PaymentSuccess})
	got, err := a.ParseCallback(h, body, clock)
	if err != nil {
		t.Fatal(err)
	}
	if !rrnSyntax.MatchString(got.RetrievalReferenceNo) || !got.PaidAt.Equal(clock) || got.Status != "SUCCESS" {
		t.Errorf("filled callback %+v", got)
	}
}

func TestParseCallbackRefuses(t *testing.T) {
	t.Parallel()
	a := newAcquirer(t, sandboxacquirer.Options{})
	h, body := a.SignCallback(vendors.AcquirerResult{PaymentID: paymentID, Status: "SUCCESS", RetrievalReferenceNo: "612310000042", PaidAt: clock})
	tampered := []byte(strings.Replace(string(body), "612310000042", "612310000043", 1))
	other := newAcquirer(t, sandboxacquirer.Options{Secret: strings.Repeat("0", 64)})
	otherH, otherBody := other.SignCallback(vendors.AcquirerResult{PaymentID: paymentID, Status: "FAILED"})
	upper := h.Clone()
	ts, v1, _ := strings.Cut(h.Get("x-acquirer-signature"), ",v1=")
	upper.Set("x-acquirer-signature", ts+",v1="+strings.ToUpper(v1))
	invalid := []struct {
		name   string
		header http.Header
		body   []byte
		now    time.Time
	}{
		{"tampered body", h, tampered, clock},
		{"stale", h, body, clock.Add(5*time.Minute + time.Millisecond)},
		{"from the future", h, body, clock.Add(-6 * time.Minute)},
		{"no signature", http.Header{}, body, clock},
		{"another secret", otherH, otherBody, clock},
		{"malformed header", http.Header{"X-Acquirer-Signature": {"v1=abc"}}, body, clock},
		{"uppercase hex", upper, body, clock},
	}
	for _, tt := range invalid {
		if r, err := a.ParseCallback(tt.header, tt.body, tt.now); !errors.Is(err, vendors.ErrInvalidCallback) {
			t.Errorf("%s: ParseCallback = %+v, %v; want ErrInvalidCallback", tt.name, r, err)
		}
	}
	if _, err := a.ParseCallback(h, body, clock.Add(4*time.Minute)); err != nil {
		t.Errorf("4 minutes late: %v", err)
	}

	// Correctly signed bodies that are not notifications: plain errors.
	for _, b := range []string{
		`not json`,
		`{"payment_id":"` + paymentID.String() + `","status":"PENDING","retrieval_reference_no":"","paid_at":null,"failure_reason":""}`,
		`{"payment_id":"nope","status":"FAILED","retrieval_reference_no":"","paid_at":null,"failure_reason":""}`,
		`{"payment_id":"` + paymentID.String() + `","status":"SUCCESS","retrieval_reference_no":"","paid_at":"2026-11-22T10:00:00Z","failure_reason":""}`,
		`{"payment_id":"` + paymentID.String() + `","status":"SUCCESS","retrieval_reference_no":"12345","paid_at":"2026-11-22T10:00:00Z","failure_reason":""}`,
		`{"payment_id":"` + paymentID.String() + `","status":"SUCCESS","retrieval_reference_no":"612310000042","paid_at":null,"failure_reason":""}`,
		`{"payment_id":"` + paymentID.String() + `","status":"FAILED","extra":1}`,
		`{"payment_id":"` + paymentID.String() + `","status":"FAILED"} {}`,
		`{"payment_id":"` + paymentID.String() + `","status":"FAILED","failure_reason":"card\u0000declined"}`,
		`{"payment_id":"` + paymentID.String() + `","status":"FAILED","retrieval_reference_no":"\u0000"}`,
	} {
		hh := signedAt(t, []byte(b))
		r, err := a.ParseCallback(hh, []byte(b), clock)
		if err == nil || errors.Is(err, vendors.ErrInvalidCallback) {
			t.Errorf("body %s: ParseCallback = %+v, %v; want a plain error", b, r, err)
		}
	}
}

// signedAt signs body with the test secret at clock, as the sandbox would.
func signedAt(t *testing.T, body []byte) http.Header {
	t.Helper()
	h := http.Header{}
	h.Set(sandboxacquirer.SignatureHeader, signatureFor(body))
	return h
}

func TestNewRRN(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 1000 {
		r := sandboxacquirer.NewRRN()
		if !rrnSyntax.MatchString(r) {
			t.Fatalf("NewRRN = %q, want 12 digits", r)
		}
		seen[r] = true
	}
	if len(seen) < 999 {
		t.Errorf("1000 RRNs, %d distinct", len(seen))
	}
}

func signatureFor(body []byte) string { return signature.Sign(secret, body, clock) }
