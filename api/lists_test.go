package api

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// listPage is a page of GET /api/v3/disbursements as a merchant reads it.
type listPage struct {
	Data []struct {
		ID          string `json:"id"`
		Status      string `json:"status"`
		WalletID    string `json:"wallet_id"`
		ReferenceID string `json:"reference_id"`
		CreatedAt   string `json:"created_at"`
	} `json:"data"`
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

func (e *payoutEnv) list(t *testing.T, m merchant, query url.Values) (response, listPage) {
	t.Helper()
	path := "/api/v3/disbursements"
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	r := e.do(request{path: path, apiKey: m.apiKey, sign: m.signingSecret})
	var page listPage
	if r.status == http.StatusOK {
		r.decode(t, &page)
	}
	return r, page
}

// Paging through a client's disbursements while it keeps creating more
// returns every disbursement that existed at the start exactly once, newest
// first, and never shows a row twice; another client's are never shown.
func TestDisbursementListPagesEveryRowOnceWhileInsertsHappen(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{funds: "100000000"})
	var before []string
	for i := range 23 {
		r := e.create(fmt.Sprintf("list-%d", i), e.body("20000", "1234567890"))
		if r.status != http.StatusCreated {
			t.Fatalf("create %d: %d %s", i, r.status, r.body)
		}
		var d struct{ ID string }
		r.decode(t, &d)
		before = append(before, d.ID)
	}
	other := e.newMerchant()
	otherWallet := e.newWallet(other.id, "Main", "simbank", false)
	e.fund(otherWallet, "1000000")

	seen := map[string]int{}
	var order []string
	query := url.Values{"limit": {"5"}}
	for pages := 0; ; pages++ {
		r, page := e.list(t, e.m, query)
		if r.status != http.StatusOK {
			t.Fatalf("page %d: %d %s", pages, r.status, r.body)
		}
		if len(page.Data) > 5 {
			t.Fatalf("page %d has %d rows for limit 5", pages, len(page.Data))
		}
		for _, d := range page.Data {
			seen[d.ID]++
			order = append(order, d.CreatedAt+" "+d.ID)
		}
		// Meanwhile the merchant creates more.
		e.create(fmt.Sprintf("list-during-%d", pages), e.body("20000", "1234567890"))
		if !page.HasMore {
			if page.NextCursor != nil {
				t.Fatalf("last page has a next_cursor %q", *page.NextCursor)
			}
			break
		}
		query.Set("starting_after", *page.NextCursor)
	}
	for _, id := range before {
		if seen[id] != 1 {
			t.Errorf("disbursement %s shown %d times, want once", id, seen[id])
		}
	}
	for id, n := range seen {
		if n > 1 {
			t.Errorf("disbursement %s shown %d times", id, n)
		}
	}
	if !slices.IsSortedFunc(order, func(a, b string) int { return -compareStrings(a, b) }) {
		t.Errorf("not newest first: %v", order)
	}
	if _, page := e.list(t, other, nil); len(page.Data) != 0 {
		t.Errorf("another client sees %d of this client's disbursements", len(page.Data))
	}
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Filters: status, wallet, reference and creation time; each bad value is a
// 400 naming the parameter.
func TestDisbursementListFilters(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{funds: "100000000"})
	e.create("paid-1", e.body("20000", "1234567890")).expect(t, http.StatusCreated, "")
	e.create("failed-1", e.body("20000", "1000000003")).expect(t, http.StatusServiceUnavailable, models.ErrVendorPayoutFailed.Error())
	mid := e.clock.Now()
	e.clock.Advance(time.Second)
	ref := e.body("20000", "1234567890")
	ref.referenceID = "invoice-77"
	e.create("paid-2", ref).expect(t, http.StatusCreated, "")
	e.create("ewallet-1", e.ewalletBody("20000", "bca", "1234567890")).expect(t, http.StatusCreated, "")

	count := func(q url.Values) int {
		t.Helper()
		r, page := e.list(t, e.m, q)
		if r.status != http.StatusOK {
			t.Fatalf("list %v: %d %s", q, r.status, r.body)
		}
		return len(page.Data)
	}
	for _, tc := range []struct {
		query url.Values
		want  int
	}{
		{url.Values{}, 4},
		{url.Values{"status": {"FAILED"}}, 1},
		{url.Values{"status": {"SUCCESS"}}, 3},
		{url.Values{"client_wallet_id": {e.ewallet.String()}}, 1},
		{url.Values{"reference_id": {"invoice-77"}}, 1},
		{url.Values{"created_to": {mid.UTC().Format(time.RFC3339Nano)}}, 2},
		{url.Values{"created_from": {mid.UTC().Format(time.RFC3339Nano)}}, 2},
		{url.Values{"status": {"SUCCESS"}, "client_wallet_id": {e.wallet.String()}}, 2},
	} {
		if got := count(tc.query); got != tc.want {
			t.Errorf("list %v: %d rows, want %d", tc.query, got, tc.want)
		}
	}
	for _, tc := range []struct {
		query url.Values
		msg   string
	}{
		{url.Values{"limit": {"0"}}, "limit must be a whole number from 1 to 100"},
		{url.Values{"limit": {"101"}}, "limit must be a whole number from 1 to 100"},
		{url.Values{"starting_after": {"abc"}}, "starting_after must be the next_cursor of a previous page"},
		{url.Values{"status": {"PAID"}}, ""},
		{url.Values{"client_wallet_id": {"x"}}, ""},
		{url.Values{"created_from": {"yesterday"}}, "created_from must be an RFC 3339 time such as 2026-11-26T00:00:00Z"},
		{url.Values{"statuss": {"FAILED"}}, `unknown query parameter "statuss"`},
		{url.Values{"reference_id": {"inv\x00"}}, `query parameter "reference_id" must not contain the NUL character (\u0000)`},
		{url.Values{"status": {"FAILED", "SUCCESS"}}, `query parameter "status" given more than once`},
		{url.Values{"created_from": {"2026-11-27T00:00:00Z"}, "created_to": {"2026-11-26T00:00:00Z"}}, "created_from must be before created_to"},
	} {
		r, _ := e.list(t, e.m, tc.query)
		r.expect(t, http.StatusBadRequest, tc.msg)
	}
}

