package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/signature"
)

// TestDevHelpPrintsUsage: `payoutd dev --help` used to start a server.
func TestDevHelpPrintsUsage(t *testing.T) {
	t.Parallel()
	for _, flag := range []string{"--help", "-h"} {
		var stdout, stderr strings.Builder
		done := make(chan int, 1)
		go func() {
			done <- run(context.Background(), []string{"dev", flag}, &stdout, &stderr, func(string) string { return "" })
		}()
		select {
		case code := <-done:
			if code != 0 || !strings.Contains(stdout.String(), "--vendors") || stderr.Len() != 0 {
				t.Errorf("dev %s: exit %d, stdout %q, stderr %q; want 0 and the usage", flag, code, stdout.String(), stderr.String())
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("dev %s did not return: it started a server", flag) // a guard against hanging
		}
	}
}

func TestDevRefusesUnknownVendors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--vendors=paypal"}, `unknown rail "paypal"; want a comma-separated list of sandbox, simulated-xendit, simulated-snap`},
		{[]string{"--vendors", "sandbox,simulated-xendit,mystery"}, `unknown rail "mystery"`},
		{[]string{"--vendors="}, "an empty name"},
		{[]string{"--vendors=sandbox,sandbox"}, `"sandbox" is listed twice`},
		{[]string{"--rails=sandbox"}, "flag provided but not defined: -rails"},
		{[]string{"extra"}, `unexpected arguments ["extra"]`},
	} {
		var stdout, stderr strings.Builder
		code := run(context.Background(), append([]string{"dev"}, tt.args...), &stdout, &stderr, func(string) string { return "" })
		if code != 2 || !strings.Contains(stderr.String(), tt.want) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("dev %v: exit %d, stderr %q; want 2 and one line saying %q", tt.args, code, stderr.String(), tt.want)
		}
	}
}

// startDev runs `payoutd dev` with args until the test ends and returns
// its banner and its log.
func startDev(t *testing.T, args []string, env map[string]string) (banner string, log *testenv.SyncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout testenv.SyncBuffer
	log = &testenv.SyncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"dev"}, args...), &stdout, log, func(k string) string { return env[k] })
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("payoutd dev exited %d after cancellation", code)
			}
		case <-time.After(30 * time.Second):
			t.Error("payoutd dev did not stop within 30 s of cancellation")
		}
	})
	return waitFor(t, &stdout, "A payment of 150000", 20*time.Second), log
}

// bannerField is the first submatch of re in the banner.
func bannerField(t *testing.T, banner, re string) string {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(banner)
	if m == nil {
		t.Fatalf("banner lacks %s:\n%s", re, banner)
	}
	return m[1]
}

// `payoutd dev --vendors=simulated-xendit`: the demo's default wallet is on
// xendit, a payout on it is paid over the simulator's HTTP, and the
// simulator's webhook reaches the service's /vendor-callbacks/xendit.
func TestDevSimulatedXenditPaysOverHTTP(t *testing.T) {
	env := map[string]string{"HTTP_ADDR": "127.0.0.1:0", "DEV_DATA_DIR": t.TempDir(), "LOG_LEVEL": "info", "SANDBOX_COMPLETE_AFTER": "300ms"}
	banner, log := startDev(t, []string{"--vendors=simulated-xendit"}, env)
	if !strings.Contains(banner, "simulated Xendit, staging rules") || strings.Contains(banner, "simbank") {
		t.Errorf("banner does not say only Xendit is simulated:\n%s", banner)
	}
	apiKey := bannerField(t, banner, `api_key\s+(v3_test_[0-9a-f]+)`)
	secret := bannerField(t, banner, `signing_secret\s+([0-9a-f]{64})`)
	walletID := bannerField(t, banner, `wallets\s+([0-9a-f-]{36})  Xendit wallet \(xendit, default,`)
	base := bannerField(t, banner, `Ready in \S+ at (http://\S+)`)
	simURL := bannerField(t, banner, `Xendit Payouts v2 simulator at (http://127\.0\.0\.1:\d+)`)
	simKey := bannerField(t, banner, `secret key\s+(xnd_development_[0-9a-f]+)`)
	if !strings.Contains(banner, "webhooks with x-callback-token to "+base+"/vendor-callbacks/xendit") {
		t.Errorf("banner does not say where the webhooks go:\n%s", banner)
	}

	// The simulator answers its printed key on its own port.
	req, _ := http.NewRequest(http.MethodGet, simURL+"/payouts_channels?channel_code=ID_BCA", nil)
	req.SetBasicAuth(simKey, "")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the simulator's channels with the printed key: %v %v", resp, err)
	}

	body := `{"client_wallet_id":"` + walletID + `","amount":"100000","bank_code":"bca","account_no":"1234567890","transfer_type":"BIFAST","account_holder_name":"Budi Santoso"}`
	id := createDevPayout(t, base, apiKey, secret, "dev-xendit-1", body)
	devEventually(t, base, apiKey, secret, id, "SUCCESS")

	// What went over the wire, as the log shows a newcomer.
	waitFor(t, log, `"msg":"simulator webhook","provider":"xendit","url":"`+base+`/vendor-callbacks/xendit","status":200`, 20*time.Second)
	if s := log.String(); !strings.Contains(s, `"msg":"simulator request","provider":"xendit","method":"POST","path":"/v2/payouts","status":200`) {
		t.Errorf("the log shows no create at the simulator:\n%s", s)
	}
	if s := log.String(); strings.Contains(s, simKey) || strings.Contains(s, "1234567890") {
		t.Error("the log shows the secret key or the account number")
	}

	// The banner's Xendit payout command, pasted as printed.
	if script, ok := pasteable(t, banner, "A payout of 100000 over the simulated Xendit rail to account 1234567890 at BCA"); ok {
		out, err := exec.Command("bash", "-c", script).CombinedOutput()
		if err != nil || !strings.Contains(string(out), `"status":`) {
			t.Fatalf("pasted payout failed: %v\n%s\n--- script ---\n%s", err, out, script)
		}
	}
}

