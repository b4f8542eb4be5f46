// Package sandboxtest holds the behaviour the sandbox vendors promise
// (docs/design.md, Sandbox vendors), written once as table-driven tests and run
// against every way of reaching them: sandbox.Vendor over a MemoryStore and
// over a DBStore, and the HTTP client of vendors/vendorsim talking to
// payoutd vendorsim. Only tests import it.
package sandboxtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// Vendor is what the suite drives: a payout vendor that can be completed by
// hand and counts submits.
type Vendor interface {
	vendors.Vendor
	vendors.Completer
	SubmitCalls(ctx context.Context, reference string) (int, error)
}

// Pair is simbank and simwallet, reached one way.
type Pair struct {
	SimBank, SimWallet Vendor
}

// Setup builds a Pair on fresh state whose vendors run with o: the suite's
// CompleteAfter and clock (o.Store is nil; Setup may set it).
type Setup func(t *testing.T, o sandbox.Options) Pair

// CompleteAfter is the CompleteAfter the suite's vendors run with.
const CompleteAfter = 2 * time.Second

// Clock is a manually advanced clock, safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock at a fixed instant.
func NewClock() *Clock { return &Clock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// AllBanks and EWallets are the codes of the bank directory (vendors/banks.tsv).
var (
	AllBanks = []string{"bca", "bri", "bni", "mandiri", "cimb", "permata", "bsi", "danamon", "btn", "jago", "seabank", "neo", "ocbc", "maybank"}
	EWallets = []string{"dana", "gopay", "ovo", "linkaja", "shopeepay"}
)

// parts are the suite's parts, by name.
var parts = []struct {
	name string
	f    func(*testing.T, Pair, *Clock)
}{
	{"Banks", testBanks},
	{"Inquire", testInquire},
	{"SubmitRejectionsAndCaps", testSubmitRejections},
	{"MagicAccounts", testMagicAccounts},
	{"ResubmitCountedPaysOnce", testResubmit},
	{"FirstAnswerLost", testFirstAnswerLost},
	{"ConcurrentSubmits", testConcurrentSubmits},
	{"CompleteByHand", testCompleteByHand},
	{"CompleteRefusals", testCompleteRefusals},
}

// Run runs the whole suite, each part on a Pair of its own.
func Run(t *testing.T, setup Setup) {
	RunOnly(t, setup)
}

// RunOnly runs the named parts of the suite (all of them when none is
// named), each on a Pair of its own. It is for vendors that reach the
// sandbox's magic accounts through another protocol (vendors/snap) and
// cannot honour the parts that assume the sandbox's own bank list or
// rules; the caller says which parts it leaves out and why. An unknown
// name fails the test.
func RunOnly(t *testing.T, setup Setup, names ...string) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	for _, p := range parts {
		if len(names) > 0 && !want[p.name] {
			continue
		}
		delete(want, p.name)
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			c := NewClock()
			pair := setup(t, sandbox.Options{CompleteAfter: CompleteAfter, Now: c.Now})
			p.f(t, pair, c)
		})
	}
	for n := range want {
		t.Errorf("sandboxtest: no part named %q", n)
	}
}

