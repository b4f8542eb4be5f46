package api

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payments"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// statementPageJSON is a page of GET /api/v3/wallets/{id}/transactions as
// a merchant reads it.
type statementPageJSON struct {
	Data       []statementLine `json:"data"`
	HasMore    bool            `json:"has_more"`
	NextCursor *string         `json:"next_cursor"`
}

func (e *payoutEnv) statement(t *testing.T, m merchant, wallet string, query url.Values) (response, statementPageJSON) {
	t.Helper()
	path := "/api/v3/wallets/" + wallet + "/transactions"
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	r := e.do(request{path: path, apiKey: m.apiKey, sign: m.signingSecret})
	var page statementPageJSON
	if r.status == http.StatusOK {
		r.decode(t, &page)
	}
	return r, page
}

// allStatement pages through a wallet's whole statement, limit lines a
// page, calling between pages (a merchant that keeps paying out while its
// finance team reads).
func (e *payoutEnv) allStatement(t *testing.T, wallet string, limit int, between func(page int)) []statementLine {
	t.Helper()
	var lines []statementLine
	query := url.Values{"limit": {strconv.Itoa(limit)}}
	for page := 0; ; page++ {
		r, p := e.statement(t, e.m, wallet, query)
		if r.status != http.StatusOK {
			t.Fatalf("statement page %d: %d %s", page, r.status, r.body)
		}
		if len(p.Data) > limit {
			t.Fatalf("page %d has %d lines for limit %d", page, len(p.Data), limit)
		}
		lines = append(lines, p.Data...)
		if between != nil {
			between(page)
		}
		if !p.HasMore {
			if p.NextCursor != nil {
				t.Fatalf("last page has a next_cursor")
			}
			return lines
		}
		query.Set("starting_after", *p.NextCursor)
	}
}

