// The money. The statements that write wallets.balance or wallets.locked,
// or add rows to ledger_transactions, ledger_entries or wallet_statement,
// are the drivers' (models.MoneyDriver; their money.go files under
// internal/database, and nowhere else: TestMoneySQLStaysInMoneyFiles fails
// otherwise); this file decides what they write. Whoever moves money calls
// these functions (or OpenDisbursements), never a driver's money
// operation directly. Every money operation keeps these invariants:
//
//   - A wallet's balance changes only together with its ledger entries, in
//     the same database transaction (PostAll: the postings' inserts, then
//     each wallet's update; on PostgreSQL one statement).
//     The entries of a posting sum to zero; a wallet's balance is the sum
//     of its "wallet:<id>" entries (Reconcile checks it).
//   - locked changes only when a disbursement is created (LockFunds,
//     OpenDisbursements: + gross) or leaves for a terminal status (Release
//     in PostAll when paid, ReleaseLocks otherwise: − gross). locked is the
//     sum of the gross of the wallet's open disbursements.
//   - available = balance − locked is never negative: a lock is a
//     conditional update (balance − locked >= gross), never
//     read-then-write, so concurrent creates cannot oversell; a release is
//     guarded (locked >= amount) so a lock never goes negative.
//   - balance stays within ±models.MaxBalance: the update is guarded by the
//     bound, and PostAll checks every sum before anything is written.
//   - Every change of balance or locked writes the wallet's statement
//     lines in the same statement or transaction: the row update advances
//     wallets.statement_seq by the number of lines and returns the row as
//     it left it, from which each line's balance and lock after it follow
//     (models.WalletChange.StatementLines, or the same in SQL). The last
//     line of a wallet shows its balance and lock (Reconcile checks it).
//   - One statement or transaction that updates several wallets updates
//     them in wallet id order, so that concurrent writers (PostAll,
//     ReleaseLocks, the grouped create) take the row locks in one order
//     and do not deadlock.

package ledger

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/models"
)

// applyAll writes the postings (ledger transactions ids[i] for ps[i])
// and applies each wallet's change in wallet id order with its statement
// lines, through the driver: on PostgreSQL in one statement for all of
// them, so that the wallets' rows are locked for one round trip only and
// the whole of a move's money costs one; elsewhere with the postings'
// inserts, one guarded update per wallet, then the lines. Should a
// wallet's guard refuse its change, the error is apply's for the first
// such wallet, and the caller's transaction rolls back (with the postings
// the statement wrote).
func applyAll(tx *gorm.DB, changes map[uuid.UUID]*walletChange, now time.Time, ids []uuid.UUID, ps []Posting) error {
	order := inIDOrder(changes)
	inOrder := make([]*walletChange, len(order))
	for i, id := range order {
		if err := checkLines(changes[id], id); err != nil {
			return err
		}
		inOrder[i] = changes[id]
	}
	refused, err := models.DriverOf(tx).ApplyWalletChanges(tx, order, inOrder, ids, ps, now)
	if err != nil || refused == uuid.Nil {
		return err
	}
	// Nothing of it changed: apply's update refuses it again and says why.
	if _, err := apply(tx, changes[refused], refused, now); err != nil {
		return err
	}
	return fmt.Errorf("ledger: wallet %s refused a change, then took it", refused)
}

// checkLines refuses a change whose statement lines do not add up to it
// (a defect: the statement would no longer follow the wallet).
func checkLines(c *walletChange, id uuid.UUID) error {
	var balanceSum, lockedSum models.Amount
	for _, l := range c.Lines {
		balanceSum, lockedSum = balanceSum+l.Balance, lockedSum+l.Locked
	}
	if balanceSum != c.Balance || lockedSum != c.Lock-c.Release {
		return fmt.Errorf("ledger: wallet %s: statement lines of %s/%s for a change of %s/%s", id,
			balanceSum, lockedSum, c.Balance, c.Lock-c.Release)
	}
	return nil
}

// lockShortOf is apply's refusal of a release larger than the wallet's
// lock.
type lockShortOf struct {
	walletID uuid.UUID
	msg      string
}

func (e *lockShortOf) Error() string { return e.msg }

