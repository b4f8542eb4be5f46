package vendors

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
)

// QRRequest asks an acquirer for a dynamic QRIS for one payment.
type QRRequest struct {
	PaymentID    uuid.UUID     // bill number: its short form (BillNumber) goes in tag 62 subtag 01
	Amount       models.Amount // whole rupiah for QRIS
	MerchantName string
	MerchantCity string
	ExpiresAt    time.Time
}

// Acquirer issues dynamic QRIS payloads and reports payments.
type Acquirer interface {
	// Name is the acquirer's identifier ("sandboxpay").
	Name() string
	// DynamicQR returns the QRIS payload (the text of the QR code) for one
	// payment. Returns ErrInvalidQRRequest (wrapped, with the reason) for a
	// missing payment id or an amount that is not a positive whole number
	// of rupiah a QRIS can carry.
	DynamicQR(ctx context.Context, r QRRequest) (string, error)
	// ParseCallback verifies an acquirer's payment notification (its own signature scheme) and returns it.
	// Returns ErrInvalidCallback when the signature is missing, wrong or
	// outside its window; another error when the signed body is malformed.
	ParseCallback(header http.Header, body []byte, now time.Time) (AcquirerResult, error)
}

// Statuses an acquirer reports for a payment.
const (
	PaymentSuccess = "SUCCESS"
	PaymentFailed  = "FAILED"
)

// AcquirerResult is an acquirer's final word on a payment.
type AcquirerResult struct {
	PaymentID            uuid.UUID
	Status               string // "SUCCESS" or "FAILED"
	RetrievalReferenceNo string // set on SUCCESS
	PaidAt               time.Time
	// Amount is what the payer paid, as the acquirer reports it; zero when
	// it reports none. A SUCCESS whose amount is not the price is held,
	// never applied (payments.RecordedHeld).
	Amount        models.Amount
	FailureReason string
}

// ErrInvalidQRRequest: the acquirer cannot issue a QRIS for this request;
// nothing was issued. The wrapped message says why and is safe to show.
var ErrInvalidQRRequest = errors.New("invalid QR request")

// BillNumber is the short form of a payment id written in a QRIS's bill
// number (tag 62 subtag 01): the first 8 hex digits of the UUID, upper
// case ("3F2504E0"). It is what a payer's banking app shows; it is not
// unique across all payments (callbacks carry the full id).
func BillNumber(id uuid.UUID) string {
	return strings.ToUpper(id.String()[:8])
}
