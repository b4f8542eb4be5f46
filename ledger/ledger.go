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
	"strings"

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

// Post writes p inside tx and applies each wallet entry to the wallet's
// balance. tx must be a transaction: the entries and the balances commit
// together or not at all. It returns the ledger transaction id.
func Post(tx *gorm.DB, p Posting) (uuid.UUID, error) {
	if len(p.Entries) < 2 {
		return uuid.Nil, fmt.Errorf("%w: a posting needs at least two entries", ErrUnbalanced)
	}
	var sum models.Amount
	for _, e := range p.Entries {
		if e.Amount == 0 {
			return uuid.Nil, errors.New("ledger entry of zero")
		}
		var err error
		if sum, err = sum.Add(e.Amount); err != nil {
			return uuid.Nil, err
		}
	}
	if sum != 0 {
		return uuid.Nil, ErrUnbalanced
	}
	now := models.Now()
	txn := models.LedgerTransaction{ID: models.NewID(), Kind: p.Kind, Memo: p.Memo, Reference: p.Reference, CreatedAt: now}
	if err := tx.Create(&txn).Error; err != nil {
		return uuid.Nil, err
	}
	entries := make([]models.LedgerEntry, len(p.Entries))
	for i, e := range p.Entries {
		entries[i] = models.LedgerEntry{TransactionID: txn.ID, Account: e.Account, Amount: e.Amount, CreatedAt: now}
	}
	if err := tx.Create(&entries).Error; err != nil {
		return uuid.Nil, err
	}
	for _, e := range p.Entries {
		walletID, ok := walletOf(e.Account)
		if !ok {
			continue
		}
		res := tx.Model(&models.Wallet{}).Where("id = ?", walletID).
			Updates(map[string]any{"balance": gorm.Expr("balance + ?", int64(e.Amount)), "updated_at": now})
		if res.Error != nil {
			return uuid.Nil, res.Error
		}
		if res.RowsAffected != 1 {
			return uuid.Nil, models.ErrWalletNotFound
		}
	}
	return txn.ID, nil
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