// With both rails the sandbox's Main wallet, listed first, stays the default.
func TestDevSandboxAndSimulatedXendit(t *testing.T) {
	env := map[string]string{"HTTP_ADDR": "127.0.0.1:0", "DEV_DATA_DIR": t.TempDir(), "LOG_LEVEL": "warn"}
	banner, _ := startDev(t, []string{"--vendors", "sandbox,simulated-xendit"}, env)
	for _, want := range []string{
		"sandbox vendors and simulated Xendit, staging rules",
		"Main wallet (simbank, default, balance 10000000.0000)",
		"E-wallet payouts (simwallet, balance 1000000.0000)",
		"Xendit wallet (xendit, balance 10000000.0000)",
		"A payout of 100000 to the sandbox account 1234567890 at BCA",
		"A payout of 100000 over the simulated Xendit rail",
		"Xendit Payouts v2 simulator at http://127.0.0.1:",
	} {
		if !strings.Contains(banner, want) {
			t.Errorf("banner lacks %q:\n%s", want, banner)
		}
	}
}

// pasteable returns the banner's export line (BASE, KEY, SECRET, WALLET)
// and the shell lines after marker, or false when bash, curl or openssl
// are missing.
func pasteable(t *testing.T, banner, marker string) (string, bool) {
	t.Helper()
	for _, tool := range []string{"bash", "curl", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Logf("%s not installed; the pasted commands are not run", tool)
			return "", false
		}
	}
	keys := regexp.MustCompile(`(?m)^\s*(export BASE=\S+ KEY=\S+ SECRET=\S+ WALLET=\S+)$`).FindStringSubmatch(banner)
	if keys == nil {
		t.Fatalf("banner has no export BASE=… KEY=… SECRET=… WALLET=… line:\n%s", banner)
	}
	return keys[1] + "\n" + shellBlock(t, banner, marker+" (same KEY and SECRET):"), true
}

// createDevPayout creates a payout signed as the banner shows and returns
// its id.
func createDevPayout(t *testing.T, base, apiKey, secret, key, body string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v3/disbursements", bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", apiKey)
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("x-signature", signature.Sign(secret, []byte(body), time.Now()))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var d struct{ ID string }
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &d) != nil || d.ID == "" {
		t.Fatalf("create: %d %s", resp.StatusCode, raw)
	}
	return d.ID
}

// devEventually waits (generously) until the disbursement has status want.
func devEventually(t *testing.T, base, apiKey, secret, id, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest(http.MethodGet, base+"/api/v3/disbursements/"+id, nil)
		req.Header.Set("x-api-key", apiKey)
		req.Header.Set("x-signature", signature.Sign(secret, nil, time.Now()))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var d struct{ Status string }
		_ = json.Unmarshal(raw, &d)
		if last = d.Status; last == want {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("disbursement %s is %q, want %s", id, last, want)
}
