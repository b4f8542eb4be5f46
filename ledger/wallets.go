// The money SQL. This file is the only place in the repository with SQL
// that writes wallets.balance or wallets.locked, or inserts into
// ledger_transactions or ledger_entries (TestMoneySQLStaysInWalletsGo
// fails otherwise). Whoever moves money calls these functions, or, for a
// statement that must stay one round trip, composes the fragments below.
// Every statement here keeps these invariants:
//
//   - A wallet's balance changes only together with its ledger entries, in
//     the same database transaction (PostAll: the postings' inserts, then
//     apply; on PostgreSQL one statement, applyAllSQL).
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
//   - Every change of balance or locked writes the wallet's statement
//     lines in the same statement or transaction: the row update advances
//     wallets.statement_seq by the number of lines and returns the row as
//     it left it, from which each line's balance and lock after it follow
//     (statementRows; on PostgreSQL in SQL: applyAllSQL, LockLinesSQL). The last
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

	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/models"
)

// postingRows are postings to write as ledger transactions ids (in the
// order of ps), with their entries, in the transaction that applies them
// to the wallets (PostAll, applyAll).
type postingRows struct {
	ids []uuid.UUID
	ps  []Posting
}

// insert writes the postings at now, with one insert of the transactions
// and one of their entries.
func (r postingRows) insert(tx *gorm.DB, now time.Time) error {
	if len(r.ps) == 0 {
		return nil
	}
	txns := make([]models.LedgerTransaction, len(r.ps))
	var entries []models.LedgerEntry
	for i, p := range r.ps {
		txns[i] = models.LedgerTransaction{ID: r.ids[i], Kind: p.Kind, Memo: p.Memo, Reference: p.Reference, CreatedAt: now}
		for _, e := range p.Entries {
			entries = append(entries, models.LedgerEntry{TransactionID: r.ids[i], Account: e.Account, Amount: e.Amount, CreatedAt: now})
		}
	}
	if err := tx.Create(&txns).Error; err != nil {
		return err
	}
	return tx.Create(&entries).Error
}

// args are applyAllSQL's $16 to $22: the transactions' ids, kinds, memos
// and references, then the entries' transaction ids, accounts and
// amounts, in order.
func (r postingRows) args() []any {
	ids, kinds, memos, references := make([][16]byte, len(r.ps)), make([]string, len(r.ps)), make([]string, len(r.ps)), make([]string, len(r.ps))
	var txns [][16]byte
	var accounts []string
	var amounts []int64
	for i, p := range r.ps {
		ids[i], kinds[i], memos[i], references[i] = r.ids[i], p.Kind, p.Memo, p.Reference
		for _, e := range p.Entries {
			txns, accounts, amounts = append(txns, r.ids[i]), append(accounts, e.Account), append(amounts, int64(e.Amount))
		}
	}
	return []any{ids, kinds, memos, references, txns, accounts, amounts}
}

// applyAll writes postings and applies each wallet's change in wallet id
// order with its statement lines: on PostgreSQL in one statement for all
// of them (applyAllSQL), so that the wallets' rows are locked for one
// round trip only and the whole of a move's money costs one; elsewhere
// with the postings' inserts, apply's update per wallet, then the lines.
// Should a wallet's guard refuse its change, the error is apply's for the
// first such wallet, and the caller's transaction rolls back (with the
// postings the statement wrote).
func applyAll(tx *gorm.DB, changes map[uuid.UUID]*walletChange, now time.Time, postings postingRows) error {
	order := inIDOrder(changes)
	for _, id := range order {
		if err := changes[id].checkLines(id); err != nil {
			return err
		}
	}
	afters := make(map[uuid.UUID]walletAfter, len(order))
	if database.DialectOfDB(tx) != database.Postgres {
		if err := postings.insert(tx, now); err != nil {
			return err
		}
		for _, id := range order {
			after, err := changes[id].apply(tx, id, now)
			if err != nil {
				return err
			}
			afters[id] = after
		}
		return writeStatement(tx, order, changes, afters)
	}
	// The statement runs on the transaction's connection but outside
	// gorm, so its errors are translated here as gorm does for its own: a
	// connection that broke under it is the database being unavailable
	// (503), not an unknown failure (500).
	rows, err := database.QueryDirect(tx.Statement.Context, tx, applyAllSQL, append(applyAllArgs(order, changes, now), postings.args()...)...)
	if err != nil {
		return models.TranslateDBError(tx, err)
	}
	defer rows.Close()
	for rows.Next() {
		var a walletAfter
		if err := rows.Scan(&a.ID, &a.Balance, &a.Locked, &a.StatementSeq, &a.UpdatedAt); err != nil {
			return models.TranslateDBError(tx, err)
		}
		afters[a.ID] = a
	}
	if err := rows.Err(); err != nil {
		return models.TranslateDBError(tx, err)
	}
	for _, id := range order {
		if _, ok := afters[id]; !ok {
			// Nothing of it changed: apply's update refuses it again and
			// says why.
			if _, err := changes[id].apply(tx, id, now); err != nil {
				return err
			}
			return fmt.Errorf("ledger: wallet %s refused a change, then took it", id)
		}
	}
	return nil
}

