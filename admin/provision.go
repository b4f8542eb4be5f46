package admin

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/internal/credentials"
	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payments"
	"github.com/payoutd/payoutd/payouts"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/webhooks"
)

// Deps is what the operator commands need.
type Deps struct {
	DB      *gorm.DB
	Sealer  *credentials.Sealer
	Env     models.Environment
	Vendors vendors.Registry
	// Payouts is the payout service the disbursement commands act
	// through, built by the composition root (internal/app): with Redis
	// configured it hands approved payouts to the worker at once, without
	// it the worker's sweep picks them up.
	Payouts *payouts.Service
	// Webhooks lists and redelivers webhook events.
	Webhooks *webhooks.Deliverer
	// Payments simulates payment results.
	Payments *payments.Service
	// ClientChanged, when set, is told after a client was created or it or
	// its credentials changed, so that API instances drop what they cached
	// of it and the unknown keys they remember (authcache.Announce);
	// without it they notice within AUTH_CACHE_TTL (authcache.MissTTL for
	// an unknown key).
	ClientChanged func(ctx context.Context, clientID uuid.UUID)
	// Now is the clock of the ledger postings and reconcile the commands
	// make (nil: the wall clock, in UTC to the microsecond).
	Now func() time.Time
}

func (d Deps) store() *models.Store { return models.NewStore(d.DB) }

// now reads the operator commands' one clock.
func (d Deps) now() time.Time {
	if d.Now != nil {
		return d.Now().UTC().Truncate(time.Microsecond)
	}
	return models.Now()
}

func (d Deps) clientChanged(ctx context.Context, clientID uuid.UUID) {
	if d.ClientChanged != nil {
		d.ClientChanged(ctx, clientID)
	}
}

// payouts is the payout service; the disbursement commands need one.
func (d Deps) payouts() (*payouts.Service, error) {
	if d.Payouts == nil {
		return nil, errors.New("admin: no payout service (Deps.Payouts)")
	}
	return d.Payouts, nil
}

// ClientOptions describe a new client.
type ClientOptions struct {
	Name              string
	Kind              models.ClientKind
	AllowedIPs        string
	PayoutWebhookURL  string
	PaymentWebhookURL string
	NoSigningSecret   bool
}

// IssuedCredentials is the answer of client create and rotate-credentials:
// the only moment the clear-text key and secrets are shown.
type IssuedCredentials struct {
	ClientID       string  `json:"client_id"`
	APIKey         string  `json:"api_key"`
	SigningSecret  *string `json:"signing_secret"` // null when created with --no-signing-secret
	CallbackSecret string  `json:"callback_secret"`
}

// CreateClient provisions a client of the configured environment with its
// first credentials.
func CreateClient(ctx context.Context, d Deps, o ClientOptions) (*IssuedCredentials, error) {
	name := strings.TrimSpace(o.Name)
	if name == "" {
		return nil, errors.New("--name is required")
	}
	if o.Kind == "" {
		o.Kind = models.KindMerchant
	}
	if o.Kind != models.KindMerchant && o.Kind != models.KindHolding {
		return nil, fmt.Errorf("--kind must be merchant or holding, not %q", o.Kind)
	}
	ips, err := models.NormalizeCIDRList(o.AllowedIPs)
	if err != nil {
		return nil, fmt.Errorf("--allowed-ips: %w", err)
	}
	if err := checkWebhookURL(d.Env, "--payout-webhook-url", o.PayoutWebhookURL); err != nil {
		return nil, err
	}
	if err := checkWebhookURL(d.Env, "--payment-webhook-url", o.PaymentWebhookURL); err != nil {
		return nil, err
	}
	now := models.Now()
	client := &models.Client{
		ID: models.NewID(), Name: name, Kind: o.Kind, Environment: d.Env, AllowedIPs: ips,
		Withdrawals:   models.WithdrawalsActive,
		PaymentFeeBps: models.DefaultPaymentFeeBps,
		BIFASTFee:     models.DefaultBIFASTFee, RTOLFee: models.DefaultRTOLFee,
		BIFASTMinNet: models.DefaultBIFASTMinNet, RTOLMinNet: models.DefaultRTOLMinNet,
		CreatedAt: now, UpdatedAt: now,
	}
	setWebhookURL(d.Sealer, client, credentials.FieldPayoutWebhookURL, o.PayoutWebhookURL)
	setWebhookURL(d.Sealer, client, credentials.FieldPaymentWebhookURL, o.PaymentWebhookURL)
	issued := credentials.Generate(d.Env, !o.NoSigningSecret)
	cred := sealCredential(d.Sealer, client.ID, issued)
	if err := d.store().CreateClient(ctx, client, cred); err != nil {
		return nil, err
	}
	// API instances remember unknown keys for a moment; told, they forget
	// them, so the new key works at once everywhere.
	d.clientChanged(ctx, client.ID)
	return toIssued(client.ID, issued), nil
}

