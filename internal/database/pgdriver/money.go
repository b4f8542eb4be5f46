package pgdriver

import (
	"context"
	"slices"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/models"
)

// The money statements of PostgreSQL (models.MoneyDriver), under the
// invariants written at the top of ledger/wallets.go. With the SQLite
// driver's money.go these are the only statements of the repository that
// write wallets.balance or wallets.locked, or insert into
// ledger_transactions, ledger_entries or wallet_statement
// (TestMoneySQLStaysInMoneyFiles).

// OpenDisbursements writes a group in one statement, openManySQL, or
// openOneSQL for a lone create, as its own transaction (db is not one):
// one round trip and one commit, the wallet rows locked in id order, each
// once, and held only while it runs. It goes to the connection directly
// because gorm would expand the array arguments into lists, and through
// QueryDirect so that a slow or failed create is logged as every other
// money statement is.
func (Driver) OpenDisbursements(ctx context.Context, db *gorm.DB, ds []*models.Disbursement) (map[uuid.UUID]bool, error) {
	query, args := openManySQL, openManyArgs(ds)
	if len(ds) == 1 {
		query, args = openOneSQL, openOneArgs(ds[0])
	}
	rows, err := QueryDirect(ctx, db.WithContext(ctx), query, args...)
	if err != nil {
		return nil, translate(db, err)
	}
	defer rows.Close()
	opened := make(map[uuid.UUID]bool, len(ds))
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			return nil, translate(db, err)
		}
		opened[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, translate(db, err)
	}
	return opened, nil
}

// openRowsSQL is the end both PostgreSQL statements share, after their
// CTEs input (the disbursements, one row each) and locked (the ids of those
// whose lock was taken): the rows whose lock was taken and their audit
// lines. It is the one INSERT INTO disbursements of the repository.
const openRowsSQL = `created AS (
	        INSERT INTO disbursements (id, client_id, wallet_id, idempotency_key, status, amount, platform_fee, net_amount,
	            currency, transfer_type, bank_code, bank_name, account_no, account_holder_name, memo, reference_id,
	            vendor, vendor_reference, lock_expires_at, submit_attempts, submit_attempted_at, checks, next_check_at, created_at, updated_at,
	            request_signature, supplied_holder_name)
	        SELECT i.id, i.client_id, i.wallet_id, i.idempotency_key, i.status, i.amount, i.platform_fee, i.net_amount,
	            i.currency, i.transfer_type, i.bank_code, i.bank_name, i.account_no, i.account_holder_name, i.memo,
	            i.reference_id, i.vendor, i.vendor_reference, i.lock_expires_at, i.submit_attempts, i.submit_attempted_at, 0, i.next_check_at, i.created_at, i.created_at,
	            i.request_signature, i.supplied_holder_name
	        FROM input i JOIN locked l ON l.id = i.id
	        RETURNING id, status, created_at
	    ), audited AS (
	        INSERT INTO disbursement_transitions (disbursement_id, from_status, to_status, reason, created_at)
	        SELECT id, '', status, 'created', created_at FROM created
	    )
	    SELECT id FROM created`

// openColumns names input's columns, in the order of the arguments
// $1..$25 (openManyArgs, openOneArgs); $26 is models.WalletActive. A
// create submitted by the process that made it is stored with its first
// submit attempt already claimed (submit_attempts 1, submit_attempted_at).
const openColumns = `id, client_id, wallet_id, idempotency_key, status, amount, platform_fee, net_amount, currency,
	            transfer_type, bank_code, bank_name, account_no, account_holder_name, memo, reference_id, vendor,
	            vendor_reference, lock_expires_at, submit_attempts, submit_attempted_at, next_check_at, created_at, request_signature,
	            supplied_holder_name`

// openManySQL writes a group: the disbursements as input by unnest of
// $1..$25 (one array per column), the locks of each wallet's summed gross
// in wallet id order with their statement lines (lockFundsEachSQL: $3 the
// wallet ids), then openRowsSQL.
var openManySQL = `WITH input AS (
	        SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::bigint[], $7::bigint[],
	            $8::bigint[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[],
	            $16::text[], $17::text[], $18::text[], $19::timestamptz[], $20::bigint[], $21::timestamptz[],
	            $22::timestamptz[], $23::timestamptz[], $24::text[], $25::text[])
	        AS t(` + openColumns + `)
	    ), ` + lockFundsEachSQL("input", "$3", "$26") + `, ` + openRowsSQL