// applyAllSQL is applyAll's one statement. $1 the wallet ids in id order,
// $2, $3 and $7 each one's balance change, release and number of
// statement lines, $4 the time, $5 and $6 the balance bounds; the wallets'
// rows are locked in id order first (the ordered subquery), as a loop of
// updates would take them. $8 to $15 are the statement lines, one element
// each, in order within each wallet: wallet, kind, balance and lock
// change, disbursement, payment, ledger transaction (text, NULL for none)
// and memo. Each line is numbered up to the wallet's new statement_seq and
// its balance and lock after it are the wallet's new ones less the changes
// of the lines after it. $16 to $22 are the postings (postingRows.args),
// inserted at $4 by the same statement, the entries in their order, and
// before the first wallet row is locked: the ordered lock's condition on
// their counts is a one-time filter, run before its scan, so a busy
// wallet's row is held for its update, its lines and the commit only.
const applyAllSQL = `WITH txns AS (
	        INSERT INTO ledger_transactions (id, kind, memo, reference, created_at)
	        SELECT id, kind, memo, reference, $4 FROM unnest($16::uuid[], $17::text[], $18::text[], $19::text[]) AS t(id, kind, memo, reference)
	        RETURNING 1
	    ), entries AS (
	        INSERT INTO ledger_entries (transaction_id, account, amount, created_at)
	        SELECT transaction_id, account, amount, $4
	        FROM unnest($20::uuid[], $21::text[], $22::bigint[]) WITH ORDINALITY AS e(transaction_id, account, amount, ord)
	        ORDER BY ord
	        RETURNING 1
	    ), c AS (
	        SELECT * FROM unnest($1::uuid[], $2::bigint[], $3::bigint[], $7::bigint[]) AS c(id, change, release, lines)
	    ), updated AS (
	        UPDATE wallets w
	        SET balance = w.balance + c.change, locked = w.locked - c.release,
	            statement_seq = w.statement_seq + c.lines, updated_at = GREATEST(w.updated_at, $4)
	        FROM c
	        WHERE w.id = c.id
	            AND w.id IN (SELECT id FROM wallets WHERE id = ANY($1::uuid[])
	                AND (SELECT count(*) FROM txns) + (SELECT count(*) FROM entries) >= 0 ORDER BY id FOR NO KEY UPDATE)
	            AND w.locked >= c.release AND w.balance + c.change BETWEEN $5 AND $6
	        RETURNING w.id, w.balance, w.locked, w.statement_seq, w.updated_at
	    ), l AS (
	        SELECT * FROM unnest($8::uuid[], $9::text[], $10::bigint[], $11::bigint[], $12::text[], $13::text[], $14::text[], $15::text[])
	            WITH ORDINALITY AS l(wallet_id, kind, balance_change, locked_change, disbursement_id, payment_id, txn_id, memo, ord)
	    ), lines AS (
	        INSERT INTO wallet_statement (wallet_id, seq, kind, balance_change, locked_change, balance_after, locked_after,
	            disbursement_id, payment_id, ledger_transaction_id, memo, created_at)
	        SELECT l.wallet_id, u.statement_seq - count(*) OVER mine + row_number() OVER (mine ORDER BY l.ord), l.kind,
	            l.balance_change, l.locked_change,
	            u.balance - COALESCE(sum(l.balance_change) OVER later, 0), u.locked - COALESCE(sum(l.locked_change) OVER later, 0),
	            l.disbursement_id::uuid, l.payment_id::uuid, l.txn_id::uuid, l.memo, u.updated_at
	        FROM l JOIN updated u ON u.id = l.wallet_id
	        WINDOW mine AS (PARTITION BY l.wallet_id),
	            later AS (PARTITION BY l.wallet_id ORDER BY l.ord DESC ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
	    )
	    SELECT id, balance, locked, statement_seq, updated_at FROM updated`

