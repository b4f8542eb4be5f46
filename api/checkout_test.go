package api

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/makiuchi-d/gozxing"
	"github.com/makiuchi-d/gozxing/qrcode"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// newCheckoutMerchant is a merchant named name with a default wallet, so it can take
// payments.
func (b *bundle) newCheckoutMerchant(name string) merchant {
	b.t.Helper()
	m := b.newClient(admin.ClientOptions{Name: name})
	if _, err := admin.CreateWallet(context.Background(), b.admin, admin.WalletOptions{
		ClientID: m.id, Name: "Main", Vendor: sandbox.SimBank, Default: true}); err != nil {
		b.t.Fatalf("create default wallet: %v", err)
	}
	return m
}

// newCheckoutPayment makes a payment of price rupiah through the API.
func (b *bundle) newCheckoutPayment(m merchant, price int) paymentCreatedData {
	b.t.Helper()
	resp := b.do(request{method: http.MethodPost, path: "/api/v1/payments", apiKey: m.apiKey, timestamp: true,
		body: []byte(`{"price": ` + jsonNumber(int64(price)) + `, "playerId": "player-1"}`)})
	if resp.status != http.StatusCreated {
		b.t.Fatalf("create payment: status %d, body %s", resp.status, resp.body)
	}
	var out paymentCreated
	if err := json.Unmarshal(resp.body, &out); err != nil {
		b.t.Fatalf("create payment: %v in %s", err, resp.body)
	}
	return out.Data
}

// decodeCheckoutQR reads the text of the QR code in a PNG. The reader first
// looks for the code as in a photo; ZXing's detector misses a few percent
// of perfectly rendered codes, depending on the module size alone (a known
// limitation, zxing/zxing#1763), so it then reads the image as the pure,
// axis-aligned code with its quiet zone that it is. Both ways decode every
// module and check the error correction.
func decodeCheckoutQR(t testing.TB, pngBytes []byte) string {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(pngBytes))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	if err != nil {
		t.Fatal(err)
	}
	res, err := qrcode.NewQRCodeReader().Decode(bmp, nil)
	if err != nil {
		t.Logf("QR detector: %v; reading it as a pure barcode", err)
		res, err = qrcode.NewQRCodeReader().Decode(bmp, map[gozxing.DecodeHintType]any{gozxing.DecodeHintType_PURE_BARCODE: true})
	}
	if err != nil {
		t.Fatalf("no QR code in the image: %v", err)
	}
	return res.GetText()
}

var htmlAccept = map[string]string{"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}

func TestFormatRupiah(t *testing.T) {
	for _, c := range []struct {
		amount models.Amount
		want   string
	}{
		{models.Rupiah(15000), "Rp 15.000"},
		{models.Rupiah(150000), "Rp 150.000"},
		{models.Rupiah(1234567), "Rp 1.234.567"},
		{models.Rupiah(100000000), "Rp 100.000.000"},
		{models.Rupiah(999), "Rp 999"},
		{models.Rupiah(1000), "Rp 1.000"},
		{0, "Rp 0"},
		{models.Rupiah(1500) + 5000, "Rp 1.500,50"},
		{models.Rupiah(1500) + 1234, "Rp 1.500,1234"},
		{models.Rupiah(1500) + 1, "Rp 1.500,0001"},
		{-models.Rupiah(25000), "Rp -25.000"},
	} {
		if got := formatRupiah(c.amount); got != c.want {
			t.Errorf("formatRupiah(%s) = %q, want %q", c.amount, got, c.want)
		}
	}
}

func TestFormatCountdown(t *testing.T) {
	for d, want := range map[time.Duration]string{
		15 * time.Minute: "15:00", 61 * time.Second: "01:01", 1500 * time.Millisecond: "00:02",
		time.Hour: "60:00", 0: "00:00", -time.Minute: "00:00",
	} {
		if got := formatCountdown(d); got != want {
			t.Errorf("formatCountdown(%v) = %q, want %q", d, got, want)
		}
	}
}

var nonceAttr = regexp.MustCompile(`<script nonce="([^"]+)">`)

func checkSecurityHeaders(t *testing.T, h http.Header) {
	t.Helper()
	csp := h.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "script-src 'self' 'nonce-", "img-src 'self'", "connect-src 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") || strings.Contains(csp, "*") {
		t.Errorf("Content-Security-Policy %q allows too much", csp)
	}
	for k, want := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"} {
		if got := h.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}

