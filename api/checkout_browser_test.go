package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payments"
	"github.com/payoutd/payoutd/vendors"
)

// chromiumPath is Debian's chromium, which .ci/run installs.
const chromiumPath = "/usr/bin/chromium"

// browserTimeout bounds each browser test, browser start included.
const browserTimeout = 60 * time.Second

// requireChromium skips the test without Chromium, except in CI, which
// must run it.
func requireChromium(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing (CI=true): .ci/run installs the chromium package", chromiumPath)
		}
		t.Skipf("%s is missing: install Debian's chromium package to run the browser test", chromiumPath)
	}
}

// checkoutServer serves the API over real HTTP with the real clock (the
// countdown runs) and PUBLIC_BASE_URL pointing at itself.
func checkoutServer(t *testing.T, env models.Environment) (*bundle, *httptest.Server) {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	base := "http://" + ts.Listener.Addr().String()
	b := setup(t, setupOptions{env: env, now: time.Now, configure: func(c *config.Config) { c.PublicBaseURL = base }})
	ts.Config.Handler = b.server.Handler()
	ts.Start()
	t.Cleanup(ts.Close)
	return b, ts
}

// browser starts a headless Chromium with a fresh profile and no network
// beyond what the page asks for. Script errors, failed requests and CSP
// violations the page causes are collected in problems. Options in extra
// override the defaults (a phone's window).
func browser(t *testing.T, extra ...chromedp.ExecAllocatorOption) (ctx context.Context, problems func() []string) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-proxy-server", true),
		chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(412, 915), // a phone
	)
	opts = append(opts, extra...)
	timeout, cancelTimeout := context.WithTimeout(context.Background(), browserTimeout)
	alloc, cancelAlloc := chromedp.NewExecAllocator(timeout, opts...)
	ctx, cancelBrowser := chromedp.NewContext(alloc, chromedp.WithLogf(t.Logf))
	// Cancelling the browser context waits for Chromium to exit, before
	// t.TempDir removes the profile.
	t.Cleanup(func() { cancelBrowser(); cancelAlloc(); cancelTimeout() })

	// Starts the browser; later errors and exceptions are collected.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start %s: %v", chromiumPath, err)
	}
	var mu sync.Mutex
	var seen []string
	done := make(chan struct{})
	messages := chromedp.Console(ctx)
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if (m.Type == chromedp.ConsoleError || m.IsException()) && !strings.HasSuffix(m.URL, "/favicon.ico") {
				mu.Lock()
				seen = append(seen, fmt.Sprintf("%s (%s %s)", m, m.Source, m.URL))
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { cancelBrowser(); <-done })
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

var countdownForm = regexp.MustCompile(`^[0-9]{2}:[0-5][0-9]$`)

