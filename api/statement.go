package api

import (
	"errors"
	"maps"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/payoutd/payoutd/internal/pagecursor"
	"github.com/payoutd/payoutd/internal/sheetcsv"
	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
)

// statementLine is one line of a wallet's statement as merchants see it.
// Amount is the line's own amount, signed as it moves the merchant's
// money: for payout_locked and payout_released the change of the
// available balance, for every other kind the change of the settled
// balance (balance).
type statementLine struct {
	Seq            int64   `json:"seq"`
	Kind           string  `json:"kind"`
	Amount         string  `json:"amount"`
	BalanceAfter   string  `json:"balance_after"`
	AvailableAfter string  `json:"available_after"`
	LockedAfter    string  `json:"locked_after"`
	DisbursementID *string `json:"disbursement_id"`
	PaymentID      *string `json:"payment_id"`
	Description    string  `json:"description"`
	CreatedAt      string  `json:"created_at"`
}

func statementView(l *models.StatementLine) statementLine {
	amount := l.BalanceChange
	if l.Kind == models.StatementPayoutLocked || l.Kind == models.StatementPayoutReleased {
		amount = l.AvailableChange()
	}
	v := statementLine{Seq: l.Seq, Kind: string(l.Kind), Amount: amount.Fixed4(), BalanceAfter: l.BalanceAfter.Fixed4(),
		AvailableAfter: l.AvailableAfter().Fixed4(), LockedAfter: l.LockedAfter.Fixed4(), Description: l.Memo,
		CreatedAt: models.FormatTime(l.CreatedAt)}
	if l.DisbursementID != nil {
		id := l.DisbursementID.String()
		v.DisbursementID = &id
	}
	if l.PaymentID != nil {
		id := l.PaymentID.String()
		v.PaymentID = &id
	}
	return v
}

// GET /api/v3/wallets/{wallet_id}/transactions: the wallet's statement,
// newest first, paged like the other lists.
func (s *Server) handleWalletStatement(c *gin.Context) {
	w, ok := s.callerWallet(c)
	if !ok {
		return
	}
	q, err := statementQuery(c)
	if err != nil {
		fail(c, err)
		return
	}
	rows, next, err := ledger.Statement(c.Request.Context(), s.db, w.ID,
		ledger.StatementFilter{Limit: q.limit, After: q.after, CreatedFrom: q.from, CreatedTo: q.to})
	if err != nil {
		fail(c, err)
		return
	}
	out := listResponse[statementLine]{Data: make([]statementLine, len(rows))}
	for i := range rows {
		out.Data[i] = statementView(&rows[i])
	}
	if next != nil {
		cursor := next.Encode()
		out.HasMore, out.NextCursor = true, &cursor
	}
	c.JSON(http.StatusOK, out)
}

// statementCSVHeader names the export's columns: the JSON line's fields.
var statementCSVHeader = []string{"seq", "created_at", "kind", "amount", "balance_after", "available_after", "locked_after",
	"disbursement_id", "payment_id", "description"}

// GET /api/v3/wallets/{wallet_id}/transactions/export: the statement of
// created_from to created_to (either open) as CSV, oldest first, for
// finance teams; at most ledger.MaxExportLines lines. The figures are bare
// numbers; every other cell is quoted text, defused against CSV injection
// (sheetcsv): a description holds a payer's playerId or an operator's memo.
func (s *Server) handleWalletStatementExport(c *gin.Context) {
	w, ok := s.callerWallet(c)
	if !ok {
		return
	}
	values := c.Request.URL.Query()
	if values.Has("limit") || values.Has("starting_after") {
		fail(c, models.Invalid("an export takes created_from and created_to only: it is not paged"))
		return
	}
	q, err := listQuery(values)
	if err != nil {
		fail(c, err)
		return
	}
	out := sheetcsv.NewWriter(c.Writer)
	started := false
	start := func() error {
		started = true
		c.Header("Content-Type", "text/csv; charset=utf-8")
		c.Header("Content-Disposition", `attachment; filename="statement-`+w.ID.String()+`.csv"`)
		c.Status(http.StatusOK)
		return out.Write(sheetcsv.TextRow(statementCSVHeader...)...)
	}
	err = ledger.ExportStatement(c.Request.Context(), s.db, w.ID, q.from, q.to, func(l *models.StatementLine) error {
		if !started {
			if err := start(); err != nil {
				return err
			}
		}
		v := statementView(l)
		return out.Write(sheetcsv.Number(strconv.FormatInt(v.Seq, 10)), sheetcsv.Text(v.CreatedAt), sheetcsv.Text(v.Kind),
			sheetcsv.Number(v.Amount), sheetcsv.Number(v.BalanceAfter), sheetcsv.Number(v.AvailableAfter),
			sheetcsv.Number(v.LockedAfter), sheetcsv.Text(deref(v.DisbursementID)), sheetcsv.Text(deref(v.PaymentID)),
			sheetcsv.Text(v.Description))
	})
	switch {
	case err != nil && !started:
		fail(c, err)
		return
	case err != nil:
		// The answer is under way: cut it short so that the client sees
		// a broken transfer, never a statement that looks whole.
		_ = c.Error(err)
		panic(http.ErrAbortHandler)
	case !started:
		_ = start() // an empty range: the header alone
	}
	if err := out.Flush(); err != nil {
		_ = c.Error(err)
	}
}

// statementPage is a statement page's query.
type statementPage struct {
	limit    int
	after    *pagecursor.Line
	from, to time.Time
}

// statementQuery reads a statement page's query: a list's (listQuery),
// whose starting_after is a statement's cursor.
func statementQuery(c *gin.Context) (statementPage, error) {
	values := c.Request.URL.Query()
	cursors := values["starting_after"]
	rest := maps.Clone(values)
	delete(rest, "starting_after")
	q, err := listQuery(rest)
	if err != nil {
		return statementPage{}, err
	}
	p := statementPage{limit: q.limit, from: q.from, to: q.to}
	switch {
	case len(cursors) > 1:
		return p, models.Invalid(`query parameter "starting_after" given more than once`)
	case len(cursors) == 1 && cursors[0] != "":
		at, err := pagecursor.DecodeLine(cursors[0])
		if errors.Is(err, pagecursor.ErrInvalid) {
			return p, models.Invalid("starting_after must be the next_cursor of a previous page")
		}
		p.after = &at
	}
	return p, nil
}

// deref is *s, or "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
