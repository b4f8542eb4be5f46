package payouts

import (
	"context"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/internal/pagecursor"
	"github.com/payoutd/payoutd/models"
)

// ListFilter narrows a client's disbursements; zero fields do not filter.
type ListFilter struct {
	Status      models.DisbursementStatus
	WalletID    uuid.UUID
	ReferenceID string
	// CreatedFrom (inclusive) and CreatedTo (exclusive) bound created_at.
	CreatedFrom, CreatedTo time.Time
	// After is the last row of the previous page; nil: the first page.
	After *pagecursor.Cursor
	// Limit is the most rows of the page (the caller checks its range).
	Limit int
}

// Page is one page of a list, newest first.
type Page struct {
	Disbursements []models.Disbursement
	// Next is the cursor of the following page; nil on the last.
	Next *pagecursor.Cursor
}

// List returns a page of the client's disbursements, newest first
// (created_at, then id, descending), every filter applied. The page after
// a cursor holds the rows strictly before it, so rows created meanwhile
// never shift a page (index disbursements_client_created).
func (s *Service) List(ctx context.Context, clientID uuid.UUID, f ListFilter) (Page, error) {
	return s.list(s.db.WithContext(ctx).Where("client_id = ?", clientID), f)
}

// ListAll is List across every client, or one when client is set: the
// operators' view (payoutd admin disbursement list), never a merchant's.
func (s *Service) ListAll(ctx context.Context, client uuid.UUID, f ListFilter) (Page, error) {
	q := s.db.WithContext(ctx)
	if client != uuid.Nil {
		q = q.Where("client_id = ?", client)
	}
	return s.list(q, f)
}

func (s *Service) list(q *gorm.DB, f ListFilter) (Page, error) {
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	if f.WalletID != uuid.Nil {
		q = q.Where("wallet_id = ?", f.WalletID)
	}
	if f.ReferenceID != "" {
		q = q.Where("reference_id = ?", f.ReferenceID)
	}
	if !f.CreatedFrom.IsZero() {
		q = q.Where("created_at >= ?", f.CreatedFrom)
	}
	if !f.CreatedTo.IsZero() {
		q = q.Where("created_at < ?", f.CreatedTo)
	}
	var rows []models.Disbursement
	if err := pagecursor.Apply(q, "created_at", "id", f.After, f.Limit).Find(&rows).Error; err != nil {
		return Page{}, err
	}
	var page Page
	page.Disbursements, page.Next = pagecursor.Trim(rows, f.Limit, func(d *models.Disbursement) pagecursor.Cursor {
		return pagecursor.Cursor{CreatedAt: d.CreatedAt, ID: d.ID}
	})
	return page, nil
}
