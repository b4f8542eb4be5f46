package payouts

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

const belowMinimum = "withdrawal amount is below minimum: "

// Fees and minimums (docs/design.md, Fees and minimums): per transfer type
// the fee is the client's (default BIFAST 2,500, RTOL 6,500), deducted
// from the gross (net = gross − fee), and the minimum applies to the net
// (default 10,000), so the minimum gross is fee + minimum net. Quote and
// Create price alike: exactly the minimum is accepted, one rupiah (or one
// ten-thousandth) below is refused with the minimum gross in the message
// and stores nothing; a larger gross pays its net and the fee. Each row
// is a client of its own on one database, so the overrides of one never
// reach another.
func TestFeesAndMinimumsPerTransferType(t *testing.T) {
	t.Parallel()
	e := newSvcEnv(t, 0)
	rows := []struct {
		name     string
		settings func(c *models.Client)
		tt       models.TransferType
		fee      models.Amount
		minGross models.Amount
		// minText is the minimum the refusal names; "" when the minimum
		// is not a whole rupiah (see below).
		minText string
	}{
		{"defaults", nil, models.BIFAST, models.Rupiah(2_500), models.Rupiah(12_500), "12500"},
		{"defaults", nil, models.RTOL, models.Rupiah(6_500), models.Rupiah(16_500), "16500"},
		{"overrides", overrides, models.BIFAST, models.Rupiah(1_000), models.Rupiah(21_000), "21000"},
		{"overrides", overrides, models.RTOL, models.Rupiah(4_000), models.Rupiah(54_000), "54000"},
		{"no fee", func(c *models.Client) { c.BIFASTFee, c.RTOLFee = 0, 0 }, models.BIFAST, 0, models.Rupiah(10_000), "10000"},
		{"no fee", func(c *models.Client) { c.BIFASTFee, c.RTOLFee = 0, 0 }, models.RTOL, 0, models.Rupiah(10_000), "10000"},
		// No minimum net: still more than the fee, so that the vendor is
		// never asked to send nothing.
		{"no minimum net", func(c *models.Client) { c.BIFASTMinNet, c.RTOLMinNet = 0, 0 }, models.BIFAST, models.Rupiah(2_500), models.Rupiah(2_500) + 1, ""},
		{"no minimum net", func(c *models.Client) { c.BIFASTMinNet, c.RTOLMinNet = 0, 0 }, models.RTOL, models.Rupiah(6_500), models.Rupiah(6_500) + 1, ""},
	}
	var paid []uuid.UUID
	for _, row := range rows {
		name := row.name + " " + string(row.tt)
		client := e.newClient(row.settings)
		funds := models.Rupiah(1_000_000)
		wallet := e.newWallet(client, sandbox.SimBank, funds)
		params := func(gross models.Amount) Params {
			return Params{WalletID: wallet, Amount: gross, BankCode: "bca", AccountNo: "1234567890", TransferType: row.tt}
		}
		accepted := []models.Amount{row.minGross, models.Rupiah(100_000)}
		if row.minText == "" {
			accepted = append(accepted, row.fee+models.Rupiah(1)) // the least whole gross the API can send
		}
		refused := []models.Amount{row.minGross - 1, row.minGross - models.Rupiah(1), row.fee}

		before := e.snapshot()
		for _, gross := range accepted {
			q, err := e.svc.Quote(e.ctx, client, params(gross))
			if err != nil {
				t.Errorf("%s: quote of %s: %v", name, gross, err)
				continue
			}
			if q.Params.Amount != gross || q.Fee != row.fee || q.Net != gross-row.fee || q.Net <= 0 {
				t.Errorf("%s: quote of %s: amount %s fee %s net %s; want fee %s net %s", name, gross, q.Params.Amount, q.Fee, q.Net, row.fee, gross-row.fee)
			}
		}
		for _, gross := range refused {
			q, err := e.svc.Quote(e.ctx, client, params(gross))
			if !refusedBelowMinimum(err, row.minText) || q != nil {
				t.Errorf("%s: quote of %s: %s; want %s%s", name, gross, quoted(q, err), belowMinimum, row.minText)
			}
		}
		e.unchanged(name+": quotes", before)

		var spent models.Amount
		for i, gross := range accepted {
			d := e.mustCreate(client, CreateRequest{Params: params(gross), IdempotencyKey: fmt.Sprintf("accepted-%d", i)})
			if d.Amount != gross || d.PlatformFee != row.fee || d.NetAmount != gross-row.fee {
				t.Errorf("%s: created %s: amount %s fee %s net %s; want fee %s net %s", name, gross, d.Amount, d.PlatformFee, d.NetAmount, row.fee, gross-row.fee)
			}
			paid = append(paid, d.ID)
			spent += gross
		}
		for i, gross := range refused {
			key := fmt.Sprintf("refused-%d", i)
			got, err := e.svc.Create(e.ctx, client, CreateRequest{Params: params(gross), IdempotencyKey: key})
			if !refusedBelowMinimum(err, row.minText) || got != nil {
				t.Errorf("%s: create of %s: %s; want %s%s", name, gross, outcome(got, err), belowMinimum, row.minText)
			}
			if n := e.count("disbursements", "client_id = ? AND idempotency_key = ?", client.ID, key); n != 0 {
				t.Errorf("%s: a create below the minimum stored %d disbursements", name, n)
			}
		}
		if w := e.walletByID(wallet); w.Balance != funds || w.Locked != spent {
			t.Errorf("%s: wallet balance %s locked %s; want %s locking the gross amounts %s", name, w.Balance, w.Locked, funds, spent)
		}
	}

	// Paid, the gross leaves the wallet; the ledger takes the stored fee
	// to the platform and the net to the vendor (reconcile compares both
	// with the disbursements).
	var fees models.Amount
	for _, id := range paid {
		e.submit(id)
	}
	e.clock.Advance(svcCompleteAfter)
	for _, id := range paid {
		e.poll(id)
		e.wantStatus(id, models.StatusSuccess)
		d, err := e.svc.Get(e.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		fees += d.PlatformFee
	}
	if platform := e.sumEntries("account = ?", models.AccountPlatformFees); platform != fees {
		t.Errorf("platform fees account holds %s, want the fees %s", platform, fees)
	}
	e.reconciled()
}

// overrides are a client's own fees and minimums (payoutd admin client
// update --bifast-fee 1000 --rtol-fee 4000 --bifast-min-net 20000
// --rtol-min-net 50000).
func overrides(c *models.Client) {
	c.BIFASTFee, c.RTOLFee = models.Rupiah(1_000), models.Rupiah(4_000)
	c.BIFASTMinNet, c.RTOLMinNet = models.Rupiah(20_000), models.Rupiah(50_000)
}

// refusedBelowMinimum: err is the 422 for an amount below the minimum,
// naming minimum (any minimum when minimum is "").
func refusedBelowMinimum(err error, minimum string) bool {
	var rule *models.Error
	if !errors.As(err, &rule) || rule.Code != models.EUNPROCESSABLE || !strings.HasPrefix(rule.Message, belowMinimum) {
		return false
	}
	return minimum == "" || rule.Message == belowMinimum+minimum
}

// The spec's insufficient balance rule: the available balance (balance −
// the locks of payouts in flight) must cover the gross; the fee comes out
// of the gross, it is not added. Exactly the available amount is accepted,
// one rupiah more is ErrInsufficientBalance for quote and create alike,
// and a refused create stores and locks nothing.
func TestAvailableBalanceCoversTheGross(t *testing.T) {
	t.Parallel()
	e := newSvcEnv(t, models.Rupiah(1_000_000))
	inFlight := e.mustCreate(e.client, CreateRequest{Params: e.params(600_000, sandbox.AccountStaysRequested), IdempotencyKey: "in-flight"})
	e.submit(inFlight.ID)
	e.wantStatus(inFlight.ID, models.StatusRequested)

	before := e.snapshot()
	for _, gross := range []int64{400_001, 500_000, 1_000_000} {
		if q, err := e.svc.Quote(e.ctx, e.client, e.params(gross, "1234567890")); !errors.Is(err, models.ErrInsufficientBalance) {
			t.Errorf("quote of %d with 400000 available: %s; want ErrInsufficientBalance", gross, quoted(q, err))
		}
		if got, err := e.create(fmt.Sprintf("too-much-%d", gross), e.params(gross, "1234567890")); !errors.Is(err, models.ErrInsufficientBalance) {
			t.Errorf("create of %d with 400000 available: %s; want ErrInsufficientBalance", gross, outcome(got, err))
		}
	}
	e.unchanged("refused for the balance", before)

	q, err := e.svc.Quote(e.ctx, e.client, e.params(400_000, "1234567890"))
	if err != nil || q.Fee != models.Rupiah(2_500) || q.Net != models.Rupiah(397_500) {
		t.Fatalf("quote of the whole available 400000: %s; want fee 2500 net 397500", quoted(q, err))
	}
	d := e.mustCreate(e.client, CreateRequest{Params: e.params(400_000, "1234567890"), IdempotencyKey: "all-of-it"})
	if w := e.walletNow(); w.Balance != models.Rupiah(1_000_000) || w.Locked != models.Rupiah(1_000_000) || w.Available() != 0 {
		t.Fatalf("wallet balance %s locked %s after locking all of it", w.Balance, w.Locked)
	}
	if got, err := e.create("nothing-left", e.params(12_500, "1234567890")); !errors.Is(err, models.ErrInsufficientBalance) {
		t.Fatalf("create of the minimum with nothing available: %s; want ErrInsufficientBalance", outcome(got, err))
	}
	e.submit(d.ID)
	e.clock.Advance(svcCompleteAfter)
	e.poll(d.ID)
	e.wantStatus(d.ID, models.StatusSuccess)
	if w := e.walletNow(); w.Balance != models.Rupiah(600_000) || w.Locked != models.Rupiah(600_000) {
		t.Fatalf("wallet balance %s locked %s after paying 400000 with 600000 in flight", w.Balance, w.Locked)
	}
	e.reconciled()
}

// Quote and create run their checks in the spec's order (the wallet, the
// bank code, the recipient account, the minimum amount, the available
// balance): a request that fails two answers the earlier one.
func TestChecksRunInTheSpecsOrder(t *testing.T) {
	t.Parallel()
	e := newSvcEnv(t, models.Rupiah(10_000))
	with := func(change func(p *Params)) Params {
		p := e.params(100_000, "1234567890")
		change(&p)
		return p
	}
	cases := []struct {
		name   string
		params Params
		want   error
	}{
		{"unknown wallet and unknown bank", with(func(p *Params) { p.WalletID, p.BankCode = uuid.New(), "xyz" }), models.ErrWalletNotFound},
		{"unknown bank and inactive account", with(func(p *Params) { p.BankCode, p.AccountNo = "xyz", sandbox.AccountInactive }), models.ErrUnsupportedBank},
		{"inactive account and below minimum", with(func(p *Params) { p.AccountNo, p.Amount = sandbox.AccountInactive, models.Rupiah(1) }), models.ErrAccountInactive},
		{"below minimum and above the balance", with(func(p *Params) { p.Amount = models.Rupiah(12_499) }), models.Refuse(belowMinimum + "12500")},
		// The premise of the row before: 12,500 is refused for the balance.
		{"above the balance only", with(func(p *Params) { p.Amount = models.Rupiah(12_500) }), models.ErrInsufficientBalance},
	}
	before := e.snapshot()
	for i, tc := range cases {
		if q, err := e.svc.Quote(e.ctx, e.client, tc.params); !sameError(err, tc.want) {
			t.Errorf("quote, %s: %s; want %v", tc.name, quoted(q, err), tc.want)
		}
		if got, err := e.create(fmt.Sprintf("order-%d", i), tc.params); !sameError(err, tc.want) {
			t.Errorf("create, %s: %s; want %v", tc.name, outcome(got, err), tc.want)
		}
	}
	e.unchanged("refusals", before)
}

// quoted describes what a quote answered, for a failure message.
func quoted(q *Quote, err error) string {
	if err != nil {
		return fmt.Sprintf("error %q", err)
	}
	return fmt.Sprintf("amount %s fee %s net %s", q.Params.Amount, q.Fee, q.Net)
}
