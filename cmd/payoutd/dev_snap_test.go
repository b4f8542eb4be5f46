package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/payoutd/payoutd/signature"
)

// `payoutd dev --vendors=simulated-snap`: the demo's default wallet is on
// snap:bca, a quote names the holder from the simulator's account inquiry,
// a payout is paid over the simulator's HTTP and its signed notification
// reaches the service's /vendor-callbacks/snap/bca; the service says at
// start that this rail's results come by notification.
func TestDevSimulatedSnapPaysOverHTTP(t *testing.T) {
	env := map[string]string{"HTTP_ADDR": "127.0.0.1:0", "DEV_DATA_DIR": t.TempDir(), "LOG_LEVEL": "info", "SANDBOX_COMPLETE_AFTER": "300ms",
		// A real bank's configuration in the environment never reaches
		// the simulator: dev replaces it.
		"SNAP_BANKS": "bca", "SNAP_BCA_BASE_URL": "https://snap.bank.invalid"}
	banner, log := startDev(t, []string{"--vendors=simulated-snap"}, env)
	if !strings.Contains(banner, "simulated SNAP BI (BCA), staging rules") || strings.Contains(banner, "simbank") {
		t.Errorf("banner does not say only SNAP is simulated:\n%s", banner)
	}
	if strings.Contains(banner, "PRIVATE KEY") || strings.Contains(banner, "8880000001") {
		t.Errorf("banner shows a key or the source account:\n%s", banner)
	}
	apiKey := bannerField(t, banner, `api_key\s+(v3_test_[0-9a-f]+)`)
	secret := bannerField(t, banner, `signing_secret\s+([0-9a-f]{64})`)
	walletID := bannerField(t, banner, `wallets\s+([0-9a-f-]{36})  BCA \(SNAP\) wallet \(snap:bca, default, balance 10000000\.0000\)`)
	base := bannerField(t, banner, `Ready in \S+ at (http://\S+)`)
	bannerField(t, banner, `SNAP BI simulator of BCA at (http://127\.0\.0\.1:\d+)`)
	if !strings.Contains(banner, "signed transfer notifications to "+base+"/vendor-callbacks/snap/bca") {
		t.Errorf("banner does not say where the notifications go:\n%s", banner)
	}

	body := `{"client_wallet_id":"` + walletID + `","amount":"100000","bank_code":"bri","account_no":"1234567890","transfer_type":"BIFAST"}`
	if holder := devQuoteHolder(t, base, apiKey, secret, body); holder != "SANDBOX 7890" {
		t.Errorf("quote's account_holder_name %q, want SANDBOX 7890 from the account inquiry", holder)
	}
	id := createDevPayout(t, base, apiKey, secret, "dev-snap-1", body)
	devEventually(t, base, apiKey, secret, id, "SUCCESS")

	// What went over the wire, as the log shows a newcomer.
	waitFor(t, log, `"msg":"simulator webhook","provider":"snap:bca","url":"`+base+`/vendor-callbacks/snap/bca","status":200`, 20*time.Second)
	for _, path := range []string{"/v1.0/access-token/b2b", "/v1.0/account-inquiry-external", "/v1.0/transfer-interbank"} {
		if s := log.String(); !strings.Contains(s, `"msg":"simulator request","provider":"snap:bca","method":"POST","path":"`+path+`","status":200`) {
			t.Errorf("the log shows no %s at the simulator:\n%s", path, s)
		}
	}
	if s := log.String(); !strings.Contains(s, `"msg":"rail results come by notification, each confirmed by status inquiry","vendor":"snap:bca"`) {
		t.Errorf("the log does not say how snap:bca's results come:\n%s", s)
	}
	if s := log.String(); strings.Contains(s, "1234567890") || strings.Contains(s, "8880000001") || strings.Contains(s, "PRIVATE KEY") {
		t.Error("the log shows an account number or a key")
	}

	// The banner's SNAP payout command, pasted as printed.
	if script, ok := pasteable(t, banner, "A payout of 100000 over the simulated SNAP rail (BCA) to account 1234567890 at BRI"); ok {
		out, err := exec.Command("bash", "-c", script).CombinedOutput()
		if err != nil || !strings.Contains(string(out), `"status":`) {
			t.Fatalf("pasted payout failed: %v\n%s\n--- script ---\n%s", err, out, script)
		}
	}
}

// All three rails together: every wallet is listed, the sandbox's Main
// wallet (listed first) stays the default, and both simulators show.
func TestDevAllRailsTogether(t *testing.T) {
	env := map[string]string{"HTTP_ADDR": "127.0.0.1:0", "DEV_DATA_DIR": t.TempDir(), "LOG_LEVEL": "warn", "SANDBOX_COMPLETE_AFTER": "300ms"}
	banner, _ := startDev(t, []string{"--vendors", "sandbox,simulated-xendit,simulated-snap"}, env)
	for _, want := range []string{
		"sandbox vendors, simulated Xendit and simulated SNAP BI (BCA), staging rules",
		"Main wallet (simbank, default, balance 10000000.0000)",
		"E-wallet payouts (simwallet, balance 1000000.0000)",
		"Xendit wallet (xendit, balance 10000000.0000)",
		"BCA (SNAP) wallet (snap:bca, balance 10000000.0000)",
		"A payout of 100000 to the sandbox account 1234567890 at BCA",
		"A payout of 100000 over the simulated Xendit rail",
		"A payout of 100000 over the simulated SNAP rail (BCA)",
		"Xendit Payouts v2 simulator at http://127.0.0.1:",
		"SNAP BI simulator of BCA at http://127.0.0.1:",
	} {
		if !strings.Contains(banner, want) {
			t.Errorf("banner lacks %q:\n%s", want, banner)
		}
	}
	apiKey := bannerField(t, banner, `api_key\s+(v3_test_[0-9a-f]+)`)
	secret := bannerField(t, banner, `signing_secret\s+([0-9a-f]{64})`)
	base := bannerField(t, banner, `Ready in \S+ at (http://\S+)`)
	snapWallet := bannerField(t, banner, `([0-9a-f-]{36})  BCA \(SNAP\) wallet`)
	body := `{"client_wallet_id":"` + snapWallet + `","amount":"100000","bank_code":"bri","account_no":"1234567890","transfer_type":"BIFAST"}`
	id := createDevPayout(t, base, apiKey, secret, "dev-all-snap-1", body)
	devEventually(t, base, apiKey, secret, id, "SUCCESS")
}

// devQuoteHolder asks for a signed quote of body and returns its
// account_holder_name.
func devQuoteHolder(t *testing.T, base, apiKey, secret, body string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v3/disbursements/quote", bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", apiKey)
	req.Header.Set("x-signature", signature.Sign(secret, []byte(body), time.Now()))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var q struct {
		AccountHolderName string `json:"account_holder_name"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &q) != nil {
		t.Fatalf("quote: %d %s", resp.StatusCode, raw)
	}
	return q.AccountHolderName
}