func codes(banks []vendors.Bank) []string {
	out := make([]string, len(banks))
	for i, b := range banks {
		out[i] = b.Code
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func testBanks(t *testing.T, p Pair, _ *Clock) {
	ctx := context.Background()
	dir := vendors.Directory()
	tests := []struct {
		v     Vendor
		name  string
		codes []string
		tts   []models.TransferType
	}{
		{p.SimBank, "simbank", AllBanks, []models.TransferType{models.BIFAST, models.RTOL}},
		{p.SimWallet, "simwallet", append([]string{"bca", "bri", "bni", "mandiri", "bsi", "jago", "seabank"}, EWallets...), []models.TransferType{models.BIFAST}},
	}
	for _, tt := range tests {
		if tt.v.Name() != tt.name {
			t.Errorf("Name = %q, want %s", tt.v.Name(), tt.name)
		}
		banks, err := tt.v.Banks(ctx)
		if err != nil {
			t.Fatalf("%s Banks: %v", tt.name, err)
		}
		if !sameSet(codes(banks), tt.codes) {
			t.Errorf("%s lists %v, want exactly %v", tt.name, codes(banks), tt.codes)
		}
		for _, b := range banks {
			if !slices.Equal(b.TransferTypes, tt.tts) {
				t.Errorf("%s %s transfer types %v, want %v", tt.name, b.Code, b.TransferTypes, tt.tts)
			}
			if b.EWallet != slices.Contains(EWallets, b.Code) {
				t.Errorf("%s %s EWallet = %v", tt.name, b.Code, b.EWallet)
			}
			d, _ := vendors.FindBank(dir, b.Code)
			if b.Name != d.Name || b.SWIFT != d.SWIFT || (b.SWIFT == "") != b.EWallet {
				t.Errorf("%s %s = %q %q, directory says %q %q", tt.name, b.Code, b.Name, b.SWIFT, d.Name, d.SWIFT)
			}
		}
	}
}

func testInquire(t *testing.T, p Pair, _ *Clock) {
	bank, wallet := p.SimBank, p.SimWallet
	tests := []struct {
		name    string
		v       Vendor
		code    string
		account string
		want    string // holder name on success
		wantErr error
	}{
		{"inactive", bank, "bca", "1000000001", "", models.ErrAccountInactive},
		{"not resolved", bank, "bca", "1000000002", "", models.ErrAccountNotResolved},
		{"inquiry down", bank, "bca", "1000000006", "", vendors.ErrUnavailable},
		{"inactive on simwallet", wallet, "bri", "1000000001", "", models.ErrAccountInactive},
		{"not resolved on simwallet", wallet, "bri", "1000000002", "", models.ErrAccountNotResolved},
		{"inquiry down on simwallet", wallet, "bri", "1000000006", "", vendors.ErrUnavailable},
		{"submit-rejected number resolves", bank, "bca", "1000000003", "SANDBOX 0003", nil},
		{"fails-later number resolves", bank, "bca", "1000000004", "SANDBOX 0004", nil},
		{"stays-requested number resolves", bank, "bca", "1000000005", "SANDBOX 0005", nil},
		{"first-submit-lost number resolves", bank, "bca", "1000000007", "SANDBOX 0007", nil},
		{"ordinary", bank, "bca", "1234567890", "SANDBOX 7890", nil},
		{"ordinary other bank", bank, "maybank", "9876543210", "SANDBOX 3210", nil},
		{"uppercase bank code", bank, "BCA", "1234567890", "SANDBOX 7890", nil},
		{"mixed case bank code", bank, "Mandiri", "1234567890", "SANDBOX 7890", nil},
		{"surrounding whitespace trimmed", bank, "bca", "  1234567890 ", "SANDBOX 7890", nil},
		{"unknown bank", bank, "hsbc", "1234567890", "", models.ErrUnsupportedBank},
		{"empty bank", bank, "", "1234567890", "", models.ErrUnsupportedBank},
		{"e-wallet on simbank", bank, "gopay", "081234567890", "", models.ErrUnsupportedBank},
		{"bank not on simwallet", wallet, "cimb", "1234567890", "", models.ErrUnsupportedBank},
		{"letters", bank, "bca", "12345abcde", "", models.ErrAccountNotResolved},
		{"dash", bank, "bca", "1234-5678", "", models.ErrAccountNotResolved},
		{"inner space", bank, "bca", "1234 5678", "", models.ErrAccountNotResolved},
		{"plus sign", bank, "bca", "+1234567890", "", models.ErrAccountNotResolved},
		{"empty account", bank, "bca", "", "", models.ErrAccountNotResolved},
		{"blank account", bank, "bca", "   ", "", models.ErrAccountNotResolved},
		{"non-ASCII digits", bank, "bca", "١٢٣٤٥٦٧٨٩٠", "", models.ErrAccountNotResolved},

		{"e-wallet local phone", wallet, "gopay", "081234567890", "SANDBOX 7890", nil},
		{"e-wallet 10 digits", wallet, "dana", "0812345678", "SANDBOX 5678", nil},
		{"e-wallet 13 digits", wallet, "ovo", "0812345678901", "SANDBOX 8901", nil},
		{"e-wallet uppercase code", wallet, "ShopeePay", "081234567890", "SANDBOX 7890", nil},
		{"e-wallet 9 digits", wallet, "dana", "081234567", "", models.ErrAccountNotResolved},
		{"e-wallet 14 digits", wallet, "dana", "08123456789012", "", models.ErrAccountNotResolved},
		{"e-wallet country prefix", wallet, "gopay", "6281234567890", "", models.ErrAccountNotResolved},
		{"e-wallet +62", wallet, "gopay", "+6281234567890", "", models.ErrAccountNotResolved},
		{"e-wallet dash", wallet, "linkaja", "0812-3456", "", models.ErrAccountNotResolved},
		{"e-wallet dashes full length", wallet, "linkaja", "0812-3456-7890", "", models.ErrAccountNotResolved},
		{"e-wallet spaces inside", wallet, "ovo", "0812 3456 7890", "", models.ErrAccountNotResolved},
		{"e-wallet magic number lacks leading 0", wallet, "dana", "1000000001", "", models.ErrAccountNotResolved},
	}
	for _, tt := range tests {
		acc, err := tt.v.Inquire(context.Background(), vendors.InquiryRequest{
			BankCode: tt.code, AccountNo: tt.account, TransferType: models.BIFAST,
		})
		if tt.wantErr != nil {
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("%s: Inquire(%s, %q) = %+v, %v; want %v", tt.name, tt.code, tt.account, acc, err, tt.wantErr)
			}
			continue
		}
		if err != nil || acc.HolderName != tt.want {
			t.Errorf("%s: Inquire(%s, %q) = %q, %v; want %q", tt.name, tt.code, tt.account, acc.HolderName, err, tt.want)
		}
	}
}

// Submit submits a payout of amount to account at code.
func Submit(v vendors.Vendor, ref, code, account string, tt models.TransferType, amount models.Amount) (vendors.PayoutResult, error) {
	return v.Submit(context.Background(), vendors.Payout{HolderName: "Budi Santoso",
		Reference: ref, BankCode: code, AccountNo: account, TransferType: tt, Amount: amount,
	})
}

func submitCalls(t *testing.T, v Vendor, ref string) int {
	t.Helper()
	n, err := v.SubmitCalls(context.Background(), ref)
	if err != nil {
		t.Fatalf("SubmitCalls(%s): %v", ref, err)
	}
	return n
}

func testSubmitRejections(t *testing.T, p Pair, _ *Clock) {
	const oneUnit = models.Amount(1) // 0.0001 IDR
	tests := []struct {
		name     string
		wallet   bool
		code     string
		account  string
		tt       models.TransferType
		amount   models.Amount
		rejected bool
	}{
		{"closed account", false, "bca", "1000000003", models.BIFAST, models.Rupiah(100_000), true},
		{"closed account on simwallet", true, "bca", "1000000003", models.BIFAST, models.Rupiah(100_000), true},
		{"BIFAST at cap", false, "bca", "1234567890", models.BIFAST, models.Rupiah(250_000_000), false},
		{"BIFAST cap + 0.0001", false, "bca", "1234567890", models.BIFAST, models.Rupiah(250_000_000) + oneUnit, true},
		{"BIFAST at cap on simwallet", true, "gopay", "081234567890", models.BIFAST, models.Rupiah(250_000_000), false},
		{"BIFAST above cap on simwallet", true, "gopay", "081234567890", models.BIFAST, models.Rupiah(250_000_000) + oneUnit, true},
		{"BIFAST to mandiri above RTOL cap", false, "mandiri", "1234567890", models.BIFAST, models.Rupiah(100_000_000), false},
		{"RTOL at default cap", false, "bca", "1234567890", models.RTOL, models.Rupiah(25_000_000), false},
		{"RTOL default cap + 0.0001", false, "bca", "1234567890", models.RTOL, models.Rupiah(25_000_000) + oneUnit, true},
		{"RTOL mandiri above default cap", false, "mandiri", "1234567890", models.RTOL, models.Rupiah(40_000_000), false},
		{"RTOL mandiri at cap", false, "mandiri", "1234567890", models.RTOL, models.Rupiah(50_000_000), false},
		{"RTOL mandiri uppercase code at cap", false, "MANDIRI", "1234567890", models.RTOL, models.Rupiah(50_000_000), false},
		{"RTOL mandiri cap + 0.0001", false, "mandiri", "1234567890", models.RTOL, models.Rupiah(50_000_000) + oneUnit, true},
		{"RTOL mandiri uppercase above cap", false, "Mandiri", "1234567890", models.RTOL, models.Rupiah(50_000_000) + oneUnit, true},
		{"RTOL on simwallet", true, "bca", "1234567890", models.RTOL, models.Rupiah(100_000), true},
		{"unknown transfer type", false, "bca", "1234567890", "SKN", models.Rupiah(100_000), true},
		{"unsupported bank", false, "hsbc", "1234567890", models.BIFAST, models.Rupiah(100_000), true},
		{"e-wallet on simbank", false, "dana", "081234567890", models.BIFAST, models.Rupiah(100_000), true},
		{"smallest amount", false, "bca", "1234567890", models.BIFAST, oneUnit, false},
		{"ordinary", false, "bca", "1234567890", models.BIFAST, models.Rupiah(97_500), false},
		{"ordinary e-wallet", true, "dana", "081234567890", models.BIFAST, models.Rupiah(97_500), false},
	}
	for i, tt := range tests {
		v := p.SimBank
		if tt.wallet {
			v = p.SimWallet
		}
		ref := fmt.Sprintf("ref-%d", i)
		res, err := Submit(v, ref, tt.code, tt.account, tt.tt, tt.amount)
		if tt.rejected {
			checkSubmitRejected(t, v, tt.name, ref, res, err)
		} else {
			checkSubmitAccepted(t, v, tt.name, ref, res, err)
		}
	}
}

// checkSubmitRejected: a rejected submit is ErrRejected and never also
// ErrUnavailable (nothing to retry), and leaves no payout behind: no
// submit call counted, and Status does not know ref.
func checkSubmitRejected(t *testing.T, v Vendor, name, ref string, res vendors.PayoutResult, err error) {
	t.Helper()
	if !errors.Is(err, vendors.ErrRejected) {
		t.Errorf("%s: Submit = %+v, %v; want ErrRejected", name, res, err)
	}
	if errors.Is(err, vendors.ErrUnavailable) {
		t.Errorf("%s: a rejection must not also be ErrUnavailable: %v", name, err)
	}
	if n := submitCalls(t, v, ref); n != 0 {
		t.Errorf("%s: rejected payout counted (%d submit calls)", name, n)
	}
	if _, err := v.Status(context.Background(), ref); !errors.Is(err, vendors.ErrUnknownPayout) {
		t.Errorf("%s: Status of a rejected payout = %v, want ErrUnknownPayout", name, err)
	}
}

// checkSubmitAccepted: an accepted submit is PENDING under ref, counted
// once.
func checkSubmitAccepted(t *testing.T, v Vendor, name, ref string, res vendors.PayoutResult, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: Submit error %v, want accepted", name, err)
		return
	}
	if res.Reference != ref || res.Status != vendors.PayoutPending {
		t.Errorf("%s: Submit = %+v, want PENDING for %s", name, res, ref)
	}
	if n := submitCalls(t, v, ref); n != 1 {
		t.Errorf("%s: SubmitCalls = %d, want 1", name, n)
	}
}

