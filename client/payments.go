package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// CreatePaymentRequest is a QRIS payment to collect: Price in whole rupiah
// (at least 15000), the payer's id in your system, and optionally the flow
// and how long the QR stays payable.
type CreatePaymentRequest struct {
	Price    int64  `json:"price"`
	PlayerID string `json:"playerId"`
	// Flow is "embed" (default) or "redirect".
	Flow string `json:"flow,omitempty"`
	// ExpiresIn is seconds until the payment expires: 0 means the
	// service's default (900), at most 3600.
	ExpiresIn int `json:"expiresIn,omitempty"`
}

// PaymentCreated is the answer of CreatePayment: show QRPayload as a QR
// code, or send the payer to CheckoutURL.
type PaymentCreated struct {
	OrderID     string      `json:"orderId"` // the payment's id
	CheckoutURL string      `json:"checkoutUrl"`
	QRPayload   string      `json:"qrPayload"`
	PlayerID    string      `json:"playerId"`
	TotalAmount json.Number `json:"totalAmount"`
}

// Payment is a payment as stored now (GetPayment, ListPayments).
type Payment struct {
	ID                   string        `json:"id"`
	ClientID             string        `json:"client_id"`
	PayerID              string        `json:"payer_id"`
	Amount               Amount        `json:"amount"`
	Currency             string        `json:"currency"`
	ExpiredAt            time.Time     `json:"expired_at"`
	Status               PaymentStatus `json:"status"`
	PlatformFee          Amount        `json:"platform_fee"`
	NetAmount            Amount        `json:"net_amount"` // credited to the wallet at settlement
	PaidAt               *time.Time    `json:"paid_at"`
	SettledAt            *time.Time    `json:"settled_at"`
	RetrievalReferenceNo *string       `json:"retrieval_reference_no"`
	CreatedAt            time.Time     `json:"created_at"`
	UpdatedAt            time.Time     `json:"updated_at"`
	ClientWalletName     string        `json:"client_wallet_name,omitempty"`
}

// CreatePayment creates a payment with its QRIS. A payment create has no
// Idempotency-Key, so it is never resent after an answer that may hide a
// stored payment (a lost connection, a 5xx): the error is returned, and
// ListPayments with the payer's id tells whether it was created. Only a
// 429, which stores nothing, is retried.
func (c *Client) CreatePayment(ctx context.Context, req CreatePaymentRequest) (*PaymentCreated, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("payoutd: encode payment request: %w", err)
	}
	var out struct {
		Data PaymentCreated `json:"data"`
	}
	if _, err := c.callOnce(ctx, http.MethodPost, "/api/v1/payments", body, &out); err != nil {
		return nil, err
	}
	return &out.Data, nil
}

// GetPayment returns a payment of the caller as stored now; one of another
// client, or none, is a 404.
func (c *Client) GetPayment(ctx context.Context, id string) (*Payment, error) {
	var out Payment
	if _, err := c.call(ctx, http.MethodGet, "/api/v3/payments/"+url.PathEscape(id), nil, "", &out); err != nil {
		return nil, err
	}
	return &out, nil
}
