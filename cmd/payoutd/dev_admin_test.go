package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/payoutd/payoutd/signature"
)

// Every admin command the README and docs/operations-reference.md show
// works on a running `payoutd dev`
// through `payoutd admin --dev`: each reaches dev's database with dev's
// secrets key and Redis. Commands that need a state dev has no reason to
// be in (a late vendor result, a refused settlement) are shown to reach
// dev's data by their precise refusal.
func TestREADMEAdminCommandsOnDev(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"HTTP_ADDR": "127.0.0.1:0", "DEV_DATA_DIR": dir, "LOG_LEVEL": "warn", "SANDBOX_COMPLETE_AFTER": "100ms"}
	banner, _ := runDevUntil(t, env)
	base := bannerField(t, banner, `Ready in \S+ at (http://\S+)`)
	apiKey := bannerField(t, banner, `api_key\s+(v3_test_[0-9a-f]+)`)
	secret := bannerField(t, banner, `signing_secret\s+([0-9a-f]{64})`)
	demo := bannerField(t, banner, `client_id\s+([0-9a-f-]{36})`)
	demoWallet := bannerField(t, banner, `wallets\s+([0-9a-f-]{36})`)

	admin := func(wantCode int, args ...string) map[string]any {
		t.Helper()
		var stdout, stderr strings.Builder
		code := run(context.Background(), append([]string{"admin", "--dev"}, args...), &stdout, &stderr,
			func(k string) string { return map[string]string{"PAYOUTD_DEV_DIR": dir}[k] })
		if code != wantCode {
			t.Fatalf("admin --dev %s: exit %d, want %d; %s%s", strings.Join(args, " "), code, wantCode, stdout.String(), stderr.String())
		}
		out := map[string]any{}
		if wantCode == 0 {
			if err := json.Unmarshal([]byte(stdout.String()), &out); err != nil {
				t.Fatalf("admin --dev %s printed %q", strings.Join(args, " "), stdout.String())
			}
		} else {
			json.Unmarshal([]byte(strings.SplitN(stderr.String(), "\n", 2)[0]), &out)
		}
		return out
	}
	payout := func(key, account string) string {
		t.Helper()
		body := []byte(`{"client_wallet_id":"` + demoWallet + `","amount":"100000","bank_code":"bca","account_no":"` + account + `","transfer_type":"BIFAST"}`)
		req, _ := http.NewRequest(http.MethodPost, base+"/api/v3/disbursements", bytes.NewReader(body))
		req.Header.Set("x-api-key", apiKey)
		req.Header.Set("x-signature", signature.Sign(secret, body, time.Now()))
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var d struct{ ID string }
		json.NewDecoder(resp.Body).Decode(&d)
		if d.ID == "" {
			t.Fatalf("create %s: %d", key, resp.StatusCode)
		}
		return d.ID
	}

	// Provisioning a client of its own, as the README's operator does.
	created := admin(0, "client", "create", "--name", "Toko Dev")
	client := created["client_id"].(string)
	wallet := admin(0, "wallet", "create", "--client", client, "--name", "Main", "--vendor", "simbank")["wallet_id"].(string)
	admin(0, "wallet", "adjust", "--wallet", wallet, "--amount", "2500000", "--memo", "opening balance")
	later := admin(0, "wallet", "create", "--client", client, "--name", "Later", "--vendor", "simwallet", "--provisioning")["wallet_id"].(string)
	admin(0, "wallet", "activate", "--wallet", later)
	admin(0, "client", "rotate-credentials", "--client", client)
	admin(0, "client", "update", "--client", client, "--withdrawals", "suspended", "--review-threshold", "100000000")
	admin(0, "client", "update", "--client", client, "--refund-fee-on-return", "true")
	admin(0, "client", "update", "--client", client, "--write-rate-limit", "500", "--read-rate-limit", "default")
	if show := admin(0, "client", "show", "--client", client); show["withdrawals"] != "suspended" || show["write_rate_limit"] != float64(500) {
		t.Fatalf("client show: %v", show)
	}

	// Payouts of the demo client: one left REQUESTED and completed by hand,
	// two reviewed, one approved and one cancelled.
	requested := payout("dev-admin-5", "1000000005")
	admin(0, "sandbox", "complete", "--id", requested, "--status", "SUCCESS")
	admin(0, "client", "update", "--client", demo, "--review-threshold", "50000")
	approve, cancel := payout("dev-admin-a", "1234567890"), payout("dev-admin-c", "1234567891")
	if queue := admin(0, "disbursement", "list", "--status", "PENDING_VERIFICATION"); len(queue["data"].([]any)) != 2 {
		t.Fatalf("the review queue: %v", queue)
	}
	admin(0, "disbursement", "approve", "--id", approve)
	admin(0, "disbursement", "cancel", "--id", cancel)
	admin(0, "disbursement", "list", "--client", demo, "--limit", "2")
	if late := admin(0, "disbursement", "late-results"); late["total_count"] != float64(0) {
		t.Fatalf("late results: %v", late)
	}
	if refused := admin(1, "disbursement", "resolve-late-result", "--id", "1", "--note", "checked"); refused["error"] != "late vendor result not found: 1" {
		t.Fatalf("resolve-late-result of none: %v", refused)
	}

	// A payment, paid by hand, shown, listed; settling it again is refused.
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/payments", strings.NewReader(`{"price": 150000, "playerId": "player-1"}`))
	req.Header.Set("x-api-key", apiKey)
	req.Header.Set("x-timestamp", fmt.Sprint(time.Now().UnixMilli()))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Data struct {
			OrderID string `json:"orderId"`
		} `json:"data"`
	}
	json.NewDecoder(resp.Body).Decode(&p)
	resp.Body.Close()
	admin(0, "payment", "simulate", "--id", p.Data.OrderID, "--status", "SUCCESS")
	admin(0, "payment", "show", "--id", p.Data.OrderID)
	admin(0, "payment", "list", "--status", "SUCCESS")
	if refused := admin(1, "payment", "settle", "--id", p.Data.OrderID); !strings.HasPrefix(fmt.Sprint(refused["error"]), "payment "+p.Data.OrderID+":") {
		t.Fatalf("payment settle of a payment not refused: %v", refused)
	}

	// Webhooks of the demo client (delivered to dev's inbox), one sent again.
	var events []any
	for deadline := time.Now().Add(20 * time.Second); len(events) == 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		events = admin(0, "webhook", "list", "--client", demo, "--limit", "5")["events"].([]any)
	}
	if len(events) == 0 {
		t.Fatal("webhook list: no event of the demo client")
	}
	admin(0, "webhook", "redeliver", "--event", events[0].(map[string]any)["event_id"].(string))

	// Rotating dev's key would leave dev.json's key behind: dev answers as
	// any deployment does without SECRETS_KEY_PREVIOUS.
	if refused := admin(1, "secrets", "rotate-key"); !strings.HasPrefix(fmt.Sprint(refused["error"]), "SECRETS_KEY_PREVIOUS is not set") {
		t.Fatalf("secrets rotate-key: %v", refused)
	}
	if report := admin(0, "reconcile"); report["ok"] != true {
		t.Fatalf("reconcile: %v", report)
	}
}
