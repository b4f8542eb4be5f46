package api

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/payoutd/payoutd/internal/pagecursor"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payments"
	"github.com/payoutd/payoutd/payouts"
)

// Lists: newest first, `limit` 1 to maxListLimit (default
// defaultListLimit), the next page by `starting_after` with the previous
// page's `next_cursor`.
const (
	defaultListLimit = 10
	maxListLimit     = 100
)

// listResponse is every list's body.
type listResponse[T any] struct {
	Data []T `json:"data"`
	// HasMore says whether a next page exists; NextCursor is its
	// starting_after, null on the last page.
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

// GET /api/v3/disbursements
func (s *Server) handleDisbursementList(c *gin.Context) {
	q, err := listQuery(c.Request.URL.Query(), "status", "client_wallet_id", "reference_id", "created_from", "created_to")
	if err != nil {
		fail(c, err)
		return
	}
	f := payouts.ListFilter{Limit: q.limit, After: q.after, CreatedFrom: q.from, CreatedTo: q.to}
	if v := q.values.Get("status"); v != "" {
		f.Status = models.DisbursementStatus(v)
		if !f.Status.Valid() {
			fail(c, models.Invalid(fmt.Sprintf("status must be one of %v", models.DisbursementStatuses)))
			return
		}
	}
	if v := q.values.Get("client_wallet_id"); v != "" {
		if f.WalletID, err = parseUUIDParam(v, "client_wallet_id"); err != nil {
			fail(c, err)
			return
		}
	}
	if v := q.values.Get("reference_id"); v != "" {
		if len(v) > 64 {
			fail(c, models.Invalid("reference_id must be at most 64 characters"))
			return
		}
		f.ReferenceID = v
	}
	page, err := s.payouts.List(c.Request.Context(), principalOf(c).Client.ID, f)
	if err != nil {
		fail(c, err)
		return
	}
	out := listResponse[payouts.Record]{Data: make([]payouts.Record, len(page.Disbursements))}
	for i := range page.Disbursements {
		out.Data[i] = payouts.RecordView(&page.Disbursements[i])
	}
	if page.Next != nil {
		next := page.Next.Encode()
		out.HasMore, out.NextCursor = true, &next
	}
	c.JSON(http.StatusOK, out)
}

// GET /api/v3/payments
func (s *Server) handlePaymentList(c *gin.Context) {
	q, err := listQuery(c.Request.URL.Query(), "status", "payer_id")
	if err != nil {
		fail(c, err)
		return
	}
	f := payments.ListFilter{Limit: q.limit, After: q.after, CreatedFrom: q.from, CreatedTo: q.to, PayerID: q.values.Get("payer_id")}
	if v := q.values.Get("status"); v != "" {
		f.Status = models.PaymentStatus(v)
		if !slices.Contains(models.PaymentStatuses, f.Status) {
			fail(c, models.Invalid(fmt.Sprintf("status must be one of %v", models.PaymentStatuses)))
			return
		}
	}
	rows, next, err := s.payments.List(c.Request.Context(), principalOf(c).Client.ID, f)
	if err != nil {
		fail(c, err)
		return
	}
	out := listResponse[paymentRecord]{Data: make([]paymentRecord, len(rows))}
	for i := range rows {
		out.Data[i] = paymentView(&rows[i])
	}
	if next != nil {
		cursor := next.Encode()
		out.HasMore, out.NextCursor = true, &cursor
	}
	c.JSON(http.StatusOK, out)
}

// parsedList is what every list takes: its page and time range, and the
// query for the list's own filters.
type parsedList struct {
	limit    int
	after    *pagecursor.Cursor
	from, to time.Time
	values   url.Values
}

// listQuery reads limit, starting_after, created_from and created_to, and
// refuses a parameter that is neither one of those nor one of filters, or
// that is given twice: a misspelt filter must not silently list everything.
func listQuery(values url.Values, filters ...string) (parsedList, error) {
	known := map[string]bool{"limit": true, "starting_after": true, "created_from": true, "created_to": true}
	for _, f := range filters {
		known[f] = true
	}
	for name, vs := range values {
		if !known[name] {
			return parsedList{}, models.Invalid(fmt.Sprintf("unknown query parameter %q", name))
		}
		if len(vs) > 1 {
			return parsedList{}, models.Invalid(fmt.Sprintf("query parameter %q given more than once", name))
		}
		// As in bodies (decodeJSON): PostgreSQL refuses NUL in text.
		if strings.ContainsRune(vs[0], 0) {
			return parsedList{}, models.Invalid(fmt.Sprintf(`query parameter %q must not contain the NUL character (\u0000)`, name))
		}
	}
	q := parsedList{limit: defaultListLimit, values: values}
	if v := values.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxListLimit {
			return q, models.Invalid(fmt.Sprintf("limit must be a whole number from 1 to %d", maxListLimit))
		}
		q.limit = n
	}
	if v := values.Get("starting_after"); v != "" {
		c, err := pagecursor.Decode(v)
		if errors.Is(err, pagecursor.ErrInvalid) {
			return q, models.Invalid("starting_after must be the next_cursor of a previous page")
		}
		q.after = &c
	}
	for _, bound := range []struct {
		name string
		dst  *time.Time
	}{{"created_from", &q.from}, {"created_to", &q.to}} {
		if v := values.Get(bound.name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return q, models.Invalid(bound.name + " must be an RFC 3339 time such as 2026-11-26T00:00:00Z")
			}
			*bound.dst = t.UTC()
		}
	}
	if !q.from.IsZero() && !q.to.IsZero() && !q.from.Before(q.to) {
		return q, models.Invalid("created_from must be before created_to")
	}
	return q, nil
}
