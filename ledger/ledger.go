// Package ledger moves money. Every balance change is a ledger transaction:
// a set of append-only entries that sum to zero (double entry), written in
// the same database transaction as the wallet balance it changes. Wallet
// accounts are "wallet:<id>"; the other side is a system account
// (models.AccountAdjustments, AccountPlatformFees, vendor clearing, ...).
//
// What writes wallets' balance or lock, or the ledger, is decided in
// wallets.go, with the invariants it keeps, and written by the database's
// driver (models.MoneyDriver). Reconcile checks the
// invariants an operator relies on.
package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/models"
)

// Entry is one line of a posting: amount added to account (negative
// takes); its Line is the kind of the statement line a wallet entry makes,
// empty for the posting kind's usual one (postingLine). It is the driver's
// type (models.PostingEntry), so that a posting reaches the database's
// statement as it was built.
type Entry = models.PostingEntry

// Posting is a balanced set of entries with what caused it
// (models.Posting).
type Posting = models.Posting

// ErrUnbalanced is returned for a posting whose entries do not sum to zero.
var ErrUnbalanced = errors.New("ledger posting does not balance to zero")

// Release is a wallet lock a posting settles: Amount comes off the
// wallet's locked balance in the same update that changes its balance.
type Release struct {
	WalletID uuid.UUID
	Amount   models.Amount
	// DisbursementID is the disbursement whose lock this is: its
	// statement line names it. When PostAll also posts that disbursement's
	// debit from the same wallet for exactly Amount, the debit's lines
	// carry the release (the lock turns into the debit); otherwise the
	// release is a payout_released line of its own.
	DisbursementID uuid.UUID
}

// Post writes p inside tx and applies each wallet entry to the wallet's
// balance. tx must be a transaction: the entries and the balances commit
// together or not at all. now is the caller's clock (the service's
// injected one): the ledger never reads the wall clock. It returns the
// ledger transaction id.
func Post(tx *gorm.DB, now time.Time, p Posting) (uuid.UUID, error) {
	ids, err := PostAll(tx, now, []Posting{p}, nil)
	if err != nil {
		return uuid.Nil, err
	}
	return ids[0], nil
}

// PostAll is Post for several postings at once, in a fixed number of
// statements: one insert of the ledger transactions, one of their entries,
// then each wallet's summed change, in wallet id order so that concurrent
// callers lock wallets in the same order (on PostgreSQL one update for all
// the wallets, applyAll, which inserts the postings too). Each release takes its amount off the wallet's lock in that same
// update, guarded so that a lock never goes negative. It returns the ledger
// transaction ids in the order of ps.
//
// Every sum is checked: a posting whose sums overflow is refused with
// models.ErrAmountOverflow, one that would take a wallet's balance past
// ±models.MaxBalance with models.ErrBalanceLimit, before anything is
// written to that wallet (the caller's transaction then rolls back).
func PostAll(tx *gorm.DB, now time.Time, ps []Posting, releases []Release) ([]uuid.UUID, error) {
	for _, p := range ps {
		if err := checkBalanced(p); err != nil {
			return nil, err
		}
	}
	now = now.UTC().Truncate(time.Microsecond)
	ids := make([]uuid.UUID, len(ps))
	changes := map[uuid.UUID]*walletChange{}
	change := func(id uuid.UUID) *walletChange {
		if changes[id] == nil {
			changes[id] = &walletChange{}
		}
		return changes[id]
	}
	for i, p := range ps {
		ids[i] = models.NewID()
		for _, e := range p.Entries {
			if walletID, ok := walletOf(e.Account); ok {
				c := change(walletID)
				var err error
				if c.Balance, err = c.Balance.Add(e.Amount); err != nil {
					return nil, fmt.Errorf("wallet %s: %w", walletID, err)
				}
				c.Lines = append(c.Lines, postingLine(p, e, ids[i]))
			}
		}
	}
	for _, r := range releases {
		c := change(r.WalletID)
		var err error
		if c.Release, err = c.Release.Add(r.Amount); err != nil {
			return nil, fmt.Errorf("release of wallet %s: %w", r.WalletID, err)
		}
		addRelease(c, r)
	}
	for id, c := range changes {
		if err := check(c, id); err != nil {
			return nil, err
		}
	}
	if err := applyAll(tx, changes, now, ids, ps); err != nil {
		return nil, err
	}
	return ids, nil
}

