package payments

import (
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/webhooks"
)

// Move is one status change of a payment with what it records.
type Move struct {
	To                   models.PaymentStatus
	Reason               string // for the audit trail
	PaidAt               time.Time
	PaidAtReported       time.Time // the acquirer's, before clamping; zero: none
	RetrievalReferenceNo string
	FailedReason         string
}

// transition moves p to m.To inside tx: the only way a stored payment's
// status changes. It refuses a move the table does not allow
// (models.ErrTransitionRefused) and a row no longer in p.Status
// (models.ErrStaleStatus), writing nothing. With the status it records the
// payment's webhook event and an audit line; SUCCESS also sets when the
// payment settles. p is updated on success.
func (s *Service) transition(tx *gorm.DB, p *models.Payment, m Move, now time.Time) error {
	from := p.Status
	if !from.CanMoveTo(m.To) {
		return fmt.Errorf("%w: payment %s %s → %s", models.ErrTransitionRefused, p.ID, from, m.To)
	}
	updates := map[string]any{"status": m.To, "updated_at": now}
	switch m.To {
	case models.PaymentSuccess:
		paidAt := m.PaidAt.UTC().Truncate(time.Microsecond)
		settleAt := s.calendar.SettleAt(paidAt)
		updates["paid_at"], updates["settle_at"], updates["retrieval_reference_no"] = paidAt, settleAt, m.RetrievalReferenceNo
		p.PaidAt, p.SettleAt = &paidAt, &settleAt
		if !m.PaidAtReported.IsZero() {
			reported := m.PaidAtReported.UTC().Truncate(time.Microsecond)
			updates["paid_at_reported"], p.PaidAtReported = reported, &reported
		}
		rrn := m.RetrievalReferenceNo
		p.RetrievalReferenceNo = &rrn
	case models.PaymentFailed:
		updates["failed_reason"] = m.FailedReason
		reason := m.FailedReason
		p.FailedReason = &reason
	}
	res := tx.Model(&models.Payment{}).Where("id = ? AND status = ?", p.ID, from).Updates(updates)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected != 1 {
		return fmt.Errorf("%w: payment %s is no longer %s", models.ErrStaleStatus, p.ID, from)
	}
	p.Status, p.UpdatedAt = m.To, now
	err := tx.Exec(`INSERT INTO payment_transitions (payment_id, from_status, to_status, reason, created_at) VALUES (?, ?, ?, ?, ?)`,
		p.ID, string(from), string(m.To), m.Reason, now).Error
	if err != nil {
		return err
	}
	_, err = webhooks.Record(tx, webhooks.PaymentEvent(p), now)
	return err
}