// The statement of a wallet through every kind of payout ending: funded,
// paid (debit and fee), failed at the vendor (released), still open
// (locked), paid then returned with the fee refunded. Paged while new
// payouts arrive, every line that existed shows exactly once, newest
// first, numbered without gaps; each line's balances follow from the one
// before; the newest shows what the balance endpoint shows; the CSV export
// holds the same lines; reconcile is clean.
func TestWalletStatementThroughEveryEnding(t *testing.T) {
	t.Parallel()
	e := workerSetup(t, payoutSetup{vendorsim: true, completeAfter: 200 * time.Millisecond})
	e.update(map[string]string{"refund-fee-on-return": "true"})
	wallet := e.wallet.String()
	paid := e.create("paid", e.body("100000", "1234567890")).disbursement(t)
	// The vendor refuses this one at submit: the merchant gets a 503 and
	// the payout ends FAILED.
	e.create("rejected", e.body("50000", sandbox.AccountSubmitRejected)).expect(t, http.StatusServiceUnavailable, "Vendor payout request failed")
	var rejected models.Disbursement
	if err := e.db.Where("idempotency_key = ?", "rejected").Take(&rejected).Error; err != nil {
		t.Fatal(err)
	}
	rejectedID := rejected.ID.String()
	open := e.create("open", e.body("30000", sandbox.AccountStaysRequested)).disbursement(t)
	returned := e.create("returned", e.body("40000", sandbox.AccountReturnedLater)).disbursement(t)
	e.eventually(paid.ID, models.StatusSuccess)
	e.eventually(rejectedID, models.StatusFailed)
	e.eventually(returned.ID, models.StatusReturned)

	before := e.allStatement(t, wallet, 100, nil)
	type want struct {
		kind, amount, disbursement string
	}
	var got []want
	for _, l := range slices.Backward(before) {
		got = append(got, want{l.Kind, l.Amount, deref(l.DisbursementID)})
	}
	// The amount is the gross, fee included (BI-FAST: 2,500).
	for _, w := range []want{
		{"adjustment", "1000000.0000", ""},
		{"payout_locked", "-100000.0000", paid.ID}, {"payout_debited", "-97500.0000", paid.ID}, {"fee", "-2500.0000", paid.ID},
		{"payout_locked", "-50000.0000", rejectedID}, {"payout_released", "50000.0000", rejectedID},
		{"payout_locked", "-30000.0000", open.ID},
		{"payout_locked", "-40000.0000", returned.ID}, {"payout_debited", "-37500.0000", returned.ID}, {"fee", "-2500.0000", returned.ID},
		{"payout_returned", "37500.0000", returned.ID}, {"fee", "2500.0000", returned.ID},
	} {
		if !slices.Contains(got, w) {
			t.Errorf("no line %+v in the statement %+v", w, got)
		}
	}
	if len(got) != 12 {
		t.Errorf("%d lines, want 12: %+v", len(got), got)
	}
	// Within one disbursement, the lines are in the order they happened.
	for _, id := range []string{paid.ID, rejectedID, returned.ID} {
		var kinds []string
		for _, g := range got {
			if g.disbursement == id {
				kinds = append(kinds, g.kind)
			}
		}
		if kinds[0] != "payout_locked" {
			t.Errorf("disbursement %s's lines %v do not start with its lock", id, kinds)
		}
	}

	// Every line follows from the line before it; the newest is the
	// balance endpoint's.
	checkChain(t, before)
	var balance map[string]string
	e.do(request{path: "/api/v3/wallets/" + wallet + "/balance", apiKey: e.m.apiKey, sign: e.m.signingSecret}).decode(t, &balance)
	newest := before[0]
	if newest.BalanceAfter != balance["balance"] || newest.AvailableAfter != balance["available"] || newest.LockedAfter != balance["locked"] {
		t.Errorf("newest line %+v, balance endpoint %v", newest, balance)
	}
	e.wantWallet(e.wallet, 1_000_000-100_000, 30_000)

	// Paging by 2 while the merchant keeps paying out: each line that
	// existed shows once, in order, and nothing shows twice.
	paged := e.allStatement(t, wallet, 2, func(page int) {
		e.create(fmt.Sprintf("during-%d", page), e.body("20000", sandbox.AccountStaysRequested)).disbursement(t)
	})
	seen := map[int64]int{}
	for i, l := range paged {
		seen[l.Seq]++
		if i > 0 && l.Seq >= paged[i-1].Seq {
			t.Errorf("line %d after line %d: not newest first", l.Seq, paged[i-1].Seq)
		}
	}
	for _, l := range before {
		if seen[l.Seq] != 1 {
			t.Errorf("line %d shown %d times, want once", l.Seq, seen[l.Seq])
		}
	}
	checkChain(t, paged)

	// The CSV export holds the same lines, oldest first.
	all := e.allStatement(t, wallet, 100, nil)
	r := e.do(request{path: "/api/v3/wallets/" + wallet + "/transactions/export", apiKey: e.m.apiKey, sign: e.m.signingSecret})
	r.expect(t, http.StatusOK, "")
	if ct := r.header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	records, err := csv.NewReader(bytes.NewReader(r.body)).ReadAll()
	if err != nil {
		t.Fatalf("CSV: %v\n%s", err, r.body)
	}
	if !slices.Equal(records[0], statementCSVHeader) {
		t.Errorf("CSV header %v", records[0])
	}
	if len(records)-1 != len(all) {
		t.Fatalf("CSV has %d lines, JSON %d", len(records)-1, len(all))
	}
	for i, rec := range records[1:] {
		l := all[len(all)-1-i]
		if want := []string{strconv.FormatInt(l.Seq, 10), l.CreatedAt, l.Kind, l.Amount, l.BalanceAfter, l.AvailableAfter,
			l.LockedAfter, deref(l.DisbursementID), deref(l.PaymentID), l.Description}; !slices.Equal(rec, want) {
			t.Errorf("CSV line %d %v, JSON %v", i+1, rec, want)
		}
	}
	e.reconciled()
}

// checkChain fails unless each line of a newest-first statement follows
// from the one before it: balances after the older line plus the newer
// line's amount (settled for debits, fees, returns, settlements and
// adjustments; available for locks and releases).
func checkChain(t *testing.T, lines []statementLine) {
	t.Helper()
	amount := func(s string) models.Amount {
		if strings.Trim(s, "0.") == "" {
			return 0 // ParseSignedAmount refuses a zero amount
		}
		a, err := models.ParseSignedAmount(s)
		if err != nil {
			t.Fatalf("amount %q: %v", s, err)
		}
		return a
	}
	for i := 0; i+1 < len(lines); i++ {
		newer, older := lines[i], lines[i+1]
		if newer.Seq != older.Seq+1 {
			t.Errorf("line %d follows line %d", newer.Seq, older.Seq)
			continue
		}
		dBalance := amount(newer.BalanceAfter) - amount(older.BalanceAfter)
		dAvailable := amount(newer.AvailableAfter) - amount(older.AvailableAfter)
		if amount(newer.AvailableAfter) != amount(newer.BalanceAfter)-amount(newer.LockedAfter) {
			t.Errorf("line %d: available %s is not balance %s minus locked %s", newer.Seq, newer.AvailableAfter, newer.BalanceAfter, newer.LockedAfter)
		}
		moved := dBalance
		if newer.Kind == "payout_locked" || newer.Kind == "payout_released" {
			moved = dAvailable
			if dBalance != 0 {
				t.Errorf("line %d (%s) moved the balance by %s", newer.Seq, newer.Kind, dBalance)
			}
		}
		if moved != amount(newer.Amount) {
			t.Errorf("line %d (%s) of %s moved its balance by %s", newer.Seq, newer.Kind, newer.Amount, moved)
		}
	}
}