// The payer's page in a real browser: merchant, amount, a running
// countdown, the QR image; in staging the simulate button turns the page
// to paid and the payment to SUCCESS.
func TestCheckoutInBrowser(t *testing.T) {
	requireChromium(t)
	b, ts := checkoutServer(t, models.Staging)
	p := b.newCheckoutPayment(b.newCheckoutMerchant("Toko Kopi Senja"), 150000)
	if !strings.HasPrefix(p.CheckoutURL, ts.URL+checkoutPath) {
		t.Fatalf("checkoutUrl %q is not on the test server %s", p.CheckoutURL, ts.URL)
	}
	ctx, problems := browser(t)

	if err := chromedp.Do(ctx, chromedp.Navigate(p.CheckoutURL), chromedp.WaitVisible(chromedp.CSS("#countdown"))); err != nil {
		t.Fatalf("open %s: %v", p.CheckoutURL, err)
	}
	merchantName := text(t, ctx, "#merchant")
	amount := text(t, ctx, "#amount")
	status := text(t, ctx, "#status")
	first := text(t, ctx, "#countdown")
	if merchantName != "Toko Kopi Senja" || amount != "Rp 150.000" || status != "Waiting for payment" {
		t.Errorf("page shows merchant %q, amount %q, status %q", merchantName, amount, status)
	}
	if !countdownForm.MatchString(first) || first > "15:00" || first < "14:00" {
		t.Errorf("countdown %q, want mm:ss just under 15:00", first)
	}
	// The QR image loaded (same origin, allowed by the policy).
	qrWidth, err := chromedp.Run(ctx, chromedp.Poll[int](
		`document.getElementById('qr').complete && document.getElementById('qr').naturalWidth`,
		chromedp.WithPollingTimeout(10*time.Second)))
	if err != nil || qrWidth != checkoutQRSize {
		t.Errorf("QR image natural width %d (%v), want %d", qrWidth, err, checkoutQRSize)
	}

	// The countdown moves by itself.
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](
		fmt.Sprintf(`document.getElementById('countdown').textContent !== %q`, first),
		chromedp.WithPollingTimeout(5*time.Second))); err != nil {
		t.Fatalf("countdown stuck at %q: %v", first, err)
	}
	if second := text(t, ctx, "#countdown"); !countdownForm.MatchString(second) || second >= first {
		t.Errorf("countdown went from %q to %q", first, second)
	}

	// Simulate: the page turns to paid.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#simulate"))); err != nil {
		t.Fatalf("click #simulate: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](
		`document.getElementById('status').dataset.status === 'SUCCESS'`,
		chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("the page did not turn to paid: %v (status %q)", err, text(t, ctx, "#status"))
	}
	status = text(t, ctx, "#status")
	detail := text(t, ctx, "#status-detail")
	qrShown, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!document.getElementById('qr').offsetParent`))
	if err != nil || status != "Paid" || !strings.Contains(detail, "Payment received") || qrShown {
		t.Errorf("after simulate: status %q, detail %q, QR shown %v (%v)", status, detail, qrShown, err)
	}
	if st := storedPaymentStatus(t, b, p.OrderID); st != models.PaymentSuccess {
		t.Errorf("stored payment %s, want SUCCESS", st)
	}

	// The QR image decodes back to the payload the create answered.
	resp, body := httpGet(t, ts.URL+checkoutPath+p.OrderID+"/qr.png")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("qr.png: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if got := decodeCheckoutQR(t, body); got != p.QRPayload {
		t.Errorf("QR decodes to %q, want %q", got, p.QRPayload)
	}
	if pr := problems(); len(pr) > 0 {
		t.Errorf("the page logged problems:\n%s", strings.Join(pr, "\n"))
	}
}

// In production the page has no simulate button and the route answers 404.
func TestCheckoutInBrowserProduction(t *testing.T) {
	requireChromium(t)
	b, ts := checkoutServer(t, models.Production)
	p := b.newCheckoutPayment(b.newCheckoutMerchant("Toko Produksi"), 15000)
	ctx, problems := browser(t)

	if err := chromedp.Do(ctx, chromedp.Navigate(p.CheckoutURL), chromedp.WaitVisible(chromedp.CSS("#countdown"))); err != nil {
		t.Fatalf("open %s: %v", p.CheckoutURL, err)
	}
	amount := text(t, ctx, "#amount")
	noButton, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('simulate') === null`))
	if amount != "Rp 15.000" || !noButton || err != nil {
		t.Errorf("amount %q, no #simulate %v (%v)", amount, noButton, err)
	}
	req, _ := http.NewRequest(http.MethodPost, ts.URL+checkoutPath+p.OrderID+"/simulate", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e errorResponse
	if json.NewDecoder(resp.Body).Decode(&e); resp.StatusCode != http.StatusNotFound || e.Error != "not found" {
		t.Errorf("POST simulate in production: %d %+v", resp.StatusCode, e)
	}
	if pr := problems(); len(pr) > 0 {
		t.Errorf("the page logged problems:\n%s", strings.Join(pr, "\n"))
	}
}

// text is the visible text of the element sel selects.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("read %s: %v", sel, err)
	}
	return s
}

