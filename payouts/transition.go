package payouts

import (
	"errors"
	"fmt"
	"slices"
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
	// FailedReason is shown to the client on FAILED, and is the return
	// reason on RETURNED.
	FailedReason string
	// LockExpiresAt, when set, restarts the lock's clock (an approval).
	LockExpiresAt time.Time
	// NextCheckAt is when the worker should look at the row next; on
	// SUCCESS, when a vendor that does not notify is first asked about a
	// return.
	NextCheckAt time.Time
	// IfAttempts, when set, also guards on the stored submit attempts (the
	// count, and with LatestAt the latest's time: models.AttemptsRead): an
	// expiry must not race a submit that started meanwhile.
	IfAttempts *models.AttemptsRead
}

// transition moves every disbursement of ds, all in one status, along
// path (one move, or several in a row such as REQUESTED then SUCCESS)
// inside tx: transitionAll of one group.
func transition(tx *gorm.DB, ds []*models.Disbursement, path []Move, now time.Time) error {
	_, err := transitionAll(tx, []pathGroup{{ds: ds, path: path}}, now)
	return err
}

// pathGroup is disbursements, all in one status, and the path they take.
type pathGroup struct {
	ds   []*models.Disbursement
	path []Move
}

// transitionAll moves every group along its path inside tx: the only way
// a stored disbursement's status changes. It refuses a move the lifecycle
// does not allow (models.ErrTransitionRefused) and rows no longer in their
// group's status (models.ErrStaleStatus); either way the caller must roll
// tx back. Each row is written once, however long the path, and with the
// status come the moves' consequences in the same transaction: a terminal
// status releases the locks, SUCCESS debits the gross through the ledger,
// RETURNED credits the net (and the fee, when the client's settings say
// so) back, SUCCESS, FAILED and RETURNED record the merchants' webhook
// events (one per step of the path, in order), and every move leaves an
// audit line. It costs the same few statements for one disbursement or a
// batch (plus one per wallet). ds are updated as stored; callers hand in
// copies they drop if tx rolls back.
//
// The order matters (ledger's lock order): the rows of every payout it
// moves, then their status, their audit lines and events, then the rows
// of the wallets whose money moves, then the money. Two such transactions
// cannot each hold what the other waits for, and a busy wallet's row is
// held only for the money and the commit: the inserts of audit lines and
// events (which lock no wallet) come before it: every statement after
// the wallets' update is time a create on that wallet waits. So an event says only what the moves decide, never what the
// money does (a return's refunded_fee is not in its body).
//
// It returns the ids of the events it recorded for delivery (the clients
// with a webhook URL), for the caller to enqueue once tx has committed.
func transitionAll(tx *gorm.DB, groups []pathGroup, now time.Time) ([]uuid.UUID, error) {
	type written struct {
		ids      []uuid.UUID
		from, to models.DisbursementStatus
	}
	var payouts, deliver []uuid.UUID
	moving := 0
	for _, g := range groups {
		payouts = append(payouts, idsOf(g.ds)...)
		if len(g.ds) > 0 && len(g.path) > 0 {
			moving++
		}
	}
	// One group (the usual batch) takes its locks in its own statements,
	// in the same order: its status update locks its payout rows in id
	// order (the driver's MovePayouts with lock), and the money's updates lock the
	// wallets' rows in id order. Several groups lock every row first.
	inline := moving == 1
	if !inline {
		if err := ledger.LockPayouts(tx, payouts); err != nil {
			return nil, err
		}
	}
	done := make([]written, len(groups))
	var wallets []uuid.UUID
	for i, g := range groups {
		if len(g.ds) == 0 || len(g.path) == 0 {
			continue
		}
		from := g.ds[0].Status
		ids := make([]uuid.UUID, len(g.ds))
		for k, d := range g.ds {
			if d.Status != from {
				return nil, fmt.Errorf("transition of %s from %s with %s from %s in one batch", d.ID, d.Status, g.ds[0].ID, from)
			}
			ids[k] = d.ID
		}
		to, err := writeStatus(tx, ids, from, g.path, now, inline)
		if err != nil {
			return nil, err
		}
		done[i] = written{ids: ids, from: from, to: to}
		if movesMoney(from, to, g.path) {
			for _, d := range g.ds {
				wallets = append(wallets, d.WalletID)
			}
		}
	}
	for i, g := range groups {
		if done[i].ids == nil {
			continue
		}
		recorded, err := recordEvents(tx, g.ds, g.path, now)
		if err != nil {
			return nil, err
		}
		deliver = append(deliver, recorded...)
	}
	if !inline {
		if err := ledger.LockWallets(tx, wallets); err != nil {
			return nil, err
		}
	}
	for i, g := range groups {
		if done[i].ids == nil {
			continue
		}
		if err := moveMoney(tx, g.ds, done[i].from, done[i].to, g.path, now); err != nil {
			return nil, err
		}
	}
	return deliver, nil
}

