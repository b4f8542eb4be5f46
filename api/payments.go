package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payments"
)

// paymentRequest is the body of POST /api/v1/payments. Numbers are kept
// raw so that a string where a number belongs is refused, not coerced.
type paymentRequest struct {
	Price     json.RawMessage `json:"price"`
	PlayerID  *string         `json:"playerId"`
	Flow      *string         `json:"flow"`
	ExpiresIn json.RawMessage `json:"expiresIn"`
}

type paymentCreated struct {
	Success bool               `json:"success"`
	Data    paymentCreatedData `json:"data"`
}

type paymentCreatedData struct {
	OrderID     string      `json:"orderId"`
	CheckoutURL string      `json:"checkoutUrl"`
	QRPayload   string      `json:"qrPayload"`
	PlayerID    string      `json:"playerId"`
	TotalAmount json.Number `json:"totalAmount"`
}

// paymentRecord answers GET /api/v3/payments/{id}.
type paymentRecord struct {
	ID                   string  `json:"id"`
	ClientID             string  `json:"client_id"`
	PayerID              string  `json:"payer_id"`
	Amount               string  `json:"amount"`
	Currency             string  `json:"currency"`
	ExpiredAt            string  `json:"expired_at"`
	Status               string  `json:"status"`
	PlatformFee          string  `json:"platform_fee"`
	NetAmount            string  `json:"net_amount"`
	PaidAt               *string `json:"paid_at"`
	SettledAt            *string `json:"settled_at"`
	RetrievalReferenceNo *string `json:"retrieval_reference_no"`
	CreatedAt            string  `json:"created_at"`
	UpdatedAt            string  `json:"updated_at"`
	ClientWalletName     *string `json:"client_wallet_name,omitempty"`
}

// POST /api/v1/payments: a payment with its QRIS and checkout page.
func (s *Server) handlePaymentCreate(c *gin.Context) {
	var body paymentRequest
	if err := decodeJSON(bodyOf(c), &body); err != nil {
		fail(c, err)
		return
	}
	req, err := parsePaymentRequest(body)
	if err != nil {
		fail(c, err)
		return
	}
	req.Signature = signatureOf(c)
	p, err := s.payments.Create(c.Request.Context(), &principalOf(c).Client, req)
	if err != nil {
		fail(c, err)
		return
	}
	status := http.StatusCreated
	if p.Replayed {
		// The same signed request again: the payment it created, as a
		// disbursement's replay answers (200, Idempotent-Replayed).
		c.Header("Idempotent-Replayed", "true")
		status = http.StatusOK
	}
	c.JSON(status, paymentCreated{Success: true, Data: paymentCreatedData{
		OrderID: p.ID.String(), CheckoutURL: s.checkoutURL(p.ID.String()), QRPayload: p.QRPayload,
		PlayerID: p.PayerID, TotalAmount: json.Number(p.Amount.String()),
	}})
}

// checkoutURL is where the payer sees the QR: PUBLIC_BASE_URL + path.
func (s *Server) checkoutURL(id string) string {
	return strings.TrimRight(s.cfg.PublicBaseURL, "/") + checkoutPath + id
}

// GET /api/v3/payments/{id}
func (s *Server) handlePaymentGet(c *gin.Context) {
	id, err := parseUUIDParam(c.Param("id"), "id")
	if err != nil {
		fail(c, err)
		return
	}
	p, err := s.payments.Find(c.Request.Context(), principalOf(c).Client.ID, id)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, paymentView(p))
}

// parsePaymentRequest applies the field rules; each error names its field.
func parsePaymentRequest(b paymentRequest) (payments.CreateRequest, error) {
	req := payments.CreateRequest{Flow: models.PaymentFlowEmbed, ExpiresIn: payments.DefaultExpiresIn}
	price, err := parsePrice(b.Price)
	if err != nil {
		return req, err
	}
	req.Price = price
	if b.PlayerID == nil || strings.TrimSpace(*b.PlayerID) == "" {
		return req, models.Invalid("playerId is required")
	}
	if utf8.RuneCountInString(*b.PlayerID) > payments.MaxPayerID {
		return req, models.Invalid(fmt.Sprintf("playerId must be at most %d characters", payments.MaxPayerID))
	}
	req.PayerID = *b.PlayerID
	if b.Flow != nil && *b.Flow != models.PaymentFlowEmbed {
		return req, models.Invalid(`flow must be "embed"`)
	}
	if len(b.ExpiresIn) > 0 && string(b.ExpiresIn) != "null" {
		secs, err := parseExpiresIn(b.ExpiresIn)
		if err != nil {
			return req, err
		}
		req.ExpiresIn = secs
	}
	return req, nil
}

