package payments

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/internal/pagecursor"
	"github.com/payoutd/payoutd/models"
)

// ListFilter narrows a client's payments; zero fields do not filter.
type ListFilter struct {
	Status  models.PaymentStatus
	PayerID string
	// CreatedFrom (inclusive) and CreatedTo (exclusive) bound created_at.
	CreatedFrom, CreatedTo time.Time
	// After is the last row of the previous page; nil: the first page.
	After *pagecursor.Cursor
	// Limit is the most rows of the page (the caller checks its range).
	Limit int
}

// List returns a page of the client's payments, newest first, with the
// cursor of the next page (nil on the last): the rows strictly before a
// cursor, so payments created meanwhile never shift a page (index
// payments_client_created).
func (s *Service) List(ctx context.Context, clientID uuid.UUID, f ListFilter) ([]WithWallet, *pagecursor.Cursor, error) {
	q := s.db.WithContext(ctx).Table("payments p").
		Select("p.*, w.name AS wallet_name").Joins("JOIN wallets w ON w.id = p.wallet_id").
		Where("p.client_id = ?", clientID)
	if f.Status != "" {
		q = q.Where("p.status = ?", f.Status)
	}
	if f.PayerID != "" {
		q = q.Where("p.payer_id = ?", f.PayerID)
	}
	if !f.CreatedFrom.IsZero() {
		q = q.Where("p.created_at >= ?", f.CreatedFrom)
	}
	if !f.CreatedTo.IsZero() {
		q = q.Where("p.created_at < ?", f.CreatedTo)
	}
	var rows []WithWallet
	if err := pagecursor.Apply(q, "p.created_at", "p.id", f.After, f.Limit).Find(&rows).Error; err != nil {
		return nil, nil, err
	}
	rows, next := pagecursor.Trim(rows, f.Limit, func(p *WithWallet) pagecursor.Cursor {
		return pagecursor.Cursor{CreatedAt: p.CreatedAt, ID: p.ID}
	})
	return rows, next, nil
}
