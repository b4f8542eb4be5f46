package client

import (
	"context"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"time"
)

// StatementKind says what a statement line records.
type StatementKind string

// The kinds of statement lines. A payout's lock takes its gross from the
// available balance (StatementPayoutLocked); when it is paid,
// StatementPayoutDebited (the net) and StatementFee take it from the
// balance and the lock together; when it ends unpaid,
// StatementPayoutReleased gives it back to available.
const (
	StatementOpeningBalance StatementKind = "opening_balance"
	StatementPaymentSettled StatementKind = "payment_settled"
	StatementPayoutLocked   StatementKind = "payout_locked"
	StatementPayoutReleased StatementKind = "payout_released"
	StatementPayoutDebited  StatementKind = "payout_debited"
	StatementFee            StatementKind = "fee"
	StatementPayoutReturned StatementKind = "payout_returned"
	StatementAdjustment     StatementKind = "adjustment"
)

// StatementLine is one line of a wallet's statement. Seq numbers the
// wallet's lines from 1 without gaps. Amount is signed as it moves your
// money: for StatementPayoutLocked and StatementPayoutReleased the change
// of the available balance, for every other kind the change of the
// balance. BalanceAfter, AvailableAfter and LockedAfter are the wallet's
// figures right after the line; the newest line's are WalletBalance's.
type StatementLine struct {
	Seq            int64         `json:"seq"`
	Kind           StatementKind `json:"kind"`
	Amount         Amount        `json:"amount"`
	BalanceAfter   Amount        `json:"balance_after"`
	AvailableAfter Amount        `json:"available_after"`
	LockedAfter    Amount        `json:"locked_after"`
	DisbursementID *string       `json:"disbursement_id"`
	PaymentID      *string       `json:"payment_id"`
	Description    string        `json:"description"`
	CreatedAt      time.Time     `json:"created_at"`
}

// WalletStatement returns one page of a wallet's statement, newest first;
// WalletTransactions reads it all.
func (c *Client) WalletStatement(ctx context.Context, walletID string, p ListParams) (*Page[StatementLine], error) {
	return list[StatementLine](ctx, c, "/api/v3/wallets/"+url.PathEscape(walletID)+"/transactions", p.values())
}

// WalletTransactions yields every line of a wallet's statement in the
// range, newest first, as Disbursements does.
func (c *Client) WalletTransactions(ctx context.Context, walletID string, p ListParams) iter.Seq2[StatementLine, error] {
	return all(func(after string) (*Page[StatementLine], error) {
		p.StartingAfter = after
		return c.WalletStatement(ctx, walletID, p)
	}, p.StartingAfter)
}

// ExportWalletStatement writes the CSV export of a wallet's statement
// lines created in [from, to) (a zero bound is open), oldest first, to w:
// the same lines and figures as WalletStatement, for a spreadsheet. A
// range of more than 100,000 lines is refused with an *APIError (400);
// narrow it. It is not retried: a failure after the first bytes were
// written leaves w holding a partial file and returns the error.
func (c *Client) ExportWalletStatement(ctx context.Context, walletID string, from, to time.Time, w io.Writer) error {
	p := ListParams{CreatedFrom: from, CreatedTo: to}
	target := c.base.String() + "/api/v3/wallets/" + url.PathEscape(walletID) + "/transactions/export"
	if v := p.values(); len(v) > 0 {
		target += "?" + v.Encode()
	}
	at := c.now()
	resp, err := c.do(ctx, http.MethodGet, target, nil, "", at)
	for resigned := false; err == nil && resp.StatusCode != http.StatusOK; resigned = true {
		raw, rerr := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
		resp.Body.Close()
		if rerr != nil {
			return &networkError{fmt.Errorf("read answer: %w", rerr)}
		}
		apiErr := c.apiError(resp, raw)
		if resigned || !IsSignatureUsed(apiErr) {
			return apiErr
		}
		// Another bodiless request was signed in the same millisecond: sign
		// again with a later t, once, as every other call does.
		if err := c.sleep(ctx, time.Millisecond); err != nil {
			return err
		}
		at = laterMillisecond(c.now(), at)
		resp, err = c.do(ctx, http.MethodGet, target, nil, "", at)
	}
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return &networkError{fmt.Errorf("read export: %w", err)}
	}
	return nil
}