// apply changes the wallet's balance (and lock) in one guarded update
// (the driver's UpdateWallet) and returns the row as it left it: the new
// balance must stay within ±MaxBalance and the lock cover the release,
// else nothing changes and the error says which. It writes no statement
// lines: it is what tells why ApplyWalletChanges refused a wallet.
func apply(tx *gorm.DB, c *walletChange, id uuid.UUID, now time.Time) (models.WalletAfter, error) {
	after, ok, err := models.DriverOf(tx).UpdateWallet(tx, id, c, now)
	if err != nil {
		return models.WalletAfter{}, err
	}
	if ok {
		return after, nil
	}
	var w models.Wallet
	if err := tx.Select("balance", "locked").Where("id = ?", id).Take(&w).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return models.WalletAfter{}, models.ErrWalletNotFound
		}
		return models.WalletAfter{}, err
	}
	if w.Locked < c.Release {
		return models.WalletAfter{}, &lockShortOf{walletID: id, msg: fmt.Sprintf("release lock: wallet %s holds %s locked, less than %s", id, w.Locked, c.Release)}
	}
	return models.WalletAfter{}, fmt.Errorf("%w: wallet %s holds %s, a change of %s would make it %s",
		models.ErrBalanceLimit, id, w.Balance.Fixed4(), c.Balance.Fixed4(), (w.Balance + c.Balance).Fixed4())
}

// Lock is one disbursement's gross to lock on its wallet.
type Lock struct {
	DisbursementID uuid.UUID
	Amount         models.Amount
}

// LockFunds locks the grosses of a wallet's new disbursements on the
// active wallet walletID, in tx, with one conditional update of their sum
// (and writes their payout_locked lines): false, and nothing changed, when
// the wallet is not active or its available balance does not cover the
// sum. The caller writes the disbursements in the same tx. (On PostgreSQL
// a create is one statement: OpenDisbursements.)
func LockFunds(tx *gorm.DB, walletID uuid.UUID, locks []Lock, now time.Time) (bool, error) {
	c := &walletChange{}
	for _, l := range locks {
		id := l.DisbursementID
		c.Lock += l.Amount
		c.Lines = append(c.Lines, line{Kind: models.StatementPayoutLocked, Locked: l.Amount, DisbursementID: &id})
	}
	return models.DriverOf(tx).LockFunds(tx, walletID, c, now)
}

// LockShortError is a release of more than the wallet holds locked: the lock
// invariant is already broken.
type LockShortError struct {
	WalletID uuid.UUID
	Amount   models.Amount // what the release would have taken
}

func (e *LockShortError) Error() string {
	return fmt.Sprintf("release lock: wallet %s holds less than %s locked", e.WalletID, e.Amount)
}

// ReleaseLocks gives locks back to their wallets' available balance
// without a posting (a disbursement that ends unpaid), with a
// payout_released line each: one update per wallet with the releases
// summed, in wallet id order (applyAll). The guard keeps a lock from going
// negative: if one would, it returns *LockShortError (the wallets before
// it are changed; the caller's transaction rolls back).
func ReleaseLocks(tx *gorm.DB, releases []Release, now time.Time) error {
	changes := map[uuid.UUID]*walletChange{}
	for _, r := range releases {
		c := changes[r.WalletID]
		if c == nil {
			c = &walletChange{}
			changes[r.WalletID] = c
		}
		var err error
		if c.Release, err = c.Release.Add(r.Amount); err != nil {
			return fmt.Errorf("release of wallet %s: %w", r.WalletID, err)
		}
		addRelease(c, r)
	}
	for id, c := range changes {
		if err := check(c, id); err != nil {
			return err
		}
	}
	err := applyAll(tx, changes, now, nil, nil)
	var short *lockShortOf
	if errors.As(err, &short) {
		return &LockShortError{WalletID: short.walletID, Amount: changes[short.walletID].Release}
	}
	return err
}

// inIDOrder returns the wallet ids of m in the order every writer updates
// wallets in.
func inIDOrder[V any](m map[uuid.UUID]V) []uuid.UUID {
	ids := make([]uuid.UUID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return strings.Compare(a.String(), b.String()) })
	return ids
}
