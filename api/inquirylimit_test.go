package api

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/models"
)

// Account enumeration: every quote and create asks the vendor about the
// account, so a client with nothing to pay out could tell inactive,
// unverifiable and valid accounts apart at full speed. Quotes are limited
// per client; creates refused after their inquiry are counted, and once
// their budget is spent further creates are refused before the inquiry.

// wantRateLimited fails unless r is the rate limit's 429 with a Retry-After
// of whole seconds from 1 to 60.
func wantRateLimited(t *testing.T, r response) {
	t.Helper()
	r.expect(t, http.StatusTooManyRequests, models.ErrRateLimited.Error())
	if retry, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || retry < 1 || retry > 60 {
		t.Fatalf("Retry-After %q, want whole seconds from 1 to 60", r.header.Get("Retry-After"))
	}
}

func TestQuoteRateLimit(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{funds: "none", configure: func(c *config.Config) { c.QuoteRateLimit = 3 }})
	other := e.newMerchant()
	otherWallet := e.newWallet(other.id, "Main", "simbank", false)
	inactive := e.body("100000", "1000000001")
	for i := 1; i <= 3; i++ {
		e.quoteAs(e.m, inactive).expect(t, http.StatusUnprocessableEntity, models.ErrAccountInactive.Error())
	}
	asked := e.inquiries.Load()
	wantRateLimited(t, e.quoteAs(e.m, e.body("100000", "1234567890")))
	if n := e.inquiries.Load(); n != asked {
		t.Fatalf("a rate-limited quote made %d account inquiries", n-asked)
	}
	// The limit is per client.
	other2 := payoutBody{wallet: otherWallet.String(), amount: "100000", bank: "bca", account: "1000000001", transferType: "BIFAST"}
	e.quoteAs(other, other2).expect(t, http.StatusUnprocessableEntity, models.ErrAccountInactive.Error())
}

func TestQuoteRateLimitZeroIsOff(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{configure: func(c *config.Config) { c.QuoteRateLimit = 0 }})
	for i := 1; i <= 70; i++ {
		if r := e.quoteAs(e.m, e.body("100000", "1234567890")); r.status != http.StatusOK {
			t.Fatalf("quote %d: %d %s", i, r.status, r.body)
		}
	}
}

// A client with zero balance probing accounts through creates: each 402 or
// 422 after the inquiry counts; once the budget is spent, creates are 429
// without asking the vendor. Replays of stored creates still answer.
func TestInquiryRefusalBudget(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{configure: func(c *config.Config) { c.InquiryRefusalRateLimit = 4 }})
	e.create("ok-1", e.body("100000", "1234567890")).created(t, models.StatusSuccess)
	refusals := []struct {
		body   payoutBody
		status int
		msg    string
	}{
		{e.body("100000", "1000000001"), http.StatusUnprocessableEntity, models.ErrAccountInactive.Error()},
		{e.body("100000", "1000000002"), http.StatusUnprocessableEntity, models.ErrAccountNotResolved.Error()},
		{e.body("12499", "1234567890"), http.StatusUnprocessableEntity, "withdrawal amount is below minimum: 12500"},
		{e.body("9000000", "1234567890"), http.StatusPaymentRequired, models.ErrInsufficientBalance.Error()},
	}
	for i, r := range refusals {
		e.create("probe-"+strconv.Itoa(i), r.body).expect(t, r.status, r.msg)
	}
	before := e.snapshot()
	asked := e.inquiries.Load()
	r := e.create("probe-x", e.body("100000", "1000000001"))
	wantRateLimited(t, r)
	// 4 a minute: the next refusal fits in at most 15 seconds.
	if retry, _ := strconv.Atoi(r.header.Get("Retry-After")); retry > 15 {
		t.Fatalf("Retry-After %d, want at most one interval of 15 s", retry)
	}
	wantRateLimited(t, e.create("ok-2", e.body("100000", "1234567890")))
	if n := e.inquiries.Load(); n != asked {
		t.Fatalf("rate-limited creates made %d account inquiries", n-asked)
	}
	e.unchanged(before)
	// A retry of a create that was stored is answered as ever.
	e.create("ok-1", e.body("100000", "1234567890")).replayed(t, http.StatusOK, "")
}

// Creates that succeed never count against the refusal budget, and
// refusals before the inquiry (bad bank code, validation) do not either.
func TestInquiryRefusalBudgetIgnoresSuccesses(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{funds: "10000000", configure: func(c *config.Config) { c.InquiryRefusalRateLimit = 2 }})
	for i := 0; i < 5; i++ {
		e.create("ok-"+strconv.Itoa(i), e.body("100000", "1234567890")).created(t, models.StatusSuccess)
		e.create("bank-"+strconv.Itoa(i), payoutBody{wallet: e.wallet.String(), amount: "100000", bank: "nosuchbank",
			account: "1234567890", transferType: "BIFAST"}).expect(t, http.StatusUnprocessableEntity, models.ErrUnsupportedBank.Error())
	}
	e.create("probe-1", e.body("100000", "1000000001")).expect(t, http.StatusUnprocessableEntity, models.ErrAccountInactive.Error())
	e.create("ok-x", e.body("100000", "1234567890")).created(t, models.StatusSuccess)
}