// magic is what one account number does from submit to its final status.
type magic struct {
	account     string
	submitErr   error                // of the first Submit
	final       vendors.PayoutStatus // at CompleteAfter and forever after; "" when rejected
	finalReason bool                 // FailureReason set once final
}

var magicAccounts = []magic{
	// Inquiry outcomes; a submit that skipped the inquiry is paid.
	{sandbox.AccountInactive, nil, vendors.PayoutSuccess, false},
	{sandbox.AccountUnresolved, nil, vendors.PayoutSuccess, false},
	{sandbox.AccountSubmitRejected, vendors.ErrRejected, "", false},
	{sandbox.AccountFailsLater, nil, vendors.PayoutFailed, true},
	{sandbox.AccountStaysRequested, nil, vendors.PayoutPending, false},
	{sandbox.AccountInquiryDown, nil, vendors.PayoutSuccess, false},
	{sandbox.AccountFirstSubmitLost, vendors.ErrUnavailable, vendors.PayoutSuccess, false},
	{"1234567890", nil, vendors.PayoutSuccess, false},
}

func testMagicAccounts(t *testing.T, p Pair, c *Clock) {
	ctx := context.Background()
	for _, v := range []Vendor{p.SimBank, p.SimWallet} {
		for _, m := range magicAccounts {
			ref := v.Name() + "-" + m.account
			_, err := Submit(v, ref, "bri", m.account, models.BIFAST, models.Rupiah(97_500))
			if m.submitErr != nil {
				if !errors.Is(err, m.submitErr) {
					t.Errorf("%s %s: Submit error %v, want %v", v.Name(), m.account, err, m.submitErr)
				}
			} else if err != nil {
				t.Errorf("%s %s: Submit error %v", v.Name(), m.account, err)
			}
			st, err := v.Status(ctx, ref)
			if m.final == "" {
				if !errors.Is(err, vendors.ErrUnknownPayout) {
					t.Errorf("%s %s: Status of a rejected payout = %+v, %v; want ErrUnknownPayout", v.Name(), m.account, st, err)
				}
				continue
			}
			if err != nil || st.Status != vendors.PayoutPending || st.Reference != ref || st.FailureReason != "" {
				t.Errorf("%s %s: Status after submit = %+v, %v; want PENDING", v.Name(), m.account, st, err)
			}
		}
		c.Advance(CompleteAfter - time.Millisecond)
		for _, m := range magicAccounts {
			if m.final == "" {
				continue
			}
			if st, err := v.Status(ctx, v.Name()+"-"+m.account); err != nil || st.Status != vendors.PayoutPending {
				t.Errorf("%s %s: Status just before CompleteAfter = %+v, %v; want PENDING", v.Name(), m.account, st, err)
			}
		}
		c.Advance(time.Millisecond)
		for _, later := range []time.Duration{0, 365 * 24 * time.Hour} {
			c.Advance(later)
			for _, m := range magicAccounts {
				if m.final == "" {
					continue
				}
				ref := v.Name() + "-" + m.account
				st, err := v.Status(ctx, ref)
				if err != nil || st.Status != m.final || st.Reference != ref || (st.FailureReason != "") != m.finalReason {
					t.Errorf("%s %s: Status %v after CompleteAfter = %+v, %v; want %s (reason: %v)", v.Name(), m.account, later, st, err, m.final, m.finalReason)
				}
				if n := submitCalls(t, v, ref); n != 1 {
					t.Errorf("%s %s: SubmitCalls = %d, want 1", v.Name(), m.account, n)
				}
			}
		}
	}
}

