package payouts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/internal/groupcommit"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
)

// Queue hands the follow-ups of a move to the worker: the next status
// check of a payout in flight and the webhook events it recorded.
// tasks.Client implements it over asynq. A slot distinguishes a later
// enqueue of the same work (the next status check) from a duplicate, which
// the queue ignores. Submits are not queued here: when a submit runs is
// package dispatch's (Handoff).
type Queue interface {
	EnqueuePoll(ctx context.Context, id uuid.UUID, slot string, after time.Duration) error
	EnqueueWebhook(ctx context.Context, eventID uuid.UUID, slot string) error
}

// Service runs the disbursement lifecycle.
type Service struct {
	db      *gorm.DB
	store   *models.Store
	vendors vendors.Registry
	queue   Queue
	lockTTL time.Duration
	// submitLease is how long a submit call may still be on its way to the
	// vendor: before it passes, "unknown reference" proves nothing.
	submitLease time.Duration
	now         func() time.Time
	metrics     Metrics // never nil
	// returnWatch is how long paid payouts of vendors that do not notify are asked
	// about a return; 0 or less: never.
	returnWatch time.Duration

	// handoff is told of the payouts a commit made due for a submit or
	// moved out of VERIFIED (package dispatch); nil: nobody, the sweep
	// finds them.
	handoff Handoff

	// creates groups the inserts of concurrent creates.
	creates *groupcommit.Group[*models.Disbursement]
	// moves groups the result moves of concurrent status checks and
	// callbacks.
	moves *groupcommit.Group[plan]
	// inquiries bounds creates refused after their inquiry; nil: no bound.
	inquiries InquiryBudget
	// gate says which vendors' calls go out now (their circuit breakers);
	// nil: all.
	gate vendors.Gate

	// submitInline: a create whose caller waits claims its first submit
	// attempt with its row (Options.SubmitInline).
	submitInline bool
}

// Options configure a Service.
type Options struct {
	DB      *gorm.DB
	Vendors vendors.Registry
	// Queue may be nil (the admin CLI without Redis): the worker's sweep
	// then picks the work up.
	Queue Queue
	// Handoff is told, after the commit, of a payout due for a submit
	// and of the payouts a commit moved out of VERIFIED: package dispatch,
	// which decides when submits run (dispatch.New sets it). nil: nobody
	// is told, and the sweep carries the payouts through.
	Handoff Handoff
	// LockTTL is DISBURSEMENT_LOCK_TTL (default 30 minutes).
	LockTTL time.Duration
	// SubmitLease bounds a vendor submit call (default 30 s, longer than
	// any vendor timeout): an unanswered submit is resubmitted or expired
	// only after it, when the vendor still does not know the reference.
	SubmitLease time.Duration
	// Now is the clock; nil means time.Now. A submit's deadline (its
	// lease's end) is read on it and given to a context, which times out
	// in real time: a clock far behind the real one makes every submit
	// time out at once.
	Now func() time.Time
	// Metrics counts committed transitions; nil counts nothing.
	Metrics Metrics
	// InquiryBudget bounds each client's creates refused after their
	// account inquiry; nil: no bound.
	InquiryBudget InquiryBudget
	// ReturnWatch is how long a paid payout of a vendor that does not
	// notify (vendors.Notifies: no callbacks, or configured without them)
	// is asked about a return by status inquiry
	// (DISBURSEMENT_RETURN_WATCH): 0 means the default, 72 hours; negative
	// turns the watch off. Vendors that notify report returns the same way.
	ReturnWatch time.Duration
	// SubmitInline makes Create store a fresh VERIFIED payout whose caller
	// waits for it (CreateRequest.WaitsForSubmit: the API with
	// DISBURSEMENT_SUBMIT_WAIT above 0) with its first submit attempt
	// claimed, and hand it to Handoff.Claimed, which submits it in this
	// process at once (SubmitClaimed); the worker's sweep is the fallback
	// should this process die first.
	SubmitInline bool
	// Gate, when set, says which vendors take calls now (their circuit
	// breakers, vendors/breaker): a payout of a vendor it holds back is
	// not claimed for a submit, so that no attempt is counted for a call
	// that would be refused. nil: every vendor is asked.
	Gate vendors.Gate
}

// DefaultReturnWatch is Options.ReturnWatch's default.
const DefaultReturnWatch = 72 * time.Hour

