package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/payoutd/payoutd/signature"
)

func TestPaymentBody(t *testing.T) {
	body, err := paymentBody(paymentPrice, paymentPlayerID(0))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"price":150000,"playerId":"lt-player-1"}`; string(body) != want {
		t.Errorf("body %s, want %s", body, want)
	}
	// The API refuses a price sent as a string: it must be a JSON number.
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	if p := string(raw["price"]); p != "150000" {
		t.Errorf("price %s, want the number 150000", p)
	}
	if paymentPlayerID(49) != "lt-player-50" {
		t.Errorf("player of client 50: %q", paymentPlayerID(49))
	}
}

func TestPaymentRequest(t *testing.T) {
	const secret = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	now := time.UnixMilli(1_790_000_000_123)
	var targets []signedTarget
	for i := range 2 {
		body, err := paymentBody(paymentPrice, paymentPlayerID(i))
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, signedTarget{body: body, apiKey: "v3_live_key" + strconv.Itoa(i), secret: secret})
	}

	for _, auth := range paymentAuths {
		s := &paymentsScenario{auth: auth, targets: targets}
		for n := range uint64(4) {
			req, err := s.NewRequest(context.Background(), "http://api.test", n, now)
			if err != nil {
				t.Fatal(err)
			}
			want := targets[n%2]
			if req.Method != http.MethodPost || req.URL.String() != "http://api.test/api/v1/payments" {
				t.Errorf("%s: request %s %s", auth, req.Method, req.URL)
			}
			sent, _ := io.ReadAll(req.Body)
			if !bytes.Equal(sent, want.body) || req.ContentLength != int64(len(want.body)) {
				t.Errorf("%s: request %d sent %q, want client %d's body %q", auth, n, sent, n%2, want.body)
			}
			if req.Header.Get("x-api-key") != want.apiKey || req.Header.Get("Content-Type") != "application/json" {
				t.Errorf("%s: request %d headers %v, want round-robin key %s", auth, n, req.Header, want.apiKey)
			}
			sig, ts := req.Header.Get("x-signature"), req.Header.Get("x-timestamp")
			switch auth {
			case paymentAuthSignature:
				if v := signature.Verify(secret, sig, sent, now); v.Diagnosis != signature.OK {
					t.Errorf("signature over the sent bytes: %s", v.Diagnosis)
				}
				if ts != "" {
					t.Errorf("signed request also carries x-timestamp %q", ts)
				}
			case paymentAuthTimestamp:
				if ts != "1790000000123" || sig != "" {
					t.Errorf("x-timestamp %q, x-signature %q: want Unix ms of now and no signature", ts, sig)
				}
				if ms, ok := signature.ParseMillis(ts); !ok || ms != now.UnixMilli() {
					t.Errorf("the server cannot read x-timestamp %q", ts)
				}
			}
		}
	}
	if _, err := newPaymentRequest(context.Background(), "http://api.test", targets[0], "none", now); err == nil {
		t.Error("unknown auth accepted")
	}
}

func TestCheckDefaultWallets(t *testing.T) {
	clients := []LoadClient{{ClientID: "c1", WalletID: "w1"}, {ClientID: "c2", WalletID: "w2"}}
	if err := checkDefaultWallets(clients, map[string]string{"c1": "w1", "c2": "w2", "other": "w9"}); err != nil {
		t.Errorf("every client's wallet is its default: %v", err)
	}
	if err := checkDefaultWallets(clients, map[string]string{"c1": "w1"}); err == nil || !strings.Contains(err.Error(), "c2 has no active default wallet") {
		t.Errorf("missing default: %v", err)
	}
	if err := checkDefaultWallets(clients, map[string]string{"c1": "w1", "c2": "w3"}); err == nil || !strings.Contains(err.Error(), "w3") {
		t.Errorf("another default wallet: %v", err)
	}
}

func TestSuiteWithPayments(t *testing.T) {
	r := &suiteResult{
		Scenario:    "all",
		Ceilings:    &ceilings{Spread: &ceiling{Rows: 10000, Clients: 16, TPS: 4000}, Hot: &ceiling{Clients: 16, TPS: 1000}},
		CreateMany:  &createFigures{CreatesPerS: 1200, Creates: 12000, P99MS: 40},
		CreateHot:   &createFigures{CreatesPerS: 350, Creates: 3500, P99MS: 30},
		Payments:    &createFigures{Wallets: 50, Concurrency: 16, CreatesPerS: 1600, Creates: 16000, P50MS: 9, P90MS: 14, P99MS: 30},
		PaymentAuth: paymentAuthSignature,
		Drain:       &drainResult{PayoutsPerS: 600},
	}
	r.judge()
	if r.Payments.Ratio == nil || *r.Payments.Ratio != 0.4 {
		t.Errorf("payments ratio %v, want 0.4 of the spread ceiling", r.Payments.Ratio)
	}
	if !r.GoalMet {
		t.Error("every goal met, yet not GoalMet")
	}
	r.Payments.CreatesPerS = 1400
	r.judge()
	if r.GoalMet {
		t.Error("1,400 payments/s met the goal of 1,500")
	}
	r.Payments.Errors = 1
	if r.clean() {
		t.Error("a failed payment counts as clean")
	}

	var out bytes.Buffer
	printSuiteTable(&out, r)
	var line string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "payments (50 wallet(s), 16 workers)") {
			line = l
		}
	}
	for _, want := range []string{"1400 creates/s", "9.0 ms", "14.0 ms", "30.0 ms", "spread 4000 tps", "0.35", "≥1500/s"} {
		if !strings.Contains(line, want) {
			t.Errorf("payments row %q lacks %q\n%s", line, want, out.String())
		}
	}
	if !strings.Contains(out.String(), "p90") {
		t.Errorf("no p90 column:\n%s", out.String())
	}
}

func TestPaymentFlags(t *testing.T) {
	noEnv := func(string) string { return "" }
	o, err := parseFlags([]string{"-scenario", "payments"}, io.Discard, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if o.paymentAuth != paymentAuthSignature || o.concurrencyFor(mustScenario("payments")) != 16 {
		t.Errorf("payments defaults: auth %q, %d workers", o.paymentAuth, o.concurrencyFor(mustScenario("payments")))
	}
	if o, err := parseFlags([]string{"-scenario", "payments", "-payment-auth", "timestamp"}, io.Discard, noEnv); err != nil || o.paymentAuth != paymentAuthTimestamp {
		t.Errorf("-payment-auth timestamp: %v, %q", err, o.paymentAuth)
	}
	for _, args := range [][]string{
		{"-scenario", "payments", "-payment-auth", "hmac"},
		{"-scenario", "all", "-inprocess-profile", "cpu.pprof"},
	} {
		if _, err := parseFlags(args, io.Discard, noEnv); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
	if info := mustScenario("payments"); !info.flushesRedis() || info.creates {
		t.Error("payments: want Redis flushed, without the disbursement server settings")
	}
	if got := serverEnv(options{}, mustScenario("payments")); len(got) != 0 {
		t.Errorf("payments server env %q, want nothing of the disbursements'", got)
	}
}