func testResubmit(t *testing.T, p Pair, c *Clock) {
	v := p.SimBank
	const ref = "disb-1"
	for i := 0; i < 5; i++ {
		res, err := Submit(v, ref, "bca", "1234567890", models.BIFAST, models.Rupiah(97_500))
		if err != nil || res.Reference != ref || res.Status != vendors.PayoutPending {
			t.Fatalf("submit %d: %+v, %v", i, res, err)
		}
		c.Advance(300 * time.Millisecond)
	}
	if n := submitCalls(t, v, ref); n != 5 {
		t.Errorf("SubmitCalls after 5 submits = %d, want 5", n)
	}
	// Same reference, other account and amount: still the first payout,
	// whose completion clock runs from the first acceptance.
	if _, err := Submit(v, ref, "bca", sandbox.AccountStaysRequested, models.BIFAST, models.Rupiah(10_000)); err != nil {
		t.Fatal(err)
	}
	c.Advance(CompleteAfter - 1500*time.Millisecond)
	st, err := v.Status(context.Background(), ref)
	if err != nil || st.Status != vendors.PayoutSuccess {
		t.Errorf("Status at first acceptance + CompleteAfter = %+v, %v; want SUCCESS of the first payout", st, err)
	}
	res, err := Submit(v, ref, "bca", "1234567890", models.BIFAST, models.Rupiah(97_500))
	if err != nil || res.Status != vendors.PayoutSuccess {
		t.Errorf("resubmit after completion = %+v, %v; want the existing SUCCESS", res, err)
	}
	if n := submitCalls(t, v, ref); n != 7 {
		t.Errorf("SubmitCalls = %d, want 7", n)
	}
	if n := submitCalls(t, v, "never-submitted"); n != 0 {
		t.Errorf("SubmitCalls of an unknown reference = %d, want 0", n)
	}
	// The other vendor does not know simbank's payout.
	if n := submitCalls(t, p.SimWallet, ref); n != 0 {
		t.Errorf("simwallet counts simbank's payout: %d", n)
	}
	if _, err := p.SimWallet.Status(context.Background(), ref); !errors.Is(err, vendors.ErrUnknownPayout) {
		t.Errorf("simwallet Status of simbank's payout = %v, want ErrUnknownPayout", err)
	}
}

