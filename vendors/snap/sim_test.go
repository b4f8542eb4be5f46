package snap_test

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/sandbox/sandboxtest"
	"github.com/payoutd/payoutd/vendors/snap"
	"github.com/payoutd/payoutd/vendors/snap/snapsim"
)

const (
	clientKey    = "TEST-CLIENT-KEY"
	clientSecret = "TEST-CLIENT-SECRET-do-not-log"
	partnerID    = "TESTPARTNER"
	sourceAcct   = "8880001111"
	tokenTTL     = 15 * time.Minute
)

func testKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	b, err := os.ReadFile("testdata/TEST_ONLY_partner_private_key.pem")
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return k.(*rsa.PrivateKey)
}

type env struct {
	bank  *snapsim.Bank
	v     *snap.Vendor
	clock *sandboxtest.Clock
	url   string
	key   *rsa.PrivateKey
}

// newEnv starts a simulated bank and an adapter talking to it over a real
// socket, sharing one clock. mod may change the adapter's options.
func newEnv(t *testing.T, mod func(*snap.Options)) *env {
	t.Helper()
	key := testKey(t)
	clock := sandboxtest.NewClock()
	bank := snapsim.New(snapsim.Options{
		PartnerPublicKey: &key.PublicKey, ClientKey: clientKey, ClientSecret: clientSecret,
		PartnerID: partnerID, SourceAccountNo: sourceAcct, Now: clock.Now,
		TokenTTL: tokenTTL, CompleteAfter: sandboxtest.CompleteAfter,
	})
	srv := httptest.NewServer(bank)
	t.Cleanup(srv.Close)
	o := snap.Options{
		Bank: "bca", BaseURL: srv.URL, PartnerID: partnerID, ClientKey: clientKey, ClientSecret: clientSecret,
		ChannelID: "95221", PrivateKey: key, SourceAccountNo: sourceAcct, HTTPClient: srv.Client(), Now: clock.Now,
	}
	if mod != nil {
		mod(&o)
	}
	v, err := snap.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return &env{bank: bank, v: v, clock: clock, url: srv.URL, key: key}
}

func (e *env) submit(ref, account string, tt models.TransferType, amount models.Amount) (vendors.PayoutResult, error) {
	return e.v.Submit(context.Background(), vendors.Payout{Reference: ref, BankCode: "bri", AccountNo: account, TransferType: tt, Amount: amount})
}

func TestName(t *testing.T) {
	e := newEnv(t, nil)
	if e.v.Name() != "snap:bca" {
		t.Errorf("Name = %s", e.v.Name())
	}
	banks, _ := e.v.Banks(context.Background())
	if len(banks) != len(sandboxtest.AllBanks) {
		t.Errorf("%d banks, want the %d of the directory", len(banks), len(sandboxtest.AllBanks))
	}
}

func TestInquire(t *testing.T) {
	e := newEnv(t, nil)
	tests := []struct {
		code, account, want string
		err                 error
	}{
		{"bca", "1234567890", "SANDBOX 7890", nil},
		{"BRI", " 9876543210 ", "SANDBOX 3210", nil},
		{"bca", sandbox.AccountInactive, "", models.ErrAccountInactive},
		{"bca", sandbox.AccountUnresolved, "", models.ErrAccountNotResolved},
		{"bca", sandbox.AccountInquiryDown, "", vendors.ErrUnavailable},
		{"bca", "12ab567890", "", models.ErrAccountNotResolved},
		{"bca", "", "", models.ErrAccountNotResolved},
		{"hsbc", "1234567890", "", models.ErrUnsupportedBank},
		{"gopay", "081234567890", "", models.ErrUnsupportedBank},
	}
	for _, tt := range tests {
		acc, err := e.v.Inquire(context.Background(), vendors.InquiryRequest{BankCode: tt.code, AccountNo: tt.account, TransferType: models.BIFAST})
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("Inquire(%s, %q) = %+v, %v; want %v", tt.code, tt.account, acc, err, tt.err)
			}
			continue
		}
		if err != nil || acc.HolderName != tt.want {
			t.Errorf("Inquire(%s, %q) = %q, %v; want %q", tt.code, tt.account, acc.HolderName, err, tt.want)
		}
	}
}

