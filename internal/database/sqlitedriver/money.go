package sqlitedriver

import (
	"context"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/models"
)

// The money statements of SQLite (models.MoneyDriver), under the
// invariants written at the top of ledger/wallets.go. With the PostgreSQL
// driver's money.go these are the only statements of the repository that
// write wallets.balance or wallets.locked, or insert into
// ledger_transactions, ledger_entries or wallet_statement
// (TestMoneySQLStaysInMoneyFiles).

// OpenDisbursements is one transaction: per wallet, in id order, the lock
// of its disbursements' summed gross with their statement lines
// (LockFunds); then the rows of the wallets whose lock was taken, and
// their audit lines.
func (d Driver) OpenDisbursements(ctx context.Context, db *gorm.DB, ds []*models.Disbursement) (map[uuid.UUID]bool, error) {
	changes, at := map[uuid.UUID]*models.WalletChange{}, map[uuid.UUID]time.Time{}
	for _, dis := range ds {
		c := changes[dis.WalletID]
		if c == nil {
			c = &models.WalletChange{}
			changes[dis.WalletID] = c
		}
		id := dis.ID
		c.Lock += dis.Amount
		c.Lines = append(c.Lines, models.StatementChange{Kind: models.StatementPayoutLocked, Locked: dis.Amount, DisbursementID: &id})
		if dis.CreatedAt.After(at[dis.WalletID]) {
			at[dis.WalletID] = dis.CreatedAt
		}
	}
	opened := make(map[uuid.UUID]bool, len(ds))
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		locked := map[uuid.UUID]bool{}
		for _, id := range inIDOrder(changes) {
			ok, err := d.LockFunds(tx, id, changes[id], at[id])
			if err != nil {
				return err
			}
			locked[id] = ok
		}
		for _, dis := range ds {
			if !locked[dis.WalletID] {
				continue
			}
			if err := tx.Create(dis).Error; err != nil {
				return err
			}
			if err := tx.Exec(`INSERT INTO disbursement_transitions (disbursement_id, from_status, to_status, reason, created_at)
				VALUES (?, '', ?, 'created', ?)`, dis.ID, string(dis.Status), dis.CreatedAt).Error; err != nil {
				return err
			}
			opened[dis.ID] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return opened, nil
}

// LockFunds locks change.Lock on the active wallet with one conditional
// update, then writes change.Lines.
func (Driver) LockFunds(tx *gorm.DB, walletID uuid.UUID, c *models.WalletChange, now time.Time) (bool, error) {
	var rows []models.WalletAfter
	err := tx.Raw(`UPDATE wallets SET locked = locked + ?, statement_seq = statement_seq + ?, updated_at = ?
		        WHERE id = ? AND state = ? AND balance - locked >= ?
		        RETURNING id, balance, locked, statement_seq, updated_at`,
		int64(c.Lock), len(c.Lines), now, walletID, models.WalletActive, int64(c.Lock)).Scan(&rows).Error
	if err != nil || len(rows) != 1 {
		return false, err
	}
	return true, writeLines(tx, c.StatementLines(walletID, rows[0]))
}

// UpdateWallet is one wallet's guarded money update. updated_at is the
// writer's time: SQLite serves one process, whose clock orders its lines.
func (Driver) UpdateWallet(tx *gorm.DB, id uuid.UUID, c *models.WalletChange, now time.Time) (models.WalletAfter, bool, error) {
	lo, hi := int64(-models.MaxBalance), int64(models.MaxBalance)
	var rows []models.WalletAfter
	err := tx.Raw(`UPDATE wallets SET balance = balance + ?, locked = locked - ? + ?, statement_seq = statement_seq + ?, updated_at = ?
			WHERE id = ? AND locked >= ? AND balance + ? BETWEEN ? AND ?
			RETURNING id, balance, locked, statement_seq, updated_at`,
		int64(c.Balance), int64(c.Release), int64(c.Lock), len(c.Lines), now, id, int64(c.Release), int64(c.Balance), lo, hi).
		Scan(&rows).Error
	if err != nil || len(rows) != 1 {
		return models.WalletAfter{}, false, err
	}
	return rows[0], true, nil
}

// ApplyWalletChanges inserts the postings (one insert of the
// transactions and one of their entries), updates each wallet in order
// (UpdateWallet), stopping at the first that refuses, then inserts every
// wallet's statement lines.
func (d Driver) ApplyWalletChanges(tx *gorm.DB, order []uuid.UUID, changes []*models.WalletChange, ids []uuid.UUID,
	ps []models.Posting, now time.Time) (uuid.UUID, error) {
	if err := insertPostings(tx, ids, ps, now); err != nil {
		return uuid.Nil, err
	}
	var lines []models.StatementLine
	for i, id := range order {
		after, ok, err := d.UpdateWallet(tx, id, changes[i], now)
		if err != nil {
			return uuid.Nil, err
		}
		if !ok {
			return id, nil
		}
		lines = append(lines, changes[i].StatementLines(id, after)...)
	}
	return uuid.Nil, writeLines(tx, lines)
}

// insertPostings writes the postings at now (ledger transactions ids[i]
// for ps[i]), with one insert of the transactions and one of their
// entries.
func insertPostings(tx *gorm.DB, ids []uuid.UUID, ps []models.Posting, now time.Time) error {
	if len(ps) == 0 {
		return nil
	}
	txns := make([]models.LedgerTransaction, len(ps))
	var entries []models.LedgerEntry
	for i, p := range ps {
		txns[i] = models.LedgerTransaction{ID: ids[i], Kind: p.Kind, Memo: p.Memo, Reference: p.Reference, CreatedAt: now}
		for _, e := range p.Entries {
			entries = append(entries, models.LedgerEntry{TransactionID: ids[i], Account: e.Account, Amount: e.Amount, CreatedAt: now})
		}
	}
	if err := tx.Create(&txns).Error; err != nil {
		return err
	}
	return tx.Create(&entries).Error
}

// writeLines inserts statement lines in one insert (or a few, for a very
// large change).
func writeLines(tx *gorm.DB, lines []models.StatementLine) error {
	if len(lines) == 0 {
		return nil
	}
	return tx.CreateInBatches(&lines, 2000).Error
}
