package client_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/payoutd/payoutd/client"
)

// Demo credentials, as `payoutd dev` or `payoutd admin client create` issue them.
const (
	apiKey         = "v3_test_8e491c4e0123456789abcdef0123456789abcdef01234567"
	signingSecret  = "8d204018d2cd49f8a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718"
	callbackSecret = "56aa9078ddcb59df0123456789abcdef0123456789abcdef0123456789abcdef"
	walletID       = "b7cdcf99-5a3e-4f0a-9d5c-2f4a8e6b1c01"
)

func ExampleClient_CreateDisbursement() {
	service := startFakeService() // stands in for payoutd in this example
	defer service.Close()

	c, err := client.New(service.URL, apiKey, signingSecret)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	// Make the key once and keep it with your order: after a crash or a
	// timeout, calling again with it can never pay twice.
	key := "order-4711" // or client.NewIdempotencyKey()
	req := client.CreateDisbursementRequest{
		ClientWalletID: walletID,
		Amount:         "100000", // gross; the fee is deducted from it
		BankCode:       "bca",
		AccountNo:      "1234567890",
		TransferType:   client.BIFAST,
		ReferenceID:    "inv-1",
	}
	d, err := c.CreateDisbursement(ctx, req, key)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d.Status, d.Amount, d.PlatformFee, d.NetAmount, "replayed:", d.Replayed)

	// The same call again is a replay of the stored disbursement.
	again, err := c.CreateDisbursement(ctx, req, key)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("same payout:", again.ID == d.ID, "replayed:", again.Replayed)

	// The outcome arrives by webhook; reading it back works too.
	for !d.Status.Final() {
		time.Sleep(10 * time.Millisecond)
		if d, err = c.GetDisbursement(ctx, d.ID); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println(d.Status)
	// Output:
	// REQUESTED 100000 2500 97500 replayed: false
	// same payout: true replayed: true
	// SUCCESS
}

func ExampleAPIError() {
	service := startFakeService()
	defer service.Close()
	c, err := client.New(service.URL, apiKey, signingSecret)
	if err != nil {
		log.Fatal(err)
	}

	_, err = c.CreateDisbursement(context.Background(), client.CreateDisbursementRequest{
		ClientWalletID: walletID, Amount: "5000000", BankCode: "bca", AccountNo: "1234567890", TransferType: client.BIFAST,
	}, client.NewIdempotencyKey())

	var apiErr *client.APIError
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.StatusCode, apiErr.Message)
	}
	switch {
	case client.IsInsufficientBalance(err):
		fmt.Println("top up the wallet first")
	case client.IsPayoutFailed(err):
		fmt.Println("the vendor rejected it; pay again with a new key")
	}
	// Output:
	// 402 Insufficient balance
	// top up the wallet first
}

func ExampleVerifyWebhook() {
	// Your webhook endpoint.
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20)) // the raw bytes: verify before decoding
		if err != nil {
			http.Error(w, "cannot read body", http.StatusBadRequest)
			return
		}
		if err := client.VerifyWebhook(callbackSecret, r.Header, body, time.Now()); err != nil {
			// errors.Is(err, client.ErrWebhookSignature), ErrWebhookTimestamp, ErrWebhookMalformed
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		var ev client.WebhookEvent
		if err := json.Unmarshal(body, &ev); err != nil {
			http.Error(w, "bad event", http.StatusBadRequest)
			return
		}
		// Deliveries repeat: skip an ev.EventID you have already processed.
		if d := ev.Disbursement; d != nil {
			fmt.Println(ev.Event, d.ReferenceID, d.Status, d.NetAmount)
		}
		w.WriteHeader(http.StatusNoContent)
	})

	// What payoutd sends, once signed with the Callback Secret and once forged.
	body := []byte(`{"eventId":"6f1c2a9e-8d4b-4c3e-9a7f-1b2c3d4e5f60","event":"disbursement.success",` +
		`"createdAt":"2026-01-01T00:00:02Z","data":{"disbursementId":"0f8e5a2c-3b1d-4e6f-9a7b-8c9d0e1f2a3b",` +
		`"walletId":"b7cdcf99-5a3e-4f0a-9d5c-2f4a8e6b1c01","status":"SUCCESS","amount":"100000","platformFee":"2500",` +
		`"netAmount":"97500","currency":"IDR","bankCode":"bca","accountNo":"1234567890",` +
		`"accountHolderName":"SANDBOX 7890","referenceId":"inv-1","failedReason":null,"completedAt":"2026-01-01T00:00:02Z"}}`)
	for _, secret := range []string{callbackSecret, "not-the-callback-secret"} {
		req := httptest.NewRequest(http.MethodPost, "/webhooks/payoutd", bytes.NewReader(body))
		req.Header.Set("x-callback-signature", client.Sign(secret, body, time.Now()))
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		fmt.Println(rec.Code)
	}
	// Output:
	// disbursement.success inv-1 SUCCESS 97500
	// 204
	// 401
}

