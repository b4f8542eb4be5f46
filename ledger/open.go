package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/models"
)

// ErrWriteConflict wraps a database error after which the write may simply
// run again: PostgreSQL gave up the statement as a deadlock victim or a
// serialization failure, and nothing of it was written.
var ErrWriteConflict = errors.New("the write lost a conflict with a concurrent one; nothing was written")

// OpenDisbursements writes new disbursements, each together with the lock
// of its gross on its wallet and its first audit line ("" to its status,
// "created"). The disbursements of one wallet are locked together, with
// LockFunds' condition on the sum of their grosses (the wallet is active
// and its available balance covers the sum): a wallet that cannot cover
// the sum takes none of them, and those leave nothing behind (the caller
// may offer them again one by one, since some may fit); the others are
// stored. It returns the ids stored. The disbursements must have distinct
// Idempotency-Keys.
//
// It is all or nothing: when it returns an error (a twin's key already
// stored trips the unique index, gorm.ErrDuplicatedKey; a deadlock,
// ErrWriteConflict) nothing of any disbursement was written.
//
// This is the one entry to a create's write, for a lone create and for a
// group alike (the driver's OpenDisbursements). On PostgreSQL it is one
// statement: one round trip and one commit for the group, the wallet rows
// locked in id order, each once, and held only while it runs. On SQLite,
// which has no data-modifying CTEs, it is one transaction of the same
// steps (LockFunds per wallet in id order, then the rows).
func OpenDisbursements(ctx context.Context, db *gorm.DB, ds []*models.Disbursement) (map[uuid.UUID]bool, error) {
	if len(ds) == 0 {
		return map[uuid.UUID]bool{}, nil
	}
	drv := models.DriverOf(db)
	opened, err := drv.OpenDisbursements(ctx, db, ds)
	if err != nil && drv.IsRetryable(err) {
		return nil, fmt.Errorf("%w: %w", ErrWriteConflict, err)
	}
	return opened, err
}