// New returns a Service.
func New(o Options) *Service {
	if o.LockTTL == 0 {
		o.LockTTL = 30 * time.Minute
	}
	if o.SubmitLease == 0 {
		o.SubmitLease = 30 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ReturnWatch == 0 {
		o.ReturnWatch = DefaultReturnWatch
	}
	if o.Metrics == nil {
		o.Metrics = noMetrics{}
	}
	s := &Service{db: o.DB, store: models.NewStore(o.DB), vendors: o.Vendors, queue: o.Queue,
		lockTTL: o.LockTTL, submitLease: o.SubmitLease, now: o.Now, metrics: o.Metrics, inquiries: o.InquiryBudget, returnWatch: o.ReturnWatch,
		handoff: o.Handoff, submitInline: o.SubmitInline, gate: o.Gate}
	s.creates, s.moves = s.newCreateGrouper(), s.newMoveGrouper()
	return s
}

// clock returns the current time as stored: UTC, microseconds.
func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// SubmitLease is Options.SubmitLease: how long a submit call may still be
// on its way to the vendor (a batch of submits is given no longer).
func (s *Service) SubmitLease() time.Duration { return s.submitLease }

// Params are the compared parameters of a quote or create, normalised:
// bank code lowercase, account number and holder name trimmed.
type Params struct {
	WalletID     uuid.UUID
	Amount       models.Amount // gross
	BankCode     string
	AccountNo    string
	TransferType models.TransferType
	// HolderName is the account_holder_name the merchant supplied ("" for
	// none): sent when the account inquiry returns no name.
	HolderName string
}

// Normalize lowercases the bank code and trims the strings.
func (p Params) Normalize() Params {
	p.BankCode = strings.ToLower(strings.TrimSpace(p.BankCode))
	p.AccountNo = strings.TrimSpace(p.AccountNo)
	p.HolderName = strings.TrimSpace(p.HolderName)
	return p
}

// sameParams is idempotency rule 4: wallet, amount (scale-insensitive: it
// is an exact integer), bank code (case-insensitive), account number
// (trimmed) and transfer type; and the supplied holder name (trimmed,
// exact: it may be the name the payout is sent with). memo and
// reference_id are not compared.
func sameParams(d *models.Disbursement, p Params) bool {
	p = p.Normalize()
	return d.WalletID == p.WalletID && d.Amount == p.Amount && d.BankCode == p.BankCode &&
		d.AccountNo == p.AccountNo && d.TransferType == p.TransferType && d.SuppliedHolderName == p.HolderName
}

// Quote is a priced, verified recipient: what a create would store.
type Quote struct {
	Wallet *models.Wallet
	Vendor string
	Bank   vendors.Bank
	Params Params
	Fee    models.Amount
	Net    models.Amount
	// HolderName is the name the payout is sent with: the inquiry's, else
	// the one the merchant supplied. Never "".
	HolderName string
}

// Quote prices a payout and verifies its recipient with the vendor, with
// no side effect. Errors: ErrWithdrawalsSuspended, ErrWalletNotFound,
// ErrUnsupportedBank, an EUNPROCESSABLE refusal (transfer type, minimum),
// ErrAccountInactive, ErrAccountNotResolved, ErrGatewayUnavailable,
// ErrInsufficientBalance.
func (s *Service) Quote(ctx context.Context, client *models.Client, p Params) (*Quote, error) {
	if client.Withdrawals != models.WithdrawalsActive {
		return nil, models.ErrWithdrawalsSuspended
	}
	return s.prepare(ctx, client, p.Normalize())
}

// prepare runs the checks of a create in the spec's order: the wallet, the
// bank code, the recipient (real-time inquiry), the minimum, the available
// balance. The balance check here is a courtesy; the create's conditional
// update is what decides.
func (s *Service) prepare(ctx context.Context, client *models.Client, p Params) (*Quote, error) {
	wallet, err := s.store.FindClientWallet(ctx, client.ID, p.WalletID)
	if err != nil {
		return nil, err
	}
	return s.check(ctx, client, wallet, p)
}

// check runs prepare's checks after the wallet's: it is prepare for a
// caller that has read the wallet already.
func (s *Service) check(ctx context.Context, client *models.Client, wallet *models.Wallet, p Params) (*Quote, error) {
	vendor, err := s.vendors.Get(wallet.Vendor)
	if err != nil {
		return nil, fmt.Errorf("wallet %s: %w", wallet.ID, err)
	}
	bank, err := s.findBank(ctx, vendor, p)
	if err != nil {
		return nil, err
	}
	account, err := vendor.Inquire(ctx, vendors.InquiryRequest{BankCode: bank.Code, AccountNo: p.AccountNo, TransferType: p.TransferType})
	if err != nil {
		err = inquiryError(ctx, vendor.Name(), err)
		if errors.Is(err, models.ErrAccountInactive) || errors.Is(err, models.ErrAccountNotResolved) {
			err = afterInquiry(err)
		}
		return nil, err
	}
	holder := holderName(account, p)
	if holder == "" {
		return nil, afterInquiry(models.WithHint(models.ErrHolderNameRequired,
			"this wallet's payout rail does not return the holder's name for this account: send account_holder_name, exactly as the bank or e-wallet has it registered"))
	}
	fee, minGross := Pricing(client, p.TransferType)
	if p.Amount < minGross {
		return nil, afterInquiry(models.Refuse("withdrawal amount is below minimum: " + minGross.String()))
	}
	if wallet.Available() < p.Amount {
		return nil, afterInquiry(models.ErrInsufficientBalance)
	}
	return &Quote{Wallet: wallet, Vendor: vendor.Name(), Bank: bank, Params: p, Fee: fee, Net: p.Amount - fee, HolderName: holder}, nil
}

// holderName is the name a payout to the account is sent with: the one the
// bank's records gave the inquiry, which is what the rail matches, else the
// one the merchant supplied, else "" (the request is refused).
func holderName(account vendors.Account, p Params) string {
	if strings.TrimSpace(account.HolderName) != "" {
		return account.HolderName // exactly as the bank has it
	}
	return p.HolderName
}

// Banks is the vendor's bank list. Any failure to read it is the gateway
// being unavailable (ErrGatewayUnavailable, 503): the bank list route and
// quote/create answer the same failure the same way.
func (s *Service) Banks(ctx context.Context, vendor vendors.Vendor) ([]vendors.Bank, error) {
	banks, err := vendor.Banks(ctx)
	if err != nil {
		logVendorFailure(ctx, "vendor bank list unavailable", vendor.Name(), err)
		return nil, gatewayUnavailable(err)
	}
	return banks, nil
}

func (s *Service) findBank(ctx context.Context, vendor vendors.Vendor, p Params) (vendors.Bank, error) {
	banks, err := s.Banks(ctx, vendor)
	if err != nil {
		return vendors.Bank{}, err
	}
	bank, ok := vendors.FindBank(banks, p.BankCode)
	if !ok {
		return vendors.Bank{}, models.ErrUnsupportedBank
	}
	if !bank.SupportsTransfer(p.TransferType) {
		return vendors.Bank{}, models.Refuse(fmt.Sprintf("transfer_type %s is not supported for bank_code %s by this wallet's vendor", p.TransferType, bank.Code))
	}
	return bank, nil
}

// inquiryError is the client's answer to a vendor's inquiry error: what
// it says about the account (models.ErrAccountInactive,
// ErrAccountNotResolved, ErrUnsupportedBank) is answered as it is; any
// other failure is the gateway being unavailable.
func inquiryError(ctx context.Context, vendor string, err error) error {
	if errors.Is(err, models.ErrAccountInactive) || errors.Is(err, models.ErrAccountNotResolved) ||
		errors.Is(err, models.ErrUnsupportedBank) {
		return err
	}
	logVendorFailure(ctx, "account inquiry failed", vendor, err)
	return gatewayUnavailable(err)
}

// logVendorFailure logs a vendor call that failed at warn, or at info when
// the vendor's guard refused it before it left: the breaker's transitions
// are the warnings then, not every request it turns away.
func logVendorFailure(ctx context.Context, msg, vendor string, err error) {
	level := slog.LevelWarn
	if errors.Is(err, vendors.ErrNotSent) {
		level = slog.LevelInfo
	}
	slog.Log(ctx, level, msg, slog.String("vendor", vendor), slog.Any("error", err))
}

// Pricing returns the client's fee for a transfer type and the minimum
// gross amount: the fee plus the minimum net (and at least one unit more
// than the fee, so the vendor is never asked to send nothing).
func Pricing(c *models.Client, tt models.TransferType) (fee, minGross models.Amount) {
	fee, minNet := c.BIFASTFee, c.BIFASTMinNet
	if tt == models.RTOL {
		fee, minNet = c.RTOLFee, c.RTOLMinNet
	}
	return fee, fee + max(minNet, 1)
}

// Find returns the client's disbursement, or ErrDisbursementNotFound (also
// for another client's).
func (s *Service) Find(ctx context.Context, clientID, id uuid.UUID) (*models.Disbursement, error) {
	var d models.Disbursement
	err := s.db.WithContext(ctx).Where("id = ? AND client_id = ?", id, clientID).Take(&d).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, models.ErrDisbursementNotFound
	}
	return &d, err
}

// Get returns any disbursement by id (operators, the worker).
func (s *Service) Get(ctx context.Context, id uuid.UUID) (*models.Disbursement, error) {
	return s.get(s.db.WithContext(ctx), id)
}

func (s *Service) get(tx *gorm.DB, id uuid.UUID) (*models.Disbursement, error) {
	var d models.Disbursement
	err := tx.Where("id = ?", id).Take(&d).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, models.ErrDisbursementNotFound
	}
	return &d, err
}

// Transitions returns a disbursement's audit trail, oldest first.
func (s *Service) Transitions(ctx context.Context, id uuid.UUID) ([]models.DisbursementTransition, error) {
	var out []models.DisbursementTransition
	err := s.db.WithContext(ctx).Where("disbursement_id = ?", id).Order("id").Find(&out).Error
	return out, err
}