// Each magic account through Submit and Status to its final state.
func TestTransferFinalStates(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	tests := []struct {
		account   string
		submitErr error
		final     vendors.PayoutStatus // after CompleteAfter
		later     vendors.PayoutStatus // after 2×CompleteAfter
	}{
		{"1234567890", nil, vendors.PayoutSuccess, vendors.PayoutSuccess},
		{sandbox.AccountFailsLater, nil, vendors.PayoutFailed, vendors.PayoutFailed},
		{sandbox.AccountStaysRequested, nil, vendors.PayoutPending, vendors.PayoutPending},
		{sandbox.AccountReturnedLater, nil, vendors.PayoutSuccess, vendors.PayoutReturned},
		{sandbox.AccountSubmitRejected, vendors.ErrRejected, "", ""},
		// The adapter inquires before it transfers (beneficiaryAccountName
		// is mandatory), so these never reach the transfer.
		{sandbox.AccountInactive, vendors.ErrRejected, "", ""},
		{sandbox.AccountUnresolved, vendors.ErrRejected, "", ""},
		{sandbox.AccountInquiryDown, vendors.ErrUnavailable, "", ""},
	}
	for _, tt := range tests {
		ref := "final-" + tt.account
		res, err := e.submit(ref, tt.account, models.BIFAST, models.Rupiah(97_500))
		if tt.submitErr != nil {
			if !errors.Is(err, tt.submitErr) {
				t.Errorf("%s: Submit = %+v, %v; want %v", tt.account, res, err, tt.submitErr)
			}
			if errors.Is(err, vendors.ErrRejected) && errors.Is(err, vendors.ErrUnavailable) {
				t.Errorf("%s: both rejected and unavailable: %v", tt.account, err)
			}
			if _, err := e.v.Status(ctx, ref); !errors.Is(err, vendors.ErrUnknownPayout) {
				t.Errorf("%s: Status after a refused submit = %v, want ErrUnknownPayout", tt.account, err)
			}
			continue
		}
		if err != nil || res.Status != vendors.PayoutPending || res.Reference != ref {
			t.Errorf("%s: Submit = %+v, %v; want PENDING", tt.account, res, err)
		}
		if st, err := e.v.Status(ctx, ref); err != nil || st.Status != vendors.PayoutPending {
			t.Errorf("%s: Status at once = %+v, %v", tt.account, st, err)
		}
	}
	for step, pick := range []func(a, b vendors.PayoutStatus) vendors.PayoutStatus{
		func(a, _ vendors.PayoutStatus) vendors.PayoutStatus { return a },
		func(_, b vendors.PayoutStatus) vendors.PayoutStatus { return b },
	} {
		e.clock.Advance(sandboxtest.CompleteAfter)
		for _, tt := range tests {
			if tt.submitErr != nil {
				continue
			}
			want := pick(tt.final, tt.later)
			st, err := e.v.Status(ctx, "final-"+tt.account)
			if err != nil || st.Status != want {
				t.Errorf("step %d %s: Status = %+v, %v; want %s", step, tt.account, st, err, want)
			}
			if (want == vendors.PayoutFailed || want == vendors.PayoutReturned) && st.FailureReason == "" {
				t.Errorf("%s: %s without a reason", tt.account, want)
			}
		}
	}
	if n := e.bank.SubmitCalls("final-1234567890"); n != 1 {
		t.Errorf("SubmitCalls = %d", n)
	}
}

func TestCapsAndValidation(t *testing.T) {
	e := newEnv(t, nil)
	tests := []struct {
		name   string
		tt     models.TransferType
		amount models.Amount
		err    error
	}{
		{"BIFAST at cap", models.BIFAST, sandbox.BIFASTCap, nil},
		{"BIFAST above cap", models.BIFAST, sandbox.BIFASTCap + models.Rupiah(1), vendors.ErrRejected},
		{"RTOL at cap", models.RTOL, sandbox.RTOLDefaultCap, nil},
		{"RTOL above cap", models.RTOL, sandbox.RTOLDefaultCap + models.Rupiah(1), vendors.ErrRejected},
		{"sub-cent amount", models.BIFAST, models.Amount(1), vendors.ErrRejected},
		{"unknown network", "SKN", models.Rupiah(1), vendors.ErrRejected},
	}
	for i, tt := range tests {
		_, err := e.submit(fmt.Sprintf("cap-%d", i), "1234567890", tt.tt, tt.amount)
		if (tt.err == nil) != (err == nil) || (tt.err != nil && !errors.Is(err, tt.err)) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.err)
		}
	}
}

