package sandbox_test

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

// clock is an injected, manually advanced clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

const completeAfter = 2 * time.Second

func newBank(t *testing.T) (*sandbox.Vendor, *clock) {
	t.Helper()
	c := newClock()
	return sandbox.NewSimBank(sandbox.Options{CompleteAfter: completeAfter, Now: c.Now}), c
}

func newWallet(t *testing.T) (*sandbox.Vendor, *clock) {
	t.Helper()
	c := newClock()
	return sandbox.NewSimWallet(sandbox.Options{CompleteAfter: completeAfter, Now: c.Now}), c
}

var allBanks = []string{"bca", "bri", "bni", "mandiri", "cimb", "permata", "bsi", "danamon", "btn", "jago", "seabank", "neo", "ocbc", "maybank"}
var eWallets = []string{"dana", "gopay", "ovo", "linkaja", "shopeepay"}

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

func TestSimBankBanks(t *testing.T) {
	t.Parallel()
	v, _ := newBank(t)
	if v.Name() != "simbank" {
		t.Errorf("Name = %q, want simbank", v.Name())
	}
	banks, err := v.Banks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !sameSet(codes(banks), allBanks) {
		t.Errorf("simbank lists %v, want exactly %v", codes(banks), allBanks)
	}
	dir := vendors.Directory()
	for _, b := range banks {
		if b.EWallet {
			t.Errorf("simbank lists e-wallet %s", b.Code)
		}
		if !slices.Equal(b.TransferTypes, []models.TransferType{models.BIFAST, models.RTOL}) {
			t.Errorf("simbank %s transfer types %v, want [BIFAST RTOL]", b.Code, b.TransferTypes)
		}
		d, _ := vendors.FindBank(dir, b.Code)
		if b.Name != d.Name || b.SWIFT != d.SWIFT || b.SWIFT == "" {
			t.Errorf("simbank %s = %q %q, directory says %q %q", b.Code, b.Name, b.SWIFT, d.Name, d.SWIFT)
		}
	}
}

func TestSimWalletBanks(t *testing.T) {
	t.Parallel()
	v, _ := newWallet(t)
	if v.Name() != "simwallet" {
		t.Errorf("Name = %q, want simwallet", v.Name())
	}
	banks, err := v.Banks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := append([]string{"bca", "bri", "bni", "mandiri", "bsi", "jago", "seabank"}, eWallets...)
	if !sameSet(codes(banks), want) {
		t.Errorf("simwallet lists %v, want exactly %v", codes(banks), want)
	}
	for _, b := range banks {
		if !slices.Equal(b.TransferTypes, []models.TransferType{models.BIFAST}) {
			t.Errorf("simwallet %s transfer types %v, want [BIFAST]", b.Code, b.TransferTypes)
		}
		if b.EWallet != slices.Contains(eWallets, b.Code) {
			t.Errorf("simwallet %s EWallet = %v", b.Code, b.EWallet)
		}
	}
}

// The list a caller gets is a copy: changing it does not change the vendor.
func TestBanksIsACopy(t *testing.T) {
	t.Parallel()
	v, _ := newBank(t)
	a, _ := v.Banks(context.Background())
	a[0].Code = "changed"
	b, _ := v.Banks(context.Background())
	if b[0].Code == "changed" {
		t.Error("Banks returned the vendor's own slice")
	}
}

func TestRegistryHasBothVendors(t *testing.T) {
	t.Parallel()
	r := sandbox.Registry(sandbox.Options{})
	for _, name := range []string{"simbank", "simwallet"} {
		if v, err := r.Get(name); err != nil || v.Name() != name {
			t.Errorf("Registry.Get(%q) = %v, %v", name, v, err)
		}
	}
	if len(r.Names()) != 2 {
		t.Errorf("Registry names %v, want 2", r.Names())
	}
}

