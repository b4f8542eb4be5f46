package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/payoutd/payoutd/signature"
)

// The sandbox as the README walks through it: dev started with a kept data
// folder, the banner's export line and payout command pasted as printed, the
// payout's webhook seen in the inbox with a valid signature, the inbox set
// to fail and a retry seen, a redelivery by `payoutd admin --dev webhook
// redeliver`, and after a restart the first run's credentials still work.
func TestDevSandboxWalkThrough(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s not installed (CI=true): .ci/run installs it", tool)
			}
			t.Skipf("%s not installed", tool)
		}
	}
	dir := t.TempDir()
	env := map[string]string{"HTTP_ADDR": "127.0.0.1:0", "DEV_DATA_DIR": dir, "LOG_LEVEL": "warn",
		"SANDBOX_COMPLETE_AFTER": "100ms", "WEBHOOK_RETRY_BASE": "1s"}
	banner, stop := runDevUntil(t, env)
	base := bannerField(t, banner, `Ready in \S+ at (http://\S+)`)
	apiKey := bannerField(t, banner, `api_key\s+(v3_test_[0-9a-f]+)`)
	secret := bannerField(t, banner, `signing_secret\s+([0-9a-f]{64})`)
	walletID := bannerField(t, banner, `wallets\s+([0-9a-f-]{36})`)
	if !strings.Contains(banner, base+"/dev/inbox") {
		t.Fatalf("the banner does not show the inbox:\n%s", banner)
	}

	// The export line and the payout command, pasted as printed.
	exports := bannerField(t, banner, `\n  (export BASE=\S+ KEY=\S+ SECRET=\S+ WALLET=\S+)\n`)
	payout := shellBlock(t, banner, "A payout of 100000 to the sandbox account 1234567890 at BCA (same KEY and SECRET):")
	out, err := exec.Command("bash", "-c", exports+"\n"+payout).CombinedOutput()
	var created struct{ ID, Status string }
	if err != nil || json.Unmarshal(out, &created) != nil || created.ID == "" {
		t.Fatalf("the pasted payout: %v\n%s", err, out)
	}

	// Its webhook reaches the inbox, signed with the demo's callback secret.
	first := waitInbox(t, base, func(d inboxDelivery) bool {
		return d.Event == "disbursement.success" && strings.Contains(d.Body, created.ID)
	})
	if !first.Verified || first.Answered != http.StatusOK || first.Headers["x-callback-signature"] == "" {
		t.Fatalf("the payout's delivery: %+v", first)
	}

	// The inbox set to fail: the next payout's webhook is retried.
	post(t, base+"/dev/inbox/mode", `{"mode":"fail"}`)
	body := []byte(`{"client_wallet_id":"` + walletID + `","amount":"50000","bank_code":"bca","account_no":"1234567890","transfer_type":"BIFAST"}`)
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v3/disbursements", bytes.NewReader(body))
	req.Header.Set("x-api-key", apiKey)
	req.Header.Set("x-signature", signature.Sign(secret, body, time.Now()))
	req.Header.Set("Idempotency-Key", "inbox-fail-1")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	failed := waitInbox(t, base, func(d inboxDelivery) bool {
		return strings.Contains(d.Body, created.ID) && d.Answered == http.StatusInternalServerError
	})
	waitInbox(t, base, func(d inboxDelivery) bool {
		return d.EventID == failed.EventID && d.Seq > failed.Seq // the retry
	})

	// Back to 200, and the event redelivered by the admin CLI on this dev.
	post(t, base+"/dev/inbox/mode", `{"mode":"ok"}`)
	var stdout, stderr strings.Builder
	adminEnv := map[string]string{"PAYOUTD_DEV_DIR": dir}
	if code := run(context.Background(), []string{"admin", "--dev", "webhook", "redeliver", "--event", failed.EventID}, &stdout, &stderr,
		func(k string) string { return adminEnv[k] }); code != 0 {
		t.Fatalf("admin --dev webhook redeliver: exit %d, %s %s", code, stdout.String(), stderr.String())
	}
	waitInbox(t, base, func(d inboxDelivery) bool {
		return d.EventID == failed.EventID && d.Answered == http.StatusOK && d.Verified
	})

	// A restart keeps the first run's credentials.
	stop()
	again, _ := runDevUntil(t, env)
	base = bannerField(t, again, `Ready in \S+ at (http://\S+)`)
	read, _ := http.NewRequest(http.MethodGet, base+"/api/v3/wallets/"+walletID+"/balance", nil)
	read.Header.Set("x-api-key", apiKey)
	read.Header.Set("x-signature", signature.Sign(secret, nil, time.Now()))
	r, err := http.DefaultClient.Do(read)
	if err != nil || r.StatusCode != http.StatusOK {
		t.Fatalf("the first run's signed request after a restart: %v %v", r, err)
	}
	r.Body.Close()
}

// waitInbox polls the inbox's JSON until a delivery matches.
func waitInbox(t *testing.T, base string, match func(inboxDelivery) bool) inboxDelivery {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last inboxSnapshot
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/dev/inbox.json")
		if err == nil {
			last = inboxSnapshot{}
			json.NewDecoder(resp.Body).Decode(&last)
			resp.Body.Close()
			for _, d := range last.Deliveries {
				if match(d) {
					return d
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no matching delivery in the inbox within 30 s; it has %+v", last)
	return inboxDelivery{}
}

func post(t *testing.T, url, body string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d %s", url, resp.StatusCode, b)
	}
}
