package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payoutd/payoutd/client"
)

// Lists and payments against a running service: the iterator follows the
// cursors and yields every disbursement once, newest first; a payment is
// created, read and listed.
func TestListsAndPaymentsAgainstTheService(t *testing.T) {
	live := startService(t)
	c, err := client.New(live.url, live.apiKey, live.signingSecret)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var created []string
	for range 7 {
		d, err := c.CreateDisbursement(ctx, client.CreateDisbursementRequest{ClientWalletID: live.wallet, Amount: "20000",
			BankCode: "bca", AccountNo: "1234567890", TransferType: client.BIFAST}, client.NewIdempotencyKey())
		if err != nil {
			t.Fatal(err)
		}
		created = append(created, d.ID)
	}
	var listed []string
	for d, err := range c.Disbursements(ctx, client.DisbursementListParams{ListParams: client.ListParams{Limit: 3}}) {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, d.ID)
	}
	if len(listed) != len(created) {
		t.Fatalf("the iterator yielded %d disbursements, want %d", len(listed), len(created))
	}
	for i, id := range listed {
		if id != created[len(created)-1-i] {
			t.Fatalf("yielded %v, want newest first %v", listed, created)
		}
	}
	page, err := c.ListDisbursements(ctx, client.DisbursementListParams{ListParams: client.ListParams{Limit: 5}})
	if err != nil || len(page.Data) != 5 || !page.HasMore || page.NextCursor == nil {
		t.Fatalf("first page %+v, %v", page, err)
	}

	p, err := c.CreatePayment(ctx, client.CreatePaymentRequest{Price: 15000, PlayerID: "player-9"})
	if err != nil || p.OrderID == "" || p.QRPayload == "" || p.TotalAmount != "15000" {
		t.Fatalf("create payment %+v, %v", p, err)
	}
	got, err := c.GetPayment(ctx, p.OrderID)
	if err != nil || got.Status != client.PaymentStatusPending || got.Amount != "15000" || got.PayerID != "player-9" {
		t.Fatalf("get payment %+v, %v", got, err)
	}
	payments, err := c.ListPayments(ctx, client.PaymentListParams{PayerID: "player-9"})
	if err != nil || len(payments.Data) != 1 || payments.Data[0].ID != p.OrderID || payments.HasMore {
		t.Fatalf("list payments %+v, %v", payments, err)
	}
	if _, err := c.GetPayment(ctx, "6f1c2a9e-8d4b-4c3e-9a7f-1b2c3d4e5f60"); !client.IsNotFound(err) {
		t.Fatalf("unknown payment: %v", err)
	}
}

// A payment create has no Idempotency-Key: after a 5xx, which may hide a
// stored payment, it is not sent again; a 429 (nothing stored) is.
func TestCreatePaymentIsNotResentBlindly(t *testing.T) {
	var calls atomic.Int64
	status := atomic.Int64{}
	status.Store(http.StatusBadGateway)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if code := int(status.Load()); code == http.StatusTooManyRequests && n > 1 {
			w.WriteHeader(http.StatusCreated)
			w.Write([]byte(`{"success":true,"data":{"orderId":"9e2f4c1a-5b6d-4e7f-8a9b-0c1d2e3f4a5b","totalAmount":15000}}`))
			return
		} else {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(code)
		}
		w.Write([]byte(`{"error":"upstream trouble"}`))
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, "v3_test_key", "0123456789012345678901234567890123456789012345678901234567890123",
		client.WithBackoff(time.Millisecond, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreatePayment(context.Background(), client.CreatePaymentRequest{Price: 15000, PlayerID: "p"}); err == nil || calls.Load() != 1 {
		t.Fatalf("after a 502: %d requests, error %v; want 1 and the error", calls.Load(), err)
	}
	calls.Store(0)
	status.Store(http.StatusTooManyRequests)
	if p, err := c.CreatePayment(context.Background(), client.CreatePaymentRequest{Price: 15000, PlayerID: "p"}); err != nil || calls.Load() != 2 || p.OrderID == "" {
		t.Fatalf("after a 429: %d requests, %+v, %v; want the retry to create it", calls.Load(), p, err)
	}
}
