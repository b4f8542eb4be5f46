package api

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"image"
	"image/color"
	"image/png"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"github.com/skip2/go-qrcode"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payments"
	"github.com/payoutd/payoutd/vendors/sandboxacquirer"
)

// checkoutPath is where checkout pages live: PUBLIC_BASE_URL +
// checkoutPath + payment id.
const checkoutPath = "/checkout/"

// The checkout page is what the payer sees: public (the payment id in the
// URL is the only key), server-rendered, with no external assets. The
// inline style and script carry a per-response CSP nonce.
//
//go:embed checkout/*.html
var checkoutFiles embed.FS

var checkoutTemplates = template.Must(template.New("checkout").Funcs(template.FuncMap{
	"rupiah":       formatRupiah,
	"statusText":   func(s string) string { return checkoutStatusTexts[s][0] },
	"statusDetail": func(s string) string { return checkoutStatusTexts[s][1] },
}).ParseFS(checkoutFiles, "checkout/*.html"))

// checkoutStatusTexts are the page's words for each status: the status
// line and the sentence under it (checkout.html's script has the same).
var checkoutStatusTexts = map[string][2]string{
	string(models.PaymentPending): {"Waiting for payment", "This page updates by itself once you have paid."},
	string(models.PaymentSuccess): {"Paid", "Payment received. You can close this page."},
	string(models.PaymentExpired): {"Expired", "This QR code has expired. Ask the merchant for a new one."},
	string(models.PaymentFailed):  {"Failed", "The payment failed. Ask the merchant for a new QR code."},
}

// checkoutQRSize is the side of the QR image in pixels.
const checkoutQRSize = 320

const cspNonceKey = "checkout.cspNonce"

func (s *Server) checkoutRoutes() {
	g := s.engine.Group(strings.TrimSuffix(checkoutPath, "/"), checkoutHeaders())
	g.GET("/:id", s.handleCheckoutPage)
	g.GET("/:id/qr.png", s.handleCheckoutQR)
	g.GET("/:id/status", s.handleCheckoutStatus)
	// Marking a payment paid by hand exists in staging only: production
	// does not even route it. In staging, only the sandbox acquirer's
	// payments may be simulated (simulatable).
	if s.cfg.Env == models.Staging {
		g.POST("/:id/simulate", s.handleCheckoutSimulate)
	}
}

// simulatable says whether the checkout of v may offer and take "Simulate
// payment": in staging, for a payment of the sandbox acquirer only. A real
// acquirer's payment is paid by a real payer, even in staging.
func (s *Server) simulatable(v *payments.CheckoutView) bool {
	return s.cfg.Env == models.Staging && v.Acquirer == sandboxacquirer.Name
}

// checkoutTokenHeader carries the simulate token of the payment, which the
// staging checkout page embeds (data-simulate-token) and its script sends.
const checkoutTokenHeader = "X-Checkout-Token"