func testFirstAnswerLost(t *testing.T, p Pair, c *Clock) {
	v := p.SimBank
	ctx := context.Background()
	const ref = "disb-lost"
	_, err := Submit(v, ref, "bca", sandbox.AccountFirstSubmitLost, models.BIFAST, models.Rupiah(97_500))
	if !errors.Is(err, vendors.ErrUnavailable) {
		t.Fatalf("first submit error %v, want ErrUnavailable", err)
	}
	if errors.Is(err, vendors.ErrRejected) {
		t.Fatalf("first submit of 1000000007 reported as a rejection: %v", err)
	}
	// The vendor did accept it.
	st, err := v.Status(ctx, ref)
	if err != nil || st.Reference != ref || st.Status != vendors.PayoutPending {
		t.Fatalf("Status after lost answer = %+v, %v; want PENDING", st, err)
	}
	if n := submitCalls(t, v, ref); n != 1 {
		t.Fatalf("SubmitCalls after lost answer = %d, want 1", n)
	}
	for i := 0; i < 2; i++ {
		res, err := Submit(v, ref, "bca", sandbox.AccountFirstSubmitLost, models.BIFAST, models.Rupiah(97_500))
		if err != nil || res.Reference != ref || res.Status != vendors.PayoutPending {
			t.Fatalf("submit %d after the lost one = %+v, %v; want the existing payout", i+2, res, err)
		}
	}
	if n := submitCalls(t, v, ref); n != 3 {
		t.Errorf("SubmitCalls after retries = %d, want 3", n)
	}
	c.Advance(CompleteAfter)
	if st, err := v.Status(ctx, ref); err != nil || st.Status != vendors.PayoutSuccess {
		t.Errorf("1000000007 after CompleteAfter = %+v, %v; want SUCCESS", st, err)
	}
	// Another reference with the same account loses its first answer too.
	if _, err := Submit(v, "disb-lost-2", "bca", sandbox.AccountFirstSubmitLost, models.BIFAST, models.Rupiah(97_500)); !errors.Is(err, vendors.ErrUnavailable) {
		t.Errorf("first submit of a second reference: %v, want ErrUnavailable", err)
	}
}

