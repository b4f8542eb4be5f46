// Package ledger moves money. Every balance change is a ledger transaction:
// a set of append-only entries that sum to zero (double entry), written in
// the same database transaction as the wallet balance it changes. Wallet
// accounts are "wallet:<id>"; the other side is a system account
// (models.AccountAdjustments, AccountPlatformFees, vendor clearing, ...).
//
// Reconcile checks the invariants an operator relies on.
package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
}

// Post writes p inside tx and applies each wallet entry to the wallet's
// balance. tx must be a transaction: the entries and the balances commit
// together or not at all. It returns the ledger transaction id.
func Post(tx *gorm.DB, p Posting) (uuid.UUID, error) {
	ids, err := PostAll(tx, []Posting{p}, nil)
	if err != nil {
		return uuid.Nil, err
	}
	return ids[0], nil
}

// PostAll is Post for several postings at once, in a fixed number of
// statements plus one update per wallet touched: one insert of the ledger
// transactions, one of their entries, then each wallet's summed change,
// in wallet id order so that concurrent callers lock wallets in the same
// order. Each release takes its amount off the wallet's lock in that same
// update, guarded so that a lock never goes negative. It returns the ledger
// transaction ids in the order of ps.
func PostAll(tx *gorm.DB, ps []Posting, releases []Release) ([]uuid.UUID, error) {
	for _, p := range ps {
		if err := checkBalanced(p); err != nil {
			return nil, err
		}
	}
	now := models.Now()
	txns := make([]models.LedgerTransaction, len(ps))
	ids := make([]uuid.UUID, len(ps))
	var entries []models.LedgerEntry
	changes := map[uuid.UUID]*walletChange{}
	change := func(id uuid.UUID) *walletChange {
		if changes[id] == nil {
			changes[id] = &walletChange{}
		}
		return changes[id]
	}
	for i, p := range ps {
		ids[i] = models.NewID()
		txns[i] = models.LedgerTransaction{ID: ids[i], Kind: p.Kind, Memo: p.Memo, Reference: p.Reference, CreatedAt: now}
		for _, e := range p.Entries {
			entries = append(entries, models.LedgerEntry{TransactionID: ids[i], Account: e.Account, Amount: e.Amount, CreatedAt: now})
			if walletID, ok := walletOf(e.Account); ok {
				c := change(walletID)
				c.balance += e.Amount
			}
		}
	}
	for _, r := range releases {
		change(r.WalletID).release += r.Amount
	}
	if len(txns) > 0 {
		if err := tx.Create(&txns).Error; err != nil {
			return nil, err
		}
		if err := tx.Create(&entries).Error; err != nil {
			return nil, err
		}
	}
	walletIDs := make([]uuid.UUID, 0, len(changes))
	for id := range changes {
		walletIDs = append(walletIDs, id)
	}
	slices.SortFunc(walletIDs, func(a, b uuid.UUID) int { return strings.Compare(a.String(), b.String()) })
	for _, id := range walletIDs {
		if err := changes[id].apply(tx, id, now); err != nil {
			return nil, err
		}
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
}

func (c walletChange) apply(tx *gorm.DB, id uuid.UUID, now time.Time) error {
	if c.release == 0 {
		res := tx.Exec(`UPDATE wallets SET balance = balance + ?, updated_at = ? WHERE id = ?`, int64(c.balance), now, id)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return models.ErrWalletNotFound
		}
		return nil
	}
	res := tx.Exec(`UPDATE wallets SET balance = balance + ?, locked = locked - ?, updated_at = ? WHERE id = ? AND locked >= ?`,
		int64(c.balance), int64(c.release), now, id, int64(c.release))
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected != 1 {
		return fmt.Errorf("release lock: wallet %s is missing or holds less than %s locked", id, c.release)
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
// a funding), against models.AccountAdjustments, and returns the wallet as
// it is afterwards.
func Adjust(ctx context.Context, db *gorm.DB, walletID uuid.UUID, amount models.Amount, memo string) (*models.Wallet, error) {
	var wallet models.Wallet
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("id = ?", walletID).Take(&wallet).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return models.ErrWalletNotFound
			}
			return err
		}
		_, err := Post(tx, Posting{
			Kind: "adjustment",
			Memo: memo,
			Entries: []Entry{
				{Account: models.WalletAccount(walletID), Amount: amount},
				{Account: models.AccountAdjustments, Amount: -amount},
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