func ExampleParseWebhook() {
	body := []byte(`{"eventId":"e-1","event":"disbursement.failed","createdAt":"2026-01-01T00:00:02Z",` +
		`"data":{"disbursementId":"d-1","walletId":"w-1","status":"FAILED","amount":"100000","platformFee":"2500",` +
		`"netAmount":"97500","currency":"IDR","bankCode":"bca","accountNo":"1000000004","accountHolderName":"SANDBOX 0004",` +
		`"failedReason":"account closed","completedAt":"2026-01-01T00:00:02Z"}}`)
	header := http.Header{}
	header.Set("x-callback-signature", client.Sign(callbackSecret, body, time.Now())) // as payoutd signs it

	ev, err := client.ParseWebhook(callbackSecret, header, body, time.Now())
	if err != nil {
		fmt.Println("reject:", err)
		return
	}
	fmt.Println(ev.Event, ev.Disbursement.DisbursementID, *ev.Disbursement.FailedReason)

	_, err = client.ParseWebhook(callbackSecret, header, body, time.Now().Add(10*time.Minute))
	fmt.Println(errors.Is(err, client.ErrWebhookTimestamp))
	// Output:
	// disbursement.failed d-1 account closed
	// true
}

func ExampleNewIdempotencyKey() {
	key := client.NewIdempotencyKey()
	fmt.Println(len(key), key[14:15])
	// Output: 36 4
}

// startFakeService serves a tiny imitation of payoutd for the examples:
// it checks every signature over the bytes received, creates idempotently,
// and answers 402 above a balance of 1,000,000.
func startFakeService() *httptest.Server {
	var mu sync.Mutex
	byKey := map[string]map[string]any{}
	byID := map[string]map[string]any{}
	reply := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "example-request-1")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !validSignature(r, body) || r.Header.Get("x-api-key") != apiKey {
			reply(w, 401, map[string]string{"error": "invalid signature"})
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/api/v3/disbursements":
			var req client.CreateDisbursementRequest
			json.Unmarshal(body, &req)
			key := r.Header.Get("Idempotency-Key")
			if d, ok := byKey[key]; ok {
				w.Header().Set("Idempotent-Replayed", "true")
				reply(w, 200, d)
				return
			}
			if len(req.Amount) > 7 || (len(req.Amount) == 7 && req.Amount > "1000000") {
				reply(w, 402, map[string]string{"error": "Insufficient balance"})
				return
			}
			d := map[string]any{"id": "0f8e5a2c-3b1d-4e6f-9a7b-8c9d0e1f2a3b", "status": "REQUESTED", "amount": req.Amount,
				"platform_fee": "2500", "net_amount": "97500", "currency": "IDR", "idempotency_key": key,
				"created_at": "2026-01-01T00:00:00Z"}
			byKey[key], byID[d["id"].(string)] = d, d
			reply(w, 201, d)
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/api/v3/disbursements/"):
			d, ok := byID[strings.TrimPrefix(r.URL.Path, "/api/v3/disbursements/")]
			if !ok {
				reply(w, 404, map[string]string{"error": "disbursement not found"})
				return
			}
			d["status"] = "SUCCESS" // the sandbox pays at once
			reply(w, 200, d)
		default:
			reply(w, 404, map[string]string{"error": "not found"})
		}
	}))
}

// validSignature checks a v2 x-signature as the service does: over the
// method, the path and query, the Idempotency-Key and the body's hash.
func validSignature(r *http.Request, body []byte) bool {
	t, v2, _ := strings.Cut(strings.TrimPrefix(r.Header.Get("x-signature"), "t="), ",v2=")
	target := r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	sum := sha256.Sum256(body)
	mac := hmac.New(sha256.New, []byte(signingSecret))
	mac.Write([]byte(strings.Join([]string{"PAYOUTD-HMAC-SHA256-V2", t, r.Method, target,
		r.Header.Get("Idempotency-Key"), hex.EncodeToString(sum[:])}, "\n")))
	return hmac.Equal([]byte(v2), []byte(hex.EncodeToString(mac.Sum(nil))))
}

// Every failed payout of this month, however many pages they fill.
func ExampleClient_Disbursements() {
	c, err := client.New("https://api.payoutd.example", apiKey, signingSecret)
	if err != nil {
		log.Fatal(err)
	}
	month := time.Date(2026, time.November, 1, 0, 0, 0, 0, time.UTC)
	params := client.DisbursementListParams{Status: client.StatusFailed,
		ListParams: client.ListParams{Limit: 100, CreatedFrom: month}}
	for d, err := range c.Disbursements(context.Background(), params) {
		if err != nil {
			log.Fatal(err) // the page that failed; the loop ends
		}
		fmt.Println(d.ID, d.NetAmount, *d.FailedReason)
	}
}

// A wallet's statement for a month: every line, newest first, with the
// balances after it; or the same lines as a CSV file for the finance team.
func ExampleClient_WalletTransactions() {
	c, err := client.New("https://api.payoutd.example", apiKey, signingSecret)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	walletID := "6f1c2a9e-8d4b-4c3e-9a7f-1b2c3d4e5f60"
	month := client.ListParams{Limit: 100,
		CreatedFrom: time.Date(2026, time.November, 1, 0, 0, 0, 0, time.UTC),
		CreatedTo:   time.Date(2026, time.December, 1, 0, 0, 0, 0, time.UTC)}
	for line, err := range c.WalletTransactions(ctx, walletID, month) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(line.Seq, line.Kind, line.Amount, line.AvailableAfter, line.BalanceAfter)
	}

	file, err := os.Create("statement-2026-11.csv")
	if err != nil {
		log.Fatal(err)
	}
	defer file.Close()
	if err := c.ExportWalletStatement(ctx, walletID, month.CreatedFrom, month.CreatedTo, file); err != nil {
		log.Fatal(err)
	}
}
