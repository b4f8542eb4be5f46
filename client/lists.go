package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Page is one page of a list, newest first. NextCursor is the
// StartingAfter of the next page, "" on the last (HasMore false).
type Page[T any] struct {
	Data       []T     `json:"data"`
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

// ListParams are what every list takes; zero values do not filter.
type ListParams struct {
	// Limit is the page size, 1 to 100 (0: the service's 10).
	Limit int
	// StartingAfter is the NextCursor of the previous page.
	StartingAfter string
	// CreatedFrom (inclusive) and CreatedTo (exclusive) bound the
	// creation time.
	CreatedFrom, CreatedTo time.Time
}

func (p ListParams) values() url.Values {
	v := url.Values{}
	if p.Limit > 0 {
		v.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.StartingAfter != "" {
		v.Set("starting_after", p.StartingAfter)
	}
	if !p.CreatedFrom.IsZero() {
		v.Set("created_from", p.CreatedFrom.UTC().Format(time.RFC3339Nano))
	}
	if !p.CreatedTo.IsZero() {
		v.Set("created_to", p.CreatedTo.UTC().Format(time.RFC3339Nano))
	}
	return v
}

// DisbursementListParams filter ListDisbursements.
type DisbursementListParams struct {
	ListParams
	Status         DisbursementStatus
	ClientWalletID string
	ReferenceID    string
}

// PaymentListParams filter ListPayments.
type PaymentListParams struct {
	ListParams
	Status  PaymentStatus
	PayerID string
}

// ListDisbursements returns one page of the caller's disbursements, newest
// first. Disbursements created while you page never shift a page; to read
// them all, use Disbursements.
func (c *Client) ListDisbursements(ctx context.Context, p DisbursementListParams) (*Page[Disbursement], error) {
	v := p.values()
	set(v, "status", string(p.Status))
	set(v, "client_wallet_id", p.ClientWalletID)
	set(v, "reference_id", p.ReferenceID)
	return list[Disbursement](ctx, c, "/api/v3/disbursements", v)
}

// ListPayments returns one page of the caller's payments, newest first;
// Payments reads them all.
func (c *Client) ListPayments(ctx context.Context, p PaymentListParams) (*Page[Payment], error) {
	v := p.values()
	set(v, "status", string(p.Status))
	set(v, "payer_id", p.PayerID)
	return list[Payment](ctx, c, "/api/v3/payments", v)
}

// Disbursements yields every disbursement the filter matches, newest
// first, reading page after page as the loop goes on; a failed page ends
// the loop with its error.
//
//	for d, err := range c.Disbursements(ctx, client.DisbursementListParams{Status: client.StatusFailed}) {
//		if err != nil { return err }
//		...
//	}
func (c *Client) Disbursements(ctx context.Context, p DisbursementListParams) iter.Seq2[Disbursement, error] {
	return all(func(after string) (*Page[Disbursement], error) {
		p.StartingAfter = after
		return c.ListDisbursements(ctx, p)
	}, p.StartingAfter)
}

// Payments yields every payment the filter matches, newest first, as
// Disbursements does.
func (c *Client) Payments(ctx context.Context, p PaymentListParams) iter.Seq2[Payment, error] {
	return all(func(after string) (*Page[Payment], error) {
		p.StartingAfter = after
		return c.ListPayments(ctx, p)
	}, p.StartingAfter)
}

// all follows the cursors from after until the last page.
func all[T any](page func(after string) (*Page[T], error), after string) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for {
			p, err := page(after)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, item := range p.Data {
				if !yield(item, nil) {
					return
				}
			}
			if !p.HasMore || p.NextCursor == nil {
				return
			}
			after = *p.NextCursor
		}
	}
}

func list[T any](ctx context.Context, c *Client, path string, v url.Values) (*Page[T], error) {
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	var out Page[T]
	if _, err := c.call(ctx, http.MethodGet, path, nil, "", &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func set(v url.Values, name, value string) {
	if value != "" {
		v.Set(name, value)
	}
}
