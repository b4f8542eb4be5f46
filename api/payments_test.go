package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/qris"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

func (b *bundle) createPayment(m merchant, body string) response {
	b.t.Helper()
	return b.do(request{method: http.MethodPost, path: "/api/v1/payments", body: []byte(body), apiKey: m.apiKey, timestamp: true})
}

// A payment is created with its QRIS and checkout page; the answer's
// fields are the spec's, totalAmount a JSON number.
func TestPaymentCreate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.newMerchant()
	b.newWallet(m.id, "Main", sandbox.SimBank, false)
	r := b.createPayment(m, `{"price": 150000, "playerId": "player-42"}`)
	r.expect(t, http.StatusCreated, "")
	var got struct {
		Success bool `json:"success"`
		Data    struct {
			OrderID     string          `json:"orderId"`
			CheckoutURL string          `json:"checkoutUrl"`
			QRPayload   string          `json:"qrPayload"`
			PlayerID    string          `json:"playerId"`
			TotalAmount json.RawMessage `json:"totalAmount"`
		} `json:"data"`
	}
	r.decode(t, &got)
	id, err := uuid.Parse(got.Data.OrderID)
	if !got.Success || err != nil || got.Data.PlayerID != "player-42" || string(got.Data.TotalAmount) != "150000" {
		t.Fatalf("created %s", r.body)
	}
	if got.Data.CheckoutURL != "http://localhost:8080/checkout/"+id.String() {
		t.Fatalf("checkoutUrl %s", got.Data.CheckoutURL)
	}
	qr, err := qris.Parse(got.Data.QRPayload)
	if err != nil || !qr.IsDynamic() || qr.Amount != "150000" || qr.Currency != "360" || qr.Country != "ID" ||
		qr.AdditionalData.BillNumber != strings.ToUpper(id.String()[:8]) {
		t.Fatalf("qrPayload %s: %+v %v", got.Data.QRPayload, qr, err)
	}
}

// Every field rule answers 400 naming the field; nothing is stored.
func TestPaymentCreateFieldRules(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.newMerchant()
	b.newWallet(m.id, "Main", sandbox.SimBank, false)
	long := strings.Repeat("p", 65)
	tests := []struct {
		body, field string
	}{
		{`{"playerId": "p"}`, "price"},
		{`{"price": null, "playerId": "p"}`, "price"},
		{`{"price": "15000", "playerId": "p"}`, "price"},
		{`{"price": 14999, "playerId": "p"}`, "price"},
		{`{"price": 14999.99, "playerId": "p"}`, "price"},
		{`{"price": 15000.5, "playerId": "p"}`, "price"},
		{`{"price": 1.5e4, "playerId": "p"}`, "price"},
		{`{"price": -15000, "playerId": "p"}`, "price"},
		{`{"price": 0, "playerId": "p"}`, "price"},
		{`{"price": true, "playerId": "p"}`, "price"},
		{`{"price": 1000000000000000000, "playerId": "p"}`, "price"},
		{`{"price": 10000000000000, "playerId": "p"}`, "price"},
		{`{"price": 15000}`, "playerId"},
		{`{"price": 15000, "playerId": ""}`, "playerId"},
		{`{"price": 15000, "playerId": "   "}`, "playerId"},
		{`{"price": 15000, "playerId": "` + long + `"}`, "playerId"},
		{`{"price": 15000, "playerId": 7}`, "playerId"},
		{`{"price": 15000, "playerId": "p", "flow": "redirect"}`, "flow"},
		{`{"price": 15000, "playerId": "p", "flow": ""}`, "flow"},
		{`{"price": 15000, "playerId": "p", "expiresIn": 59}`, "expiresIn"},
		{`{"price": 15000, "playerId": "p", "expiresIn": 3601}`, "expiresIn"},
		{`{"price": 15000, "playerId": "p", "expiresIn": 0}`, "expiresIn"},
		{`{"price": 15000, "playerId": "p", "expiresIn": -60}`, "expiresIn"},
		{`{"price": 15000, "playerId": "p", "expiresIn": 900.5}`, "expiresIn"},
		{`{"price": 15000, "playerId": "p", "expiresIn": "900"}`, "expiresIn"},
		{`{"price": 15000, "playerId": "p", "currency": "IDR"}`, "currency"},
		{`{"price": 15000, "playerId": "p"`, "JSON"},
		{`[]`, "object"},
	}
	for _, tt := range tests {
		r := b.createPayment(m, tt.body)
		r.expect(t, http.StatusBadRequest, "")
		if !strings.Contains(r.errBody, tt.field) {
			t.Errorf("%s: error %q does not name %s", tt.body, r.errBody, tt.field)
		}
	}
	var n int64
	b.db.Model(&models.Payment{}).Count(&n)
	if n != 0 {
		t.Fatalf("%d payments stored by refused requests", n)
	}
	// The edges that pass.
	for _, body := range []string{
		`{"price": 9999999999999, "playerId": "p"}`,
		`{"price": 15000, "playerId": "` + strings.Repeat("p", 64) + `"}`,
		`{"price": 15000.00, "playerId": "p", "flow": "embed", "expiresIn": 60}`,
		`{"price": 15000, "playerId": "p", "expiresIn": 3600}`,
	} {
		b.createPayment(m, body).expect(t, http.StatusCreated, "")
	}
}

