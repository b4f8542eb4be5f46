package main

// Scenario payments measures payment creates, POST /api/v1/payments,
// round-robin over the clients into each one's default wallet (16
// workers, closed loop). Goal: goalPayments creates/s with p99 under
// goalCreateP99; in scenario all, at least goalCeilingRatio of the pgbench
// spread ceiling.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/signature"
)

// What every payment asks for: a whole-rupiah price above the minimum.
const paymentPrice = 150_000

// Values of -payment-auth.
const (
	paymentAuthSignature = "signature" // x-signature over the body
	paymentAuthTimestamp = "timestamp" // x-timestamp alone (Unix ms)
)

var paymentAuths = []string{paymentAuthSignature, paymentAuthTimestamp}

// paymentsNote says what a payment create's latency covers.
const paymentsNote = "a payment create is answered once the client's default wallet is read, the dynamic QRIS made, " +
	"the row inserted and payment:expire enqueued; nothing waits for the acquirer"

// paymentsScenario creates payments: POST /api/v1/payments, round-robin
// over the provisioned clients, each paid into its default wallet (the
// one wallet the tool provisions for it).
type paymentsScenario struct {
	auth    string
	targets []signedTarget
}

func newPaymentsScenario(o options) Scenario { return &paymentsScenario{auth: o.paymentAuth} }

func (s *paymentsScenario) Prepare(ctx context.Context, f *Fixture) error {
	if len(f.Clients) == 0 {
		return errors.New("payments: no clients provisioned")
	}
	defaults, err := defaultWallets(ctx, f)
	if err != nil {
		return err
	}
	if err := checkDefaultWallets(f.Clients, defaults); err != nil {
		return err
	}
	s.targets = make([]signedTarget, len(f.Clients))
	for i, c := range f.Clients {
		body, err := paymentBody(paymentPrice, paymentPlayerID(i))
		if err != nil {
			return err
		}
		s.targets[i] = signedTarget{body: body, apiKey: c.APIKey, secret: c.SigningSecret}
	}
	return nil
}

// defaultWallets maps each client id to its active default wallet, the
// one payments.Service.Create credits.
func defaultWallets(ctx context.Context, f *Fixture) (map[string]string, error) {
	var rows []struct{ ClientID, ID string }
	err := f.Admin.DB.WithContext(ctx).Model(&models.Wallet{}).
		Select("CAST(client_id AS TEXT) AS client_id, CAST(id AS TEXT) AS id").
		Where("is_default AND state = ?", models.WalletActive).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("payments: read the default wallets: %w", err)
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.ClientID] = r.ID
	}
	return out, nil
}

// checkDefaultWallets: every client's active default wallet is the wallet
// provisioned for it, or its payments would be refused (no default
// wallet) or credited elsewhere.
func checkDefaultWallets(clients []LoadClient, defaults map[string]string) error {
	for _, c := range clients {
		got, ok := defaults[c.ClientID]
		switch {
		case !ok:
			return fmt.Errorf("payments: client %s has no active default wallet: its payments would be refused", c.ClientID)
		case got != c.WalletID:
			return fmt.Errorf("payments: client %s's default wallet is %s, not its provisioned wallet %s", c.ClientID, got, c.WalletID)
		}
	}
	return nil
}

// paymentPlayerID is the payer of client i's payments.
func paymentPlayerID(i int) string { return "lt-player-" + strconv.Itoa(i+1) }

// paymentRequestBody is the payment creation request.
type paymentRequestBody struct {
	Price    int64  `json:"price"`
	PlayerID string `json:"playerId"`
}

// paymentBody serialises the body of a payment of price rupiah.
func paymentBody(price int64, playerID string) ([]byte, error) {
	return json.Marshal(paymentRequestBody{Price: price, PlayerID: playerID})
}

func (s *paymentsScenario) NewRequest(ctx context.Context, base string, n uint64, now time.Time) (*http.Request, error) {
	return newPaymentRequest(ctx, base, s.targets[n%uint64(len(s.targets))], s.auth, now)
}

// newPaymentRequest builds one payment create: the target's body with its
// x-api-key and, by auth, an x-signature over those exact bytes at now or
// an x-timestamp of now in Unix milliseconds.
func newPaymentRequest(ctx context.Context, base string, t signedTarget, auth string, now time.Time) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/payments", bytes.NewReader(t.body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", t.apiKey)
	switch auth {
	case paymentAuthSignature:
		req.Header.Set("x-signature", signature.Sign(t.secret, t.body, now))
	case paymentAuthTimestamp:
		req.Header.Set("x-timestamp", strconv.FormatInt(now.UnixMilli(), 10))
	default:
		return nil, fmt.Errorf("payment auth %q: want %s or %s", auth, paymentAuthSignature, paymentAuthTimestamp)
	}
	return req, nil
}

// WantStatus: a created payment answers 201.
func (s *paymentsScenario) WantStatus() int { return http.StatusCreated }

func (s *paymentsScenario) wallets() int { return len(s.targets) }

// paymentAuthText says how the payments were authenticated.
func paymentAuthText(auth string) string {
	if auth == paymentAuthTimestamp {
		return "x-api-key and x-timestamp (no signature)"
	}
	return "x-api-key and x-signature over the body"
}