// Bad statement queries are 400s naming what is wrong; another client's
// wallet is a 404; an export is not paged.
func TestWalletStatementRefusesBadQueries(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{})
	wallet := e.wallet.String()
	for _, tc := range []struct {
		query url.Values
		want  string
	}{
		{url.Values{"limit": {"0"}}, "limit must be a whole number from 1 to 100"},
		{url.Values{"limit": {"101"}}, "limit must be a whole number from 1 to 100"},
		{url.Values{"starting_after": {"c1.bm90LWEtY3Vyc29y"}}, "starting_after must be the next_cursor of a previous page"},
		{url.Values{"starting_after": {"l1.x", "l1.y"}}, `query parameter "starting_after" given more than once`},
		{url.Values{"status": {"PAID"}}, `unknown query parameter "status"`},
		{url.Values{"created_from": {"yesterday"}}, "created_from must be an RFC 3339 time such as 2026-11-26T00:00:00Z"},
	} {
		r, _ := e.statement(t, e.m, wallet, tc.query)
		r.expect(t, http.StatusBadRequest, tc.want)
	}
	other := e.newMerchant()
	r, _ := e.statement(t, other, wallet, nil)
	r.expect(t, http.StatusNotFound, "")
	e.do(request{path: "/api/v3/wallets/" + wallet + "/transactions/export?limit=5", apiKey: e.m.apiKey, sign: e.m.signingSecret}).
		expect(t, http.StatusBadRequest, "an export takes created_from and created_to only: it is not paged")
}

// A time range keeps the lines created in [created_from, created_to), in
// the page and in the export alike.
func TestWalletStatementTimeRange(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{})
	wallet := e.wallet.String()
	e.create("first", e.body("20000", sandbox.AccountStaysRequested)).disbursement(t)
	e.clock.Advance(time.Hour)
	mid := e.clock.Now()
	e.create("second", e.body("20000", sandbox.AccountStaysRequested)).disbursement(t)
	e.clock.Advance(time.Hour)
	to := e.clock.Now()
	e.create("third", e.body("20000", sandbox.AccountStaysRequested)).disbursement(t)

	q := url.Values{"created_from": {mid.UTC().Format(time.RFC3339Nano)}, "created_to": {to.UTC().Format(time.RFC3339Nano)}}
	r, page := e.statement(t, e.m, wallet, q)
	r.expect(t, http.StatusOK, "")
	if len(page.Data) != 1 || page.Data[0].Kind != "payout_locked" {
		t.Fatalf("range page %+v, want the second payout's lock only", page.Data)
	}
	r = e.do(request{path: "/api/v3/wallets/" + wallet + "/transactions/export?" + q.Encode(), apiKey: e.m.apiKey, sign: e.m.signingSecret})
	r.expect(t, http.StatusOK, "")
	records, err := csv.NewReader(bytes.NewReader(r.body)).ReadAll()
	if err != nil || len(records) != 2 || records[1][0] != strconv.FormatInt(page.Data[0].Seq, 10) {
		t.Fatalf("range export %v, %v; want the header and line %d", records, err, page.Data[0].Seq)
	}
	// A range without lines is a file with the header alone.
	empty := url.Values{"created_to": {mid.Add(-2 * time.Hour).UTC().Format(time.RFC3339Nano)}}
	r = e.do(request{path: "/api/v3/wallets/" + wallet + "/transactions/export?" + empty.Encode(), apiKey: e.m.apiKey, sign: e.m.signingSecret})
	r.expect(t, http.StatusOK, "")
	if records, err := csv.NewReader(bytes.NewReader(r.body)).ReadAll(); err != nil || len(records) != 1 || !slices.Equal(records[0], statementCSVHeader) ||
		r.header.Get("Content-Type") != "text/csv; charset=utf-8" {
		t.Fatalf("empty range export %v, %v, %q", records, err, r.header.Get("Content-Type"))
	}
}

