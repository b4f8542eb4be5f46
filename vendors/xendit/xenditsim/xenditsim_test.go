package xenditsim_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payoutd/payoutd/vendors/xendit/xenditsim"
)

const key = "xnd_development_simtest_secret"

func TestNewRefusesBadSecrets(t *testing.T) {
	if _, err := xenditsim.New(xenditsim.Options{}); err == nil {
		t.Error("New without a secret key accepted")
	}
	if _, err := xenditsim.New(xenditsim.Options{SecretKey: "k", CallbackToken: "k"}); err == nil {
		t.Error("New with the callback token equal to the secret key accepted")
	}
}

// The log names payouts by reference and masks the account number; it never
// shows the secret key or the callback token.
func TestLogsHideSecretsAndAccounts(t *testing.T) {
	var buf bytes.Buffer
	sim, err := xenditsim.New(xenditsim.Options{SecretKey: key, CallbackToken: "cb-token-secret", Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(sim)
	defer ts.Close()
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v2/payouts", strings.NewReader(
		`{"reference_id":"r1","channel_code":"ID_BCA","channel_properties":{"account_number":"9876543210","account_holder_name":"Budi"},"amount":10000,"currency":"IDR"}`))
	req.SetBasicAuth(key, "")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-key", "k1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP %d", resp.StatusCode)
	}
	log := buf.String()
	if !strings.Contains(log, "r1") || !strings.Contains(log, "3210") {
		t.Errorf("log lacks the reference or the last digits: %s", log)
	}
	for _, s := range []string{"9876543210", key, "cb-token-secret"} {
		if strings.Contains(log, s) {
			t.Errorf("log shows %q: %s", s, log)
		}
	}
}

// Run delivers the webhooks in the background and stops with its context.
func TestRunDelivers(t *testing.T) {
	var got atomic.Int32
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("x-callback-token") == "cb" {
			got.Add(1)
		}
	}))
	defer hook.Close()
	sim, _ := xenditsim.New(xenditsim.Options{SecretKey: key, CallbackToken: "cb", CallbackURL: hook.URL, CompleteAfter: 10 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	ts := httptest.NewServer(sim)
	defer ts.Close()
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v2/payouts", strings.NewReader(
		`{"reference_id":"r1","channel_code":"ID_DANA","channel_properties":{"account_number":"081234567890","account_holder_name":"Budi"},"amount":10000,"currency":"IDR"}`))
	req.SetBasicAuth(key, "")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-key", "k1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sim.Run(ctx, 5*time.Millisecond) }()
	deadline := time.Now().Add(5 * time.Second)
	for got.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if got.Load() != 1 {
		t.Errorf("%d webhooks delivered, want 1", got.Load())
	}
}