func testConcurrentSubmits(t *testing.T, p Pair, _ *Clock) {
	for _, account := range []string{"1234567890", sandbox.AccountFirstSubmitLost} {
		v := p.SimBank
		ref := "disb-concurrent-" + account
		const n = 20
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := Submit(v, ref, "bca", account, models.BIFAST, models.Rupiah(97_500))
				if err == nil && (res.Reference != ref || res.Status != vendors.PayoutPending) {
					err = fmt.Errorf("result %+v", res)
				}
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		lost := 0
		for err := range errs {
			switch {
			case err == nil:
			case account == sandbox.AccountFirstSubmitLost && errors.Is(err, vendors.ErrUnavailable):
				lost++
			default:
				t.Errorf("%s: concurrent submit: %v", account, err)
			}
		}
		if want := map[bool]int{true: 1, false: 0}[account == sandbox.AccountFirstSubmitLost]; lost != want {
			t.Errorf("%s: %d answers lost, want %d", account, lost, want)
		}
		if got := submitCalls(t, v, ref); got != n {
			t.Errorf("%s: SubmitCalls = %d, want %d", account, got, n)
		}
	}
}

func testCompleteByHand(t *testing.T, p Pair, c *Clock) {
	ctx := context.Background()
	tests := []struct {
		account    string
		wait       time.Duration // before Complete
		status     vendors.PayoutStatus
		reason     string
		wantReason string
	}{
		{sandbox.AccountStaysRequested, 24 * time.Hour, vendors.PayoutSuccess, "", ""},
		{sandbox.AccountStaysRequested, 24 * time.Hour, vendors.PayoutFailed, "completed as failed by operator", "completed as failed by operator"},
		{sandbox.AccountStaysRequested, 0, vendors.PayoutSuccess, "a reason is dropped on success", ""},
		// Completing by hand overrides the automatic outcome while it is not due.
		{"1234567890", 0, vendors.PayoutFailed, "manual", "manual"},
		{sandbox.AccountFailsLater, CompleteAfter - time.Millisecond, vendors.PayoutSuccess, "", ""},
		{sandbox.AccountFirstSubmitLost, 0, vendors.PayoutSuccess, "", ""},
	}
	for i, tt := range tests {
		v := p.SimBank
		ref := fmt.Sprintf("ref-%d", i)
		if _, err := Submit(v, ref, "bca", tt.account, models.BIFAST, models.Rupiah(97_500)); err != nil && tt.account != sandbox.AccountFirstSubmitLost {
			t.Fatal(err)
		}
		c.Advance(tt.wait)
		if st, _ := v.Status(ctx, ref); st.Status != vendors.PayoutPending {
			t.Errorf("%s before Complete: %s, want PENDING", tt.account, st.Status)
		}
		if err := v.Complete(ctx, ref, tt.status, tt.reason); err != nil {
			t.Fatalf("%s: Complete: %v", tt.account, err)
		}
		st, err := v.Status(ctx, ref)
		if err != nil || st.Status != tt.status || st.FailureReason != tt.wantReason {
			t.Errorf("%s completed as %s: Status = %+v, %v", tt.account, tt.status, st, err)
		}
		// The same completion again is a no-op.
		if err := v.Complete(ctx, ref, tt.status, tt.reason); err != nil {
			t.Errorf("%s: repeated Complete: %v", tt.account, err)
		}
		c.Advance(365 * 24 * time.Hour)
		if st, _ := v.Status(ctx, ref); st.Status != tt.status {
			t.Errorf("%s: status changed after Complete to %s", tt.account, st.Status)
		}
		// A resubmit reports the completed payout and pays nothing more.
		res, err := Submit(v, ref, "bca", tt.account, models.BIFAST, models.Rupiah(97_500))
		if err != nil || res.Status != tt.status {
			t.Errorf("%s: resubmit after Complete = %+v, %v", tt.account, res, err)
		}
	}
	// A FAILED completion without a reason still says why.
	if _, err := Submit(p.SimWallet, "no-reason", "dana", "081234567890", models.BIFAST, models.Rupiah(97_500)); err != nil {
		t.Fatal(err)
	}
	if err := p.SimWallet.Complete(ctx, "no-reason", vendors.PayoutFailed, ""); err != nil {
		t.Fatal(err)
	}
	if st, err := p.SimWallet.Status(ctx, "no-reason"); err != nil || st.Status != vendors.PayoutFailed || st.FailureReason == "" {
		t.Errorf("FAILED without a reason: %+v, %v; want a failure reason", st, err)
	}
}