// openOneSQL writes a lone create: the same statement with one row of
// scalars as input and LockFunds' plain conditional update as the lock,
// with its statement line.
// The ordered, summed lock of a group holds the wallet's row about half
// as long again, which a lone create need not pay.
var openOneSQL = `WITH input(` + openColumns + `) AS (
	        SELECT $1::uuid, $2::uuid, $3::uuid, $4::text, $5::text, $6::bigint, $7::bigint, $8::bigint, $9::text,
	            $10::text, $11::text, $12::text, $13::text, $14::text, $15::text, $16::text, $17::text, $18::text,
	            $19::timestamptz, $20::bigint, $21::timestamptz, $22::timestamptz, $23::timestamptz, $24::text, $25::text
	    ), locked AS (
	        ` + lockFundsSQL("$6", "$23", "$3", "$26", "$1::uuid") + `
	    ), lock_lines AS (
	        ` + lockOneLine + `
	    ), ` + openRowsSQL

// lockOneLine is the lone create's payout_locked line (lockLinesSQL).
var lockOneLine = lockLinesSQL(`(SELECT l.id, l.wallet_id, $6::bigint AS amount, l.balance, l.locked - $6::bigint AS before,
	            1::bigint AS n, l.statement_seq, l.updated_at FROM locked l) AS l`)

// openManyArgs are openManySQL's arguments: one array per column, in the
// order of its unnest, and models.WalletActive.
func openManyArgs(ds []*models.Disbursement) []any {
	n := len(ds)
	var (
		ids, clients, wallets                                  = make([][16]byte, n), make([][16]byte, n), make([][16]byte, n)
		keys, statuses, transferTypes, bankCodes, bankNames    = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		accounts, holders, vendorNames, vendorRefs, currencies = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		memos, references                                      = make([]*string, n), make([]*string, n)
		amounts, fees, nets                                    = make([]int64, n), make([]int64, n), make([]int64, n)
		lockExpiries, nextChecks, createdAt                    = make([]time.Time, n), make([]*time.Time, n), make([]time.Time, n)
		attempts, attemptedAt                                  = make([]int64, n), make([]*time.Time, n)
		signatures, supplied                                   = make([]*string, n), make([]string, n)
	)
	for i, d := range ds {
		ids[i], clients[i], wallets[i] = d.ID, d.ClientID, d.WalletID
		keys[i], statuses[i], transferTypes[i] = d.IdempotencyKey, string(d.Status), string(d.TransferType)
		bankCodes[i], bankNames[i], accounts[i], holders[i] = d.BankCode, d.BankName, d.AccountNo, d.AccountHolderName
		vendorNames[i], vendorRefs[i], currencies[i] = d.Vendor, d.VendorReference, d.Currency
		memos[i], references[i] = d.Memo, d.ReferenceID
		amounts[i], fees[i], nets[i] = int64(d.Amount), int64(d.PlatformFee), int64(d.NetAmount)
		lockExpiries[i], nextChecks[i], createdAt[i] = d.LockExpiresAt, d.NextCheckAt, d.CreatedAt
		attempts[i], attemptedAt[i] = int64(d.SubmitAttempts), d.SubmitAttemptedAt
		signatures[i], supplied[i] = d.RequestSignature, d.SuppliedHolderName
	}
	return []any{ids, clients, wallets, keys, statuses, amounts, fees, nets, currencies, transferTypes, bankCodes, bankNames,
		accounts, holders, memos, references, vendorNames, vendorRefs, lockExpiries, attempts, attemptedAt, nextChecks, createdAt,
		signatures, supplied, string(models.WalletActive)}
}

// openOneArgs are openOneSQL's arguments: d's columns as scalars, in the
// order of openColumns, and models.WalletActive.
func openOneArgs(d *models.Disbursement) []any {
	return []any{d.ID, d.ClientID, d.WalletID, d.IdempotencyKey, string(d.Status), int64(d.Amount), int64(d.PlatformFee),
		int64(d.NetAmount), d.Currency, string(d.TransferType), d.BankCode, d.BankName, d.AccountNo, d.AccountHolderName,
		d.Memo, d.ReferenceID, d.Vendor, d.VendorReference, d.LockExpiresAt, int64(d.SubmitAttempts), d.SubmitAttemptedAt,
		d.NextCheckAt, d.CreatedAt, d.RequestSignature, d.SuppliedHolderName, string(models.WalletActive)}
}

// lockFundsSQL is the driver's LockFunds for one disbursement as the body of a
// data-modifying CTE for PostgreSQL, for a statement that also inserts the
// disbursement, in one round trip. The arguments are the statement's
// placeholders for the gross, the time, the wallet id and
// models.WalletActive, and the expression it returns as id when the lock is
// taken (the disbursement's id); no row otherwise. It returns the wallet's
// row as it left it too, for lockLinesSQL.
func lockFundsSQL(amount, now, wallet, active, returning string) string {
	return `UPDATE wallets SET locked = locked + ` + amount + `, statement_seq = statement_seq + 1,
	            updated_at = GREATEST(updated_at, ` + now + `)
	        WHERE id = ` + wallet + ` AND state = ` + active + ` AND balance - locked >= ` + amount + `
	        RETURNING ` + returning + ` AS id, id AS wallet_id, balance, locked, statement_seq, updated_at`
}

