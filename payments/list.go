package payments

import (
	"context"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

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
	return s.list(s.withWallet(ctx).Where("p.client_id = ?", clientID), f)
}

// ListAll is List across every client, or one when client is set: the
// operators' view (payoutd admin payment list), never a merchant's.
func (s *Service) ListAll(ctx context.Context, client uuid.UUID, f ListFilter) ([]WithWallet, *pagecursor.Cursor, error) {
	q := s.withWallet(ctx)
	if client != uuid.Nil {
		q = q.Where("p.client_id = ?", client)
	}
	return s.list(q, f)
}

// withWallet selects payments (as p) with their wallet's name.
func (s *Service) withWallet(ctx context.Context) *gorm.DB {
	return s.db.WithContext(ctx).Table("payments p").
		Select("p.*, w.name AS wallet_name").Joins("JOIN wallets w ON w.id = p.wallet_id")
}

func (s *Service) list(q *gorm.DB, f ListFilter) ([]WithWallet, *pagecursor.Cursor, error) {
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
