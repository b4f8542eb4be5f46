// The money SQL. This file is the only place in the repository with SQL
// that writes wallets.balance or wallets.locked, or inserts into
// ledger_transactions or ledger_entries (TestMoneySQLStaysInWalletsGo
// fails otherwise). Whoever moves money calls these functions, or, for a
// statement that must stay one round trip, composes the fragments below.
// Every statement here keeps these invariants:
//
//   - A wallet's balance changes only together with its ledger entries, in
//     the same database transaction (PostAll: insertPostings, then apply).
//     The entries of a posting sum to zero; a wallet's balance is the sum
//     of its "wallet:<id>" entries (Reconcile checks it).
//   - locked changes only when a disbursement is created (LockFunds and
//     its fragments: + gross) or leaves for a terminal status (Release in
//     PostAll when paid, ReleaseLocks otherwise: − gross). locked is the
//     sum of the gross of the wallet's open disbursements.
//   - available = balance − locked is never negative: a lock is a
//     conditional update (balance − locked >= gross), never
//     read-then-write, so concurrent creates cannot oversell; a release is
//     guarded (locked >= amount) so a lock never goes negative.
//   - balance stays within ±models.MaxBalance: apply's update is guarded
//     by the bound, and PostAll checks every sum before anything is
//     written.
//   - One statement or transaction that updates several wallets updates
//     them in wallet id order, so that concurrent writers (PostAll,
//     ReleaseLocks, the grouped create) take the row locks in one order
//     and do not deadlock.

package ledger

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/models"
)

// insertPostings writes postings ps as ledger transactions ids (in the
// order of ps) at now, with their entries: one insert of each, in tx, the
// transaction that also applies the entries to the wallets (PostAll).
func insertPostings(tx *gorm.DB, now time.Time, ids []uuid.UUID, ps []Posting) error {
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

// applyAll applies each wallet's change in wallet id order: on PostgreSQL
// with one statement for all of them (applyAllSQL), elsewhere, or for one
// wallet, with apply's update per wallet. Should a wallet's guard refuse
// its change, the error is apply's for the first such wallet, and the
// caller's transaction rolls back.
func applyAll(tx *gorm.DB, changes map[uuid.UUID]*walletChange, now time.Time) error {
	order := inIDOrder(changes)
	if len(order) == 1 || database.DialectOfDB(tx) != database.Postgres {
		for _, id := range order {
			if err := changes[id].apply(tx, id, now); err != nil {
				return err
			}
		}
		return nil
	}
	balances, releases := make(int64Array, len(order)), make(int64Array, len(order))
	for i, id := range order {
		balances[i], releases[i] = int64(changes[id].balance), int64(changes[id].release)
	}
	var updated []uuid.UUID
	err := tx.Raw(applyAllSQL, uuidArray(order), balances, releases, now, int64(-models.MaxBalance), int64(models.MaxBalance)).
		Scan(&updated).Error
	if err != nil {
		return err
	}
	if len(updated) == len(order) {
		return nil
	}
	for _, id := range order {
		if !slices.Contains(updated, id) {
			// Nothing of it changed: apply's update refuses it again and
			// says why.
			return changes[id].apply(tx, id, now)
		}
	}
	return fmt.Errorf("ledger: %d wallet changes, %d rows updated", len(order), len(updated))
}

// applyAllSQL is applyAll's one statement: $1 the wallet ids in id order,
// $2 and $3 each one's balance change and release, $4 the time, $5 and $6
// the balance bounds. The wallets' rows are locked in id order first (the
// ordered subquery), as a loop of updates would take them.
const applyAllSQL = `UPDATE wallets w
	    SET balance = w.balance + c.change, locked = w.locked - c.release, updated_at = $4
	    FROM unnest($1::uuid[], $2::bigint[], $3::bigint[]) AS c(id, change, release)
	    WHERE w.id = c.id
	        AND w.id IN (SELECT id FROM wallets WHERE id = ANY($1::uuid[]) ORDER BY id FOR NO KEY UPDATE)
	        AND w.locked >= c.release AND w.balance + c.change BETWEEN $5 AND $6
	    RETURNING w.id`

// uuidArray and int64Array are PostgreSQL array arguments: gorm would
// expand a plain slice into a list of placeholders.
type (
	uuidArray  []uuid.UUID
	int64Array []int64
)

func (a uuidArray) Value() (driver.Value, error) {
	parts := make([]string, len(a))
	for i, id := range a {
		parts[i] = id.String()
	}
	return "{" + strings.Join(parts, ",") + "}", nil
}

func (a int64Array) Value() (driver.Value, error) {
	parts := make([]string, len(a))
	for i, v := range a {
		parts[i] = strconv.FormatInt(v, 10)
	}
	return "{" + strings.Join(parts, ",") + "}", nil
}

// lockShortOf is apply's refusal of a release larger than the wallet's
// lock.
type lockShortOf struct {
	walletID uuid.UUID
	msg      string
}

func (e *lockShortOf) Error() string { return e.msg }

// apply changes the wallet's balance (and lock) in one guarded update:
// the new balance must stay within ±MaxBalance and the lock cover the
// release, else nothing changes and the error says which.
func (c walletChange) apply(tx *gorm.DB, id uuid.UUID, now time.Time) error {
	lo, hi := int64(-models.MaxBalance), int64(models.MaxBalance)
	var res *gorm.DB
	if c.release == 0 {
		res = tx.Exec(`UPDATE wallets SET balance = balance + ?, updated_at = ? WHERE id = ? AND balance + ? BETWEEN ? AND ?`,
			int64(c.balance), now, id, int64(c.balance), lo, hi)
	} else {
		res = tx.Exec(`UPDATE wallets SET balance = balance + ?, locked = locked - ?, updated_at = ?
			WHERE id = ? AND locked >= ? AND balance + ? BETWEEN ? AND ?`,
			int64(c.balance), int64(c.release), now, id, int64(c.release), int64(c.balance), lo, hi)
	}
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 1 {
		return nil
	}
	var w models.Wallet
	if err := tx.Select("balance", "locked").Where("id = ?", id).Take(&w).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return models.ErrWalletNotFound
		}
		return err
	}
	if w.Locked < c.release {
		return &lockShortOf{walletID: id, msg: fmt.Sprintf("release lock: wallet %s holds %s locked, less than %s", id, w.Locked, c.release)}
	}
	return fmt.Errorf("%w: wallet %s holds %s, a change of %s would make it %s",
		models.ErrBalanceLimit, id, w.Balance.Fixed4(), c.balance.Fixed4(), (w.Balance + c.balance).Fixed4())
}

