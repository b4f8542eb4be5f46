package ledger

import (
	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/internal/database"
)

// The lock order of a transaction that moves payouts and their money
// (payouts' transitionAll): first the rows of every payout it moves, all
// at once in id order (LockPayouts), then their status writes, then the
// rows of the wallets whose money moves, all at once in id order
// (LockWallets), then the money. A transaction then waits for a payout
// row only while it holds payout rows of lower ids and no wallet, and for
// a wallet only while it holds wallets of lower ids: no two transactions
// can each hold what the other waits for, however their batches overlap
// (an inline submit's answer and the worker's status check of the same
// payouts, say). It also holds a busy wallet's row only for its money and
// its commit. A create takes its wallet and inserts new payout rows, which
// no one else waits for. A transaction that moves one group of payouts
// along one path takes the same locks in the same order inside its own
// statements instead (PayoutsInLockOrder in its status update, the ordered
// wallet update of PostAll and ReleaseLocks), a round trip each fewer. On
// SQLite, whose writers hold the whole database, both do nothing.

// PayoutsInLockOrder is a condition on disbursements.id for a statement
// that takes the rows' locks itself, in id order, as LockPayouts would: its
// one placeholder is the ids. On SQLite it is plain "id IN ?".
func PayoutsInLockOrder(tx *gorm.DB) string {
	if database.DialectOfDB(tx) != database.Postgres {
		return "id IN ?"
	}
	return "id IN (SELECT id FROM disbursements WHERE id IN ? ORDER BY id FOR NO KEY UPDATE)"
}

// SkipLocked ends a SELECT that picks rows to claim (the submit pump's):
// on PostgreSQL it locks them and skips those another transaction holds,
// so that claimers never wait for one another (and cannot deadlock); on
// SQLite, whose one writer holds the whole database, it is empty.
func SkipLocked(tx *gorm.DB) string {
	if database.DialectOfDB(tx) != database.Postgres {
		return ""
	}
	return " FOR NO KEY UPDATE SKIP LOCKED"
}

// LockPayouts takes the row locks of the disbursements ids, in id order,
// in tx, before a transaction writes their status.
func LockPayouts(tx *gorm.DB, ids []uuid.UUID) error {
	return lockInOrder(tx, "disbursements", ids)
}

// LockWallets takes the row locks of the wallets ids, in id order, in tx,
// after the payout rows and before the money.
func LockWallets(tx *gorm.DB, ids []uuid.UUID) error {
	return lockInOrder(tx, "wallets", ids)
}

func lockInOrder(tx *gorm.DB, table string, ids []uuid.UUID) error {
	if len(ids) == 0 || database.DialectOfDB(tx) != database.Postgres {
		return nil
	}
	set := make(map[uuid.UUID]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	var locked []uuid.UUID
	return tx.Raw(`SELECT id FROM `+table+` WHERE id IN ? ORDER BY id FOR NO KEY UPDATE`, inIDOrder(set)).Scan(&locked).Error
}