// Price messages, each giving the real reason.
const (
	priceTooLow    = "price must be at least 15000"
	priceTooHigh   = "price must be at most 9999999999999 (the largest amount a QRIS carries)"
	priceExponent  = "price must be written without an exponent, such as 15000 (not 1.5e4)"
	priceFraction  = "price must be a whole number of rupiah (QRIS carries no fraction of a rupiah)"
	maxPriceDigits = 13 // of payments.MaxPrice
)

// parsePrice reads price from its JSON number literal (valid JSON: the
// decoder checked it), looking at the digits themselves so that each
// refusal says why, and an enormous literal costs no arithmetic.
func parsePrice(raw json.RawMessage) (models.Amount, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, models.Invalid("price is required")
	}
	if !isJSONNumber(raw) {
		return 0, models.Invalid("price must be a number such as 15000")
	}
	lit := string(raw)
	if strings.ContainsAny(lit, "eE") {
		return 0, models.Invalid(priceExponent)
	}
	if strings.HasPrefix(lit, "-") {
		return 0, models.Invalid(priceTooLow)
	}
	whole, frac, _ := strings.Cut(lit, ".")
	if len(whole) > maxPriceDigits {
		return 0, models.Invalid(priceTooHigh)
	}
	n, err := strconv.ParseInt(whole, 10, 64)
	if err != nil { // cannot happen for valid JSON; refuse rather than guess
		return 0, models.Invalid("price must be a number such as 15000")
	}
	price := models.Rupiah(n)
	switch {
	case price < payments.MinPrice:
		return 0, models.Invalid(priceTooLow)
	case price > payments.MaxPrice:
		return 0, models.Invalid(priceTooHigh)
	case strings.Trim(frac, "0") != "":
		return 0, models.Invalid(priceFraction)
	}
	return price, nil
}

const expiresInRule = "expiresIn must be an integer number of seconds from 60 to 3600"

func parseExpiresIn(raw json.RawMessage) (time.Duration, error) {
	if !isJSONNumber(raw) {
		return 0, models.Invalid(expiresInRule)
	}
	n, err := models.ParsePositiveAmount(string(raw))
	if err != nil || n%models.Rupiah(1) != 0 || strings.ContainsRune(string(raw), '.') {
		return 0, models.Invalid(expiresInRule)
	}
	d := time.Duration(int64(n/models.Rupiah(1))) * time.Second
	if d < payments.MinExpiresIn || d > payments.MaxExpiresIn {
		return 0, models.Invalid(expiresInRule)
	}
	return d, nil
}

// isJSONNumber reports whether raw is a JSON number literal (not a string,
// boolean, object or array).
func isJSONNumber(raw json.RawMessage) bool {
	c := raw[0]
	return c == '-' || (c >= '0' && c <= '9')
}

// POST /acquirer-callbacks/{acquirer}: the acquirer reports a payment's
// result, verified by its own signature.
func (s *Server) handleAcquirerCallback(c *gin.Context) {
	if s.acquirer == nil || c.Param("acquirer") != s.acquirer.Name() {
		fail(c, models.ErrNotFound)
		return
	}
	result, ok := readSignedCallback(s, c, s.acquirer.ParseCallback)
	if !ok {
		return
	}
	applied, err := s.payments.ApplyResult(c.Request.Context(), result, s.acquirer.Name())
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": string(applied)})
}

// paymentView is a payment as GET /api/v3/payments/{id} and the list show it.
func paymentView(p *payments.WithWallet) paymentRecord {
	rec := paymentRecord{
		ID: p.ID.String(), ClientID: p.ClientID.String(), PayerID: p.PayerID, Amount: p.Amount.String(), Currency: p.Currency,
		ExpiredAt: models.FormatTime(p.ExpiredAt), Status: string(p.Status), PlatformFee: p.PlatformFee.String(),
		NetAmount: p.NetAmount.String(), PaidAt: models.FormatTimePtr(p.PaidAt), SettledAt: models.FormatTimePtr(p.SettledAt),
		RetrievalReferenceNo: p.RetrievalReferenceNo, CreatedAt: models.FormatTime(p.CreatedAt), UpdatedAt: models.FormatTime(p.UpdatedAt),
	}
	if p.WalletName != "" {
		rec.ClientWalletName = &p.WalletName
	}
	return rec
}
