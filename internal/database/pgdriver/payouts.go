package pgdriver

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/models"
)

// LockPayouts takes the row locks of the disbursements ids, in id order
// (the ledger's lock order, ledger/locks.go).
func (Driver) LockPayouts(tx *gorm.DB, ids []uuid.UUID) error {
	return lockInOrder(tx, "disbursements", ids)
}

// LockWallets takes the row locks of the wallets ids, in id order.
func (Driver) LockWallets(tx *gorm.DB, ids []uuid.UUID) error {
	return lockInOrder(tx, "wallets", ids)
}

func lockInOrder(tx *gorm.DB, table string, ids []uuid.UUID) error {
	if len(ids) == 0 {
		return nil
	}
	var locked []uuid.UUID
	return tx.Raw(`SELECT id FROM `+table+` WHERE id IN ? ORDER BY id FOR NO KEY UPDATE`, inIDOrder(ids)).Scan(&locked).Error
}

// MovePayouts is the status update with the move's audit lines written by
// the same statement: one round trip fewer while the payouts' rows are
// held. The ids go as one uuid[], so that the statement's text does not
// change with the batch's size and PostgreSQL plans it once per
// connection, not at every batch (a list of placeholders made each size a
// statement of its own, planned each time). With m.Lock the update takes
// the rows' locks in id order in a subquery, as LockPayouts would.
func (Driver) MovePayouts(tx *gorm.DB, m models.PayoutMove) (int64, error) {
	columns := make([]string, 0, len(m.Set))
	for column := range m.Set {
		columns = append(columns, column)
	}
	slices.Sort(columns)
	var sql strings.Builder
	args := make([]any, 0, len(columns)+4+3*len(m.Steps))
	param := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	sql.WriteString("WITH moved AS (\n\tUPDATE disbursements SET ")
	for i, column := range columns {
		if i > 0 {
			sql.WriteString(", ")
		}
		sql.WriteString(column + " = " + param(m.Set[column]))
	}
	rows := "id = ANY(" + param(uuidArray(m.IDs)) + "::uuid[])"
	if m.Lock {
		rows = "id IN (SELECT id FROM disbursements WHERE " + rows + " ORDER BY id FOR NO KEY UPDATE)"
	}
	sql.WriteString(" WHERE " + rows + " AND status = " + param(string(m.From)))
	if m.IfAttempts != nil {
		cond, args := m.IfAttempts.Guard()
		parts := strings.Split(cond, "?")
		sql.WriteString(" AND " + parts[0])
		for i, arg := range args {
			sql.WriteString(param(arg) + parts[i+1])
		}
	}
	sql.WriteString(` RETURNING id
	), audited AS (
	    INSERT INTO disbursement_transitions (disbursement_id, from_status, to_status, reason, created_at)
	    SELECT moved.id, s.from_status, s.to_status, s.reason, ` + param(m.At) + `::timestamptz FROM moved CROSS JOIN (VALUES `)
	for i, step := range m.Steps {
		if i > 0 {
			sql.WriteString(", ")
		}
		sql.WriteString("(" + param(string(step.From)) + "::text, " + param(string(step.To)) + "::text, " + param(step.Reason) + "::text, " + strconv.Itoa(i) + ")")
	}
	sql.WriteString(`) AS s(from_status, to_status, reason, step)
	    ORDER BY moved.id, s.step
	)
	SELECT count(*) FROM moved`)
	moved, err := countOf(tx, sql.String(), args)
	if err != nil {
		return 0, models.TranslateDBError(tx, err)
	}
	return moved, nil
}

// countOf runs a statement whose one row is a count, on tx's connection
// outside gorm (QueryDirect).
func countOf(tx *gorm.DB, query string, args []any) (int64, error) {
	rows, err := QueryDirect(tx.Statement.Context, tx, query, args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var n int64
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return 0, err
		}
		return 0, errors.New("pgdriver: the count statement returned no row")
	}
	if err := rows.Scan(&n); err != nil {
		return 0, err
	}
	return n, rows.Close()
}

// submitDue is what makes a payout due for its first submit, written out
// rather than bound so that the planner matches it to the partial index
// disbursements_submit_due (a bound status could not be proven to match,
// and a generic plan would fall back to scanning every open payout).
const submitDue = `status = '` + string(models.StatusVerified) + `' AND submit_attempts = 0`

// ClaimDueSubmits locks the rows it chooses as it chooses them, skipping
// those another transaction holds, so that claimers never wait for one
// another (and cannot deadlock); a row changed before its lock is taken is
// chosen only if it is still due (the lock re-reads it). The update itself
// names only the ids: repeating the due condition there let the planner
// drive the update from disbursements_submit_due and run the limited
// subquery once per due row (52 ms a claim behind a backlog of a few
// thousand).
func (Driver) ClaimDueSubmits(db *gorm.DB, now, leaseEnd time.Time, ready []string, limit int) ([]models.Disbursement, error) {
	query, args := ClaimDueStatement(now, leaseEnd, ready, limit)
	var rows []models.Disbursement
	if err := db.Raw(query, args...).Scan(&rows).Error; err != nil {
		return nil, err
	}
	return rows, nil
}

// ClaimDueStatement is ClaimDueSubmits' statement and its arguments (a
// test reads its plan).
func ClaimDueStatement(now, leaseEnd time.Time, ready []string, limit int) (string, []any) {
	return `UPDATE disbursements
		SET submit_attempts = 1, submit_attempted_at = ?, next_check_at = ?, updated_at = ?
		WHERE id IN (SELECT id FROM disbursements
		        WHERE ` + submitDue + ` AND lock_expires_at > ? AND created_at <= ? AND vendor IN ?
		        ORDER BY next_check_at LIMIT ? FOR NO KEY UPDATE SKIP LOCKED)
		RETURNING *`, []any{now, leaseEnd, now, now, now, ready, limit}
}

// ClaimSubmits is one statement that locks the rows in id order (the
// ledger's lock order) before it updates them, so that the claim cannot
// deadlock with a transaction moving some of them.
func (Driver) ClaimSubmits(db *gorm.DB, ids []uuid.UUID, read models.AttemptsRead, now, leaseEnd time.Time) ([]uuid.UUID, error) {
	var got []uuid.UUID
	guard, guardArgs := read.Guard()
	args := append([]any{read.Count + 1, now, leaseEnd, now, ids, models.StatusVerified, now}, guardArgs...)
	err := db.Raw(`UPDATE disbursements
				SET submit_attempts = ?, submit_attempted_at = ?, next_check_at = ?, updated_at = ?
				WHERE id IN (SELECT id FROM disbursements WHERE id IN ? ORDER BY id FOR NO KEY UPDATE) AND status = ? AND lock_expires_at > ? AND `+guard+`
				RETURNING id`, args...).Scan(&got).Error
	return got, err
}