func testCompleteRefusals(t *testing.T, p Pair, c *Clock) {
	ctx := context.Background()
	v := p.SimBank
	if _, err := v.Status(ctx, "nope"); !errors.Is(err, vendors.ErrUnknownPayout) {
		t.Errorf("Status(unknown) = %v, want ErrUnknownPayout", err)
	}
	if err := v.Complete(ctx, "nope", vendors.PayoutSuccess, ""); !errors.Is(err, vendors.ErrUnknownPayout) {
		t.Errorf("Complete(unknown) = %v, want ErrUnknownPayout", err)
	}
	for _, ref := range []string{"by-hand", "automatic", "automatic-unobserved", "other-status"} {
		if _, err := Submit(v, ref, "bca", "1234567890", models.BIFAST, models.Rupiah(97_500)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Submit(v, "fails", "bca", sandbox.AccountFailsLater, models.BIFAST, models.Rupiah(97_500)); err != nil {
		t.Fatal(err)
	}
	if err := v.Complete(ctx, "by-hand", vendors.PayoutFailed, "manual"); err != nil {
		t.Fatal(err)
	}
	if err := v.Complete(ctx, "by-hand", vendors.PayoutSuccess, ""); !errors.Is(err, sandbox.ErrAlreadyFinal) {
		t.Errorf("SUCCESS after FAILED by hand = %v, want ErrAlreadyFinal", err)
	}
	if err := v.Complete(ctx, "other-status", vendors.PayoutPending, ""); err == nil {
		t.Error("Complete as PENDING accepted")
	}
	if err := v.Complete(ctx, "other-status", "DONE", ""); err == nil {
		t.Error("Complete as DONE accepted")
	}
	c.Advance(CompleteAfter)
	if st, err := v.Status(ctx, "automatic"); err != nil || st.Status != vendors.PayoutSuccess {
		t.Fatalf("automatic: %+v, %v", st, err)
	}
	if err := v.Complete(ctx, "automatic", vendors.PayoutFailed, "too late"); !errors.Is(err, sandbox.ErrAlreadyFinal) {
		t.Errorf("FAILED after an observed SUCCESS = %v, want ErrAlreadyFinal", err)
	}
	// Due but not asked for yet: still final, the caller could have been told.
	if err := v.Complete(ctx, "automatic-unobserved", vendors.PayoutFailed, "too late"); !errors.Is(err, sandbox.ErrAlreadyFinal) {
		t.Errorf("FAILED after a due SUCCESS = %v, want ErrAlreadyFinal", err)
	}
	if err := v.Complete(ctx, "fails", vendors.PayoutSuccess, ""); !errors.Is(err, sandbox.ErrAlreadyFinal) {
		t.Errorf("SUCCESS after a due FAILED = %v, want ErrAlreadyFinal", err)
	}
	if err := v.Complete(ctx, "automatic", vendors.PayoutSuccess, ""); err != nil {
		t.Errorf("SUCCESS after SUCCESS = %v, want nil", err)
	}
	for ref, want := range map[string]vendors.PayoutStatus{"by-hand": vendors.PayoutFailed, "automatic": vendors.PayoutSuccess, "automatic-unobserved": vendors.PayoutSuccess, "fails": vendors.PayoutFailed} {
		if st, err := v.Status(ctx, ref); err != nil || st.Status != want {
			t.Errorf("%s after refused completions: %+v, %v; want %s", ref, st, err, want)
		}
	}
}
