package client

import (
	"crypto/hmac"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// WebhookSignatureHeader is the header carrying a webhook's signature.
const WebhookSignatureHeader = "x-callback-signature"

// WebhookTolerance is how far a webhook's t may be from now, either side.
const WebhookTolerance = 5 * time.Minute

// Errors of VerifyWebhook and ParseWebhook; test for them with errors.Is.
// Answer any of them with a 4xx (and log it): payoutd retries an event
// until it gets a 2xx, a forged or stale one never gets one.
var (
	// ErrWebhookMalformed: the signature header is missing or not of the
	// form t=<unix ms>,v1=<64 hex characters>.
	ErrWebhookMalformed = errors.New("payoutd: webhook signature header malformed")
	// ErrWebhookTimestamp: t is more than WebhookTolerance from now.
	ErrWebhookTimestamp = errors.New("payoutd: webhook timestamp outside the 5 minute window")
	// ErrWebhookSignature: the signature does not match the body (wrong
	// secret, altered body, or v1 not in lowercase hex).
	ErrWebhookSignature = errors.New("payoutd: webhook signature mismatch")
)

// VerifyWebhook checks the x-callback-signature of a webhook request
// against body, the raw bytes received (read them unchanged; do not decode
// and re-encode), with the client's Callback Secret, at now (usually
// time.Now()). It recomputes the lowercase hex HMAC-SHA256 of t + "." +
// body keyed by the secret's text as issued, compares in constant time,
// and requires t within 5 minutes of now. It returns nil, or an error that
// is ErrWebhookMalformed, ErrWebhookSignature or ErrWebhookTimestamp.
func VerifyWebhook(callbackSecret string, header http.Header, body []byte, now time.Time) error {
	return VerifyWebhookSignature(callbackSecret, header.Get(WebhookSignatureHeader), body, now)
}

// VerifyWebhookSignature is VerifyWebhook for the value of the
// x-callback-signature header itself.
func VerifyWebhookSignature(callbackSecret, signatureHeader string, body []byte, now time.Time) error {
	if callbackSecret == "" {
		return errors.New("payoutd: the callback secret is empty")
	}
	if strings.TrimSpace(signatureHeader) == "" {
		return fmt.Errorf("%w: no %s header", ErrWebhookMalformed, WebhookSignatureHeader)
	}
	t, v1, err := parseSignatureHeader(signatureHeader)
	if err != nil {
		return err
	}
	ms, err := strconv.ParseInt(t, 10, 64)
	if err != nil || strings.Trim(t, "0123456789") != "" {
		return fmt.Errorf("%w: t=%q is not a Unix time in milliseconds", ErrWebhookMalformed, t)
	}
	expected := computeSignature(callbackSecret, t, body)
	if !hmac.Equal([]byte(expected), []byte(v1)) {
		return ErrWebhookSignature
	}
	// ms is non-negative and now is a real clock: no overflow.
	if delta := ms - now.UnixMilli(); delta > WebhookTolerance.Milliseconds() || -delta > WebhookTolerance.Milliseconds() {
		return fmt.Errorf("%w (t is %v from now)", ErrWebhookTimestamp, time.Duration(delta)*time.Millisecond)
	}
	return nil
}

// parseSignatureHeader splits "t=<ms>,v1=<hex>": parts separated by
// commas, optionally spaced, in any order; unknown parts are ignored, t and
// v1 must each appear once and v1 must be 64 hex characters.
func parseSignatureHeader(value string) (t, v1 string, err error) {
	var seenT, seenV1 bool
	for _, part := range strings.Split(value, ",") {
		key, val, found := strings.Cut(strings.TrimSpace(part), "=")
		if !found {
			return "", "", fmt.Errorf("%w: part %q is not key=value", ErrWebhookMalformed, part)
		}
		switch key {
		case "t":
			if seenT {
				return "", "", fmt.Errorf("%w: t given twice", ErrWebhookMalformed)
			}
			seenT, t = true, val
		case "v1":
			if seenV1 {
				return "", "", fmt.Errorf("%w: v1 given twice", ErrWebhookMalformed)
			}
			seenV1, v1 = true, val
		}
	}
	if !seenT || !seenV1 {
		return "", "", fmt.Errorf("%w: want t=<unix ms>,v1=<64 hex characters>", ErrWebhookMalformed)
	}
	if len(v1) != 64 || strings.Trim(v1, "0123456789abcdefABCDEF") != "" {
		return "", "", fmt.Errorf("%w: v1 must be 64 hex characters", ErrWebhookMalformed)
	}
	return t, v1, nil
}

// Webhook event names.
const (
	EventDisbursementSuccess = "disbursement.success"
	EventDisbursementFailed  = "disbursement.failed"
	// EventDisbursementReturned: a paid payout was returned by the bank.
	EventDisbursementReturned = "disbursement.returned"
	EventPaymentSuccess       = "payment.success"
	EventPaymentExpired       = "payment.expired"
	EventPaymentFailed        = "payment.failed"
)

// WebhookEvent is the body of a webhook:
//
//	{"eventId":"…","event":"disbursement.success","createdAt":"…","data":{…}}
//
// Decoding it fills Disbursement for disbursement.* events and Payment for
// payment.* events; Data always holds the raw data object, so events added
// later can still be read.
type WebhookEvent struct {
	// EventID is the same on every delivery of the event (also in the
	// x-event-id header): deduplicate on it.
	EventID   string          `json:"eventId"`
	Event     string          `json:"event"`
	CreatedAt time.Time       `json:"createdAt"`
	Data      json.RawMessage `json:"data"`

	Disbursement *DisbursementEventData `json:"-"`
	Payment      *PaymentEventData      `json:"-"`
}

// DisbursementEventData is the data of disbursement.success,
// disbursement.failed and disbursement.returned.
type DisbursementEventData struct {
	DisbursementID    string             `json:"disbursementId"`
	WalletID          string             `json:"walletId"`
	Status            DisbursementStatus `json:"status"` // SUCCESS, FAILED or RETURNED
	Amount            Amount             `json:"amount"`
	PlatformFee       Amount             `json:"platformFee"`
	NetAmount         Amount             `json:"netAmount"`
	Currency          string             `json:"currency"`
	BankCode          string             `json:"bankCode"`
	AccountNo         string             `json:"accountNo"`
	AccountHolderName string             `json:"accountHolderName"`
	// ReferenceID is the reference_id given at creation; empty when none.
	ReferenceID  string     `json:"referenceId,omitempty"`
	FailedReason *string    `json:"failedReason"` // also the return reason
	CompletedAt  *time.Time `json:"completedAt"`
	// ReturnedAt is set in disbursement.returned only.
	ReturnedAt *time.Time `json:"returnedAt,omitempty"`
}

// PaymentEventData is the data of payment.success, payment.expired and
// payment.failed.
type PaymentEventData struct {
	PaymentID            string        `json:"paymentId"`
	PlayerID             string        `json:"playerId"`
	Status               PaymentStatus `json:"status"`
	Amount               Amount        `json:"amount"`
	PlatformFee          Amount        `json:"platformFee"`
	NetAmount            Amount        `json:"netAmount"`
	Currency             string        `json:"currency"`
	PaidAt               *time.Time    `json:"paidAt"`
	ExpiredAt            time.Time     `json:"expiredAt"`
	SettledAt            *time.Time    `json:"settledAt"`
	RetrievalReferenceNo *string       `json:"retrievalReferenceNo"`
}

// UnmarshalJSON decodes the envelope and the data of known events.
func (e *WebhookEvent) UnmarshalJSON(b []byte) error {
	type envelope WebhookEvent
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return err
	}
	*e = WebhookEvent(env)
	if len(e.Data) == 0 || string(e.Data) == "null" {
		return nil
	}
	switch {
	case strings.HasPrefix(e.Event, "disbursement."):
		e.Disbursement = new(DisbursementEventData)
		if err := json.Unmarshal(e.Data, e.Disbursement); err != nil {
			return fmt.Errorf("data of %s: %w", e.Event, err)
		}
	case strings.HasPrefix(e.Event, "payment."):
		e.Payment = new(PaymentEventData)
		if err := json.Unmarshal(e.Data, e.Payment); err != nil {
			return fmt.Errorf("data of %s: %w", e.Event, err)
		}
	}
	return nil
}

// ParseWebhook verifies a webhook as VerifyWebhook does and then decodes
// its body. A body that fails verification is never decoded.
func ParseWebhook(callbackSecret string, header http.Header, body []byte, now time.Time) (*WebhookEvent, error) {
	if err := VerifyWebhook(callbackSecret, header, body, now); err != nil {
		return nil, err
	}
	var ev WebhookEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return nil, fmt.Errorf("payoutd: decode webhook body: %w", err)
	}
	return &ev, nil
}
