// Package sandbox implements the two sandbox payout vendors,
// simbank (banks only; BIFAST and RTOL) and simwallet (a subset of banks
// plus the e-wallets; BIFAST only). Recipient account numbers decide the
// outcome (the "magic" numbers merchants test with); caps follow the
// payout networks.
//
// The payouts a vendor accepted live in a Store: a MemoryStore for one
// process, or a DBStore (table sandbox_payouts) when the api, the worker and
// the admin CLI run as separate processes and must see the same payouts.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
)

// Names of the sandbox vendors as stored on wallets.
const (
	SimBank   = "simbank"
	SimWallet = "simwallet"
)

// Magic account numbers: the outcomes merchants test against
// (docs/design.md, Sandbox vendors).
const (
	AccountInactive        = "1000000001"
	AccountUnresolved      = "1000000002"
	AccountSubmitRejected  = "1000000003"
	AccountFailsLater      = "1000000004"
	AccountStaysRequested  = "1000000005"
	AccountInquiryDown     = "1000000006"
	AccountFirstSubmitLost = "1000000007"
	// AccountReturnedLater is paid (SUCCESS after CompleteAfter) and then
	// returned by the bank (RETURNED after CompleteAfter more).
	AccountReturnedLater = "1000000008"
	// AccountNameUnknown resolves without a holder name, as an account of a
	// rail whose inquiry does not return one: a quote or create must then
	// carry account_holder_name.
	AccountNameUnknown = "1000000009"
)

// ReturnReason is the reason a sandbox payout is returned with.
const ReturnReason = "recipient bank returned the transfer"

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

// Vendor is one sandbox vendor. The payouts it accepted live in its Store.
type Vendor struct {
	name          string
	banks         []vendors.Bank
	completeAfter time.Duration
	now           func() time.Time
	store         Store
}

var (
	_ vendors.Vendor         = (*Vendor)(nil)
	_ vendors.Completer      = (*Vendor)(nil)
	_ vendors.BatchSubmitter = (*Vendor)(nil)
)

// Errors of the sandbox vendors besides the vendors.Err* ones.
var (
	// ErrAnswerLost is wrapped, with vendors.ErrUnavailable, in the error of
	// the first submit of a 1000000007 payout: accepted, but the answer
	// "never reached" the caller. payoutd vendorsim drops the connection.
	ErrAnswerLost = errors.New("sandbox dropped the answer to the first submit")
	// ErrAlreadyFinal: Complete asked for a status other than the final
	// status the payout already has.
	ErrAlreadyFinal = errors.New("sandbox payout is already final with another status")
)