// Without a default wallet: 422; and the usual authentication rules.
func TestPaymentCreateRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.newMerchant()
	b.createPayment(m, `{"price": 15000, "playerId": "p"}`).expect(t, http.StatusUnprocessableEntity, "no default wallet configured")
	b.do(request{method: http.MethodPost, path: "/api/v1/payments", body: []byte(`{"price": 15000, "playerId": "p"}`), apiKey: m.apiKey}).
		expect(t, http.StatusBadRequest, "Request timestamp outside valid window (5 minutes)")
	b.do(request{method: http.MethodPost, path: "/api/v1/payments", body: []byte(`{"price": 15000, "playerId": "p"}`), timestamp: true}).
		expect(t, http.StatusUnauthorized, "missing x-api-key header")
}

// GET /api/v3/payments/{id}: every field of the spec's record, decimal
// strings and UTC timestamps; 404 for another client's, 400 for a bad id.
func TestPaymentRecord(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.newMerchant()
	b.newWallet(m.id, "Toko Online", sandbox.SimBank, false)
	var created struct {
		Data struct {
			OrderID string `json:"orderId"`
		} `json:"data"`
	}
	b.createPayment(m, `{"price": 150000, "playerId": "player-42", "expiresIn": 600}`).decode(t, &created)
	path := "/api/v3/payments/" + created.Data.OrderID
	r := b.do(request{path: path, apiKey: m.apiKey, sign: m.signingSecret})
	r.expect(t, http.StatusOK, "")
	var rec map[string]any
	r.decode(t, &rec)
	want := map[string]any{
		"id": created.Data.OrderID, "client_id": m.id.String(), "payer_id": "player-42", "amount": "150000", "currency": "IDR",
		"status": "PENDING", "platform_fee": "1050", "net_amount": "148950", "paid_at": nil, "settled_at": nil,
		"retrieval_reference_no": nil, "client_wallet_name": "Toko Online",
		"expired_at": fixedNow.Add(600 * time.Second).Format(time.RFC3339Nano),
		"created_at": fixedNow.Format(time.RFC3339Nano), "updated_at": fixedNow.Format(time.RFC3339Nano),
	}
	for k, v := range want {
		if rec[k] != v {
			t.Errorf("%s = %#v, want %#v", k, rec[k], v)
		}
	}
	if len(rec) != len(want) {
		t.Errorf("record has %d fields, want %d: %s", len(rec), len(want), r.body)
	}
	other := b.newMerchant()
	b.do(request{path: path, apiKey: other.apiKey, timestamp: true}).expect(t, http.StatusNotFound, "payment not found")
	b.do(request{path: "/api/v3/payments/" + uuid.NewString(), apiKey: m.apiKey, timestamp: true}).expect(t, http.StatusNotFound, "payment not found")
	b.do(request{path: "/api/v3/payments/nope", apiKey: m.apiKey, timestamp: true}).expect(t, http.StatusBadRequest, "")
}

// The acquirer's signed notification marks a payment paid; a forged one is
// refused; a repeat is acknowledged.
func TestAcquirerCallback(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.newMerchant()
	b.newWallet(m.id, "Main", sandbox.SimBank, false)
	var created struct {
		Data struct {
			OrderID string `json:"orderId"`
		} `json:"data"`
	}
	b.createPayment(m, `{"price": 15000, "playerId": "p"}`).decode(t, &created)
	id := uuid.MustParse(created.Data.OrderID)
	header, body := b.server.acquirer.(interface {
		SignCallback(vendors.AcquirerResult) (http.Header, []byte)
	}).SignCallback(vendors.AcquirerResult{PaymentID: id, Status: "SUCCESS", RetrievalReferenceNo: "123456789012", PaidAt: fixedNow})
	post := func(body []byte) response {
		headers := map[string]string{}
		for k := range header {
			headers[k] = header.Get(k)
		}
		return b.do(request{method: http.MethodPost, path: "/acquirer-callbacks/sandboxpay", body: body, headers: headers})
	}
	tampered := []byte(strings.Replace(string(body), "123456789012", "999999999999", 1))
	post(tampered).expect(t, http.StatusUnauthorized, "")
	r := post(body)
	r.expect(t, http.StatusOK, "")
	if !strings.Contains(string(r.body), `"applied"`) {
		t.Fatalf("first notification: %s", r.body)
	}
	if r := post(body); !strings.Contains(string(r.body), `"duplicate"`) {
		t.Fatalf("repeated notification: %s", r.body)
	}
	p, err := b.server.payments.Get(context.Background(), id)
	if err != nil || p.Status != models.PaymentSuccess || *p.RetrievalReferenceNo != "123456789012" {
		t.Fatalf("after the notification: %+v %v", p, err)
	}
	b.do(request{method: http.MethodPost, path: "/acquirer-callbacks/other", body: body}).expect(t, http.StatusNotFound, "")
}