// LockFunds locks amount (a disbursement's gross) on the active wallet
// walletID, in tx, with one conditional update: false, and nothing
// changed, when the wallet is not active or its available balance does not
// cover amount. The caller writes the disbursement in the same tx.
func LockFunds(tx *gorm.DB, walletID uuid.UUID, amount models.Amount, now time.Time) (bool, error) {
	res := tx.Exec(`UPDATE wallets SET locked = locked + ?, updated_at = ?
		        WHERE id = ? AND state = ? AND balance - locked >= ?`,
		int64(amount), now, walletID, models.WalletActive, int64(amount))
	if res.Error != nil {
		return false, res.Error
	}
	return res.RowsAffected == 1, nil
}

// LockFundsSQL is LockFunds as a data-modifying statement for PostgreSQL,
// to be the body of a CTE (WITH locked AS (…)) of a statement that also
// inserts the disbursement, in one round trip. The arguments are the
// statement's placeholders for the gross, the time, the wallet id and
// models.WalletActive, and the expression it returns as id when the lock is
// taken (the disbursement's id); no row otherwise.
func LockFundsSQL(amount, now, wallet, active, returning string) string {
	return `UPDATE wallets SET locked = locked + ` + amount + `, updated_at = ` + now + `
	        WHERE id = ` + wallet + ` AND state = ` + active + ` AND balance - locked >= ` + amount + `
	        RETURNING ` + returning + ` AS id`
}

// LockFundsEachSQL is LockFunds for many disbursements in one PostgreSQL
// statement: the text of three CTEs, per_wallet, in_order and locked, to
// follow the statement's WITH input AS (…), where input (a relation with
// columns id, wallet_id, amount and created_at) holds one row per
// disbursement. per_wallet sums the grosses of each wallet's
// disbursements; in_order takes the wallets' row locks in id order
// (walletIDs is the placeholder of the uuid[] of their ids); locked then
// locks each wallet's sum in one update, with LockFunds' condition on the
// sum (active is the placeholder of models.WalletActive), and returns the
// input ids of the wallets whose lock was taken.
//
// A wallet whose available balance covers the sum takes all of its
// disbursements with one row update: a busy wallet's creates then cost
// its row one lock for many. A wallet that cannot cover the sum takes
// none of them; the caller may offer them again one by one, since some
// may fit.
func LockFundsEachSQL(input, walletIDs, active string) string {
	return `per_wallet AS (
	        SELECT wallet_id, sum(amount)::bigint AS amount, max(created_at) AS created_at FROM ` + input + ` GROUP BY wallet_id
	    ), in_order AS (
	        SELECT id FROM wallets WHERE id = ANY(` + walletIDs + `::uuid[]) ORDER BY id FOR NO KEY UPDATE
	    ), locked_wallets AS (
	        UPDATE wallets w SET locked = w.locked + p.amount, updated_at = p.created_at
	        FROM per_wallet p
	        WHERE w.id = p.wallet_id AND w.id IN (SELECT id FROM in_order)
	            AND w.state = ` + active + ` AND w.balance - w.locked >= p.amount
	        RETURNING w.id
	    ), locked AS (
	        SELECT i.id FROM ` + input + ` i JOIN locked_wallets lw ON lw.id = i.wallet_id
	    )`
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
// without a posting (a disbursement that ends unpaid): one update per
// wallet with the releases summed, in wallet id order. The guard keeps a
// lock from going negative: if one would, it returns *LockShortError (the
// wallets before it are changed; the caller's transaction rolls back).
func ReleaseLocks(tx *gorm.DB, releases []Release, now time.Time) error {
	byWallet := map[uuid.UUID]models.Amount{}
	for _, r := range releases {
		byWallet[r.WalletID] += r.Amount
	}
	if len(byWallet) > 1 && database.DialectOfDB(tx) == database.Postgres {
		changes := make(map[uuid.UUID]*walletChange, len(byWallet))
		for id, amount := range byWallet {
			changes[id] = &walletChange{release: amount}
		}
		err := applyAll(tx, changes, now)
		var short *lockShortOf
		if errors.As(err, &short) {
			return &LockShortError{WalletID: short.walletID, Amount: byWallet[short.walletID]}
		}
		return err
	}
	for _, id := range inIDOrder(byWallet) {
		amount := byWallet[id]
		res := tx.Exec(`UPDATE wallets SET locked = locked - ?, updated_at = ? WHERE id = ? AND locked >= ?`,
			int64(amount), now, id, int64(amount))
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return &LockShortError{WalletID: id, Amount: amount}
		}
	}
	return nil
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