// The export is safe to open in a spreadsheet whatever separator it is
// set to: free text (a payer's playerId in a settlement's memo, an
// operator's memo) is quoted and defused wherever a formula could start in
// it, while the figures, negative ones included, stay bare numbers. The
// audit's playerId "x;=2+5;@SUM(1;1)" was exported as the bare cell
// "payment x;=2+5;@SUM(1;1)": split on ';' it ran =2+5 and @SUM(1;1).
func TestWalletStatementExportDefusesFormulas(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{})
	ctx := context.Background()
	wallet := e.wallet.String()
	payerIDs := []string{"x;=2+5;@SUM(1;1)", "a \"quoted\"\n=1+1,-2\t@3", "=HYPERLINK(\"http://evil.example\")", "Budi 🙂;+62"}
	var ids []uuid.UUID
	for _, payer := range payerIDs {
		body, _ := json.Marshal(map[string]any{"price": 150000, "playerId": payer})
		var created struct {
			Data struct {
				OrderID string `json:"orderId"`
			} `json:"data"`
		}
		r := e.do(request{method: http.MethodPost, path: "/api/v1/payments", body: body, apiKey: e.m.apiKey, timestamp: true})
		r.expect(t, http.StatusCreated, "")
		r.decode(t, &created)
		id := uuid.MustParse(created.Data.OrderID)
		if _, err := e.server.payments.Simulate(ctx, id, payments.ResultSuccess); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	e.clock.Advance(4 * 24 * time.Hour) // past the next business day: settled
	if report, err := e.server.payments.Sweep(ctx); err != nil || report.Settled != len(ids) {
		t.Fatalf("sweep %+v %v", report, err)
	}
	if _, err := admin.AdjustWallet(ctx, e.admin, e.wallet, "-2500", "-fee correction;@note"); err != nil {
		t.Fatal(err)
	}
	e.create("locked", e.body("100000", sandbox.AccountStaysRequested)).disbursement(t)

	r := e.do(request{path: "/api/v3/wallets/" + wallet + "/transactions/export", apiKey: e.m.apiKey, sign: e.m.signingSecret})
	r.expect(t, http.StatusOK, "")
	if !bytes.Contains(r.body, []byte(`,"payment x;'=2+5;'@SUM(1;1)"`)) {
		t.Errorf("the audit's line is not quoted and defused:\n%s", r.body)
	}

	// Read as a spreadsheet set to ',' reads it: every line whole, the
	// figures numbers (the negative ones unchanged), no text cell a formula.
	records, err := csv.NewReader(bytes.NewReader(r.body)).ReadAll()
	if err != nil {
		t.Fatalf("CSV: %v\n%s", err, r.body)
	}
	if len(records) != 1+1+len(ids)+2 { // header, funding, settlements, adjustment, lock
		t.Fatalf("%d records, want %d:\n%s", len(records), 1+1+len(ids)+2, r.body)
	}
	numeric := map[int]bool{0: true, 3: true, 4: true, 5: true, 6: true}
	var amounts []string
	for i, rec := range records {
		for col, field := range rec {
			if i > 0 && numeric[col] {
				if _, err := decimal.NewFromString(field); err != nil || strings.ContainsAny(field, "'\"") {
					t.Errorf("line %d column %s = %q, want a bare number", i, statementCSVHeader[col], field)
				}
				continue
			}
			if field != "" && strings.ContainsRune("=+-@\t\r", rune(field[0])) {
				t.Errorf("line %d column %s = %q starts a formula", i, statementCSVHeader[col], field)
			}
		}
		if i > 0 {
			amounts = append(amounts, rec[3])
		}
	}
	for _, want := range []string{"-2500.0000", "-100000.0000"} {
		if !slices.Contains(amounts, want) {
			t.Errorf("no amount %s in %v", want, amounts)
		}
	}
	memos := map[string]string{} // by payment_id, or amount for the rest
	for _, rec := range records[1:] {
		key := rec[8]
		if key == "" {
			key = rec[3]
		}
		memos[key] = rec[9]
	}
	if got := memos[ids[0].String()]; got != "payment x;'=2+5;'@SUM(1;1)" {
		t.Errorf("the audit's memo reads %q", got)
	}
	if got := memos[ids[1].String()]; got != "payment a \"quoted\"\n'=1+1,'-2\t'@3" {
		t.Errorf("a multi-line memo reads %q", got)
	}
	if got := memos["-2500.0000"]; got != "'-fee correction;'@note" {
		t.Errorf("the adjustment's memo reads %q", got)
	}

	// Read as a spreadsheet set to ';' (or tab) reads it, taking quotes
	// only at a cell's start: no cell starts a formula there either.
	for _, comma := range []rune{';', '\t'} {
		rd := csv.NewReader(bytes.NewReader(r.body))
		rd.Comma, rd.LazyQuotes, rd.FieldsPerRecord = comma, true, -1
		all, err := rd.ReadAll()
		if err != nil {
			t.Fatalf("CSV split on %q: %v", comma, err)
		}
		for _, rec := range all {
			for _, field := range rec {
				rest := strings.TrimLeft(field, "\" ")
				if rest != "" && strings.ContainsRune("=+-@\t\r", rune(rest[0])) {
					t.Errorf("split on %q, a cell %q starts a formula", comma, field)
				}
			}
		}
	}
}