// lockLinesSQL is the payout_locked statement lines of the locks a
// statement took, as a data-modifying CTE body: locks names a relation
// with one row per disbursement locked, with columns id (the
// disbursement), wallet_id, amount (its gross), and the wallet's row as
// the lock left it: balance, locked, statement_seq, updated_at, plus
// before (its lock before the statement) and n (how many of the
// statement's locks it took). Each wallet's lines follow the order of the
// disbursements' ids, numbered up to its statement_seq.
func lockLinesSQL(locks string) string {
	return `INSERT INTO wallet_statement (wallet_id, seq, kind, balance_change, locked_change, balance_after, locked_after,
	            disbursement_id, payment_id, ledger_transaction_id, memo, created_at)
	        SELECT wallet_id, statement_seq - n + row_number() OVER w, '` + string(models.StatementPayoutLocked) + `', 0, amount,
	            balance, before + sum(amount) OVER w, id, NULL, NULL, '', updated_at
	        FROM ` + locks + `
	        WINDOW w AS (PARTITION BY wallet_id ORDER BY id ROWS UNBOUNDED PRECEDING)`
}

// lockFundsEachSQL is the driver's LockFunds for many disbursements in one PostgreSQL
// statement: the text of four CTEs, per_wallet, in_order, locked_wallets,
// locked and lock_lines, to follow the statement's WITH input AS (…),
// where input (a relation with columns id, wallet_id, amount and
// created_at) holds one row per disbursement. per_wallet sums the grosses
// of each wallet's disbursements; in_order takes the wallets' row locks in
// id order (walletIDs is the placeholder of the uuid[] of their ids);
// locked_wallets then locks each wallet's sum in one update, with
// LockFunds' condition on the sum (active is the placeholder of
// models.WalletActive); locked is the input ids of the wallets whose lock
// was taken, and lock_lines their statement lines (lockLinesSQL).
//
// A wallet whose available balance covers the sum takes all of its
// disbursements with one row update: a busy wallet's creates then cost
// its row one lock for many. A wallet that cannot cover the sum takes
// none of them; the caller may offer them again one by one, since some
// may fit.
func lockFundsEachSQL(input, walletIDs, active string) string {
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
	        ` + lockLinesSQL(`(SELECT i.id, i.wallet_id, i.amount, lw.balance, lw.before, lw.n, lw.statement_seq, lw.updated_at
	            FROM `+input+` i JOIN locked_wallets lw ON lw.id = i.wallet_id) AS l`) + `
	    )`
}

// LockFunds locks change.Lock on the active wallet with one conditional
// update, its updated_at never earlier than the row's (so that a wallet's
// statement lines, which take it as their time, are in time order
// whichever process's clock wrote them), then writes change.Lines.
func (Driver) LockFunds(tx *gorm.DB, walletID uuid.UUID, c *models.WalletChange, now time.Time) (bool, error) {
	var rows []models.WalletAfter
	err := tx.Raw(`UPDATE wallets SET locked = locked + ?, statement_seq = statement_seq + ?, updated_at = GREATEST(updated_at, ?)
		        WHERE id = ? AND state = ? AND balance - locked >= ?
		        RETURNING id, balance, locked, statement_seq, updated_at`,
		int64(c.Lock), len(c.Lines), now, walletID, models.WalletActive, int64(c.Lock)).Scan(&rows).Error
	if err != nil || len(rows) != 1 {
		return false, err
	}
	return true, writeLines(tx, c.StatementLines(walletID, rows[0]))
}

// writeLines inserts statement lines in one insert (or a few, for a very
// large change).
func writeLines(tx *gorm.DB, lines []models.StatementLine) error {
	if len(lines) == 0 {
		return nil
	}
	return tx.CreateInBatches(&lines, 2000).Error
}

// UpdateWallet is one wallet's guarded money update, updated_at as in
// LockFunds.
func (Driver) UpdateWallet(tx *gorm.DB, id uuid.UUID, c *models.WalletChange, now time.Time) (models.WalletAfter, bool, error) {
	lo, hi := int64(-models.MaxBalance), int64(models.MaxBalance)
	var rows []models.WalletAfter
	err := tx.Raw(`UPDATE wallets SET balance = balance + ?, locked = locked - ? + ?, statement_seq = statement_seq + ?, updated_at = GREATEST(updated_at, ?)
			WHERE id = ? AND locked >= ? AND balance + ? BETWEEN ? AND ?
			RETURNING id, balance, locked, statement_seq, updated_at`,
		int64(c.Balance), int64(c.Release), int64(c.Lock), len(c.Lines), now, id, int64(c.Release), int64(c.Balance), lo, hi).
		Scan(&rows).Error
	if err != nil || len(rows) != 1 {
		return models.WalletAfter{}, false, err
	}
	return rows[0], true, nil
}

// ApplyWalletChanges is one statement for every wallet and posting
// (applyAllSQL), so that the wallets' rows are locked for one round trip
// only and the whole of a move's money costs one. It runs on the
// transaction's connection but outside gorm, so its errors are translated
// here as gorm does for its own: a connection that broke under it is the
// database being unavailable (503), not an unknown failure (500).
func (Driver) ApplyWalletChanges(tx *gorm.DB, order []uuid.UUID, changes []*models.WalletChange, ids []uuid.UUID,
	ps []models.Posting, now time.Time) (uuid.UUID, error) {
	rows, err := QueryDirect(tx.Statement.Context, tx, applyAllSQL, append(applyAllArgs(order, changes, now), postingArgs(ids, ps)...)...)
	if err != nil {
		return uuid.Nil, models.TranslateDBError(tx, err)
	}
	defer rows.Close()
	// The wallets updated: a move rarely touches more than the buffer
	// holds, which then stays on the stack.
	var buf [64]uuid.UUID
	updated := buf[:0]
	for rows.Next() {
		var a models.WalletAfter
		if err := rows.Scan(&a.ID, &a.Balance, &a.Locked, &a.StatementSeq, &a.UpdatedAt); err != nil {
			return uuid.Nil, models.TranslateDBError(tx, err)
		}
		updated = append(updated, a.ID)
	}
	if err := rows.Err(); err != nil {
		return uuid.Nil, models.TranslateDBError(tx, err)
	}
	if len(updated) == len(order) {
		return uuid.Nil, nil
	}
	for _, id := range order {
		if !slices.Contains(updated, id) {
			return id, nil
		}
	}
	return uuid.Nil, nil
}

// applyAllSQL is ApplyWalletChanges' one statement. $1 the wallet ids in id order,
// $2, $3 and $7 each one's balance change, release and number of
// statement lines, $4 the time, $5 and $6 the balance bounds; the wallets'
// rows are locked in id order first (the ordered subquery), as a loop of
// updates would take them. $8 to $15 are the statement lines, one element
// each, in order within each wallet: wallet, kind, balance and lock
// change, disbursement, payment, ledger transaction (text, NULL for none)
// and memo. Each line is numbered up to the wallet's new statement_seq and
// its balance and lock after it are the wallet's new ones less the changes
// of the lines after it. $16 to $22 are the postings (postingArgs),
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
func applyAllArgs(order []uuid.UUID, changes []*models.WalletChange, now time.Time) []any {
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
		c := changes[i]
		ids[i], balances[i], releases[i], counts[i] = id, int64(c.Balance), int64(c.Release), int64(len(c.Lines))
		for _, l := range c.Lines {
			wallets = append(wallets, id)
			kinds, memos = append(kinds, string(l.Kind)), append(memos, l.Memo)
			lineBalances, lineLocks = append(lineBalances, int64(l.Balance)), append(lineLocks, int64(l.Locked))
			disbursements, payments, txns = append(disbursements, text(l.DisbursementID)), append(payments, text(l.PaymentID)), append(txns, text(l.TxnID))
		}
	}
	return []any{ids, balances, releases, now, int64(-models.MaxBalance), int64(models.MaxBalance), counts,
		wallets, kinds, lineBalances, lineLocks, disbursements, payments, txns, memos}
}

// postingArgs are applyAllSQL's $16 to $22 (ledger transactions ids[i]
// for ps[i]): the transactions' ids, kinds, memos
// and references, then the entries' transaction ids, accounts and
// amounts, in order.
func postingArgs(pids []uuid.UUID, ps []models.Posting) []any {
	ids, kinds, memos, references := make([][16]byte, len(ps)), make([]string, len(ps)), make([]string, len(ps)), make([]string, len(ps))
	var txns [][16]byte
	var accounts []string
	var amounts []int64
	for i, p := range ps {
		ids[i], kinds[i], memos[i], references[i] = pids[i], p.Kind, p.Memo, p.Reference
		for _, e := range p.Entries {
			txns, accounts, amounts = append(txns, pids[i]), append(accounts, e.Account), append(amounts, int64(e.Amount))
		}
	}
	return []any{ids, kinds, memos, references, txns, accounts, amounts}
}
