package payouts

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

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

// transition moves every disbursement of ds, all in one status, to m.To
// inside tx: the only way a stored disbursement's status changes. It
// refuses a move the lifecycle does not allow (models.ErrTransitionRefused)
// and rows no longer in that status (models.ErrStaleStatus); either way the
// caller must roll tx back. With the status it applies the move's
// consequences in the same transaction: a terminal status releases the
// locks, SUCCESS debits the gross through the ledger, SUCCESS and FAILED
// record the merchants' webhook events, and every move leaves an audit
// line. It costs the same few statements for one disbursement or a batch
// (plus one per wallet). ds are updated as stored; callers hand in copies
// they drop if tx rolls back.
func transition(tx *gorm.DB, ds []*models.Disbursement, m Move, now time.Time) error {
	if len(ds) == 0 {
		return nil
	}
	from := ds[0].Status
	ids := make([]uuid.UUID, len(ds))
	for i, d := range ds {
		if d.Status != from {
			return fmt.Errorf("transition of %s from %s with %s from %s in one batch", d.ID, d.Status, ds[0].ID, from)
		}
		ids[i] = d.ID
	}
	if !from.CanMoveTo(m.To) {
		return fmt.Errorf("%w: %s → %s for %s", models.ErrTransitionRefused, from, m.To, describe(ids))
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
	guarded := tx.Model(&models.Disbursement{}).Where("id IN ? AND status = ?", ids, from)
	if m.IfSubmitAttempts != nil {
		guarded = guarded.Where("submit_attempts = ?", *m.IfSubmitAttempts)
	}
	res := guarded.Updates(updates)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected != int64(len(ds)) {
		return fmt.Errorf("%w: %s no longer %s", models.ErrStaleStatus, describe(ids), from)
	}
	switch {
	case m.To == models.StatusSuccess:
		if err := postPayouts(tx, ds); err != nil {
			return err
		}
	case m.To.Terminal():
		if err := releaseLocks(tx, ds, now); err != nil {
			return err
		}
	}
	if err := audit(tx, ids, from, m.To, m.Reason, now); err != nil {
		return err
	}
	var events []webhooks.NewEvent
	for _, d := range ds {
		applyMove(d, m, updates, now)
		if event, err := webhooks.DisbursementEvent(d); err == nil {
			events = append(events, event)
		}
	}
	_, err := webhooks.RecordAll(tx, events, now)
	return err
}

// describe names the disbursements of a move in an error.
func describe(ids []uuid.UUID) string {
	if len(ids) == 1 {
		return ids[0].String() + " is"
	}
	return fmt.Sprintf("%d disbursements from %s are", len(ids), ids[0])
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

// releaseLocks gives the gross of each disbursement back to its wallet's
// available balance: one update per wallet, in wallet id order like the
// ledger's, so that concurrent batches lock wallets in the same order. The
// guard keeps a lock from going negative: if it would, the lock invariant
// is already broken and the whole move is refused.
func releaseLocks(tx *gorm.DB, ds []*models.Disbursement, now time.Time) error {
	byWallet := map[uuid.UUID]models.Amount{}
	for _, d := range ds {
		byWallet[d.WalletID] += d.Amount
	}
	walletIDs := make([]uuid.UUID, 0, len(byWallet))
	for id := range byWallet {
		walletIDs = append(walletIDs, id)
	}
	slices.SortFunc(walletIDs, func(a, b uuid.UUID) int { return strings.Compare(a.String(), b.String()) })
	for _, id := range walletIDs {
		amount := byWallet[id]
		res := tx.Exec(`UPDATE wallets SET locked = locked - ?, updated_at = ? WHERE id = ? AND locked >= ?`,
			int64(amount), now, id, int64(amount))
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return fmt.Errorf("release lock of %s: wallet %s holds less than %s locked", describe(idsOf(ds)), id, amount)
		}
	}
	return nil
}

// postPayouts records paid disbursements: each gross leaves its wallet
// (and its lock), the net goes to the vendor's clearing account, the fee
// to the platform.
func postPayouts(tx *gorm.DB, ds []*models.Disbursement) error {
	postings := make([]ledger.Posting, len(ds))
	releases := make([]ledger.Release, len(ds))
	for i, d := range ds {
		entries := []ledger.Entry{
			{Account: models.WalletAccount(d.WalletID), Amount: -d.Amount},
			{Account: models.VendorClearingAccount(d.Vendor), Amount: d.NetAmount},
		}
		if d.PlatformFee > 0 {
			entries = append(entries, ledger.Entry{Account: models.AccountPlatformFees, Amount: d.PlatformFee})
		}
		postings[i] = ledger.Posting{Kind: "payout", Memo: "disbursement " + d.BankCode + " " + string(d.TransferType),
			Reference: d.ID.String(), Entries: entries}
		releases[i] = ledger.Release{WalletID: d.WalletID, Amount: d.Amount}
	}
	_, err := ledger.PostAll(tx, postings, releases)
	return err
}

// audit appends one line per disbursement to their trails, in one insert.
func audit(tx *gorm.DB, ids []uuid.UUID, from, to models.DisbursementStatus, reason string, now time.Time) error {
	var sql strings.Builder
	sql.WriteString(`INSERT INTO disbursement_transitions (disbursement_id, from_status, to_status, reason, created_at) VALUES `)
	args := make([]any, 0, 5*len(ids))
	for i, id := range ids {
		if i > 0 {
			sql.WriteString(", ")
		}
		sql.WriteString("(?, ?, ?, ?, ?)")
		args = append(args, id, string(from), string(to), reason, now)
	}
	return tx.Exec(sql.String(), args...).Error
}

func idsOf(ds []*models.Disbursement) []uuid.UUID {
	ids := make([]uuid.UUID, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
	}
	return ids
}