func httpGet(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// The page follows the server by itself: a payment paid through another
// path (the acquirer's notification) turns the open page to paid, and a
// payment nobody pays turns it to expired when its time is up, never
// before. One browser for both pages keeps the test short.
func TestCheckoutInBrowserFollowsTheServer(t *testing.T) {
	requireChromium(t)
	b, ts := checkoutServer(t, models.Staging)
	m := b.newCheckoutMerchant("Toko Kopi Senja")
	ctx, problems := browser(t)
	waitStatus := func(want string, within time.Duration) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](
			fmt.Sprintf(`document.getElementById('status').dataset.status === %q`, want),
			chromedp.WithPollingTimeout(within))); err != nil {
			t.Fatalf("the page did not turn to %s within %s: %v (status %q)", want, within, err, text(t, ctx, "#status"))
		}
	}
	hidden := func(id string) bool {
		t.Helper()
		shown, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!document.getElementById('`+id+`').offsetParent`))
		if err != nil {
			t.Fatal(err)
		}
		return !shown
	}

	// Paid by the acquirer's notification while the page is open.
	paid := b.newCheckoutPayment(m, 150000)
	if err := chromedp.Do(ctx, chromedp.Navigate(paid.CheckoutURL), chromedp.WaitVisible(chromedp.CSS("#countdown"))); err != nil {
		t.Fatalf("open %s: %v", paid.CheckoutURL, err)
	}
	if status := text(t, ctx, "#status"); status != "Waiting for payment" {
		t.Fatalf("status %q before the payment", status)
	}
	header, body := b.server.acquirer.(interface {
		SignCallback(vendors.AcquirerResult) (http.Header, []byte)
	}).SignCallback(vendors.AcquirerResult{PaymentID: uuid.MustParse(paid.OrderID), Status: "SUCCESS"})
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/acquirer-callbacks/sandboxpay", bytes.NewReader(body))
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(answer), `"applied"`) {
		t.Fatalf("notification: %d %s", resp.StatusCode, answer)
	}
	waitStatus("SUCCESS", 5*time.Second) // the page polls every 2 s
	if status, detail := text(t, ctx, "#status"), text(t, ctx, "#status-detail"); status != "Paid" ||
		!strings.Contains(detail, "Payment received") || !hidden("qr") || !hidden("simulate") {
		t.Errorf("after the notification: status %q, detail %q, QR hidden %v, button hidden %v", status, detail, hidden("qr"), hidden("simulate"))
	}

	// Nobody pays: expired once its 3 seconds are up.
	client, err := models.NewStore(b.db).FindClient(context.Background(), m.id)
	if err != nil {
		t.Fatal(err)
	}
	unpaid, err := b.server.payments.Create(context.Background(), client, payments.CreateRequest{Price: models.Rupiah(15000),
		PayerID: "player-2", Flow: models.PaymentFlowEmbed, ExpiresIn: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(b.server.checkoutURL(unpaid.ID.String())), chromedp.WaitVisible(chromedp.CSS("#countdown"))); err != nil {
		t.Fatalf("open the unpaid payment's page: %v", err)
	}
	if countdown := text(t, ctx, "#countdown"); countdown > "00:03" || countdown < "00:01" {
		t.Errorf("countdown %q, want at most 00:03", countdown)
	}
	waitStatus("EXPIRED", time.Until(unpaid.ExpiredAt)+4*time.Second)
	if time.Now().Before(unpaid.ExpiredAt) {
		t.Errorf("the page showed expired before expired_at %s", unpaid.ExpiredAt)
	}
	if status, detail := text(t, ctx, "#status"), text(t, ctx, "#status-detail"); status != "Expired" ||
		!strings.Contains(detail, "expired") || !hidden("qr") || !hidden("simulate") {
		t.Errorf("after expiry: status %q, detail %q, QR hidden %v, button hidden %v", status, detail, hidden("qr"), hidden("simulate"))
	}
	if st := storedPaymentStatus(t, b, unpaid.ID.String()); st != models.PaymentExpired {
		t.Errorf("stored payment %s, want EXPIRED", st)
	}
	if pr := problems(); len(pr) > 0 {
		t.Errorf("the page logged problems:\n%s", strings.Join(pr, "\n"))
	}
}
