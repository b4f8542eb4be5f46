// Package ledger moves money. Every balance change is a ledger transaction:
// a set of append-only entries that sum to zero (double entry), written in
// the same database transaction as the wallet balance it changes. Wallet
// accounts are "wallet:<id>"; the other side is a system account
// (models.AccountAdjustments, AccountPlatformFees, vendor clearing, ...).
//
// All SQL that writes wallets' balance or lock, or the ledger, is in
// wallets.go, with the invariants it keeps. Reconcile checks the
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

// Entry is one line of a posting: amount added to account (negative takes).
type Entry struct {
	Account string
	Amount  models.Amount
	// Line is the kind of the statement line a wallet entry makes; empty
	// means the posting kind's usual one (lineKind).
	Line models.StatementKind
}

// Posting is a balanced set of entries with what caused it.
type Posting struct {
	Kind      string // e.g. "adjustment", "payout", "settlement"
	Memo      string
	Reference string // id of the disbursement, payment, ... it records
	Entries   []Entry
}

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
				if c.balance, err = c.balance.Add(e.Amount); err != nil {
					return nil, fmt.Errorf("wallet %s: %w", walletID, err)
				}
				c.lines = append(c.lines, postingLine(p, e, ids[i]))
			}
		}
	}
	for _, r := range releases {
		c := change(r.WalletID)
		var err error
		if c.release, err = c.release.Add(r.Amount); err != nil {
			return nil, fmt.Errorf("release of wallet %s: %w", r.WalletID, err)
		}
		c.addRelease(r)
	}
	for id, c := range changes {
		if err := c.check(id); err != nil {
			return nil, err
		}
	}
	if err := applyAll(tx, changes, now, postingRows{ids: ids, ps: ps}); err != nil {
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

// walletChange is what PostAll does to one wallet.
type walletChange struct {
	balance models.Amount // added to the balance
	release models.Amount // taken off the lock
	lock    models.Amount // added to the lock (LockFunds)
	// lines are the statement lines of the change, in order; their
	// balance changes sum to balance and their lock changes to -release.
	lines []line
}

// line is a statement line to write: what it records and its changes.
// Its sequence number and the balances after it are known only once the
// wallet's row is updated (statementRows).
type line struct {
	kind           models.StatementKind
	balance        models.Amount // added to the balance
	locked         models.Amount // added to the lock
	disbursementID *uuid.UUID
	paymentID      *uuid.UUID
	txnID          *uuid.UUID
	memo           string
}

// postingLine is the statement line of a wallet entry e of posting p
// (ledger transaction txnID). The posting's Reference names the
// disbursement of a payout or return and the payment of a settlement.
func postingLine(p Posting, e Entry, txnID uuid.UUID) line {
	l := line{kind: e.Line, balance: e.Amount, txnID: &txnID, memo: p.Memo}
	ref, err := uuid.Parse(p.Reference)
	switch p.Kind {
	case "payout", "return":
		if err == nil {
			l.disbursementID = &ref
		}
		if l.kind == "" && p.Kind == "payout" {
			l.kind = models.StatementPayoutDebited
		} else if l.kind == "" {
			l.kind = models.StatementPayoutReturned
		}
	case "settlement":
		if err == nil {
			l.paymentID = &ref
		}
		if l.kind == "" {
			l.kind = models.StatementPaymentSettled
		}
	}
	if l.kind == "" {
		l.kind = models.StatementAdjustment
	}
	return l
}

// addRelease records release r in the change's lines: the debit lines of
// its disbursement carry it when they take exactly its amount from the
// balance (a paid payout: the lock becomes the debit, available does not
// move), else it is a payout_released line (available gets it back).
func (c *walletChange) addRelease(r Release) {
	var debits []int
	var taken models.Amount
	for i, l := range c.lines {
		if l.disbursementID != nil && *l.disbursementID == r.DisbursementID && l.locked == 0 && l.balance < 0 {
			debits = append(debits, i)
			taken -= l.balance
		}
	}
	if r.DisbursementID != uuid.Nil && len(debits) > 0 && taken == r.Amount {
		for _, i := range debits {
			c.lines[i].locked = c.lines[i].balance
		}
		return
	}
	l := line{kind: models.StatementPayoutReleased, locked: -r.Amount}
	if r.DisbursementID != uuid.Nil {
		id := r.DisbursementID
		l.disbursementID = &id
	}
	c.lines = append(c.lines, l)
}

// check refuses a change no wallet within its range could take: the
// balance change more than twice MaxBalance, or a release outside
// [0, MaxBalance]. What remains cannot overflow BIGINT in apply's
// arithmetic (|balance| + |change| <= 3 * 10^18).
func (c walletChange) check(id uuid.UUID) error {
	if c.balance > 2*models.MaxBalance || c.balance < -2*models.MaxBalance {
		return fmt.Errorf("%w: wallet %s cannot take a change of %s", models.ErrBalanceLimit, id, c.balance)
	}
	if c.release < 0 || c.release > models.MaxBalance {
		return fmt.Errorf("release lock: wallet %s: %s is not a lock", id, c.release)
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
