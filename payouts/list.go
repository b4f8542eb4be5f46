package payouts

import (
	"context"
	"time"

	"github.com/google/uuid"

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
	q := s.db.WithContext(ctx).Where("client_id = ?", clientID)
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
	if f.After != nil {
		q = q.Where("(created_at, id) < (?, ?)", f.After.CreatedAt, f.After.ID)
	}
	var rows []models.Disbursement
	if err := q.Order("created_at DESC, id DESC").Limit(f.Limit + 1).Find(&rows).Error; err != nil {
		return Page{}, err
	}
	page := Page{Disbursements: rows}
	if len(rows) > f.Limit {
		page.Disbursements = rows[:f.Limit]
		last := page.Disbursements[f.Limit-1]
		page.Next = &pagecursor.Cursor{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	return page, nil
}