// applyAllArgs are applyAllSQL's arguments, as native arrays (the
// statement runs on the transaction's connection, not through gorm, which
// would expand them into lists).
func applyAllArgs(order []uuid.UUID, changes map[uuid.UUID]*walletChange, now time.Time) []any {
	ids, balances, releases, counts := make([][16]byte, len(order)), make([]int64, len(order)), make([]int64, len(order)), make([]int64, len(order))
	var (
		wallets                 [][16]byte
		kinds, memos            []string
		lineBalances, lineLocks []int64
		disbursements, payments []*string
		txns                    []*string
	)
	text := func(id *uuid.UUID) *string {
		if id == nil {
			return nil
		}
		s := id.String()
		return &s
	}
	for i, id := range order {
		c := changes[id]
		ids[i], balances[i], releases[i], counts[i] = id, int64(c.balance), int64(c.release), int64(len(c.lines))
		for _, l := range c.lines {
			wallets = append(wallets, id)
			kinds, memos = append(kinds, string(l.kind)), append(memos, l.memo)
			lineBalances, lineLocks = append(lineBalances, int64(l.balance)), append(lineLocks, int64(l.locked))
			disbursements, payments, txns = append(disbursements, text(l.disbursementID)), append(payments, text(l.paymentID)), append(txns, text(l.txnID))
		}
	}
	return []any{ids, balances, releases, now, int64(-models.MaxBalance), int64(models.MaxBalance), counts,
		wallets, kinds, lineBalances, lineLocks, disbursements, payments, txns, memos}
}

// walletAfter is a wallet's row as a money update left it: what its
// statement lines are numbered and balanced from.
type walletAfter struct {
	ID           uuid.UUID
	Balance      models.Amount
	Locked       models.Amount
	StatementSeq int64
	UpdatedAt    time.Time
}

// statementRows are the statement lines of change c of wallet id, whose
// row the change left as after: numbered up to after's statement_seq, each
// with the balance and lock after it, worked back from after (applyAllSQL
// does the same in SQL).
func statementRows(id uuid.UUID, c *walletChange, after walletAfter) ([]models.StatementLine, error) {
	n := len(c.lines)
	rows := make([]models.StatementLine, n)
	balance, locked := after.Balance, after.Locked
	for i := n - 1; i >= 0; i-- {
		l := c.lines[i]
		rows[i] = models.StatementLine{WalletID: id, Seq: after.StatementSeq - int64(n-1-i), Kind: l.kind,
			BalanceChange: l.balance, LockedChange: l.locked, BalanceAfter: balance, LockedAfter: locked,
			DisbursementID: l.disbursementID, PaymentID: l.paymentID, LedgerTransactionID: l.txnID, Memo: l.memo,
			CreatedAt: after.UpdatedAt}
		balance, locked = balance-l.balance, locked-l.locked
	}
	return rows, nil
}

// checkLines refuses a change whose statement lines do not add up to it
// (a defect: the statement would no longer follow the wallet).
func (c *walletChange) checkLines(id uuid.UUID) error {
	var balanceSum, lockedSum models.Amount
	for _, l := range c.lines {
		balanceSum, lockedSum = balanceSum+l.balance, lockedSum+l.locked
	}
	if balanceSum != c.balance || lockedSum != c.lock-c.release {
		return fmt.Errorf("ledger: wallet %s: statement lines of %s/%s for a change of %s/%s", id,
			balanceSum, lockedSum, c.balance, c.lock-c.release)
	}
	return nil
}

// writeStatement inserts the statement lines of the wallets' changes, in
// one insert (or a few, for a very large change).
func writeStatement(tx *gorm.DB, order []uuid.UUID, changes map[uuid.UUID]*walletChange, afters map[uuid.UUID]walletAfter) error {
	var rows []models.StatementLine
	for _, id := range order {
		r, err := statementRows(id, changes[id], afters[id])
		if err != nil {
			return err
		}
		rows = append(rows, r...)
	}
	if len(rows) == 0 {
		return nil
	}
	return tx.CreateInBatches(&rows, 2000).Error
}

