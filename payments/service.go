package payments

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
)

// Queue hands payment work to the worker; tasks.Client implements it. The
// times given are whole seconds at or after the payment is due (taskTime).
type Queue interface {
	EnqueuePaymentExpire(ctx context.Context, id uuid.UUID, at time.Time) error
	EnqueuePaymentSettle(ctx context.Context, id uuid.UUID, at time.Time) error
	EnqueueWebhook(ctx context.Context, eventID uuid.UUID, slot string) error
}

// Service runs the payment lifecycle.
type Service struct {
	db       *gorm.DB
	acquirer vendors.Acquirer
	queue    Queue
	calendar Calendar
	now      func() time.Time
	metrics  Metrics // never nil
}

// Options configure a Service.
type Options struct {
	DB       *gorm.DB
	Acquirer vendors.Acquirer
	// Queue may be nil (the admin CLI without Redis): the worker's sweep
	// then expires and settles on time.
	Queue    Queue
	Calendar Calendar
	Now      func() time.Time
	// Metrics counts committed transitions; nil counts nothing.
	Metrics Metrics
}

// New returns a Service.
func New(o Options) *Service {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Metrics == nil {
		o.Metrics = noMetrics{}
	}
	return &Service{db: o.DB, acquirer: o.Acquirer, queue: o.Queue, calendar: o.Calendar, now: o.Now, metrics: o.Metrics}
}

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// Limits of a payment request (docs/design.md, Payment lifecycle).
var (
	MinPrice = models.Rupiah(15_000)
	// MaxPrice is the largest amount a QRIS carries: tag 54 holds 13 digits.
	MaxPrice = models.Rupiah(9_999_999_999_999)
)

const (
	DefaultExpiresIn = 900 * time.Second
	MinExpiresIn     = 60 * time.Second
	MaxExpiresIn     = 3600 * time.Second
	MaxPayerID       = 64
)

// CreateRequest is a validated payment request.
type CreateRequest struct {
	Price     models.Amount
	PayerID   string
	Flow      string
	ExpiresIn time.Duration
	// Signature is the lowercase hex signature of the request ("" when
	// unsigned). It is stored with the payment, unique per client: the
	// same signature again is the same request (a signature covers the
	// body), answered with the payment it created.
	Signature string
}

// Created is the outcome of Create: the payment, and whether it is the one
// an earlier request with the same signature created.
type Created struct {
	*models.Payment
	Replayed bool
}

// Create stores a PENDING payment with its dynamic QRIS, to be credited to
// the client's default wallet (ErrNoDefaultWallet without one), and
// schedules its expiry. A signature that created a payment already answers
// that payment (Replayed), whatever Redis remembers of it.
func (s *Service) Create(ctx context.Context, client *models.Client, req CreateRequest) (*Created, error) {
	if existing, err := s.bySignature(ctx, client.ID, req.Signature); existing != nil || err != nil {
		return existing, err
	}
	wallet, err := s.defaultWallet(ctx, client.ID)
	if err != nil {
		return nil, err
	}
	now := s.clock()
	fee := req.Price.PercentBps(client.PaymentFeeBps)
	p := &models.Payment{
		ID: models.NewID(), ClientID: client.ID, WalletID: wallet.ID, PayerID: req.PayerID, Flow: req.Flow,
		Amount: req.Price, PlatformFee: fee, NetAmount: req.Price - fee, Currency: "IDR",
		Status: models.PaymentPending, Acquirer: s.acquirer.Name(),
		ExpiredAt: now.Add(req.ExpiresIn), CreatedAt: now, UpdatedAt: now,
	}
	if req.Signature != "" {
		p.RequestSignature = &req.Signature
	}
	p.QRPayload, err = s.acquirer.DynamicQR(ctx, vendors.QRRequest{PaymentID: p.ID, Amount: p.Amount,
		MerchantName: client.Name, ExpiresAt: p.ExpiredAt})
	if err != nil {
		return nil, fmt.Errorf("dynamic QR: %w", err)
	}
	if err := s.db.WithContext(ctx).Create(p).Error; err != nil {
		if errors.Is(err, gorm.ErrDuplicatedKey) {
			// The same request, sent twice at once: the first stored it.
			if existing, ferr := s.bySignature(ctx, client.ID, req.Signature); existing != nil || ferr != nil {
				return existing, ferr
			}
		}
		return nil, err
	}
	if s.queue != nil {
		if err := s.queue.EnqueuePaymentExpire(ctx, p.ID, taskTime(p.ExpiredAt)); err != nil {
			slog.WarnContext(ctx, "enqueue payment:expire failed; the sweep will expire it",
				slog.String("payment_id", p.ID.String()), slog.Any("error", err))
		}
	}
	return &Created{Payment: p}, nil
}

// bySignature finds the client's payment created with signature: nil when
// there is none (or no signature).
func (s *Service) bySignature(ctx context.Context, clientID uuid.UUID, signature string) (*Created, error) {
	if signature == "" {
		return nil, nil
	}
	var p models.Payment
	err := s.db.WithContext(ctx).Where("client_id = ? AND request_signature = ?", clientID, signature).Take(&p).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return &Created{Payment: &p, Replayed: true}, nil
}

func (s *Service) defaultWallet(ctx context.Context, clientID uuid.UUID) (*models.Wallet, error) {
	var w models.Wallet
	err := s.db.WithContext(ctx).Where("client_id = ? AND is_default AND state = ?", clientID, models.WalletActive).Take(&w).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, models.ErrNoDefaultWallet
	}
	return &w, err
}

// WithWallet is a payment and the name of the wallet it settles into.
type WithWallet struct {
	models.Payment
	WalletName string
}

// Find returns the client's payment, or ErrPaymentNotFound (also for
// another client's).
func (s *Service) Find(ctx context.Context, clientID, id uuid.UUID) (*WithWallet, error) {
	var out WithWallet
	err := s.db.WithContext(ctx).Table("payments p").
		Select("p.*, w.name AS wallet_name").Joins("JOIN wallets w ON w.id = p.wallet_id").
		Where("p.id = ? AND p.client_id = ?", id, clientID).Take(&out).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, models.ErrPaymentNotFound
	}
	return &out, err
}

// Get returns any payment by id (checkout page, worker, operators).
func (s *Service) Get(ctx context.Context, id uuid.UUID) (*models.Payment, error) {
	var p models.Payment
	err := s.db.WithContext(ctx).Where("id = ?", id).Take(&p).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, models.ErrPaymentNotFound
	}
	return &p, err
}

// CheckoutView is what the public checkout page shows of a payment: no
// client identifiers, no settlement data.
type CheckoutView struct {
	ID           uuid.UUID
	MerchantName string
	Amount       models.Amount
	Status       models.PaymentStatus
	QRPayload    string
	ExpiredAt    time.Time
	PaidAt       *time.Time
	// Acquirer is the payment's acquirer: only the sandbox's payments may
	// be simulated.
	Acquirer string
}

// Checkout returns the checkout view of a payment, or ErrPaymentNotFound.
func (s *Service) Checkout(ctx context.Context, id uuid.UUID) (*CheckoutView, error) {
	var v CheckoutView
	err := s.db.WithContext(ctx).Table("payments p").
		Select("p.id, c.name AS merchant_name, p.amount, p.status, p.qr_payload, p.expired_at, p.paid_at, p.acquirer").
		Joins("JOIN clients c ON c.id = p.client_id").Where("p.id = ?", id).Take(&v).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, models.ErrPaymentNotFound
	}
	return &v, err
}