// checkBalanced refuses a posting of fewer than two entries, a zero entry,
// or entries that do not sum to zero.
func checkBalanced(p Posting) error {
	if len(p.Entries) < 2 {
		return fmt.Errorf("%w: a posting needs at least two entries", ErrUnbalanced)
	}
	var sum models.Amount
	for _, e := range p.Entries {
		if e.Amount == 0 {
			return errors.New("ledger entry of zero")
		}
		// No entry can exceed what a balance may hold; this also keeps
		// every stored entry within what the database accepts.
		if !e.Amount.WithinBalanceRange() {
			return fmt.Errorf("%w: ledger entry of %s to %s", models.ErrAmountOverflow, e.Amount, e.Account)
		}
		var err error
		if sum, err = sum.Add(e.Amount); err != nil {
			return err
		}
	}
	if sum != 0 {
		return ErrUnbalanced
	}
	return nil
}

// walletChange is what PostAll does to one wallet: its Lines' balance
// changes sum to Balance and their lock changes to Lock-Release.
type walletChange = models.WalletChange

// line is a statement line to write: what it records and its changes.
// Its sequence number and the balances after it are known only once the
// wallet's row is updated (the driver's ApplyWalletChanges).
type line = models.StatementChange

// postingLine is the statement line of a wallet entry e of posting p
// (ledger transaction txnID). The posting's Reference names the
// disbursement of a payout or return and the payment of a settlement.
func postingLine(p Posting, e Entry, txnID uuid.UUID) line {
	l := line{Kind: e.Line, Balance: e.Amount, TxnID: &txnID, Memo: p.Memo}
	ref, err := uuid.Parse(p.Reference)
	switch p.Kind {
	case "payout", "return":
		if err == nil {
			l.DisbursementID = &ref
		}
		if l.Kind == "" && p.Kind == "payout" {
			l.Kind = models.StatementPayoutDebited
		} else if l.Kind == "" {
			l.Kind = models.StatementPayoutReturned
		}
	case "settlement":
		if err == nil {
			l.PaymentID = &ref
		}
		if l.Kind == "" {
			l.Kind = models.StatementPaymentSettled
		}
	}
	if l.Kind == "" {
		l.Kind = models.StatementAdjustment
	}
	return l
}

// addRelease records release r in the change's lines: the debit lines of
// its disbursement carry it when they take exactly its amount from the
// balance (a paid payout: the lock becomes the debit, available does not
// move), else it is a payout_released line (available gets it back).
func addRelease(c *walletChange, r Release) {
	var debits []int
	var taken models.Amount
	for i, l := range c.Lines {
		if l.DisbursementID != nil && *l.DisbursementID == r.DisbursementID && l.Locked == 0 && l.Balance < 0 {
			debits = append(debits, i)
			taken -= l.Balance
		}
	}
	if r.DisbursementID != uuid.Nil && len(debits) > 0 && taken == r.Amount {
		for _, i := range debits {
			c.Lines[i].Locked = c.Lines[i].Balance
		}
		return
	}
	l := line{Kind: models.StatementPayoutReleased, Locked: -r.Amount}
	if r.DisbursementID != uuid.Nil {
		id := r.DisbursementID
		l.DisbursementID = &id
	}
	c.Lines = append(c.Lines, l)
}

// check refuses a change no wallet within its range could take: the
// balance change more than twice MaxBalance, or a release outside
// [0, MaxBalance]. What remains cannot overflow BIGINT in apply's
// arithmetic (|balance| + |change| <= 3 * 10^18).
func check(c *walletChange, id uuid.UUID) error {
	if c.Balance > 2*models.MaxBalance || c.Balance < -2*models.MaxBalance {
		return fmt.Errorf("%w: wallet %s cannot take a change of %s", models.ErrBalanceLimit, id, c.Balance)
	}
	if c.Release < 0 || c.Release > models.MaxBalance {
		return fmt.Errorf("release lock: wallet %s: %s is not a lock", id, c.Release)
	}
	return nil
}

func walletOf(account string) (uuid.UUID, bool) {
	rest, ok := strings.CutPrefix(account, "wallet:")
	if !ok {
		return uuid.Nil, false
	}
	id, err := uuid.Parse(rest)
	return id, err == nil
}

// Adjust changes a wallet's balance by amount (an operator's correction or
// a funding), against models.AccountAdjustments, at now (the caller's
// clock), and returns the wallet as it is afterwards.
func Adjust(ctx context.Context, db *gorm.DB, now time.Time, walletID uuid.UUID, amount models.Amount, memo string) (*models.Wallet, error) {
	var wallet models.Wallet
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("id = ?", walletID).Take(&wallet).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return models.ErrWalletNotFound
			}
			return err
		}
		neg, err := amount.Neg()
		if err != nil {
			return err
		}
		_, err = Post(tx, now, Posting{
			Kind: "adjustment",
			Memo: memo,
			Entries: []Entry{
				{Account: models.WalletAccount(walletID), Amount: amount},
				{Account: models.AccountAdjustments, Amount: neg},
			},
		})
		if err != nil {
			return err
		}
		return tx.Where("id = ?", walletID).Take(&wallet).Error
	})
	if err != nil {
		return nil, err
	}
	return &wallet, nil
}
