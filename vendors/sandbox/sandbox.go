// Package sandbox implements the two sandbox payout vendors of DESIGN.md,
// simbank (banks only; BIFAST and RTOL) and simwallet (a subset of banks
// plus the e-wallets; BIFAST only). Recipient account numbers decide the
// outcome (the "magic" numbers merchants test with); caps follow the
// payout networks.
package sandbox

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
)

// Names of the sandbox vendors as stored on wallets.
const (
	SimBank   = "simbank"
	SimWallet = "simwallet"
)

// Magic account numbers (DESIGN.md, "Sandbox vendors").
const (
	AccountInactive        = "1000000001"
	AccountUnresolved      = "1000000002"
	AccountSubmitRejected  = "1000000003"
	AccountFailsLater      = "1000000004"
	AccountStaysRequested  = "1000000005"
	AccountInquiryDown     = "1000000006"
	AccountFirstSubmitLost = "1000000007"
)

// Caps on the net amount a payout network carries per transaction.
var (
	BIFASTCap      = models.Rupiah(250_000_000)
	RTOLDefaultCap = models.Rupiah(25_000_000)
	rtolBankCaps   = map[string]models.Amount{"mandiri": models.Rupiah(50_000_000)}
)

// simwalletBanks are the banks simwallet pays out to, besides e-wallets.
var simwalletBanks = map[string]bool{
	"bca": true, "bri": true, "bni": true, "mandiri": true, "bsi": true, "jago": true, "seabank": true,
}

// Vendor is one sandbox vendor. Payouts live in memory.
type Vendor struct {
	name          string
	banks         []vendors.Bank
	completeAfter time.Duration
	now           func() time.Time

	mu      sync.Mutex
	payouts map[string]*payout
	lost    map[string]bool // references whose first submit answer was "lost"
}

type payout struct {
	vendors.Payout
	acceptedAt time.Time
	final      vendors.PayoutStatus // set once completed by hand
	reason     string
}

var _ vendors.Vendor = (*Vendor)(nil)