// writeStatus checks every move of path against the transition table and
// writes the rows' new status and columns with one update, guarded by the
// status they were read in (and the submit attempts when a move says so),
// and the path's audit lines (the driver's MovePayouts: on PostgreSQL one
// statement). It returns the status the path ends in. With lock, the
// update takes the rows' locks in id order itself (the caller has not).
func writeStatus(tx *gorm.DB, ids []uuid.UUID, from models.DisbursementStatus, path []Move, now time.Time, lock bool) (models.DisbursementStatus, error) {
	updates := map[string]any{"updated_at": now}
	var guard *models.AttemptsRead
	at := from
	steps := make([]models.TransitionStep, len(path))
	for i, m := range path {
		if !at.CanMoveTo(m.To) {
			return "", fmt.Errorf("%w: %s → %s for %s", models.ErrTransitionRefused, at, m.To, namesOf(ids))
		}
		stepUpdates(updates, m, now)
		if m.IfAttempts != nil {
			guard = m.IfAttempts
		}
		steps[i] = models.TransitionStep{From: at, To: m.To, Reason: m.Reason}
		at = m.To
	}
	moved, err := models.DriverOf(tx).MovePayouts(tx, models.PayoutMove{IDs: ids, From: from, Set: updates,
		IfAttempts: guard, Steps: steps, At: now, Lock: lock})
	if err != nil {
		return "", err
	}
	if moved != int64(len(ids)) {
		return "", fmt.Errorf("%w: %s no longer %s", models.ErrStaleStatus, describe(ids), from)
	}
	return at, nil
}

// movesMoney reports whether a path from from to to changes wallets
// (moveMoney does something).
func movesMoney(from, to models.DisbursementStatus, path []Move) bool {
	return isPaid(path) || (to.Terminal() && !from.Terminal()) || to == models.StatusReturned
}

func isPaid(path []Move) bool {
	return slices.ContainsFunc(path, func(m Move) bool { return m.To == models.StatusSuccess })
}

// moveMoney makes a path's consequences for the wallets: a path through
// SUCCESS debits the gross (and releases its lock), one that ends unpaid
// releases the lock, one that ends RETURNED credits the return.
func moveMoney(tx *gorm.DB, ds []*models.Disbursement, from, to models.DisbursementStatus, path []Move, now time.Time) error {
	paid := isPaid(path)
	switch {
	case paid:
		if err := postPayouts(tx, ds, now); err != nil {
			return err
		}
	case to.Terminal() && !from.Terminal():
		if err := releaseLocks(tx, ds, now); err != nil {
			return err
		}
	}
	if to == models.StatusReturned {
		// After the payouts' postings: the return credits what they debited.
		return postReturns(tx, ds, now)
	}
	return nil
}

// recordEvents brings ds to what path stored and records the merchants'
// webhook events of each step (SUCCESS, FAILED, RETURNED), in order. It
// returns the ids of those to deliver.
func recordEvents(tx *gorm.DB, ds []*models.Disbursement, path []Move, now time.Time) ([]uuid.UUID, error) {
	var events []webhooks.NewEvent
	for _, d := range ds {
		for _, m := range path {
			applyMove(d, m, now)
			if event, err := webhooks.DisbursementEvent(d); err == nil {
				events = append(events, event)
			}
		}
	}
	recorded, err := webhooks.RecordAll(tx, events, now)
	if err != nil {
		return nil, err
	}
	var deliver []uuid.UUID
	for _, e := range recorded {
		if e.State == models.WebhookPending {
			deliver = append(deliver, e.ID)
		}
	}
	return deliver, nil
}

// stepUpdates adds what move m stores to updates; a later move of a path
// overrides an earlier one's columns.
func stepUpdates(updates map[string]any, m Move, now time.Time) {
	updates["status"] = m.To
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
	case models.StatusReturned:
		// completed_at stays when it was paid; the return has its own time.
		updates["failed_reason"] = m.FailedReason
		updates["returned_at"] = now
		updates["next_check_at"] = nil
		return
	}
	switch {
	case m.To.Terminal():
		updates["completed_at"] = now
		updates["next_check_at"] = nil
		if m.To == models.StatusSuccess && !m.NextCheckAt.IsZero() {
			updates["next_check_at"] = m.NextCheckAt // watched for a return
		}
	case !m.NextCheckAt.IsZero():
		updates["next_check_at"] = m.NextCheckAt
	}
}

// namesOf names the disbursements of a move in an error.
func namesOf(ids []uuid.UUID) string {
	if len(ids) == 1 {
		return ids[0].String()
	}
	return fmt.Sprintf("%d disbursements from %s", len(ids), ids[0])
}

// describe is namesOf with its verb, for "<describe> no longer <status>".
func describe(ids []uuid.UUID) string {
	if len(ids) == 1 {
		return namesOf(ids) + " is"
	}
	return namesOf(ids) + " are"
}

