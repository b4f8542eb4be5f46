package payouts

import (
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/webhooks"
)

// Move is one status change with what it records besides the status.
type Move struct {
	To     models.DisbursementStatus
	Reason string // for the audit trail: who or what moved it, and why
	// FailedReason is shown to the client on FAILED.
	FailedReason string
	// LockExpiresAt, when set, restarts the lock's clock (an approval).
	LockExpiresAt time.Time
	// NextCheckAt is when the worker should look at the row next.
	NextCheckAt time.Time
	// IfSubmitAttempts, when set, also guards on the stored count of submit
	// attempts: an expiry must not race a submit that started meanwhile.
	IfSubmitAttempts *int
}

// transition moves d to m.To inside tx, the only way a stored
// disbursement's status changes. It refuses a move the lifecycle does not
// allow (models.ErrTransitionRefused) and a row no longer in d.Status
// (models.ErrStaleStatus); either way nothing is written. With the status it
// applies the move's consequences in the same transaction: a terminal
// status releases the lock, SUCCESS debits the gross through the ledger,
// SUCCESS and FAILED record the merchant's webhook event, and every move
// leaves an audit line. d is updated on success.
func transition(tx *gorm.DB, d *models.Disbursement, m Move, now time.Time) error {
	from := d.Status
	if !from.CanMoveTo(m.To) {
		return fmt.Errorf("%w: %s → %s for %s", models.ErrTransitionRefused, from, m.To, d.ID)
	}
	updates := map[string]any{"status": m.To, "updated_at": now}
	switch m.To {
	case models.StatusVerified:
		if !m.LockExpiresAt.IsZero() {
			updates["lock_expires_at"] = m.LockExpiresAt
		}
	case models.StatusRequested:
		updates["requested_at"] = now
		updates["checks"] = 0
	case models.StatusFailed:
		updates["failed_reason"] = m.FailedReason
	}
	if m.To.Terminal() {
		updates["completed_at"] = now
		updates["next_check_at"] = nil
	} else if !m.NextCheckAt.IsZero() {
		updates["next_check_at"] = m.NextCheckAt
	}
	guarded := tx.Model(&models.Disbursement{}).Where("id = ? AND status = ?", d.ID, from)
	if m.IfSubmitAttempts != nil {
		guarded = guarded.Where("submit_attempts = ?", *m.IfSubmitAttempts)
	}
	res := guarded.Updates(updates)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected != 1 {
		return fmt.Errorf("%w: %s is no longer %s", models.ErrStaleStatus, d.ID, from)
	}
	if m.To.Terminal() {
		if err := releaseLock(tx, d, now); err != nil {
			return err
		}
	}
	if m.To == models.StatusSuccess {
		if err := postPayout(tx, d); err != nil {
			return err
		}
	}
	if err := audit(tx, d.ID, from, m.To, m.Reason, now); err != nil {
		return err
	}
	applyMove(d, m, updates, now)
	if event, err := webhooks.DisbursementEvent(d); err == nil {
		if _, err := webhooks.Record(tx, event, now); err != nil {
			return err
		}
	}
	return nil
}

// applyMove mirrors the stored update on the in-memory disbursement.
func applyMove(d *models.Disbursement, m Move, updates map[string]any, now time.Time) {
	d.Status, d.UpdatedAt = m.To, now
	if v, ok := updates["lock_expires_at"]; ok {
		d.LockExpiresAt = v.(time.Time)
	}
	if m.To == models.StatusRequested {
		d.RequestedAt, d.Checks = &now, 0
	}
	if m.To == models.StatusFailed {
		reason := m.FailedReason
		d.FailedReason = &reason
	}
	if m.To.Terminal() {
		d.CompletedAt, d.NextCheckAt = &now, nil
	} else if !m.NextCheckAt.IsZero() {
		next := m.NextCheckAt
		d.NextCheckAt = &next
	}
}

// releaseLock gives the gross back to the wallet's available balance. The
// guard keeps the lock from going negative: if it would, the lock invariant
// is already broken and the whole move is refused.
func releaseLock(tx *gorm.DB, d *models.Disbursement, now time.Time) error {
	res := tx.Exec(`UPDATE wallets SET locked = locked - ?, updated_at = ? WHERE id = ? AND locked >= ?`,
		int64(d.Amount), now, d.WalletID, int64(d.Amount))
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected != 1 {
		return fmt.Errorf("release lock of %s: wallet %s holds less than %s locked", d.ID, d.WalletID, d.Amount)
	}
	return nil
}

// postPayout records a paid disbursement: the gross leaves the wallet, the
// net goes to the vendor's clearing account, the fee to the platform.
func postPayout(tx *gorm.DB, d *models.Disbursement) error {
	entries := []ledger.Entry{
		{Account: models.WalletAccount(d.WalletID), Amount: -d.Amount},
		{Account: models.VendorClearingAccount(d.Vendor), Amount: d.NetAmount},
	}
	if d.PlatformFee > 0 {
		entries = append(entries, ledger.Entry{Account: models.AccountPlatformFees, Amount: d.PlatformFee})
	}
	_, err := ledger.Post(tx, ledger.Posting{
		Kind: "payout", Memo: "disbursement " + d.BankCode + " " + string(d.TransferType),
		Reference: d.ID.String(), Entries: entries,
	})
	return err
}

// audit appends one line to the disbursement's trail.
func audit(tx *gorm.DB, id any, from, to models.DisbursementStatus, reason string, now time.Time) error {
	return tx.Exec(`INSERT INTO disbursement_transitions (disbursement_id, from_status, to_status, reason, created_at)
	        VALUES (?, ?, ?, ?, ?)`, id, string(from), string(to), reason, now).Error
}