// Options tune a sandbox vendor.
type Options struct {
	// CompleteAfter is how long an ordinary payout stays pending
	// (SANDBOX_COMPLETE_AFTER, default 2 s).
	CompleteAfter time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// NewSimBank returns simbank: every bank of the directory, BIFAST and RTOL.
func NewSimBank(o Options) *Vendor {
	var banks []vendors.Bank
	for _, b := range vendors.Directory() {
		if b.EWallet {
			continue
		}
		b.TransferTypes = []models.TransferType{models.BIFAST, models.RTOL}
		banks = append(banks, b)
	}
	return newVendor(SimBank, banks, o)
}

// NewSimWallet returns simwallet: seven banks and the five e-wallets, BIFAST.
func NewSimWallet(o Options) *Vendor {
	var banks []vendors.Bank
	for _, b := range vendors.Directory() {
		if !b.EWallet && !simwalletBanks[b.Code] {
			continue
		}
		b.TransferTypes = []models.TransferType{models.BIFAST}
		banks = append(banks, b)
	}
	return newVendor(SimWallet, banks, o)
}

// Registry returns both sandbox vendors.
func Registry(o Options) vendors.Registry {
	return vendors.NewRegistry(NewSimBank(o), NewSimWallet(o))
}

func newVendor(name string, banks []vendors.Bank, o Options) *Vendor {
	if o.CompleteAfter == 0 {
		o.CompleteAfter = 2 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Vendor{name: name, banks: banks, completeAfter: o.CompleteAfter, now: o.Now,
		payouts: map[string]*payout{}, lost: map[string]bool{}}
}

// Name implements vendors.Vendor.
func (v *Vendor) Name() string { return v.name }

// Banks implements vendors.Vendor. The slice is a copy.
func (v *Vendor) Banks(context.Context) ([]vendors.Bank, error) {
	return append([]vendors.Bank(nil), v.banks...), nil
}

// Inquire implements vendors.Vendor.
func (v *Vendor) Inquire(_ context.Context, req vendors.InquiryRequest) (vendors.Account, error) {
	bank, ok := vendors.FindBank(v.banks, req.BankCode)
	if !ok {
		return vendors.Account{}, vendors.ErrUnsupportedBank
	}
	account := strings.TrimSpace(req.AccountNo)
	if !validAccount(bank, account) {
		return vendors.Account{}, vendors.ErrAccountNotResolved
	}
	switch account {
	case AccountInactive:
		return vendors.Account{}, vendors.ErrAccountInactive
	case AccountUnresolved:
		return vendors.Account{}, vendors.ErrAccountNotResolved
	case AccountInquiryDown:
		return vendors.Account{}, vendors.ErrUnavailable
	}
	return vendors.Account{HolderName: "SANDBOX " + account[len(account)-4:]}, nil
}

// validAccount: digits only; e-wallet accounts are local phone numbers
// (leading 0, 10 to 13 digits).
func validAccount(bank vendors.Bank, account string) bool {
	if account == "" || strings.Trim(account, "0123456789") != "" {
		return false
	}
	if bank.EWallet {
		return account[0] == '0' && len(account) >= 10 && len(account) <= 13
	}
	return len(account) >= 4
}

// capFor is the most a payout network carries to bank per transaction.
func capFor(tt models.TransferType, bankCode string) models.Amount {
	if tt == models.RTOL {
		if c, ok := rtolBankCaps[bankCode]; ok {
			return c
		}
		return RTOLDefaultCap
	}
	return BIFASTCap
}

// Submit implements vendors.Vendor. A reference already accepted is not
// paid again: the existing payout is reported.
func (v *Vendor) Submit(_ context.Context, p vendors.Payout) (vendors.PayoutResult, error) {
	bank, ok := vendors.FindBank(v.banks, p.BankCode)
	if !ok || !bank.SupportsTransfer(p.TransferType) {
		return vendors.PayoutResult{}, fmt.Errorf("%w: %s does not support %s to %s", vendors.ErrRejected, v.name, p.TransferType, p.BankCode)
	}
	if p.AccountNo == AccountSubmitRejected {
		return vendors.PayoutResult{}, fmt.Errorf("%w: recipient account closed", vendors.ErrRejected)
	}
	if limit := capFor(p.TransferType, bank.Code); p.Amount > limit {
		return vendors.PayoutResult{}, fmt.Errorf("%w: amount %s above the %s cap %s", vendors.ErrRejected, p.Amount, p.TransferType, limit)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if existing, ok := v.payouts[p.Reference]; ok {
		return v.resultLocked(existing), nil
	}
	v.payouts[p.Reference] = &payout{Payout: p, acceptedAt: v.now()}
	if p.AccountNo == AccountFirstSubmitLost && !v.lost[p.Reference] {
		// Accepted, but the answer never reaches the caller.
		v.lost[p.Reference] = true
		return vendors.PayoutResult{}, fmt.Errorf("%w: timeout waiting for the vendor", vendors.ErrUnavailable)
	}
	return v.resultLocked(v.payouts[p.Reference]), nil
}

// Status implements vendors.Vendor.
func (v *Vendor) Status(_ context.Context, reference string) (vendors.PayoutResult, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	p, ok := v.payouts[reference]
	if !ok {
		return vendors.PayoutResult{}, vendors.ErrUnknownPayout
	}
	return v.resultLocked(p), nil
}

// Complete finishes a payout by hand (payoutd admin sandbox complete).
func (v *Vendor) Complete(reference string, status vendors.PayoutStatus, reason string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	p, ok := v.payouts[reference]
	if !ok {
		return vendors.ErrUnknownPayout
	}
	p.final, p.reason = status, reason
	return nil
}

// PaidCount reports how many payouts the vendor accepted for reference:
// 0 or 1, whatever the number of submits. Tests use it.
func (v *Vendor) PaidCount(reference string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, ok := v.payouts[reference]; ok {
		return 1
	}
	return 0
}

func (v *Vendor) resultLocked(p *payout) vendors.PayoutResult {
	r := vendors.PayoutResult{Reference: p.Reference, Status: vendors.PayoutPending}
	switch {
	case p.final != "":
		r.Status, r.FailureReason = p.final, p.reason
	case p.AccountNo == AccountStaysRequested:
	case v.now().Sub(p.acceptedAt) < v.completeAfter:
	case p.AccountNo == AccountFailsLater:
		r.Status, r.FailureReason = vendors.PayoutFailed, "recipient bank returned the transfer"
	default:
		r.Status = vendors.PayoutSuccess
	}
	return r
}