// touchedAt is the new updated_at of a money update with the time as its
// placeholder: on PostgreSQL never earlier than the row's, so that a
// wallet's statement lines, which take it as their time, are in time
// order whichever process's clock wrote them. (SQLite serves one process.)
func touchedAt(tx *gorm.DB) string {
	if database.DialectOfDB(tx) == database.Postgres {
		return "GREATEST(updated_at, ?)"
	}
	return "?"
}

// lockShortOf is apply's refusal of a release larger than the wallet's
// lock.
type lockShortOf struct {
	walletID uuid.UUID
	msg      string
}

func (e *lockShortOf) Error() string { return e.msg }

// apply changes the wallet's balance (and lock) in one guarded update and
// returns the row as it left it: the new balance must stay within
// ±MaxBalance and the lock cover the release, else nothing changes and the
// error says which. It advances statement_seq by the change's lines; the
// caller writes them (writeStatement).
func (c walletChange) apply(tx *gorm.DB, id uuid.UUID, now time.Time) (walletAfter, error) {
	lo, hi := int64(-models.MaxBalance), int64(models.MaxBalance)
	var rows []walletAfter
	err := tx.Raw(`UPDATE wallets SET balance = balance + ?, locked = locked - ? + ?, statement_seq = statement_seq + ?, updated_at = `+touchedAt(tx)+`
			WHERE id = ? AND locked >= ? AND balance + ? BETWEEN ? AND ?
			RETURNING id, balance, locked, statement_seq, updated_at`,
		int64(c.balance), int64(c.release), int64(c.lock), len(c.lines), now, id, int64(c.release), int64(c.balance), lo, hi).
		Scan(&rows).Error
	if err != nil {
		return walletAfter{}, err
	}
	if len(rows) == 1 {
		return rows[0], nil
	}
	var w models.Wallet
	if err := tx.Select("balance", "locked").Where("id = ?", id).Take(&w).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return walletAfter{}, models.ErrWalletNotFound
		}
		return walletAfter{}, err
	}
	if w.Locked < c.release {
		return walletAfter{}, &lockShortOf{walletID: id, msg: fmt.Sprintf("release lock: wallet %s holds %s locked, less than %s", id, w.Locked, c.release)}
	}
	return walletAfter{}, fmt.Errorf("%w: wallet %s holds %s, a change of %s would make it %s",
		models.ErrBalanceLimit, id, w.Balance.Fixed4(), c.balance.Fixed4(), (w.Balance + c.balance).Fixed4())
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
// a create is one statement: LockFundsSQL, LockFundsEachSQL.)
func LockFunds(tx *gorm.DB, walletID uuid.UUID, locks []Lock, now time.Time) (bool, error) {
	c := &walletChange{}
	for _, l := range locks {
		id := l.DisbursementID
		c.lock += l.Amount
		c.lines = append(c.lines, line{kind: models.StatementPayoutLocked, locked: l.Amount, disbursementID: &id})
	}
	var rows []walletAfter
	err := tx.Raw(`UPDATE wallets SET locked = locked + ?, statement_seq = statement_seq + ?, updated_at = `+touchedAt(tx)+`
		        WHERE id = ? AND state = ? AND balance - locked >= ?
		        RETURNING id, balance, locked, statement_seq, updated_at`,
		int64(c.lock), len(c.lines), now, walletID, models.WalletActive, int64(c.lock)).Scan(&rows).Error
	if err != nil || len(rows) != 1 {
		return false, err
	}
	return true, writeStatement(tx, []uuid.UUID{walletID}, map[uuid.UUID]*walletChange{walletID: c},
		map[uuid.UUID]walletAfter{walletID: rows[0]})
}

// LockFundsSQL is LockFunds for one disbursement as the body of a
// data-modifying CTE for PostgreSQL, for a statement that also inserts the
// disbursement, in one round trip. The arguments are the statement's
// placeholders for the gross, the time, the wallet id and
// models.WalletActive, and the expression it returns as id when the lock is
// taken (the disbursement's id); no row otherwise. It returns the wallet's
// row as it left it too, for LockLinesSQL.
func LockFundsSQL(amount, now, wallet, active, returning string) string {
	return `UPDATE wallets SET locked = locked + ` + amount + `, statement_seq = statement_seq + 1,
	            updated_at = GREATEST(updated_at, ` + now + `)
	        WHERE id = ` + wallet + ` AND state = ` + active + ` AND balance - locked >= ` + amount + `
	        RETURNING ` + returning + ` AS id, id AS wallet_id, balance, locked, statement_seq, updated_at`
}