// 1000000007: the bank accepts the first transfer and drops the
// connection. The submit is unavailable, the status inquiry finds it, a
// resubmit the same day (409xx00, same derived X-EXTERNAL-ID) and the next
// day (409xx01, duplicate partnerReferenceNo) are answered by status
// inquiries; one transfer exists throughout.
func TestLostAnswerResolvedByStatus(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	e.bank.SetSourceBalance(models.Rupiah(150_000))
	const ref = "disb-lost"
	_, err := e.submit(ref, sandbox.AccountFirstSubmitLost, models.BIFAST, models.Rupiah(97_500))
	if !errors.Is(err, vendors.ErrUnavailable) || errors.Is(err, vendors.ErrRejected) {
		t.Fatalf("first submit: %v, want only ErrUnavailable", err)
	}
	if st, err := e.v.Status(ctx, ref); err != nil || st.Status != vendors.PayoutPending {
		t.Fatalf("Status after the lost answer = %+v, %v", st, err)
	}
	res, err := e.submit(ref, sandbox.AccountFirstSubmitLost, models.BIFAST, models.Rupiah(97_500))
	if err != nil || res.Status != vendors.PayoutPending {
		t.Fatalf("resubmit same day = %+v, %v; want the existing PENDING", res, err)
	}
	e.clock.Advance(24 * time.Hour)
	res, err = e.submit(ref, sandbox.AccountFirstSubmitLost, models.BIFAST, models.Rupiah(97_500))
	if err != nil || res.Status != vendors.PayoutSuccess {
		t.Fatalf("resubmit next day = %+v, %v; want SUCCESS of the one transfer", res, err)
	}
	if n := e.bank.SubmitCalls(ref); n != 3 {
		t.Errorf("transfer requests = %d, want 3 (one accepted, two duplicates)", n)
	}
	// Paid once: the balance covers one 97,500 transfer, not two.
	if _, err := e.submit("other", "1234567890", models.BIFAST, models.Rupiah(52_500)); err != nil {
		t.Errorf("the balance left after one payment should cover 52,500: %v", err)
	}
}

func TestInsufficientFunds(t *testing.T) {
	e := newEnv(t, nil)
	e.bank.SetSourceBalance(models.Rupiah(10_000))
	_, err := e.submit("poor", "1234567890", models.BIFAST, models.Rupiah(97_500))
	if !errors.Is(err, vendors.ErrRejected) || !errors.Is(err, snap.ErrSourceInsufficientFunds) || errors.Is(err, vendors.ErrUnavailable) {
		t.Errorf("Submit = %v, want ErrRejected wrapping ErrSourceInsufficientFunds", err)
	}
	if !strings.Contains(err.Error(), "4031814") {
		t.Errorf("error does not name the code: %v", err)
	}
}

// Tokens: fetched once, reused, refreshed before expiry, and after the
// bank forgets them (401xx01) refreshed once for many concurrent callers.
func TestTokenLifecycle(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	inquire := func() error {
		_, err := e.v.Inquire(ctx, vendors.InquiryRequest{BankCode: "bca", AccountNo: "1234567890"})
		return err
	}
	for i := 0; i < 3; i++ {
		if err := inquire(); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.bank.TokenCalls(); n != 1 {
		t.Fatalf("token calls after 3 inquiries = %d, want 1", n)
	}
	// Near expiry the adapter renews before the bank would refuse.
	e.clock.Advance(tokenTTL - 20*time.Second)
	if err := inquire(); err != nil {
		t.Fatal(err)
	}
	if n := e.bank.TokenCalls(); n != 2 {
		t.Fatalf("token calls after nearing expiry = %d, want 2", n)
	}
	e.bank.RevokeTokens()
	const n = 32
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- inquire()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent inquiry after revocation: %v", err)
		}
	}
	if got := e.bank.TokenCalls(); got != 3 {
		t.Errorf("token calls after revocation with %d concurrent callers = %d, want 3", n, got)
	}
}