// applyMove mirrors move m, as stepUpdates stores it, on d.
func applyMove(d *models.Disbursement, m Move, now time.Time) {
	d.Status, d.UpdatedAt = m.To, now
	if m.To == models.StatusVerified && !m.LockExpiresAt.IsZero() {
		d.LockExpiresAt = m.LockExpiresAt
	}
	if m.To == models.StatusRequested {
		d.RequestedAt, d.Checks = &now, 0
	}
	if m.To == models.StatusFailed || m.To == models.StatusReturned {
		reason := m.FailedReason
		d.FailedReason = &reason
	}
	switch {
	case m.To == models.StatusReturned:
		d.ReturnedAt, d.NextCheckAt = &now, nil
	case m.To.Terminal():
		d.CompletedAt, d.NextCheckAt = &now, nil
		if m.To == models.StatusSuccess && !m.NextCheckAt.IsZero() {
			next := m.NextCheckAt
			d.NextCheckAt = &next
		}
	case !m.NextCheckAt.IsZero():
		next := m.NextCheckAt
		d.NextCheckAt = &next
	}
}

// releaseLocks gives the gross of each disbursement back to its wallet's
// available balance (ledger.ReleaseLocks: one update per wallet, in wallet
// id order). A lock that would go negative means the lock invariant is
// already broken: the whole move is refused.
func releaseLocks(tx *gorm.DB, ds []*models.Disbursement, now time.Time) error {
	releases := make([]ledger.Release, len(ds))
	for i, d := range ds {
		releases[i] = ledger.Release{WalletID: d.WalletID, Amount: d.Amount, DisbursementID: d.ID}
	}
	err := ledger.ReleaseLocks(tx, releases, now)
	if short, ok := errors.AsType[*ledger.LockShortError](err); ok {
		return fmt.Errorf("release lock of %s: wallet %s holds less than %s locked", namesOf(idsOf(ds)), short.WalletID, short.Amount)
	}
	return err
}

// postPayouts records paid disbursements: each gross leaves its wallet
// (and its lock), the net to the vendor's clearing account, the fee to the
// platform. The wallet's entries are the net and the fee apart, so that
// its statement shows the fee as a line of its own.
func postPayouts(tx *gorm.DB, ds []*models.Disbursement, now time.Time) error {
	postings := make([]ledger.Posting, len(ds))
	releases := make([]ledger.Release, len(ds))
	for i, d := range ds {
		wallet := models.WalletAccount(d.WalletID)
		entries := []ledger.Entry{
			{Account: wallet, Amount: -d.NetAmount, Line: models.StatementPayoutDebited},
			{Account: models.VendorClearingAccount(d.Vendor), Amount: d.NetAmount},
		}
		if d.PlatformFee > 0 {
			entries = append(entries,
				ledger.Entry{Account: wallet, Amount: -d.PlatformFee, Line: models.StatementFee},
				ledger.Entry{Account: models.AccountPlatformFees, Amount: d.PlatformFee})
		}
		postings[i] = ledger.Posting{Kind: "payout", Memo: "disbursement " + d.BankCode + " " + string(d.TransferType),
			Reference: d.ID.String(), Entries: entries}
		releases[i] = ledger.Release{WalletID: d.WalletID, Amount: d.Amount, DisbursementID: d.ID}
	}
	_, err := ledger.PostAll(tx, now, postings, releases)
	return err
}

// postReturns records returned disbursements: each net comes back from
// the vendor's clearing account to its wallet, as its own ledger movement;
// the fee stays with the platform unless the client's settings refund it
// (then it comes back too, and refunded_fee says so). The clients'
// settings are read in tx, so the setting at the time of the return counts.
func postReturns(tx *gorm.DB, ds []*models.Disbursement, now time.Time) error {
	clientIDs := make([]uuid.UUID, 0, len(ds))
	for _, d := range ds {
		clientIDs = append(clientIDs, d.ClientID)
	}
	var refunding []uuid.UUID
	if err := tx.Model(&models.Client{}).Where("id IN ? AND refund_fee_on_return", clientIDs).Pluck("id", &refunding).Error; err != nil {
		return err
	}
	postings := make([]ledger.Posting, len(ds))
	for i, d := range ds {
		wallet := models.WalletAccount(d.WalletID)
		entries := []ledger.Entry{
			{Account: models.VendorClearingAccount(d.Vendor), Amount: -d.NetAmount},
			{Account: wallet, Amount: d.NetAmount, Line: models.StatementPayoutReturned},
		}
		if d.PlatformFee > 0 && slices.Contains(refunding, d.ClientID) {
			// The fee comes back as a line of its own in the statement.
			entries = append(entries, ledger.Entry{Account: models.AccountPlatformFees, Amount: -d.PlatformFee},
				ledger.Entry{Account: wallet, Amount: d.PlatformFee, Line: models.StatementFee})
			if err := tx.Model(&models.Disbursement{}).Where("id = ?", d.ID).
				Updates(map[string]any{"refunded_fee": d.PlatformFee, "updated_at": now}).Error; err != nil {
				return err
			}
			d.RefundedFee = d.PlatformFee
		}
		postings[i] = ledger.Posting{Kind: "return", Memo: "disbursement returned by the bank",
			Reference: d.ID.String(), Entries: entries}
	}
	_, err := ledger.PostAll(tx, now, postings, nil)
	return err
}

func idsOf(ds []*models.Disbursement) []uuid.UUID {
	ids := make([]uuid.UUID, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
	}
	return ids
}