// Payments page like disbursements: every payment that existed at the
// start exactly once while more are created, filtered by payer and status,
// never another client's.
func TestPaymentListPagesAndFilters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.newMerchant()
	b.newWallet(m.id, "Main", sandbox.SimBank, false)
	var before []string
	for i := range 12 {
		r := b.createPayment(m, fmt.Sprintf(`{"price": 15000, "playerId": "payer-%d"}`, i%2))
		r.expect(t, http.StatusCreated, "")
		var got struct {
			Data struct {
				OrderID string `json:"orderId"`
			} `json:"data"`
		}
		r.decode(t, &got)
		before = append(before, got.Data.OrderID)
	}
	list := func(who merchant, q url.Values) (response, listPage) {
		r := b.do(request{path: "/api/v3/payments?" + q.Encode(), apiKey: who.apiKey, timestamp: true})
		var page listPage
		if r.status == http.StatusOK {
			r.decode(t, &page)
		}
		return r, page
	}
	seen := map[string]int{}
	q := url.Values{"limit": {"5"}}
	for pages := 0; ; pages++ {
		r, page := list(m, q)
		r.expect(t, http.StatusOK, "")
		for _, p := range page.Data {
			seen[p.ID]++
		}
		b.createPayment(m, `{"price": 15000, "playerId": "payer-new"}`)
		if !page.HasMore {
			break
		}
		q.Set("starting_after", *page.NextCursor)
	}
	for _, id := range before {
		if seen[id] != 1 {
			t.Errorf("payment %s listed %d times, want once", id, seen[id])
		}
	}
	if _, page := list(m, url.Values{"payer_id": {"payer-1"}, "limit": {"100"}}); len(page.Data) != 6 {
		t.Errorf("payer-1 has %d payments listed, want 6", len(page.Data))
	}
	if _, page := list(m, url.Values{"status": {"PENDING"}, "limit": {"100"}}); len(page.Data) < 12 {
		t.Errorf("%d PENDING payments listed, want at least 12", len(page.Data))
	}
	if _, page := list(m, url.Values{"status": {"SUCCESS"}}); len(page.Data) != 0 {
		t.Errorf("%d SUCCESS payments listed, want none", len(page.Data))
	}
	r, _ := list(m, url.Values{"status": {"PAID"}})
	r.expect(t, http.StatusBadRequest, "")
	r, _ = list(m, url.Values{"payer_id": {"payer\x00"}})
	r.expect(t, http.StatusBadRequest, `query parameter "payer_id" must not contain the NUL character (\u0000)`)
	other := b.newMerchant()
	if _, page := list(other, url.Values{}); len(page.Data) != 0 {
		t.Errorf("another client sees %d of this client's payments", len(page.Data))
	}
}