// Options tune a sandbox vendor.
type Options struct {
	// CompleteAfter is how long an ordinary payout stays pending
	// (SANDBOX_COMPLETE_AFTER, default 2 s). Below a millisecond the
	// vendor is instant: a payout is final on acceptance (instantBelow).
	CompleteAfter time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Store keeps the accepted payouts. nil gives each vendor a MemoryStore
	// of its own; processes that must agree share a DBStore.
	Store Store
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
	if o.Store == nil {
		o.Store = NewMemoryStore()
	}
	return &Vendor{name: name, banks: banks, completeAfter: o.CompleteAfter, now: o.Now, store: o.Store}
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
		return vendors.Account{}, models.ErrUnsupportedBank
	}
	account := strings.TrimSpace(req.AccountNo)
	if !validAccount(bank, account) {
		return vendors.Account{}, models.ErrAccountNotResolved
	}
	switch account {
	case AccountInactive:
		return vendors.Account{}, models.ErrAccountInactive
	case AccountUnresolved:
		return vendors.Account{}, models.ErrAccountNotResolved
	case AccountInquiryDown:
		return vendors.Account{}, vendors.ErrUnavailable
	case AccountNameUnknown:
		return vendors.Account{}, nil
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
// paid again: the call is counted and the existing payout reported.
func (v *Vendor) Submit(ctx context.Context, p vendors.Payout) (vendors.PayoutResult, error) {
	p, err := v.accept(p)
	if err != nil {
		return vendors.PayoutResult{}, err
	}
	rec, err := v.store.RecordSubmit(ctx, v.name, p, v.now())
	if errors.Is(err, ErrReferenceInUse) {
		return vendors.PayoutResult{}, fmt.Errorf("%w: %w", vendors.ErrRejected, err)
	}
	if err != nil {
		return vendors.PayoutResult{}, fmt.Errorf("%w: %w", vendors.ErrUnavailable, err)
	}
	// SubmitCalls is 1 only for the call that created the payout.
	if rec.SubmitCalls == 1 && rec.AccountNo == AccountFirstSubmitLost {
		lost, err := v.store.MarkAnswerLost(ctx, rec.Reference, v.now())
		if err != nil {
			return vendors.PayoutResult{}, fmt.Errorf("%w: %w", vendors.ErrUnavailable, err)
		}
		if lost {
			return vendors.PayoutResult{}, fmt.Errorf("%w: timeout waiting for the vendor: %w", vendors.ErrUnavailable, ErrAnswerLost)
		}
	}
	return v.result(ctx, rec)
}

// accept checks a payout as the vendor's front door does: a bank and
// network it serves, a positive amount within the network's cap, and not
// the account that is always rejected. It returns p with the bank's code.
func (v *Vendor) accept(p vendors.Payout) (vendors.Payout, error) {
	bank, ok := vendors.FindBank(v.banks, p.BankCode)
	if !ok || !bank.SupportsTransfer(p.TransferType) {
		return p, fmt.Errorf("%w: %s does not support %s to %s", vendors.ErrRejected, v.name, p.TransferType, p.BankCode)
	}
	if strings.TrimSpace(p.HolderName) == "" {
		// As every real rail does: the transfer names its recipient.
		return p, fmt.Errorf("%w: %w", vendors.ErrRejected, vendors.ErrNoHolderName)
	}
	if p.AccountNo == AccountSubmitRejected {
		return p, fmt.Errorf("%w: recipient account closed", vendors.ErrRejected)
	}
	if p.Amount <= 0 {
		return p, fmt.Errorf("%w: amount %s is not positive", vendors.ErrRejected, p.Amount)
	}
	if limit := capFor(p.TransferType, bank.Code); p.Amount > limit {
		return p, fmt.Errorf("%w: amount %s above the %s cap %s", vendors.ErrRejected, p.Amount, p.TransferType, limit)
	}
	p.BankCode = bank.Code
	return p, nil
}

// SubmitBatch implements vendors.BatchSubmitter: each outcome is what
// Submit would have answered. With a BatchStore the ordinary payouts are
// recorded in one round and those already due marked final in one round
// per outcome; the first-submit-lost account, a reference repeated within
// the batch and every payout of a plain Store go through Submit, after
// the batch, in order.
func (v *Vendor) SubmitBatch(ctx context.Context, ps []vendors.Payout) []vendors.SubmitOutcome {
	out := make([]vendors.SubmitOutcome, len(ps))
	store, batched := v.store.(BatchStore)
	var together []int
	var alone []int
	seen := map[string]bool{}
	accepted := make([]vendors.Payout, len(ps))
	for i, p := range ps {
		p, err := v.accept(p)
		switch {
		case err != nil:
			out[i].Err = err
		case !batched || p.AccountNo == AccountFirstSubmitLost || seen[p.Reference]:
			alone = append(alone, i)
		default:
			seen[p.Reference] = true
			accepted[i] = p
			together = append(together, i)
		}
	}
	if len(together) > 0 {
		payouts := make([]vendors.Payout, len(together))
		for k, i := range together {
			payouts[k] = accepted[i]
		}
		finals := make([]Final, len(payouts))
		for k, p := range payouts {
			finals[k] = v.finalOnAcceptance(p.AccountNo)
		}
		recs, owned, err := store.RecordSubmits(ctx, v.name, payouts, finals, v.now())
		var mine []Record
		var mineAt []int
		for k, i := range together {
			switch {
			case err != nil:
				out[i].Err = fmt.Errorf("%w: %w", vendors.ErrUnavailable, err)
			case !owned[k]:
				out[i].Err = fmt.Errorf("%w: %w", vendors.ErrRejected, ErrReferenceInUse)
			default:
				mine, mineAt = append(mine, recs[k]), append(mineAt, i)
			}
		}
		for k, o := range v.results(ctx, store, mine) {
			out[mineAt[k]] = o
		}
	}
	for _, i := range alone {
		out[i].Result, out[i].Err = v.Submit(ctx, ps[i])
	}
	return out
}

// results is result for several records: the outcomes that have come due
// are stored as final in one MarkFinals round per status and reason.
func (v *Vendor) results(ctx context.Context, store BatchStore, recs []Record) []vendors.SubmitOutcome {
	out := make([]vendors.SubmitOutcome, len(recs))
	type outcome struct {
		status vendors.PayoutStatus
		reason string
	}
	due := map[outcome][]int{}
	var order []outcome
	for i, rec := range recs {
		status, reason := rec.FinalStatus, rec.FailureReason
		if status == "" {
			status, reason = v.automatic(rec)
			if status != vendors.PayoutPending {
				o := outcome{status, reason}
				if due[o] == nil {
					order = append(order, o)
				}
				due[o] = append(due[o], i)
				continue
			}
		}
		out[i].Result = vendors.PayoutResult{Reference: rec.Reference, Status: status, FailureReason: reason}
	}
	for _, o := range order {
		refs := make([]string, len(due[o]))
		for k, i := range due[o] {
			refs[k] = recs[i].Reference
		}
		stored, err := store.MarkFinals(ctx, refs, o.status, o.reason, v.now())
		for k, i := range due[o] {
			if err != nil {
				out[i].Err = err
				continue
			}
			out[i].Result = vendors.PayoutResult{Reference: stored[k].Reference, Status: stored[k].FinalStatus, FailureReason: stored[k].FailureReason}
		}
	}
	return out
}

// Status implements vendors.Vendor.
func (v *Vendor) Status(ctx context.Context, reference string) (vendors.PayoutResult, error) {
	rec, err := v.get(ctx, reference)
	if err != nil {
		return vendors.PayoutResult{}, err
	}
	return v.result(ctx, rec)
}

// Complete finishes a payout by hand (payoutd admin sandbox complete), also
// before its automatic outcome. Completing a final payout with its own
// status again is a no-op; with another status it is ErrAlreadyFinal.
func (v *Vendor) Complete(ctx context.Context, reference string, status vendors.PayoutStatus, reason string) error {
	switch status {
	case vendors.PayoutSuccess:
		reason = ""
	case vendors.PayoutFailed:
		if reason == "" {
			reason = "completed as failed by hand"
		}
	default:
		return fmt.Errorf("sandbox: cannot complete a payout as %q: want %s or %s", status, vendors.PayoutSuccess, vendors.PayoutFailed)
	}
	rec, err := v.get(ctx, reference)
	if err != nil {
		return err
	}
	// An outcome already due counts as final, whether observed or not.
	if _, err := v.result(ctx, rec); err != nil {
		return err
	}
	rec, err = v.store.MarkFinal(ctx, reference, status, reason, v.now())
	if err != nil {
		return err
	}
	if rec.FinalStatus != status {
		return fmt.Errorf("%w: %s is %s", ErrAlreadyFinal, reference, rec.FinalStatus)
	}
	return nil
}

// SubmitCalls reports how many times Submit was called for reference and
// counted (accepted or replayed; rejections are not counted): 0 if never.
func (v *Vendor) SubmitCalls(ctx context.Context, reference string) (int, error) {
	rec, err := v.get(ctx, reference)
	if errors.Is(err, vendors.ErrUnknownPayout) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return rec.SubmitCalls, nil
}

// PaidCount reports how many payouts the vendor accepted for reference:
// 0 or 1, whatever the number of submits. Tests use it.
func (v *Vendor) PaidCount(ctx context.Context, reference string) (int, error) {
	n, err := v.SubmitCalls(ctx, reference)
	if n > 0 {
		n = 1
	}
	return n, err
}

// get returns this vendor's payout of reference; another vendor's payout in
// a shared store is unknown here.
func (v *Vendor) get(ctx context.Context, reference string) (Record, error) {
	rec, err := v.store.Get(ctx, reference)
	if err != nil {
		return Record{}, err
	}
	if rec.Vendor != v.name {
		return Record{}, vendors.ErrUnknownPayout
	}
	return rec, nil
}

// result is what the vendor says about rec now. An automatic outcome that
// has come due is stored as final, so that a later Complete cannot
// contradict what a caller was already told. A paid 1000000008 is
// returned once its return is due; that needs no storing, it only depends
// on the time.
func (v *Vendor) result(ctx context.Context, rec Record) (vendors.PayoutResult, error) {
	status, reason := rec.FinalStatus, rec.FailureReason
	if status == vendors.PayoutSuccess && v.returned(rec) {
		return vendors.PayoutResult{Reference: rec.Reference, Status: vendors.PayoutReturned, FailureReason: ReturnReason}, nil
	}
	if status == "" {
		status, reason = v.automatic(rec)
		if status == vendors.PayoutPending {
			return vendors.PayoutResult{Reference: rec.Reference, Status: status}, nil
		}
		stored, err := v.store.MarkFinal(ctx, rec.Reference, status, reason, v.now())
		if err != nil {
			return vendors.PayoutResult{}, err
		}
		status, reason = stored.FinalStatus, stored.FailureReason
	}
	return vendors.PayoutResult{Reference: rec.Reference, Status: status, FailureReason: reason}, nil
}

// returned reports whether rec, paid, has been returned by now.
func (v *Vendor) returned(rec Record) bool {
	return rec.AccountNo == AccountReturnedLater && v.now().Sub(rec.AcceptedAt) >= 2*v.completeAfter
}

// Settled reports whether the payout of reference will not change any
// more: failed, returned, or paid to an account that is never returned.
// payoutd vendorsim keeps watching a payout until it is, to call back with
// its return.
func (v *Vendor) Settled(ctx context.Context, reference string) (bool, error) {
	res, err := v.Status(ctx, reference)
	if err != nil {
		return false, err
	}
	if res.Status != vendors.PayoutSuccess {
		return res.Status.Final(), nil
	}
	rec, err := v.get(ctx, reference)
	return err == nil && rec.AccountNo != AccountReturnedLater, err
}

// automatic is the outcome a payout reaches by itself at v.now().
func (v *Vendor) automatic(rec Record) (vendors.PayoutStatus, string) {
	if v.now().Sub(rec.AcceptedAt) < v.completeAfter {
		return vendors.PayoutPending, ""
	}
	return outcome(rec.AccountNo)
}

// outcome is what a payout to account comes to once its time is up.
func outcome(account string) (vendors.PayoutStatus, string) {
	switch account {
	case AccountStaysRequested:
		return vendors.PayoutPending, ""
	case AccountFailsLater:
		return vendors.PayoutFailed, "recipient bank returned the transfer"
	}
	return vendors.PayoutSuccess, ""
}

// instantBelow is the CompleteAfter under which a sandbox vendor is
// instant: a payout is final on acceptance, stored so by the statement that
// accepts it (a load test's SANDBOX_COMPLETE_AFTER=1µs, which would
// otherwise cost a second round trip for a microsecond of "pending").
const instantBelow = time.Millisecond

// finalOnAcceptance is the status and reason a new payout to account is
// stored with: its outcome when v is instant, pending otherwise.
func (v *Vendor) finalOnAcceptance(account string) Final {
	if v.completeAfter >= instantBelow {
		return Final{}
	}
	status, reason := outcome(account)
	if status == vendors.PayoutPending {
		return Final{}
	}
	return Final{Status: status, Reason: reason}
}