// checkoutToken is the simulate token of payment id: HMAC-SHA256 of the id
// under a key derived from SECRETS_KEY, so only a page this service served
// for that payment has it, and knowing a payment id is not enough.
func (s *Server) checkoutToken(id uuid.UUID) string {
	mac := hmac.New(sha256.New, s.checkoutKey)
	mac.Write([]byte("checkout-simulate:" + id.String()))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// validCheckoutToken compares r's token with id's in constant time.
func (s *Server) validCheckoutToken(r *http.Request, id uuid.UUID) bool {
	return hmac.Equal([]byte(r.Header.Get(checkoutTokenHeader)), []byte(s.checkoutToken(id)))
}

// checkoutHeaders sets the security headers of every checkout answer. The
// policy allows the service's own origin only; the page's inline style and
// script are allowed by a nonce that is new on every response. No
// frame-ancestors: merchants embed the checkout (flow "embed").
func checkoutHeaders() gin.HandlerFunc {
	return func(c *gin.Context) {
		b := make([]byte, 18)
		rand.Read(b)
		nonce := base64.RawURLEncoding.EncodeToString(b)
		c.Set(cspNonceKey, nonce)
		h := c.Writer.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self' 'nonce-"+nonce+"'; "+
			"style-src 'self' 'nonce-"+nonce+"'; img-src 'self'; connect-src 'self'; object-src 'none'; "+
			"base-uri 'none'; form-action 'self'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		c.Next()
	}
}

// checkoutStatus is the body of GET /checkout/{id}/status and of a
// simulation.
type checkoutStatus struct {
	Status       string  `json:"status"`
	ExpiredAt    string  `json:"expired_at"`
	PaidAt       *string `json:"paid_at"`
	ServerTimeMs int64   `json:"server_time_ms"`
	ExpiresAtMs  int64   `json:"expires_at_ms"`
}

func (s *Server) checkoutStatusOf(v *payments.CheckoutView) checkoutStatus {
	return checkoutStatus{
		Status: string(v.Status), ExpiredAt: models.FormatTime(v.ExpiredAt), PaidAt: models.FormatTimePtr(v.PaidAt),
		ServerTimeMs: s.now().UnixMilli(), ExpiresAtMs: v.ExpiredAt.UnixMilli(),
	}
}

// checkoutView reads the payment for the checkout. A PENDING payment past
// its expired_at is expired first (what the worker's payment:expire does),
// so the page never shows a payable QR for a payment nobody can pay.
func (s *Server) checkoutView(ctx context.Context, id uuid.UUID) (*payments.CheckoutView, error) {
	v, err := s.payments.Checkout(ctx, id)
	if err != nil || v.Status != models.PaymentPending || s.now().Before(v.ExpiredAt) {
		return v, err
	}
	if err := s.payments.Expire(ctx, id); err != nil {
		return nil, err
	}
	return s.payments.Checkout(ctx, id)
}

// checkoutPayment parses the id and reads the payment, answering the error
// itself (as JSON) when there is one.
func (s *Server) checkoutPayment(c *gin.Context) (*payments.CheckoutView, bool) {
	id, err := parseUUIDParam(c.Param("id"), "id")
	if err == nil {
		var v *payments.CheckoutView
		if v, err = s.checkoutView(c.Request.Context(), id); err == nil {
			return v, true
		}
	}
	fail(c, err)
	return nil, false
}

// checkoutPage is the data of checkout.html.
type checkoutPage struct {
	Nonce        string
	ID           string
	MerchantName string
	Amount       models.Amount
	Status       string
	QRURL        string
	StatusURL    string
	SimulateURL  string // "" unless simulatable
	// SimulateToken authorises the simulation of this payment.
	SimulateToken string
	// Sandbox: the payment is simulatable, and the page says no real
	// money moves.
	Sandbox      bool
	ExpiresAtMs  int64
	ServerTimeMs int64
	Countdown    string
}

// GET /checkout/{id}: the payer's page.
func (s *Server) handleCheckoutPage(c *gin.Context) {
	id, err := parseUUIDParam(c.Param("id"), "id")
	var v *payments.CheckoutView
	if err == nil {
		v, err = s.checkoutView(c.Request.Context(), id)
	}
	if err != nil {
		s.checkoutErrorPage(c, err)
		return
	}
	now := s.now()
	base := checkoutPath + v.ID.String()
	page := checkoutPage{
		Nonce: c.GetString(cspNonceKey), ID: v.ID.String(), MerchantName: v.MerchantName, Amount: v.Amount,
		Status: string(v.Status), QRURL: base + "/qr.png", StatusURL: base + "/status",
		Sandbox: s.simulatable(v), ExpiresAtMs: v.ExpiredAt.UnixMilli(), ServerTimeMs: now.UnixMilli(),
		Countdown: formatCountdown(v.ExpiredAt.Sub(now)),
	}
	if page.Sandbox {
		page.SimulateURL = base + "/simulate"
		page.SimulateToken = s.checkoutToken(v.ID)
	}
	s.renderCheckout(c, http.StatusOK, "checkout.html", page)
}

// checkoutErrorPage answers an error of the page: a small HTML page for a
// browser, {"error": ...} for anything else, with the same status.
func (s *Server) checkoutErrorPage(c *gin.Context, err error) {
	if !strings.Contains(c.GetHeader("Accept"), "text/html") {
		fail(c, err)
		return
	}
	status, msg, known := statusOf(err)
	switch {
	case !known:
		slog.ErrorContext(c.Request.Context(), "internal error",
			slog.String("method", c.Request.Method), slog.String("route", c.FullPath()), slog.Any("error", err))
	case errors.Is(err, models.ErrPaymentNotFound):
		msg = "This payment does not exist. Check the link you were given."
	}
	s.renderCheckout(c, status, "error.html", struct {
		Nonce, Title, Message string
	}{c.GetString(cspNonceKey), http.StatusText(status), msg})
	c.Abort()
}

func (s *Server) renderCheckout(c *gin.Context, status int, name string, data any) {
	var buf bytes.Buffer
	if err := checkoutTemplates.ExecuteTemplate(&buf, name, data); err != nil {
		fail(c, fmt.Errorf("checkout template %s: %w", name, err))
		return
	}
	c.Data(status, "text/html; charset=utf-8", buf.Bytes())
}

// GET /checkout/{id}/qr.png: the payment's QRIS as a PNG.
func (s *Server) handleCheckoutQR(c *gin.Context) {
	v, ok := s.checkoutPayment(c)
	if !ok {
		return
	}
	img, err := qrPNG(v.QRPayload, checkoutQRSize)
	if err != nil {
		fail(c, err)
		return
	}
	c.Data(http.StatusOK, "image/png", img)
}

// GET /checkout/{id}/status: what the page polls.
func (s *Server) handleCheckoutStatus(c *gin.Context) {
	v, ok := s.checkoutPayment(c)
	if !ok {
		return
	}
	c.JSON(http.StatusOK, s.checkoutStatusOf(v))
}

// POST /checkout/{id}/simulate: staging only (mounted there alone), and
// for the sandbox acquirer's payments only (404 as if unrouted for
// another's); reports the payment paid as the sandbox acquirer would. It
// takes the payment's token from its checkout page, checked before the
// payment is read, so that a bare payment id neither pays nor tells
// whether it exists.
func (s *Server) handleCheckoutSimulate(c *gin.Context) {
	id, err := parseUUIDParam(c.Param("id"), "id")
	if err != nil {
		fail(c, err)
		return
	}
	if !s.validCheckoutToken(c.Request, id) {
		fail(c, models.ErrCheckoutToken)
		return
	}
	v, ok := s.checkoutPayment(c)
	if !ok {
		return
	}
	if !s.simulatable(v) {
		fail(c, models.ErrNotFound)
		return
	}
	if v.Status != models.PaymentPending {
		fail(c, models.ErrPaymentNotPending)
		return
	}
	ctx := c.Request.Context()
	applied, err := s.payments.Simulate(ctx, v.ID, payments.ResultSuccess)
	if err == nil && applied != payments.AppliedNow {
		err = models.ErrPaymentNotPending // decided meanwhile
	}
	if err == nil {
		v, err = s.payments.Checkout(ctx, v.ID)
	}
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, s.checkoutStatusOf(v))
}