// RotateCredentials replaces the client's API key, signing secret and
// callback secret together; the old key stops working at once.
func RotateCredentials(ctx context.Context, d Deps, clientID uuid.UUID) (*IssuedCredentials, error) {
	issued := credentials.Generate(d.Env, true)
	if err := d.store().RotateCredential(ctx, clientID, sealCredential(d.Sealer, clientID, issued)); err != nil {
		return nil, err
	}
	d.clientChanged(ctx, clientID)
	return toIssued(clientID, issued), nil
}

// sealCredential is the stored form of issued: the key's hash, the secrets
// sealed for this client's new credential.
func sealCredential(sealer *credentials.Sealer, clientID uuid.UUID, issued credentials.Issued) *models.Credential {
	id := models.NewID()
	cred := &models.Credential{
		ID:           id,
		APIKeyHash:   credentials.HashAPIKey(issued.APIKey),
		APIKeyPrefix: credentials.DisplayPrefix(issued.APIKey),
		CallbackSecretEnc: sealer.Seal(issued.CallbackSecret,
			credentials.CredentialBinding(clientID, id, credentials.FieldCallbackSecret)),
		CreatedAt: models.Now(),
	}
	if issued.SigningSecret != "" {
		enc := sealer.Seal(issued.SigningSecret, credentials.CredentialBinding(clientID, id, credentials.FieldSigningSecret))
		cred.SigningSecretEnc = &enc
	}
	return cred
}

// setWebhookURL stores raw as the client's URL for field: sealed, bound to
// the client and the field, with only its display form in plain text. An
// empty raw clears it.
func setWebhookURL(sealer *credentials.Sealer, c *models.Client, field credentials.Field, raw string) {
	sealed, shown := "", ""
	if raw != "" {
		sealed, shown = sealer.Seal(raw, credentials.ClientBinding(c.ID, field)), webhooks.DisplayURL(raw)
	}
	if field == credentials.FieldPaymentWebhookURL {
		c.PaymentWebhookURLEnc, c.PaymentWebhookURL = sealed, shown
		return
	}
	c.PayoutWebhookURLEnc, c.PayoutWebhookURL = sealed, shown
}

func toIssued(clientID uuid.UUID, issued credentials.Issued) *IssuedCredentials {
	out := &IssuedCredentials{ClientID: clientID.String(), APIKey: issued.APIKey, CallbackSecret: issued.CallbackSecret}
	if issued.SigningSecret != "" {
		s := issued.SigningSecret
		out.SigningSecret = &s
	}
	return out
}

// checkWebhookURL accepts an empty value (no webhook) or an absolute URL;
// production requires https.
func checkWebhookURL(env models.Environment, flag, raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("%s must be an absolute http(s) URL", flag)
	}
	if env == models.Production && u.Scheme != "https" {
		return fmt.Errorf("%s must use https in production", flag)
	}
	return nil
}

// WalletOptions describe a new wallet.
type WalletOptions struct {
	ClientID     uuid.UUID
	Name         string
	Vendor       string
	Provisioning bool
	Default      bool
}

// WalletCreated is the answer of wallet create.
type WalletCreated struct {
	WalletID string `json:"wallet_id"`
	Name     string `json:"name"`
	Vendor   string `json:"vendor"`
}

// CreateWallet opens a wallet at a vendor for a client.
func CreateWallet(ctx context.Context, d Deps, o WalletOptions) (*WalletCreated, error) {
	name := strings.TrimSpace(o.Name)
	if name == "" {
		return nil, errors.New("--name is required")
	}
	if _, err := d.Vendors.Get(o.Vendor); err != nil {
		return nil, fmt.Errorf("--vendor: %w", err)
	}
	state := models.WalletActive
	if o.Provisioning {
		state = models.WalletProvisioning
	}
	now := models.Now()
	w := &models.Wallet{
		ID: models.NewID(), ClientID: o.ClientID, Name: name, Vendor: o.Vendor,
		State: state, IsDefault: o.Default, CreatedAt: now, UpdatedAt: now,
	}
	if err := d.store().CreateWallet(ctx, w); err != nil {
		return nil, err
	}
	return &WalletCreated{WalletID: w.ID.String(), Name: w.Name, Vendor: w.Vendor}, nil
}

// WalletBalance is the answer of wallet adjust.
type WalletBalance struct {
	WalletID string `json:"wallet_id"`
	Balance  string `json:"balance"`
}

// AdjustWallet posts a signed amount to a wallet through the ledger.
func AdjustWallet(ctx context.Context, d Deps, walletID uuid.UUID, amount, memo string) (*WalletBalance, error) {
	a, err := models.ParseSignedAmount(strings.TrimSpace(amount))
	if err != nil {
		return nil, fmt.Errorf("--amount %w", err)
	}
	if strings.TrimSpace(memo) == "" {
		return nil, errors.New("--memo is required: say why the balance changes")
	}
	w, err := ledger.Adjust(ctx, d.DB, d.now(), walletID, a, memo)
	if err != nil {
		return nil, err
	}
	return &WalletBalance{WalletID: w.ID.String(), Balance: w.Balance.Fixed4()}, nil
}