// LockLinesSQL is the payout_locked statement lines of the locks a
// statement took, as a data-modifying CTE body: locks names a relation
// with one row per disbursement locked, with columns id (the
// disbursement), wallet_id, amount (its gross), and the wallet's row as
// the lock left it: balance, locked, statement_seq, updated_at, plus
// before (its lock before the statement) and n (how many of the
// statement's locks it took). Each wallet's lines follow the order of the
// disbursements' ids, numbered up to its statement_seq.
func LockLinesSQL(locks string) string {
	return `INSERT INTO wallet_statement (wallet_id, seq, kind, balance_change, locked_change, balance_after, locked_after,
	            disbursement_id, payment_id, ledger_transaction_id, memo, created_at)
	        SELECT wallet_id, statement_seq - n + row_number() OVER w, '` + string(models.StatementPayoutLocked) + `', 0, amount,
	            balance, before + sum(amount) OVER w, id, NULL, NULL, '', updated_at
	        FROM ` + locks + `
	        WINDOW w AS (PARTITION BY wallet_id ORDER BY id ROWS UNBOUNDED PRECEDING)`
}

// LockFundsEachSQL is LockFunds for many disbursements in one PostgreSQL
// statement: the text of four CTEs, per_wallet, in_order, locked_wallets,
// locked and lock_lines, to follow the statement's WITH input AS (…),
// where input (a relation with columns id, wallet_id, amount and
// created_at) holds one row per disbursement. per_wallet sums the grosses
// of each wallet's disbursements; in_order takes the wallets' row locks in
// id order (walletIDs is the placeholder of the uuid[] of their ids);
// locked_wallets then locks each wallet's sum in one update, with
// LockFunds' condition on the sum (active is the placeholder of
// models.WalletActive); locked is the input ids of the wallets whose lock
// was taken, and lock_lines their statement lines (LockLinesSQL).
//
// A wallet whose available balance covers the sum takes all of its
// disbursements with one row update: a busy wallet's creates then cost
// its row one lock for many. A wallet that cannot cover the sum takes
// none of them; the caller may offer them again one by one, since some
// may fit.
func LockFundsEachSQL(input, walletIDs, active string) string {
	return `per_wallet AS (
	        SELECT wallet_id, sum(amount)::bigint AS amount, count(*) AS n, max(created_at) AS created_at FROM ` + input + ` GROUP BY wallet_id
	    ), in_order AS (
	        SELECT id FROM wallets WHERE id = ANY(` + walletIDs + `::uuid[]) ORDER BY id FOR NO KEY UPDATE
	    ), locked_wallets AS (
	        UPDATE wallets w SET locked = w.locked + p.amount, statement_seq = w.statement_seq + p.n,
	            updated_at = GREATEST(w.updated_at, p.created_at)
	        FROM per_wallet p
	        WHERE w.id = p.wallet_id AND w.id IN (SELECT id FROM in_order)
	            AND w.state = ` + active + ` AND w.balance - w.locked >= p.amount
	        RETURNING w.id, w.balance, w.locked, w.locked - p.amount AS before, p.n, w.statement_seq, w.updated_at
	    ), locked AS (
	        SELECT i.id FROM ` + input + ` i JOIN locked_wallets lw ON lw.id = i.wallet_id
	    ), lock_lines AS (
	        ` + LockLinesSQL(`(SELECT i.id, i.wallet_id, i.amount, lw.balance, lw.before, lw.n, lw.statement_seq, lw.updated_at
	            FROM `+input+` i JOIN locked_wallets lw ON lw.id = i.wallet_id) AS l`) + `
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
		if c.release, err = c.release.Add(r.Amount); err != nil {
			return fmt.Errorf("release of wallet %s: %w", r.WalletID, err)
		}
		c.addRelease(r)
	}
	for id, c := range changes {
		if err := c.check(id); err != nil {
			return err
		}
	}
	err := applyAll(tx, changes, now, postingRows{})
	var short *lockShortOf
	if errors.As(err, &short) {
		return &LockShortError{WalletID: short.walletID, Amount: changes[short.walletID].release}
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
