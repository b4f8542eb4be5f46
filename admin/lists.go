package admin

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/internal/pagecursor"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payments"
	"github.com/payoutd/payoutd/payouts"
)

// ListResult is what the list commands print: a page, newest first, as the
// API's lists are, with the cursor of the next (--starting-after).
type ListResult[T any] struct {
	Data       []T     `json:"data"`
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

// listFlags are what every list command takes.
type listFlags struct {
	status, client, startingAfter *string
	limit                         *int
}

func defineListFlags(fs *flag.FlagSet) listFlags {
	return listFlags{status: fs.String("status", "", ""), client: fs.String("client", "", ""),
		startingAfter: fs.String("starting-after", "", ""), limit: fs.Int("limit", 50, "")}
}

// read checks the flags after parsing: the client's id, the page size
// (1-500) and the cursor.
func (l listFlags) read() (client uuid.UUID, limit int, after *pagecursor.Cursor, err error) {
	if *l.client != "" {
		if client, err = requireID("client", *l.client); err != nil {
			return
		}
	}
	if *l.limit < 1 || *l.limit > 500 {
		return client, 0, nil, usageError{"--limit must be from 1 to 500"}
	}
	if *l.startingAfter != "" {
		c, decodeErr := pagecursor.Decode(*l.startingAfter)
		if errors.Is(decodeErr, pagecursor.ErrInvalid) {
			return client, 0, nil, usageError{"--starting-after must be the next_cursor of a previous page"}
		}
		after = &c
	}
	return client, *l.limit, after, nil
}

func encodeNext(c *pagecursor.Cursor) (bool, *string) {
	if c == nil {
		return false, nil
	}
	s := c.Encode()
	return true, &s
}

// runDisbursementList lists disbursements of every client (or --client's),
// newest first, by --status: PENDING_VERIFICATION is the review queue.
func runDisbursementList(ctx context.Context, d Deps, fs *flag.FlagSet, args []string) (any, error) {
	lf := defineListFlags(fs)
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	client, limit, after, err := lf.read()
	if err != nil {
		return nil, err
	}
	status := models.DisbursementStatus(*lf.status)
	if status != "" && !status.Valid() {
		return nil, usageError{fmt.Sprintf("--status must be one of %v", models.DisbursementStatuses)}
	}
	svc, err := d.payouts()
	if err != nil {
		return nil, err
	}
	page, err := svc.ListAll(ctx, client, payouts.ListFilter{Status: status, Limit: limit, After: after})
	if err != nil {
		return nil, err
	}
	out := ListResult[payouts.Record]{Data: make([]payouts.Record, len(page.Disbursements))}
	for i := range page.Disbursements {
		out.Data[i] = payouts.RecordView(&page.Disbursements[i])
	}
	out.HasMore, out.NextCursor = encodeNext(page.Next)
	return out, nil
}

// runPaymentList lists payments of every client (or --client's), newest
// first, by --status, as payment show prints each.
func runPaymentList(ctx context.Context, d Deps, fs *flag.FlagSet, args []string) (any, error) {
	lf := defineListFlags(fs)
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	client, limit, after, err := lf.read()
	if err != nil {
		return nil, err
	}
	status := models.PaymentStatus(*lf.status)
	if status != "" && !slices.Contains(models.PaymentStatuses, status) {
		return nil, usageError{fmt.Sprintf("--status must be one of %v", models.PaymentStatuses)}
	}
	if d.Payments == nil {
		return nil, errors.New("admin: no payment service (Deps.Payments)")
	}
	rows, next, err := d.Payments.ListAll(ctx, client, payments.ListFilter{Status: status, Limit: limit, After: after})
	if err != nil {
		return nil, err
	}
	out := ListResult[PaymentRecord]{Data: make([]PaymentRecord, len(rows))}
	for i := range rows {
		out.Data[i] = toPaymentRecord(&rows[i].Payment)
	}
	out.HasMore, out.NextCursor = encodeNext(next)
	return out, nil
}