func TestInquire(t *testing.T) {
	t.Parallel()
	bank, _ := newBank(t)
	wallet, _ := newWallet(t)
	tests := []struct {
		name    string
		v       *sandbox.Vendor
		code    string
		account string
		want    string // holder name on success
		wantErr error
	}{
		{"inactive", bank, "bca", "1000000001", "", vendors.ErrAccountInactive},
		{"not resolved", bank, "bca", "1000000002", "", vendors.ErrAccountNotResolved},
		{"inquiry down", bank, "bca", "1000000006", "", vendors.ErrUnavailable},
		{"inactive on simwallet", wallet, "bri", "1000000001", "", vendors.ErrAccountInactive},
		{"submit-rejected number resolves", bank, "bca", "1000000003", "SANDBOX 0003", nil},
		{"fails-later number resolves", bank, "bca", "1000000004", "SANDBOX 0004", nil},
		{"stays-requested number resolves", bank, "bca", "1000000005", "SANDBOX 0005", nil},
		{"first-submit-lost number resolves", bank, "bca", "1000000007", "SANDBOX 0007", nil},
		{"ordinary", bank, "bca", "1234567890", "SANDBOX 7890", nil},
		{"ordinary other bank", bank, "maybank", "9876543210", "SANDBOX 3210", nil},
		{"uppercase bank code", bank, "BCA", "1234567890", "SANDBOX 7890", nil},
		{"mixed case bank code", bank, "Mandiri", "1234567890", "SANDBOX 7890", nil},
		{"surrounding whitespace trimmed", bank, "bca", "  1234567890 ", "SANDBOX 7890", nil},
		{"unknown bank", bank, "hsbc", "1234567890", "", vendors.ErrUnsupportedBank},
		{"empty bank", bank, "", "1234567890", "", vendors.ErrUnsupportedBank},
		{"e-wallet on simbank", bank, "gopay", "081234567890", "", vendors.ErrUnsupportedBank},
		{"bank not on simwallet", wallet, "cimb", "1234567890", "", vendors.ErrUnsupportedBank},
		{"letters", bank, "bca", "12345abcde", "", vendors.ErrAccountNotResolved},
		{"dash", bank, "bca", "1234-5678", "", vendors.ErrAccountNotResolved},
		{"inner space", bank, "bca", "1234 5678", "", vendors.ErrAccountNotResolved},
		{"plus sign", bank, "bca", "+1234567890", "", vendors.ErrAccountNotResolved},
		{"empty account", bank, "bca", "", "", vendors.ErrAccountNotResolved},
		{"blank account", bank, "bca", "   ", "", vendors.ErrAccountNotResolved},
		{"non-ASCII digits", bank, "bca", "١٢٣٤٥٦٧٨٩٠", "", vendors.ErrAccountNotResolved},

		{"e-wallet local phone", wallet, "gopay", "081234567890", "SANDBOX 7890", nil},
		{"e-wallet 10 digits", wallet, "dana", "0812345678", "SANDBOX 5678", nil},
		{"e-wallet 13 digits", wallet, "ovo", "0812345678901", "SANDBOX 8901", nil},
		{"e-wallet uppercase code", wallet, "ShopeePay", "081234567890", "SANDBOX 7890", nil},
		{"e-wallet 9 digits", wallet, "dana", "081234567", "", vendors.ErrAccountNotResolved},
		{"e-wallet 14 digits", wallet, "dana", "08123456789012", "", vendors.ErrAccountNotResolved},
		{"e-wallet country prefix", wallet, "gopay", "6281234567890", "", vendors.ErrAccountNotResolved},
		{"e-wallet +62", wallet, "gopay", "+6281234567890", "", vendors.ErrAccountNotResolved},
		{"e-wallet dash", wallet, "linkaja", "0812-3456", "", vendors.ErrAccountNotResolved},
		{"e-wallet dashes full length", wallet, "linkaja", "0812-3456-7890", "", vendors.ErrAccountNotResolved},
		{"e-wallet spaces inside", wallet, "ovo", "0812 3456 7890", "", vendors.ErrAccountNotResolved},
		{"e-wallet magic number lacks leading 0", wallet, "dana", "1000000001", "", vendors.ErrAccountNotResolved},
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

func submit(v *sandbox.Vendor, ref, code, account string, tt models.TransferType, amount models.Amount) (vendors.PayoutResult, error) {
	return v.Submit(context.Background(), vendors.Payout{
		Reference: ref, BankCode: code, AccountNo: account, TransferType: tt, Amount: amount,
	})
}

func TestSubmitRejections(t *testing.T) {
	t.Parallel()
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
		{"ordinary", false, "bca", "1234567890", models.BIFAST, models.Rupiah(97_500), false},
	}
	for i, tt := range tests {
		var v *sandbox.Vendor
		if tt.wallet {
			v, _ = newWallet(t)
		} else {
			v, _ = newBank(t)
		}
		ref := fmt.Sprintf("ref-%d", i)
		res, err := submit(v, ref, tt.code, tt.account, tt.tt, tt.amount)
		if tt.rejected {
			if !errors.Is(err, vendors.ErrRejected) {
				t.Errorf("%s: Submit = %+v, %v; want ErrRejected", tt.name, res, err)
			}
			if errors.Is(err, vendors.ErrUnavailable) {
				t.Errorf("%s: a rejection must not also be ErrUnavailable: %v", tt.name, err)
			}
			if n := v.PaidCount(ref); n != 0 {
				t.Errorf("%s: rejected payout counted as paid (%d)", tt.name, n)
			}
			if _, err := v.Status(context.Background(), ref); !errors.Is(err, vendors.ErrUnknownPayout) {
				t.Errorf("%s: Status of a rejected payout = %v, want ErrUnknownPayout", tt.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: Submit error %v, want accepted", tt.name, err)
			continue
		}
		if res.Reference != ref || res.Status != vendors.PayoutPending {
			t.Errorf("%s: Submit = %+v, want PENDING for %s", tt.name, res, ref)
		}
		if n := v.PaidCount(ref); n != 1 {
			t.Errorf("%s: PaidCount = %d, want 1", tt.name, n)
		}
	}
}

func TestSubmitSameReferencePaysOnce(t *testing.T) {
	t.Parallel()
	v, c := newBank(t)
	const ref = "disb-1"
	for i := 0; i < 5; i++ {
		res, err := submit(v, ref, "bca", "1234567890", models.BIFAST, models.Rupiah(97_500))
		if err != nil || res.Reference != ref {
			t.Fatalf("submit %d: %+v, %v", i, res, err)
		}
		c.Advance(500 * time.Millisecond)
	}
	if n := v.PaidCount(ref); n != 1 {
		t.Errorf("PaidCount after 5 submits = %d, want 1", n)
	}
	// The completion clock runs from the first acceptance, not the last submit.
	c.Advance(completeAfter)
	res, err := submit(v, ref, "bca", "1234567890", models.BIFAST, models.Rupiah(97_500))
	if err != nil || res.Status != vendors.PayoutSuccess {
		t.Errorf("resubmit after completion = %+v, %v; want the existing SUCCESS", res, err)
	}
	if v.PaidCount("other") != 0 {
		t.Error("PaidCount of an unknown reference is not 0")
	}
}

// A resubmit neither replaces the accepted payout nor restarts its clock.
func TestResubmitKeepsOriginalPayout(t *testing.T) {
	t.Parallel()
	v, c := newBank(t)
	const ref = "disb-keep"
	if _, err := submit(v, ref, "bca", "1234567890", models.BIFAST, models.Rupiah(97_500)); err != nil {
		t.Fatal(err)
	}
	c.Advance(completeAfter - time.Millisecond)
	// Same reference, other account: still the first payout.
	if _, err := submit(v, ref, "bca", "1000000005", models.BIFAST, models.Rupiah(10_000)); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Millisecond)
	st, err := v.Status(context.Background(), ref)
	if err != nil || st.Status != vendors.PayoutSuccess {
		t.Errorf("Status at first acceptance + CompleteAfter = %+v, %v; want SUCCESS of the first payout", st, err)
	}
	if n := v.PaidCount(ref); n != 1 {
		t.Errorf("PaidCount = %d, want 1", n)
	}
}

func TestSubmitConcurrentSameReference(t *testing.T) {
	t.Parallel()
	v, _ := newBank(t)
	const ref = "disb-concurrent"
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := submit(v, ref, "bca", "1234567890", models.BIFAST, models.Rupiah(97_500)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent submit: %v", err)
	}
	if n := v.PaidCount(ref); n != 1 {
		t.Errorf("PaidCount = %d, want 1", n)
	}
}

func TestSubmitFirstAnswerLost(t *testing.T) {
	t.Parallel()
	v, c := newBank(t)
	const ref = "disb-lost"
	_, err := submit(v, ref, "bca", "1000000007", models.BIFAST, models.Rupiah(97_500))
	if !errors.Is(err, vendors.ErrUnavailable) {
		t.Fatalf("first submit error %v, want ErrUnavailable", err)
	}
	if errors.Is(err, vendors.ErrRejected) {
		t.Fatalf("first submit of 1000000007 reported as a rejection: %v", err)
	}
	// The vendor did accept it.
	st, err := v.Status(context.Background(), ref)
	if err != nil || st.Reference != ref || st.Status != vendors.PayoutPending {
		t.Fatalf("Status after lost answer = %+v, %v; want PENDING", st, err)
	}
	if n := v.PaidCount(ref); n != 1 {
		t.Fatalf("PaidCount after lost answer = %d, want 1", n)
	}
	res, err := submit(v, ref, "bca", "1000000007", models.BIFAST, models.Rupiah(97_500))
	if err != nil || res.Reference != ref {
		t.Fatalf("second submit = %+v, %v; want the existing payout", res, err)
	}
	// Later submits keep answering; none pays again.
	if _, err := submit(v, ref, "bca", "1000000007", models.BIFAST, models.Rupiah(97_500)); err != nil {
		t.Fatalf("third submit: %v", err)
	}
	if n := v.PaidCount(ref); n != 1 {
		t.Errorf("PaidCount after retries = %d, want 1", n)
	}
	c.Advance(completeAfter)
	if st, err := v.Status(context.Background(), ref); err != nil || st.Status != vendors.PayoutSuccess {
		t.Errorf("1000000007 after CompleteAfter = %+v, %v; want SUCCESS", st, err)
	}
	// Another reference with the same account loses its first answer too.
	if _, err := submit(v, "disb-lost-2", "bca", "1000000007", models.BIFAST, models.Rupiah(97_500)); !errors.Is(err, vendors.ErrUnavailable) {
		t.Errorf("first submit of a second reference: %v, want ErrUnavailable", err)
	}
}

func TestStatusLifecycle(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		account    string
		wantStatus vendors.PayoutStatus
		wantReason bool
	}{
		{"ordinary", "1234567890", vendors.PayoutSuccess, false},
		{"fails later", "1000000004", vendors.PayoutFailed, true},
		{"stays requested", "1000000005", vendors.PayoutPending, false},
	}
	for _, tt := range tests {
		v, c := newBank(t)
		ref := "ref-" + tt.account
		if _, err := submit(v, ref, "bca", tt.account, models.BIFAST, models.Rupiah(97_500)); err != nil {
			t.Fatalf("%s: submit: %v", tt.name, err)
		}
		c.Advance(completeAfter - time.Millisecond)
		st, err := v.Status(context.Background(), ref)
		if err != nil || st.Status != vendors.PayoutPending || st.FailureReason != "" {
			t.Errorf("%s: Status just before CompleteAfter = %+v, %v; want PENDING", tt.name, st, err)
		}
		c.Advance(time.Millisecond)
		st, err = v.Status(context.Background(), ref)
		if err != nil || st.Status != tt.wantStatus || st.Reference != ref {
			t.Errorf("%s: Status at CompleteAfter = %+v, %v; want %s", tt.name, st, err, tt.wantStatus)
		}
		if (st.FailureReason != "") != tt.wantReason {
			t.Errorf("%s: FailureReason = %q, want reason: %v", tt.name, st.FailureReason, tt.wantReason)
		}
		// Final states stay final; PENDING for 1000000005 lasts forever.
		c.Advance(365 * 24 * time.Hour)
		st2, err := v.Status(context.Background(), ref)
		if err != nil || st2.Status != tt.wantStatus {
			t.Errorf("%s: Status a year later = %+v, %v; want %s", tt.name, st2, err, tt.wantStatus)
		}
	}
}

func TestCompleteByHand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		account string
		status  vendors.PayoutStatus
		reason  string
	}{
		{"1000000005", vendors.PayoutSuccess, ""},
		{"1000000005", vendors.PayoutFailed, "completed as failed by operator"},
		// Completing by hand overrides the automatic outcome, even early.
		{"1234567890", vendors.PayoutFailed, "manual"},
		{"1000000004", vendors.PayoutSuccess, ""},
	}
	for i, tt := range tests {
		v, c := newBank(t)
		ref := fmt.Sprintf("ref-%d", i)
		if _, err := submit(v, ref, "bca", tt.account, models.BIFAST, models.Rupiah(97_500)); err != nil {
			t.Fatal(err)
		}
		if tt.account == "1000000005" {
			c.Advance(24 * time.Hour)
			if st, _ := v.Status(context.Background(), ref); st.Status != vendors.PayoutPending {
				t.Errorf("%s before Complete: %s, want PENDING", tt.account, st.Status)
			}
		}
		if err := v.Complete(ref, tt.status, tt.reason); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		st, err := v.Status(context.Background(), ref)
		if err != nil || st.Status != tt.status || st.FailureReason != tt.reason {
			t.Errorf("%s completed as %s: Status = %+v, %v", tt.account, tt.status, st, err)
		}
		c.Advance(time.Hour)
		if st, _ := v.Status(context.Background(), ref); st.Status != tt.status {
			t.Errorf("%s: status changed after Complete to %s", tt.account, st.Status)
		}
		// A resubmit reports the completed payout and pays nothing more.
		res, err := submit(v, ref, "bca", tt.account, models.BIFAST, models.Rupiah(97_500))
		if err != nil || res.Status != tt.status || v.PaidCount(ref) != 1 {
			t.Errorf("%s: resubmit after Complete = %+v, %v, paid %d", tt.account, res, err, v.PaidCount(ref))
		}
	}
}

func TestStatusAndCompleteUnknownReference(t *testing.T) {
	t.Parallel()
	v, _ := newBank(t)
	if _, err := v.Status(context.Background(), "nope"); !errors.Is(err, vendors.ErrUnknownPayout) {
		t.Errorf("Status(unknown) = %v, want ErrUnknownPayout", err)
	}
	if err := v.Complete("nope", vendors.PayoutSuccess, ""); !errors.Is(err, vendors.ErrUnknownPayout) {
		t.Errorf("Complete(unknown) = %v, want ErrUnknownPayout", err)
	}
}

// Each vendor instance keeps its own payouts.
func TestVendorsDoNotSharePayouts(t *testing.T) {
	t.Parallel()
	a, _ := newBank(t)
	b, _ := newBank(t)
	if _, err := submit(a, "shared-ref", "bca", "1234567890", models.BIFAST, models.Rupiah(97_500)); err != nil {
		t.Fatal(err)
	}
	if b.PaidCount("shared-ref") != 0 {
		t.Error("a payout submitted to one vendor shows up in another")
	}
}