// Concurrent first calls share one token fetch.
func TestTokenNoStampede(t *testing.T) {
	e := newEnv(t, nil)
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.v.Inquire(context.Background(), vendors.InquiryRequest{BankCode: "bca", AccountNo: "1234567890"}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := e.bank.TokenCalls(); n != 1 {
		t.Errorf("token calls = %d, want 1", n)
	}
}

func TestWrongCredentialsCaughtBySimulator(t *testing.T) {
	other, err := rsa.GenerateKey(testRand{}, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		mod  func(*snap.Options)
		code string
	}{
		{"wrong private key", func(o *snap.Options) { o.PrivateKey = other }, "4017300"},
		{"wrong client secret", func(o *snap.Options) { o.ClientSecret = "not-the-secret" }, "4011600"},
		{"wrong partner id", func(o *snap.Options) { o.PartnerID = "SOMEONE" }, "4011600"},
		{"wrong client key", func(o *snap.Options) { o.ClientKey = "OTHER" }, "4017300"},
	}
	for _, tt := range tests {
		e := newEnv(t, tt.mod)
		_, err := e.v.Inquire(context.Background(), vendors.InquiryRequest{BankCode: "bca", AccountNo: "1234567890"})
		if !errors.Is(err, vendors.ErrUnavailable) || !errors.Is(err, snap.ErrAuth) || !strings.Contains(err.Error(), tt.code) {
			t.Errorf("%s: %v; want ErrUnavailable+ErrAuth naming %s", tt.name, err, tt.code)
		}
		if strings.Contains(err.Error(), clientSecret) || strings.Contains(err.Error(), "simtoken") {
			t.Errorf("%s: error leaks a secret: %v", tt.name, err)
		}
	}
}

// A clock far from the bank's: the bank refuses the timestamp.
func TestClockSkew(t *testing.T) {
	var skewed *sandboxtest.Clock
	e := newEnv(t, func(o *snap.Options) {
		skewed = sandboxtest.NewClock()
		skewed.Advance(10 * time.Minute)
		o.Now = skewed.Now
	})
	_, err := e.v.Inquire(context.Background(), vendors.InquiryRequest{BankCode: "bca", AccountNo: "1234567890"})
	if !errors.Is(err, vendors.ErrUnavailable) || !strings.Contains(err.Error(), "4007301") {
		t.Errorf("skewed clock: %v, want 4007301", err)
	}
}

func TestErrorsDoNotLeakAccountNumbers(t *testing.T) {
	e := newEnv(t, nil)
	for _, acct := range []string{sandbox.AccountInactive, sandbox.AccountUnresolved, sandbox.AccountInquiryDown} {
		_, err := e.v.Inquire(context.Background(), vendors.InquiryRequest{BankCode: "bca", AccountNo: acct})
		if err == nil || strings.Contains(err.Error(), acct) || strings.Contains(err.Error(), clientSecret) {
			t.Errorf("%v", err)
		}
	}
}

func TestPrintingHidesSecrets(t *testing.T) {
	e := newEnv(t, nil)
	if _, err := e.v.Inquire(context.Background(), vendors.InquiryRequest{BankCode: "bca", AccountNo: "1234567890"}); err != nil {
		t.Fatal(err)
	}
	o := snap.Options{Bank: "bca", ClientSecret: clientSecret, PrivateKey: e.key, SourceAccountNo: sourceAcct}
	for _, s := range []string{fmt.Sprint(o), fmt.Sprintf("%+v", o), fmt.Sprintf("%v", e.v), fmt.Sprintf("%+v", e.v)} {
		if strings.Contains(s, clientSecret) || strings.Contains(s, "simtoken") || strings.Contains(s, sourceAcct) || strings.Contains(s, e.key.D.String()[:12]) {
			t.Errorf("printed secrets: %s", s)
		}
	}
}

// The simulator's notifications: one per final status (00, then 04 for a
// return), signed so that the adapter's ParseCallback accepts them, sent
// again until the receiver answers 2xx, never again once delivered.
func TestSimulatorNotifications(t *testing.T) {
	type note struct {
		hdr  http.Header
		body []byte
	}
	var mu sync.Mutex
	var notes []note
	refuse := true
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path != snap.CallbackPath("bca") {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		if refuse {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		notes = append(notes, note{r.Header.Clone(), b})
	}))
	defer recv.Close()
	key := testKey(t)
	clock := sandboxtest.NewClock()
	bank := snapsim.New(snapsim.Options{
		PartnerPublicKey: &key.PublicKey, ClientKey: clientKey, ClientSecret: clientSecret, PartnerID: partnerID,
		SourceAccountNo: sourceAcct, Now: clock.Now, CompleteAfter: sandboxtest.CompleteAfter,
		BankPrivateKey: key, CallbackURL: recv.URL + snap.CallbackPath("bca"),
	})
	srv := httptest.NewServer(bank)
	defer srv.Close()
	v, err := snap.New(snap.Options{Bank: "bca", BaseURL: srv.URL, PartnerID: partnerID, ClientKey: clientKey, ClientSecret: clientSecret,
		ChannelID: "95221", PrivateKey: key, BankPublicKey: &key.PublicKey, Notifications: true, SourceAccountNo: sourceAcct, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, acct := range []string{"1234567890", sandbox.AccountFailsLater, sandbox.AccountReturnedLater, sandbox.AccountStaysRequested} {
		if _, err := v.Submit(ctx, vendors.Payout{Reference: "n-" + acct, BankCode: "bri", AccountNo: acct, TransferType: models.BIFAST, Amount: models.Rupiah(10_000)}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := bank.Flush(ctx); n != 0 || err != nil {
		t.Fatalf("nothing final yet: Flush = %d, %v", n, err)
	}
	clock.Advance(sandboxtest.CompleteAfter)
	if n, err := bank.Flush(ctx); n != 0 || err == nil {
		t.Fatalf("receiver down: Flush = %d, %v", n, err)
	}
	mu.Lock()
	refuse = false
	mu.Unlock()
	if n, err := bank.Flush(ctx); n != 3 || err != nil {
		t.Fatalf("retried: Flush = %d, %v; want 3 (success, failure, paid-then-returned)", n, err)
	}
	if n, _ := bank.Flush(ctx); n != 0 {
		t.Fatalf("delivered twice: %d", n)
	}
	clock.Advance(sandboxtest.CompleteAfter) // 1000000008 turns 04
	if n, err := bank.Flush(ctx); n != 1 || err != nil {
		t.Fatalf("return: Flush = %d, %v", n, err)
	}
	want := map[string]vendors.PayoutStatus{"n-1234567890": vendors.PayoutSuccess, "n-" + sandbox.AccountFailsLater: vendors.PayoutFailed}
	got := map[string][]vendors.PayoutStatus{}
	mu.Lock()
	defer mu.Unlock()
	for _, n := range notes {
		res, err := v.ParseCallback(snap.CallbackPath("bca"), n.hdr, n.body, clock.Now())
		if err != nil {
			t.Fatalf("ParseCallback: %v", err)
		}
		got[res.Reference] = append(got[res.Reference], res.Status)
		if strings.Contains(string(n.body), "responseCode") {
			t.Errorf("a notification is a request, not an answer: %s", n.body)
		}
	}
	for ref, st := range want {
		if len(got[ref]) != 1 || got[ref][0] != st {
			t.Errorf("%s: notified %v, want [%s]", ref, got[ref], st)
		}
	}
	if r := got["n-"+sandbox.AccountReturnedLater]; len(r) != 2 || r[0] != vendors.PayoutSuccess || r[1] != vendors.PayoutReturned {
		t.Errorf("returned: notified %v, want SUCCESS then RETURNED", r)
	}
	// Another clock far ahead: the same notification is stale.
	if _, err := v.ParseCallback(snap.CallbackPath("bca"), notes[0].hdr, notes[0].body, clock.Now().Add(time.Hour)); !errors.Is(err, vendors.ErrInvalidCallback) {
		t.Errorf("stale notification: %v", err)
	}
}