// qrPNG draws payload as a QR code (error correction M) with its quiet
// zone, whole pixels per module, centred on a white square of size pixels
// (larger when the code needs it).
func qrPNG(payload string, size int) ([]byte, error) {
	code, err := qrcode.New(payload, qrcode.Medium)
	if err != nil {
		return nil, fmt.Errorf("encode QR: %w", err)
	}
	bitmap := code.Bitmap() // modules, quiet zone included
	n := len(bitmap)
	scale := max(size/n, 1)
	side := max(size, scale*n)
	offset := (side - scale*n) / 2
	img := image.NewPaletted(image.Rect(0, 0, side, side), color.Palette{color.White, color.Black})
	for y, row := range bitmap {
		for x, dark := range row {
			if !dark {
				continue
			}
			for dy := range scale {
				start := (offset+y*scale+dy)*img.Stride + offset + x*scale
				for dx := range scale {
					img.Pix[start+dx] = 1
				}
			}
		}
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// formatRupiah writes an amount the Indonesian way: "Rp 150.000", a dot
// between thousands and, when there is a fraction of a rupiah, a comma
// before it ("Rp 1.500,50").
func formatRupiah(a models.Amount) string {
	var b strings.Builder
	b.WriteString("Rp ")
	if a < 0 {
		b.WriteByte('-')
		a = -a
	}
	unit := models.Rupiah(1)
	whole := fmt.Sprint(int64(a / unit))
	for i, d := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte('.')
		}
		b.WriteRune(d)
	}
	if frac := int64(a % unit); frac != 0 {
		digits := strings.TrimRight(fmt.Sprintf("%0*d", models.AmountScale, frac), "0")
		for len(digits) < 2 {
			digits += "0"
		}
		b.WriteString("," + digits)
	}
	return b.String()
}

// formatCountdown is the time left as mm:ss (00:00 once past).
func formatCountdown(d time.Duration) string {
	secs := max(int64(d/time.Second), 0)
	if d > 0 && d%time.Second != 0 {
		secs++ // as the page's script rounds: 00:01 until the very end
	}
	return fmt.Sprintf("%02d:%02d", secs/60, secs%60)
}
