package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/payoutd/payoutd/signature"
)

// A browser opens dev's webhook inbox and sees the delivery of a payout:
// its event, the verified signature and the answer, as a user reads them.
func TestDevInboxInABrowser(t *testing.T) {
	const chromium = "/usr/bin/chromium" // Debian's, which .ci/run installs
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing (CI=true): .ci/run installs the chromium package", chromium)
		}
		t.Skipf("%s is missing: install Debian's chromium package to run the browser test", chromium)
	}
	env := map[string]string{"HTTP_ADDR": "127.0.0.1:0", "DEV_DATA_DIR": t.TempDir(), "LOG_LEVEL": "warn", "SANDBOX_COMPLETE_AFTER": "100ms"}
	banner, _ := runDevUntil(t, env)
	base := bannerField(t, banner, `Ready in \S+ at (http://\S+)`)
	apiKey := bannerField(t, banner, `api_key\s+(v3_test_[0-9a-f]+)`)
	secret := bannerField(t, banner, `signing_secret\s+([0-9a-f]{64})`)
	walletID := bannerField(t, banner, `wallets\s+([0-9a-f-]{36})`)

	body := []byte(`{"client_wallet_id":"` + walletID + `","amount":"100000","bank_code":"bca","account_no":"1234567890","transfer_type":"BIFAST"}`)
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v3/disbursements", bytes.NewReader(body))
	req.Header.Set("x-api-key", apiKey)
	req.Header.Set("x-signature", signature.Sign(secret, body, time.Now()))
	req.Header.Set("Idempotency-Key", "browser-1")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %v %v", resp, err)
	}
	resp.Body.Close()
	waitInbox(t, base, func(d inboxDelivery) bool { return d.Event == "disbursement.success" })

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("no-proxy-server", true))
	timeout, cancelTimeout := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancelTimeout()
	alloc, cancelAlloc := chromedp.NewExecAllocator(timeout, opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/dev/inbox"), chromedp.WaitVisible(chromedp.CSS("tr.delivery"))); err != nil {
		t.Fatal(err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Webhook inbox", "disbursement.success", "verified", "200"} {
		if !strings.Contains(text, want) {
			t.Fatalf("the inbox page lacks %q:\n%s", want, text)
		}
	}

	// Its "answer 500" button switches the mode: the browser's own
	// same-origin post of the button's JSON, back to the page.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.Search(`//button[text()="answer 500"]`)),
		chromedp.WaitVisible(chromedp.Search(`//strong[@id="mode" and text()="fail"]`))); err != nil {
		t.Fatalf("the answer 500 button: %v", err)
	}
	var snap inboxSnapshot
	r, err := http.Get(base + "/dev/inbox.json")
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(r.Body).Decode(&snap)
	r.Body.Close()
	if snap.Mode != inboxFail {
		t.Fatalf("after the answer 500 button the mode is %q", snap.Mode)
	}
}
