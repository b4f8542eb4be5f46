package sqlitedriver

import (
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/models"
)

// LockPayouts does nothing: SQLite's writer holds the whole database.
func (Driver) LockPayouts(*gorm.DB, []uuid.UUID) error { return nil }

// LockWallets does nothing: SQLite's writer holds the whole database.
func (Driver) LockWallets(*gorm.DB, []uuid.UUID) error { return nil }

// MovePayouts is the guarded update, then, when every row moved, one
// insert of the move's audit lines (the caller's transaction rolls back
// otherwise).
func (Driver) MovePayouts(tx *gorm.DB, m models.PayoutMove) (int64, error) {
	guarded := tx.Model(&models.Disbursement{}).Where("id IN ? AND status = ?", m.IDs, m.From)
	if m.IfAttempts != nil {
		cond, args := m.IfAttempts.Guard()
		guarded = guarded.Where(cond, args...)
	}
	res := guarded.Updates(m.Set)
	if res.Error != nil {
		return 0, res.Error
	}
	if res.RowsAffected != int64(len(m.IDs)) {
		return res.RowsAffected, nil
	}
	return res.RowsAffected, audit(tx, m.IDs, m.Steps, m.At)
}

// audit appends one line per disbursement and step to their trails, in
// one insert.
func audit(tx *gorm.DB, ids []uuid.UUID, steps []models.TransitionStep, now time.Time) error {
	var sql strings.Builder
	sql.WriteString(`INSERT INTO disbursement_transitions (disbursement_id, from_status, to_status, reason, created_at) VALUES `)
	args := make([]any, 0, 5*len(ids)*len(steps))
	for i, id := range ids {
		for j, s := range steps {
			if i > 0 || j > 0 {
				sql.WriteString(", ")
			}
			sql.WriteString("(?, ?, ?, ?, ?)")
			args = append(args, id, string(s.From), string(s.To), s.Reason, now)
		}
	}
	return tx.Exec(sql.String(), args...).Error
}

// submitDue is what makes a payout due for its first submit, written out
// as PostgreSQL's driver writes it (the partial index
// disbursements_submit_due has the same condition on both).
const submitDue = `status = '` + string(models.StatusVerified) + `' AND submit_attempts = 0`

// ClaimDueSubmits: SQLite has one writer, so the choice and the update
// run alone and nothing is skipped.
func (Driver) ClaimDueSubmits(db *gorm.DB, now, leaseEnd time.Time, ready []string, limit int) ([]models.Disbursement, error) {
	var rows []models.Disbursement
	err := db.Raw(`UPDATE disbursements
		SET submit_attempts = 1, submit_attempted_at = ?, next_check_at = ?, updated_at = ?
		WHERE id IN (SELECT id FROM disbursements
		        WHERE `+submitDue+` AND lock_expires_at > ? AND created_at <= ? AND vendor IN ?
		        ORDER BY next_check_at LIMIT ?)
		RETURNING *`, now, leaseEnd, now, now, now, ready, limit).Scan(&rows).Error
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// ClaimSubmits is one guarded update of the ids.
func (Driver) ClaimSubmits(db *gorm.DB, ids []uuid.UUID, read models.AttemptsRead, now, leaseEnd time.Time) ([]uuid.UUID, error) {
	var got []uuid.UUID
	guard, guardArgs := read.Guard()
	args := append([]any{read.Count + 1, now, leaseEnd, now, ids, models.StatusVerified, now}, guardArgs...)
	err := db.Raw(`UPDATE disbursements
				SET submit_attempts = ?, submit_attempted_at = ?, next_check_at = ?, updated_at = ?
				WHERE id IN ? AND status = ? AND lock_expires_at > ? AND `+guard+`
				RETURNING id`, args...).Scan(&got).Error
	return got, err
}
