package ledger

import (
	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/models"
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
// statements instead (the driver's MovePayouts with Lock, the ordered
// wallet update of PostAll and ReleaseLocks), a round trip each fewer. On
// SQLite, whose writers hold the whole database, both do nothing.

// LockPayouts takes the row locks of the disbursements ids, in id order,
// in tx, before a transaction writes their status.
func LockPayouts(tx *gorm.DB, ids []uuid.UUID) error {
	return models.DriverOf(tx).LockPayouts(tx, ids)
}

// LockWallets takes the row locks of the wallets ids, in id order, in tx,
// after the payout rows and before the money.
func LockWallets(tx *gorm.DB, ids []uuid.UUID) error {
	return models.DriverOf(tx).LockWallets(tx, ids)
}