// A merchant whose name QRIS cannot carry (another script) still takes
// payments: the QRIS carries a default name, never a 500.
func TestPaymentCreateForANameQRISCannotCarry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.newClient(admin.ClientOptions{Name: "咖啡店"})
	b.newWallet(m.id, "Main", sandbox.SimBank, false)
	r := b.createPayment(m, `{"price": 15000, "playerId": "p"}`)
	r.expect(t, http.StatusCreated, "")
	var got struct {
		Data struct {
			QRPayload string `json:"qrPayload"`
		} `json:"data"`
	}
	r.decode(t, &got)
	if qr, err := qris.Parse(got.Data.QRPayload); err != nil || qr.MerchantName != "MERCHANT" {
		t.Fatalf("qrPayload %s: %+v %v", got.Data.QRPayload, qr, err)
	}
}

// A notification arriving after expired_at, before the worker expired the
// payment, does not make it paid: the payment expires (the merchant gets
// payment.expired) and the result is kept for operators as late.
func TestAcquirerCallbackAfterExpiredAt(t *testing.T) {
	t.Parallel()
	clock := &testClock{}
	b := setup(t, setupOptions{now: clock.Now})
	m := b.newMerchant()
	b.newWallet(m.id, "Main", sandbox.SimBank, false)
	var created struct {
		Data struct {
			OrderID string `json:"orderId"`
		} `json:"data"`
	}
	b.createPayment(m, `{"price": 15000, "playerId": "p", "expiresIn": 60}`).decode(t, &created)
	id := uuid.MustParse(created.Data.OrderID)
	paidAt := clock.Now().Add(59 * time.Second) // paid in time, reported late
	clock.Advance(61 * time.Second)
	header, body := b.server.acquirer.(interface {
		SignCallback(vendors.AcquirerResult) (http.Header, []byte)
	}).SignCallback(vendors.AcquirerResult{PaymentID: id, Status: "SUCCESS", RetrievalReferenceNo: "123456789012", PaidAt: paidAt})
	headers := map[string]string{}
	for k := range header {
		headers[k] = header.Get(k)
	}
	r := b.do(request{method: http.MethodPost, path: "/acquirer-callbacks/sandboxpay", body: body, headers: headers})
	r.expect(t, http.StatusOK, "")
	if !strings.Contains(string(r.body), `"recorded_late"`) {
		t.Fatalf("notification after expired_at: %s", r.body)
	}
	var rec map[string]any
	b.do(request{path: "/api/v3/payments/" + id.String(), apiKey: m.apiKey, timestamp: true}).decode(t, &rec)
	if rec["status"] != "EXPIRED" || rec["paid_at"] != nil || rec["retrieval_reference_no"] != nil {
		t.Fatalf("payment after a late notification: %v", rec)
	}
	var events []models.WebhookEvent
	b.db.Where("subject_id = ?", id).Find(&events)
	if len(events) != 1 || events[0].Event != "payment.expired" {
		t.Fatalf("webhook events %+v, want one payment.expired", events)
	}
	var late models.PaymentLateResult
	if err := b.db.Where("payment_id = ?", id).Take(&late).Error; err != nil || late.PaymentStatus != models.PaymentExpired ||
		late.ReportedStatus != "SUCCESS" || late.Source != "sandboxpay" || *late.RetrievalReferenceNo != "123456789012" {
		t.Fatalf("late result %+v %v", late, err)
	}
}

// Each refused price says the real reason: an exponent is named as such,
// a value beyond what a QRIS carries is "at most", not a syntax error.
func TestPaymentPriceMessages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.newMerchant()
	b.newWallet(m.id, "Main", sandbox.SimBank, false)
	const (
		low      = "price must be at least 15000"
		high     = "price must be at most 9999999999999 (the largest amount a QRIS carries)"
		exponent = "price must be written without an exponent, such as 15000 (not 1.5e4)"
		fraction = "price must be a whole number of rupiah (QRIS carries no fraction of a rupiah)"
	)
	for price, want := range map[string]string{
		"1e5": exponent, "1E5": exponent, "1.5e4": exponent, "15000e0": exponent, "1e-5": exponent, "-1e5": exponent,
		"10000000000000": high, "1000000000000000000": high, "100000000000000000000000000000000": high,
		"9999999999999.5": fraction, "10000000000000.0": high,
		"14999": low, "14999.99": low, "0": low, "-15000": low, "-0": low, "0.5": low,
		"15000.5": fraction, "15000.0001": fraction, "15000.00000000000000000001": fraction,
		`"15000"`: "price must be a number such as 15000", "true": "price must be a number such as 15000",
	} {
		r := b.createPayment(m, `{"price": `+price+`, "playerId": "p"}`)
		if r.status != http.StatusBadRequest || r.errBody != want {
			t.Errorf("price %s: %d %q, want 400 %q", price, r.status, r.errBody, want)
		}
	}
	for _, price := range []string{"15000", "15000.00", "15000.000000", "9999999999999", "9999999999999.0"} {
		b.createPayment(m, `{"price": `+price+`, "playerId": "p"}`).expect(t, http.StatusCreated, "")
	}
}