func TestCheckoutPage(t *testing.T) {
	b := setup(t, setupOptions{env: models.Staging})
	m := b.newCheckoutMerchant("Toko Kopi & Teh <Bandung>")
	p := b.newCheckoutPayment(m, 150000)
	if want := "http://localhost:8080/checkout/" + p.OrderID; p.CheckoutURL != want {
		t.Fatalf("checkoutUrl %q, want %q", p.CheckoutURL, want)
	}

	resp := b.do(request{path: "/checkout/" + p.OrderID, headers: htmlAccept})
	resp.expect(t, http.StatusOK, "")
	if ct := resp.header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	checkSecurityHeaders(t, resp.header)
	html := string(resp.body)
	for _, want := range []string{
		`<html lang="en">`,
		`<h1 id="merchant">Toko Kopi &amp; Teh &lt;Bandung&gt;</h1>`,
		`<span id="amount">Rp 150.000</span>`,
		`src="/checkout/` + p.OrderID + `/qr.png"`,
		`alt="QRIS code to pay Rp 150.000 to Toko Kopi &amp; Teh &lt;Bandung&gt;"`,
		`<span id="countdown" role="timer">15:00</span>`,
		`aria-live="polite"`,
		`data-status="PENDING">Waiting for payment</div>`,
		`data-expires-ms="` + jsonNumber(fixedNow.Add(15*time.Minute).UnixMilli()) + `"`,
		`data-server-ms="` + jsonNumber(fixedNow.UnixMilli()) + `"`,
		`<button id="simulate" type="button">Simulate payment</button>`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	// No external asset: every src and href stays on this origin.
	if ext := regexp.MustCompile(`(?i)(src|href)="(https?:)?//`).FindString(html); ext != "" {
		t.Errorf("page refers to another origin: %s", ext)
	}
	// The inline script and style carry the nonce of this response's policy.
	nonce := nonceAttr.FindStringSubmatch(html)
	if nonce == nil || !strings.Contains(resp.header.Get("Content-Security-Policy"), "'nonce-"+nonce[1]+"'") ||
		!strings.Contains(html, `<style nonce="`+nonce[1]+`">`) {
		t.Errorf("script nonce %v does not match the policy %q", nonce, resp.header.Get("Content-Security-Policy"))
	}
	again := b.do(request{path: "/checkout/" + p.OrderID})
	if again.header.Get("Content-Security-Policy") == resp.header.Get("Content-Security-Policy") {
		t.Error("the nonce must change on every response")
	}

	// Paid: the page says so and offers no QR or button.
	b.do(b.simulate(p.OrderID)).expect(t, http.StatusOK, "")
	html = string(b.do(request{path: "/checkout/" + p.OrderID, headers: htmlAccept}).body)
	for _, want := range []string{`data-status="SUCCESS">Paid</div>`, `<section id="pay" aria-labelledby="pay-heading" hidden>`,
		`<button id="simulate" type="button" hidden>`} {
		if !strings.Contains(html, want) {
			t.Errorf("paid page lacks %s", want)
		}
	}
}

func TestCheckoutPageProductionHasNoSimulate(t *testing.T) {
	b := setup(t, setupOptions{env: models.Production})
	p := b.newCheckoutPayment(b.newCheckoutMerchant("Toko Prod"), 15000)
	resp := b.do(request{path: "/checkout/" + p.OrderID, headers: htmlAccept})
	resp.expect(t, http.StatusOK, "")
	html := string(resp.body)
	if !strings.Contains(html, `<span id="amount">Rp 15.000</span>`) || !strings.Contains(html, "Toko Prod") {
		t.Errorf("page lacks the amount or the merchant:\n%s", html)
	}
	if strings.Contains(html, `id="simulate"`) || strings.Contains(html, "Simulate payment") ||
		strings.Contains(html, "data-simulate-url") || strings.Contains(html, "Staging") {
		t.Error("production page offers a simulation")
	}
	b.do(request{method: http.MethodPost, path: "/checkout/" + p.OrderID + "/simulate"}).expect(t, http.StatusNotFound, "not found")
	b.do(b.simulate(p.OrderID)).expect(t, http.StatusNotFound, "not found")
	b.do(request{method: http.MethodPost, path: "/checkout/not-a-uuid/simulate"}).expect(t, http.StatusNotFound, "not found")
	// Not refused by a handler: not mounted at all.
	for _, r := range b.server.engine.Routes() {
		if strings.HasSuffix(r.Path, "/simulate") {
			t.Errorf("production mounts %s %s", r.Method, r.Path)
		}
	}
	if st := storedPaymentStatus(t, b, p.OrderID); st != models.PaymentPending {
		t.Errorf("status %s after a refused simulation", st)
	}
}

// In staging, a payment of a real acquirer is paid by a real payer: its
// page carries no simulate button, URL or token and no "no real money"
// note, and the simulate route answers 404 as if unrouted, even with the
// token the sandbox would have had, leaving the payment PENDING.
func TestCheckoutStagingRealAcquirerHasNoSimulate(t *testing.T) {
	b := setup(t, setupOptions{env: models.Staging})
	m := b.newCheckoutMerchant("Toko Nyata")
	p, sandboxed := b.newCheckoutPayment(m, 25000), b.newCheckoutPayment(m, 26000)
	if err := b.db.Model(&models.Payment{}).Where("id = ?", p.OrderID).Update("acquirer", "xendit-qris").Error; err != nil {
		t.Fatal(err)
	}
	html := string(b.do(request{path: "/checkout/" + p.OrderID, headers: htmlAccept}).body)
	if !strings.Contains(html, `<span id="amount">Rp 25.000</span>`) {
		t.Fatalf("page lacks the amount:\n%s", html)
	}
	for _, unwanted := range []string{"data-simulate-token", "data-simulate-url", "/simulate", `id="simulate"`, "Simulate payment", "no real money"} {
		if strings.Contains(html, unwanted) {
			t.Errorf("a real acquirer's staging page carries %q", unwanted)
		}
	}
	b.do(b.simulate(p.OrderID)).expect(t, http.StatusNotFound, "not found")
	if st := storedPaymentStatus(t, b, p.OrderID); st != models.PaymentPending {
		t.Fatalf("status %s after a refused simulation", st)
	}
	// The sandbox's payment beside it keeps its button.
	if html := string(b.do(request{path: "/checkout/" + sandboxed.OrderID, headers: htmlAccept}).body); !simulateTokenAttr.MatchString(html) {
		t.Error("the sandbox payment's page lost its simulate token")
	}
	b.do(b.simulate(sandboxed.OrderID)).expect(t, http.StatusOK, "")
}

func storedPaymentStatus(t *testing.T, b *bundle, id string) models.PaymentStatus {
	t.Helper()
	var p models.Payment
	if err := b.db.Where("id = ?", id).Take(&p).Error; err != nil {
		t.Fatal(err)
	}
	return p.Status
}

func TestCheckoutQR(t *testing.T) {
	b := setup(t, setupOptions{env: models.Staging})
	p := b.newCheckoutPayment(b.newCheckoutMerchant("Warung QR"), 1234567)
	resp := b.do(request{path: "/checkout/" + p.OrderID + "/qr.png"})
	resp.expect(t, http.StatusOK, "")
	if ct := resp.header.Get("Content-Type"); ct != "image/png" {
		t.Errorf("Content-Type %q, want image/png", ct)
	}
	checkSecurityHeaders(t, resp.header)
	img, err := png.Decode(bytes.NewReader(resp.body))
	if err != nil {
		t.Fatal(err)
	}
	if r := img.Bounds(); r.Dx() != checkoutQRSize || r.Dy() != checkoutQRSize {
		t.Errorf("image %v, want %dx%d", r, checkoutQRSize, checkoutQRSize)
	}
	// The quiet zone: the border is white.
	for i := range checkoutQRSize {
		for _, pt := range [][2]int{{i, 0}, {0, i}, {i, checkoutQRSize - 1}, {checkoutQRSize - 1, i}} {
			if r, _, _, _ := img.At(pt[0], pt[1]).RGBA(); r != 0xffff {
				t.Fatalf("pixel %v of the border is not white", pt)
			}
		}
	}
	if got := decodeCheckoutQR(t, resp.body); got != p.QRPayload {
		t.Errorf("QR decodes to %q, want %q", got, p.QRPayload)
	}
}

func TestCheckoutStatusAndSimulate(t *testing.T) {
	b := setup(t, setupOptions{env: models.Staging})
	p := b.newCheckoutPayment(b.newCheckoutMerchant("Toko Status"), 50000)
	path := "/checkout/" + p.OrderID

	var st map[string]any
	resp := b.do(request{path: path + "/status"})
	resp.expect(t, http.StatusOK, "")
	checkSecurityHeaders(t, resp.header)
	resp.decode(t, &st)
	want := map[string]any{
		"status": "PENDING", "expired_at": "2026-11-22T10:15:00Z", "paid_at": nil,
		"server_time_ms": float64(fixedNow.UnixMilli()), "expires_at_ms": float64(fixedNow.Add(15 * time.Minute).UnixMilli()),
	}
	if len(st) != len(want) {
		t.Errorf("status body %s, want the keys of %v", resp.body, want)
	}
	for k, v := range want {
		if st[k] != v {
			t.Errorf("%s = %v, want %v", k, st[k], v)
		}
	}

	resp = b.do(b.simulate(p.OrderID))
	resp.expect(t, http.StatusOK, "")
	resp.decode(t, &st)
	if st["status"] != "SUCCESS" || st["paid_at"] != "2026-11-22T10:00:00Z" {
		t.Errorf("simulate answered %s", resp.body)
	}
	if s := storedPaymentStatus(t, b, p.OrderID); s != models.PaymentSuccess {
		t.Errorf("stored status %s, want SUCCESS", s)
	}
	b.do(request{path: path + "/status"}).decode(t, &st)
	if st["status"] != "SUCCESS" {
		t.Errorf("status after simulate: %v", st)
	}
	b.do(b.simulate(p.OrderID)).expect(t, http.StatusConflict, "payment is no longer pending")
}

func TestCheckoutExpiresOverduePayment(t *testing.T) {
	var offset atomic.Int64
	now := func() time.Time { return fixedNow.Add(time.Duration(offset.Load())) }
	b := setup(t, setupOptions{env: models.Staging, now: now})
	p := b.newCheckoutPayment(b.newCheckoutMerchant("Toko Lambat"), 20000)
	offset.Store(int64(15 * time.Minute))

	var st checkoutStatus
	b.do(request{path: "/checkout/" + p.OrderID + "/status"}).decode(t, &st)
	if st.Status != "EXPIRED" || st.PaidAt != nil || st.ServerTimeMs != now().UnixMilli() {
		t.Errorf("status at expired_at: %+v, want EXPIRED", st)
	}
	b.do(b.simulate(p.OrderID)).expect(t, http.StatusConflict, "payment is no longer pending")
	html := string(b.do(request{path: "/checkout/" + p.OrderID, headers: htmlAccept}).body)
	if !strings.Contains(html, `data-status="EXPIRED">Expired</div>`) || !strings.Contains(html, `<span id="countdown" role="timer">00:00</span>`) {
		t.Errorf("expired page:\n%s", html)
	}
}

func TestCheckoutBadIDs(t *testing.T) {
	b := setup(t, setupOptions{env: models.Staging})
	const badID = "id must be a UUID such as 6f1c2a9e-8d4b-4c3e-9a7f-1b2c3d4e5f60"
	unknown := "/checkout/6f1c2a9e-8d4b-4c3e-9a7f-1b2c3d4e5f60"
	for _, suffix := range []string{"", "/qr.png", "/status"} {
		b.do(request{path: "/checkout/not-a-uuid" + suffix}).expect(t, http.StatusBadRequest, badID)
		b.do(request{path: "/checkout/6F1C2A9E8D4B4C3E9A7F1B2C3D4E5F60" + suffix}).expect(t, http.StatusBadRequest, badID)
		resp := b.do(request{path: unknown + suffix})
		resp.expect(t, http.StatusNotFound, "payment not found")
		checkSecurityHeaders(t, resp.header)
	}
	b.do(request{method: http.MethodPost, path: "/checkout/not-a-uuid/simulate"}).expect(t, http.StatusBadRequest, badID)
	b.do(b.simulate(strings.TrimPrefix(unknown, "/checkout/"))).expect(t, http.StatusNotFound, "payment not found")

	// A browser gets a small HTML page with the same status.
	for path, status := range map[string]int{unknown: http.StatusNotFound, "/checkout/not-a-uuid": http.StatusBadRequest} {
		resp := b.do(request{path: path, headers: htmlAccept})
		if resp.status != status || resp.header.Get("Content-Type") != "text/html; charset=utf-8" {
			t.Errorf("GET %s for a browser: %d %s", path, resp.status, resp.header.Get("Content-Type"))
		}
		checkSecurityHeaders(t, resp.header)
		if !strings.Contains(string(resp.body), "<h1>"+http.StatusText(status)+"</h1>") {
			t.Errorf("GET %s for a browser:\n%s", path, resp.body)
		}
	}
}

// simulate is the checkout page's simulate request for payment id, with
// the token the staging page carries.
func (b *bundle) simulate(id string) request {
	b.t.Helper()
	return request{method: http.MethodPost, path: "/checkout/" + id + "/simulate",
		headers: map[string]string{checkoutTokenHeader: b.server.checkoutToken(uuid.MustParse(id))}}
}

var simulateTokenAttr = regexp.MustCompile(`data-simulate-token="([^"]+)"`)

// The staging simulate route marks a payment paid, so it takes the token
// of that payment that only its checkout page carries: without it, with a
// wrong one or with another payment's, a JSON 403 and the payment stays
// PENDING. Knowing a payment id is not enough.
func TestCheckoutSimulateNeedsThePageToken(t *testing.T) {
	b := setup(t, setupOptions{env: models.Staging})
	m := b.newCheckoutMerchant("Toko Token")
	p, other := b.newCheckoutPayment(m, 50000), b.newCheckoutPayment(m, 60000)
	token := func(id string) string {
		t.Helper()
		html := string(b.do(request{path: "/checkout/" + id, headers: htmlAccept}).body)
		match := simulateTokenAttr.FindStringSubmatch(html)
		if match == nil {
			t.Fatalf("the staging page of %s carries no simulate token", id)
		}
		return match[1]
	}
	path := "/checkout/" + p.OrderID + "/simulate"
	const refused = "missing or invalid checkout token; reload the checkout page"
	refuse := func(name string, h map[string]string) {
		t.Helper()
		r := b.do(request{method: http.MethodPost, path: path, headers: h})
		if r.status != http.StatusForbidden || r.errBody != refused {
			t.Fatalf("%s: %d %s, want 403 %q", name, r.status, r.body, refused)
		}
	}
	refuse("no token", nil)
	refuse("empty token", map[string]string{checkoutTokenHeader: ""})
	refuse("garbage", map[string]string{checkoutTokenHeader: "not-a-token"})
	refuse("another payment's", map[string]string{checkoutTokenHeader: token(other.OrderID)})
	refuse("the token, cut short", map[string]string{checkoutTokenHeader: token(p.OrderID)[:20]})
	refuse("the token in lowercase", map[string]string{checkoutTokenHeader: strings.ToLower(token(p.OrderID))})
	if st := storedPaymentStatus(t, b, p.OrderID); st != models.PaymentPending {
		t.Fatalf("status %s after refused simulations", st)
	}
	b.do(request{method: http.MethodPost, path: path, headers: map[string]string{checkoutTokenHeader: token(p.OrderID)}}).expect(t, http.StatusOK, "")
	if st := storedPaymentStatus(t, b, p.OrderID); st != models.PaymentSuccess {
		t.Fatalf("status %s after the page's simulation", st)
	}
	if st := storedPaymentStatus(t, b, other.OrderID); st != models.PaymentPending {
		t.Fatalf("the other payment is %s", st)
	}
}
