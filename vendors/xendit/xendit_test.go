package xendit_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/sandbox/sandboxtest"
	"github.com/payoutd/payoutd/vendors/xendit"
	"github.com/payoutd/payoutd/vendors/xendit/xenditsim"
)

const (
	secretKey     = "xnd_development_0123456789abcdefTESTKEY"
	callbackToken = "verification-token-for-tests-0123456789"
	completeAfter = 2 * time.Second
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// env is the adapter over the simulator, with a webhook receiver.
type env struct {
	sim   *xenditsim.Server
	v     *xendit.Vendor
	clock *sandboxtest.Clock
	url   string

	mu       sync.Mutex
	webhooks []received
}

type received struct {
	header http.Header
	body   []byte
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{clock: sandboxtest.NewClock()}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		e.webhooks = append(e.webhooks, received{r.Header.Clone(), body})
		e.mu.Unlock()
	}))
	t.Cleanup(hook.Close)
	sim, err := xenditsim.New(xenditsim.Options{
		SecretKey: secretKey, CallbackToken: callbackToken, CallbackURL: hook.URL,
		CompleteAfter: completeAfter, Now: e.clock.Now, Logger: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(sim)
	t.Cleanup(ts.Close)
	e.sim, e.url = sim, ts.URL
	e.v = newVendor(t, ts.URL, secretKey, e.clock)
	return e
}

func newVendor(t *testing.T, base, key string, c *sandboxtest.Clock) *xendit.Vendor {
	t.Helper()
	v, err := xendit.New(xendit.Options{
		BaseURL: base, SecretKey: key, CallbackToken: callbackToken,
		RetryBackoff: time.Millisecond, Timeout: 5 * time.Second, Now: c.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func payout(ref, code, account string, amount models.Amount) vendors.Payout {
	return vendors.Payout{HolderName: "Budi Santoso", Reference: ref, BankCode: code, AccountNo: account, TransferType: models.BIFAST, Amount: amount}
}

func (e *env) submit(ref, account string) (vendors.PayoutResult, error) {
	return e.v.Submit(context.Background(), payout(ref, "bca", account, models.Rupiah(97_500)))
}

func (e *env) status(t *testing.T, ref string) vendors.PayoutResult {
	t.Helper()
	r, err := e.v.Status(context.Background(), ref)
	if err != nil {
		t.Fatalf("Status(%s): %v", ref, err)
	}
	return r
}

func TestNewRefusesBadSecrets(t *testing.T) {
	if _, err := xendit.New(xendit.Options{}); err == nil {
		t.Error("New without a secret key accepted")
	}
	if _, err := xendit.New(xendit.Options{SecretKey: "k", CallbackToken: "k"}); err == nil {
		t.Error("New with the callback token equal to the secret key accepted")
	}
	v, err := xendit.New(xendit.Options{SecretKey: secretKey, CallbackToken: callbackToken})
	if err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprintf("%v %+v", v, v); strings.Contains(s, secretKey) || strings.Contains(s, callbackToken) {
		t.Errorf("formatting the vendor shows a secret: %s", s)
	}
	if v.Name() != "xendit" {
		t.Errorf("Name = %q", v.Name())
	}
}

// Every Xendit status maps as documented.
func TestStatusMapping(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		xendit, code string
		want         vendors.PayoutStatus
		reason       string
	}{
		{"ACCEPTED", "", vendors.PayoutPending, ""},
		{"REQUESTED", "", vendors.PayoutPending, ""},
		{"PENDING_COMPLIANCE_ASSESSMENT", "", vendors.PayoutPending, ""},
		{"SUCCEEDED", "", vendors.PayoutSuccess, ""},
		{"FAILED", "INSUFFICIENT_BALANCE", vendors.PayoutFailed, "INSUFFICIENT_BALANCE"},
		{"FAILED", "", vendors.PayoutFailed, "FAILED"},
		{"CANCELLED", "", vendors.PayoutFailed, "CANCELLED"},
		{"COMPLIANCE_REJECTED", "", vendors.PayoutFailed, "COMPLIANCE_REJECTED"},
		{"REVERSED", "", vendors.PayoutReturned, xendit.ReversedReason},
		{"REVERSED", "INVALID_DESTINATION", vendors.PayoutReturned, "INVALID_DESTINATION"},
	}
	for i, tt := range tests {
		ref := fmt.Sprintf("map-%d", i)
		if _, err := e.submit(ref, sandbox.AccountStaysRequested); err != nil {
			t.Fatal(err)
		}
		if err := e.sim.Complete(ref, tt.xendit, tt.code); err != nil {
			t.Fatal(err)
		}
		got := e.status(t, ref)
		if got.Status != tt.want || got.FailureReason != tt.reason || got.Reference != ref {
			t.Errorf("%s %s: %+v, want %s %q", tt.xendit, tt.code, got, tt.want, tt.reason)
		}
	}
	// A status Xendit does not document for bank payouts: outcome unknown.
	if _, err := e.submit("cash", sandbox.AccountStaysRequested); err != nil {
		t.Fatal(err)
	}
	e.sim.Complete("cash", "LOCKED", "")
	if _, err := e.v.Status(context.Background(), "cash"); !errors.Is(err, vendors.ErrUnavailable) {
		t.Errorf("LOCKED: %v, want ErrUnavailable", err)
	}
}

// The magic accounts over time, from submit to their final status.
func TestMagicAccounts(t *testing.T) {
	ctx := context.Background()
	type step struct {
		at     time.Duration
		status vendors.PayoutStatus
		reason string
	}
	tests := []struct {
		account   string
		submitErr error
		steps     []step
	}{
		{sandbox.AccountInactive, nil, []step{{0, vendors.PayoutPending, ""}, {completeAfter, vendors.PayoutFailed, xenditsim.FailureInvalidDestination}}},
		{sandbox.AccountUnresolved, vendors.ErrRejected, nil},
		{sandbox.AccountSubmitRejected, vendors.ErrRejected, nil},
		{sandbox.AccountFailsLater, nil, []step{{completeAfter - time.Millisecond, vendors.PayoutPending, ""}, {completeAfter, vendors.PayoutFailed, xenditsim.FailureRejectedByChannel}}},
		{sandbox.AccountStaysRequested, nil, []step{{365 * 24 * time.Hour, vendors.PayoutPending, ""}}},
		{sandbox.AccountInquiryDown, nil, []step{{completeAfter, vendors.PayoutPending, ""}, {2 * completeAfter, vendors.PayoutSuccess, ""}}},
		{sandbox.AccountFirstSubmitLost, vendors.ErrUnavailable, []step{{0, vendors.PayoutPending, ""}, {completeAfter, vendors.PayoutSuccess, ""}}},
		{sandbox.AccountReturnedLater, nil, []step{{completeAfter, vendors.PayoutSuccess, ""}, {2 * completeAfter, vendors.PayoutReturned, xendit.ReversedReason}}},
		{xenditsim.AccountStaysAccepted, nil, []step{{365 * 24 * time.Hour, vendors.PayoutPending, ""}}},
		{"1234567890", nil, []step{{completeAfter - time.Millisecond, vendors.PayoutPending, ""}, {completeAfter, vendors.PayoutSuccess, ""}, {365 * 24 * time.Hour, vendors.PayoutSuccess, ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.account, func(t *testing.T) {
			e := newEnv(t)
			ref := "magic-" + tt.account
			res, err := e.submit(ref, tt.account)
			switch {
			case tt.submitErr != nil && !errors.Is(err, tt.submitErr):
				t.Fatalf("Submit: %+v, %v; want %v", res, err, tt.submitErr)
			case tt.submitErr == nil && (err != nil || res.Status != vendors.PayoutPending || res.Reference != ref):
				t.Fatalf("Submit: %+v, %v; want PENDING", res, err)
			}
			if errors.Is(tt.submitErr, vendors.ErrRejected) {
				if errors.Is(err, vendors.ErrUnavailable) {
					t.Errorf("a rejection is also ErrUnavailable: %v", err)
				}
				if _, err := e.v.Status(ctx, ref); !errors.Is(err, vendors.ErrUnknownPayout) {
					t.Errorf("Status of a rejected payout: %v, want ErrUnknownPayout", err)
				}
				return
			}
			start := e.clock.Now()
			for _, s := range tt.steps {
				e.clock.Advance(start.Add(s.at).Sub(e.clock.Now()))
				got := e.status(t, ref)
				if got.Status != s.status || got.FailureReason != s.reason {
					t.Errorf("at %v: %+v, want %s %q", s.at, got, s.status, s.reason)
				}
			}
			if n := e.sim.Payouts(ref); n != 1 {
				t.Errorf("%d payouts created, want 1", n)
			}
		})
	}
}

// Submits refused before or by Xendit: ErrRejected, never ErrUnavailable,
// and nothing created.
func TestSubmitRejections(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name   string
		p      vendors.Payout
		inner  error
		code   string
		called bool
	}{
		{"unknown bank", payout("r1", "hsbc", "1234567890", models.Rupiah(97_500)), models.ErrUnsupportedBank, "", false},
		{"fraction of a rupiah", payout("r2", "bca", "1234567890", models.Rupiah(97_500)+1), xendit.ErrFractionalAmount, "", false},
		{"half a rupiah", payout("r3", "bca", "1234567890", models.Rupiah(1)/2), xendit.ErrFractionalAmount, "", false},
		{"zero", payout("r4", "bca", "1234567890", 0), nil, "", false},
		{"RTOL to an e-wallet", vendors.Payout{HolderName: "Budi Santoso", Reference: "r5", BankCode: "dana", AccountNo: "081234567890", TransferType: models.RTOL, Amount: models.Rupiah(97_500)}, nil, "", false},
		{"unknown transfer type", vendors.Payout{HolderName: "Budi Santoso", Reference: "r6", BankCode: "bca", AccountNo: "1234567890", TransferType: "SKN", Amount: models.Rupiah(97_500)}, nil, "", false},
		{"closed account", payout("r7", "bca", sandbox.AccountSubmitRejected, models.Rupiah(97_500)), nil, xendit.CodeRecipientAccountNumber, true},
		{"letters in the account", payout("r8", "bca", "12345abcde", models.Rupiah(97_500)), nil, xendit.CodeRecipientAccountNumber, true},
		{"e-wallet not a phone number", payout("r9", "gopay", "6281234567890", models.Rupiah(97_500)), nil, xendit.CodeRecipientAccountNumber, true},
		{"below the channel minimum", payout("r10", "bca", "1234567890", models.Rupiah(9_999)), nil, xendit.CodeRecipientAmount, true},
		{"above the channel maximum", payout("r11", "bca", "1234567890", models.Rupiah(250_000_001)), nil, xendit.CodeMaximumTransferLimit, true},
	}
	for _, tt := range tests {
		res, err := e.v.Submit(context.Background(), tt.p)
		if !errors.Is(err, vendors.ErrRejected) || errors.Is(err, vendors.ErrUnavailable) {
			t.Errorf("%s: %+v, %v; want only ErrRejected", tt.name, res, err)
			continue
		}
		if tt.inner != nil && !errors.Is(err, tt.inner) {
			t.Errorf("%s: %v, want it to wrap %v", tt.name, err, tt.inner)
		}
		var apiErr *xendit.APIError
		if tt.code != "" && (!errors.As(err, &apiErr) || apiErr.Code != tt.code) {
			t.Errorf("%s: %v, want Xendit code %s", tt.name, err, tt.code)
		}
		if tt.code != "" && !strings.Contains(err.Error(), tt.code) {
			t.Errorf("%s: the reason %q does not name the code", tt.name, err)
		}
		if n := e.sim.Payouts(tt.p.Reference); n != 0 {
			t.Errorf("%s: %d payouts created", tt.name, n)
		}
	}
	// At the limits: accepted.
	for i, a := range []models.Amount{models.Rupiah(10_000), models.Rupiah(250_000_000)} {
		if _, err := e.v.Submit(context.Background(), payout(fmt.Sprintf("edge-%d", i), "bca", "1234567890", a)); err != nil {
			t.Errorf("amount %s: %v", a, err)
		}
	}
}

// Every error answer maps to a rejection, an unknown outcome, an unknown
// payout or a configuration error.
func TestErrorMapping(t *testing.T) {
	tests := []struct {
		status int
		body   string
		want   error
		not    error
	}{
		{400, `{"error_code":"API_VALIDATION_ERROR","message":"bad"}`, vendors.ErrRejected, vendors.ErrUnavailable},
		{400, `{"error_code":"INVALID_JSON_FORMAT","message":"bad"}`, vendors.ErrRejected, vendors.ErrUnavailable},
		{400, `{"error_code":"CHANNEL_CODE_NOT_SUPPORTED_ERROR","message":"no"}`, vendors.ErrRejected, vendors.ErrUnavailable},
		{400, `{"error_code":"CHANNEL_CODE_NOT_SUPPORTED","message":"no"}`, vendors.ErrRejected, vendors.ErrUnavailable},
		{400, `{"error_code":"RECIPIENT_ACCOUNT_NUMBER_ERROR","message":"no"}`, vendors.ErrRejected, vendors.ErrUnavailable},
		{400, `{"error_code":"RECIPIENT_AMOUNT_ERROR","message":"no"}`, vendors.ErrRejected, vendors.ErrUnavailable},
		{400, `{"error_code":"MAXIMUM_TRANSFER_LIMIT_ERROR","message":"no"}`, vendors.ErrRejected, vendors.ErrUnavailable},
		{400, `{"error_code":"INSUFFICIENT_BALANCE","message":"no"}`, vendors.ErrRejected, vendors.ErrUnavailable},
		{401, `{"error_code":"INVALID_API_KEY","error_message":"API key format is invalid"}`, xendit.ErrConfiguration, vendors.ErrRejected},
		{403, `{"error_code":"REQUEST_FORBIDDEN_ERROR","message":"no permission"}`, xendit.ErrConfiguration, vendors.ErrRejected},
		{401, `not json`, xendit.ErrConfiguration, vendors.ErrRejected},
		{429, `{"error_code":"RATE_LIMIT_EXCEEDED","message":"slow down"}`, vendors.ErrUnavailable, vendors.ErrRejected},
		{500, `{"error_code":"SERVER_ERROR","message":"oops"}`, vendors.ErrUnavailable, vendors.ErrRejected},
		{503, `upstream down`, vendors.ErrUnavailable, vendors.ErrRejected},
		{400, `{"error_code":"SOMETHING_NEW","message":"?"}`, vendors.ErrUnavailable, vendors.ErrRejected},
		{200, `{"id":`, vendors.ErrUnavailable, vendors.ErrRejected},
		{200, `{"id":"disb-1","reference_id":"other","status":"ACCEPTED"}`, vendors.ErrUnavailable, vendors.ErrRejected},
		// A 3xx is not Xendit's answer (it never redirects): its body is
		// no proof that nothing was created.
		{307, `{"error_code":"API_VALIDATION_ERROR","message":"bad"}`, vendors.ErrUnavailable, vendors.ErrRejected},
		{302, `{"error_code":"INVALID_API_KEY","message":"no"}`, vendors.ErrUnavailable, xendit.ErrConfiguration},
	}
	for _, tt := range tests {
		var calls int
		var mu sync.Mutex
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			calls++
			mu.Unlock()
			w.WriteHeader(tt.status)
			io.WriteString(w, tt.body)
		}))
		v := newVendor(t, ts.URL, secretKey, sandboxtest.NewClock())
		_, err := v.Submit(context.Background(), payout("ref", "bca", "1234567890", models.Rupiah(97_500)))
		ts.Close()
		if !errors.Is(err, tt.want) || errors.Is(err, tt.not) {
			t.Errorf("HTTP %d %s: %v; want %v and not %v", tt.status, tt.body, err, tt.want, tt.not)
		}
		if calls != 1 {
			t.Errorf("HTTP %d %s: submit sent %d times, want once", tt.status, tt.body, calls)
		}
		if strings.Contains(fmt.Sprint(err), secretKey) {
			t.Errorf("error shows the secret key: %v", err)
		}
	}
	// Reads are retried on 5xx and 429, and a 404 is an unknown payout.
	var calls int
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer ts.Close()
	v := newVendor(t, ts.URL, secretKey, sandboxtest.NewClock())
	if _, err := v.Status(context.Background(), "ref"); !errors.Is(err, vendors.ErrUnavailable) || calls != 3 {
		t.Errorf("Status over 503: %v after %d calls; want ErrUnavailable after 3", err, calls)
	}
}

// A timeout is an unknown outcome.
func TestTimeoutIsUnavailable(t *testing.T) {
	block := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	defer ts.Close()
	defer close(block)
	v, err := xendit.New(xendit.Options{BaseURL: ts.URL, SecretKey: secretKey, Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Submit(context.Background(), payout("ref", "bca", "1234567890", models.Rupiah(97_500))); !errors.Is(err, vendors.ErrUnavailable) || errors.Is(err, vendors.ErrRejected) {
		t.Errorf("timeout: %v, want ErrUnavailable only", err)
	}
}

func TestWrongKeyIsConfiguration(t *testing.T) {
	e := newEnv(t)
	v := newVendor(t, e.url, "xnd_development_wrong", e.clock)
	if _, err := v.Submit(context.Background(), payout("ref", "bca", "1234567890", models.Rupiah(97_500))); !errors.Is(err, xendit.ErrConfiguration) {
		t.Errorf("Submit with a wrong key: %v, want ErrConfiguration", err)
	}
	if _, err := v.Banks(context.Background()); !errors.Is(err, xendit.ErrConfiguration) {
		t.Errorf("Banks with a wrong key: %v, want ErrConfiguration", err)
	}
	if n := e.sim.Payouts("ref"); n != 0 {
		t.Errorf("%d payouts created with a wrong key", n)
	}
}

// Resubmitting a reference pays once: the same key and body answer the
// first payout.
func TestResubmitPaysOnce(t *testing.T) {
	e := newEnv(t)
	for i := 0; i < 5; i++ {
		res, err := e.submit("disb-1", "1234567890")
		if err != nil || res.Status != vendors.PayoutPending || res.Reference != "disb-1" {
			t.Fatalf("submit %d: %+v, %v", i, res, err)
		}
		e.clock.Advance(300 * time.Millisecond)
	}
	if n, calls := e.sim.Payouts("disb-1"), e.sim.SubmitCalls("disb-1"); n != 1 || calls != 5 {
		t.Errorf("%d payouts from %d creates; want 1 from 5", n, calls)
	}
	e.clock.Advance(completeAfter)
	if got := e.status(t, "disb-1"); got.Status != vendors.PayoutSuccess {
		t.Errorf("after CompleteAfter: %+v", got)
	}
	// A resubmit after completion is answered with the first payout
	// object (ACCEPTED, as documented) and creates nothing.
	if _, err := e.submit("disb-1", "1234567890"); err != nil {
		t.Fatal(err)
	}
	if n := e.sim.Payouts("disb-1"); n != 1 {
		t.Errorf("%d payouts after a late resubmit", n)
	}
}

// The lost first answer is resolved by Status, and the retry pays nothing more.
func TestLostAnswerResolvedByStatus(t *testing.T) {
	e := newEnv(t)
	_, err := e.submit("lost", sandbox.AccountFirstSubmitLost)
	if !errors.Is(err, vendors.ErrUnavailable) || errors.Is(err, vendors.ErrRejected) {
		t.Fatalf("first submit: %v, want ErrUnavailable", err)
	}
	if got := e.status(t, "lost"); got.Status != vendors.PayoutPending {
		t.Fatalf("Status after the lost answer: %+v", got)
	}
	res, err := e.submit("lost", sandbox.AccountFirstSubmitLost)
	if err != nil || res.Status != vendors.PayoutPending {
		t.Fatalf("resubmit: %+v, %v", res, err)
	}
	if n := e.sim.Payouts("lost"); n != 1 {
		t.Errorf("%d payouts, want 1", n)
	}
	e.clock.Advance(completeAfter)
	if got := e.status(t, "lost"); got.Status != vendors.PayoutSuccess {
		t.Errorf("after CompleteAfter: %+v", got)
	}
}

// The same reference with another body: Xendit answers DUPLICATE_ERROR and
// the adapter reports the payout already there.
func TestDuplicateResolvedByReading(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.v.Submit(ctx, payout("dup", "bca", "1234567890", models.Rupiah(97_500))); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(completeAfter)
	res, err := e.v.Submit(ctx, payout("dup", "bca", "1234567890", models.Rupiah(50_000)))
	if err != nil || res.Status != vendors.PayoutSuccess || res.Reference != "dup" {
		t.Errorf("conflicting resubmit: %+v, %v; want the first payout, SUCCESS", res, err)
	}
	if n := e.sim.Payouts("dup"); n != 1 {
		t.Errorf("%d payouts, want 1", n)
	}
}

func TestConcurrentSubmitsPayOnce(t *testing.T) {
	for _, account := range []string{"1234567890", sandbox.AccountFirstSubmitLost} {
		e := newEnv(t)
		const n = 20
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := e.submit("conc", account)
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		lost := 0
		for err := range errs {
			switch {
			case err == nil:
			case errors.Is(err, vendors.ErrUnavailable):
				lost++
			default:
				t.Errorf("%s: %v", account, err)
			}
		}
		want := 0
		if account == sandbox.AccountFirstSubmitLost {
			want = 1
		}
		if lost != want || e.sim.Payouts("conc") != 1 || e.sim.SubmitCalls("conc") != n {
			t.Errorf("%s: %d lost, %d payouts, %d calls; want %d, 1, %d", account, lost, e.sim.Payouts("conc"), e.sim.SubmitCalls("conc"), want, n)
		}
	}
}

func TestUnknownPayouts(t *testing.T) {
	e := newEnv(t)
	if _, err := e.v.Status(context.Background(), "never"); !errors.Is(err, vendors.ErrUnknownPayout) {
		t.Errorf("Status(never) = %v", err)
	}
	if _, err := e.v.Get(context.Background(), "disb-000000000000000000000000"); !errors.Is(err, vendors.ErrUnknownPayout) {
		t.Errorf("Get(unknown id) = %v", err)
	}
}

func TestGetByIDAndCancel(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.submit("cancel-me", xenditsim.AccountStaysAccepted); err != nil {
		t.Fatal(err)
	}
	p, err := e.v.PayoutByReference(ctx, "cancel-me")
	if err != nil || p.Status != xendit.StatusAccepted || !strings.HasPrefix(p.ID, "disb-") {
		t.Fatalf("PayoutByReference: %+v, %v", p, err)
	}
	got, err := e.v.Get(ctx, p.ID)
	if err != nil || got.ID != p.ID || got.Result.Reference != "cancel-me" {
		t.Fatalf("Get: %+v, %v", got, err)
	}
	c, err := e.v.Cancel(ctx, p.ID)
	if err != nil || c.Status != xendit.StatusCancelled || c.Result.Status != vendors.PayoutFailed {
		t.Fatalf("Cancel: %+v, %v", c, err)
	}
	if r := e.status(t, "cancel-me"); r.Status != vendors.PayoutFailed || r.FailureReason != "CANCELLED" {
		t.Errorf("Status after cancel: %+v", r)
	}
	// Once REQUESTED, a payout cannot be cancelled.
	if _, err := e.submit("too-late", "1234567890"); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(completeAfter / 2)
	p, _ = e.v.PayoutByReference(ctx, "too-late")
	if _, err := e.v.Cancel(ctx, p.ID); !errors.Is(err, xendit.ErrCancelNotAllowed) {
		t.Errorf("Cancel of a REQUESTED payout: %v, want ErrCancelNotAllowed", err)
	}
}

func TestBanks(t *testing.T) {
	e := newEnv(t)
	banks, err := e.v.Banks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, b := range banks {
		codes = append(codes, b.Code)
		want := []models.TransferType{models.BIFAST, models.RTOL}
		if b.EWallet {
			want = []models.TransferType{models.BIFAST}
		}
		if !slices.Equal(b.TransferTypes, want) {
			t.Errorf("%s transfer types %v", b.Code, b.TransferTypes)
		}
		d, _ := vendors.FindBank(vendors.Directory(), b.Code)
		if d.Name != b.Name || d.SWIFT != b.SWIFT || d.EWallet != b.EWallet {
			t.Errorf("%s: %+v, directory %+v", b.Code, b, d)
		}
	}
	want := append(slices.Clone(sandboxtest.AllBanks), sandboxtest.EWallets...)
	slices.Sort(want)
	slices.Sort(codes)
	if !slices.Equal(codes, want) {
		t.Errorf("Banks = %v, want %v (ID_PANIN and PHP channels skipped)", codes, want)
	}
}

func TestInquireIsLocal(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		code, account string
		want          error
	}{
		{"bca", "1234567890", nil},
		{"BCA", " 1234567890 ", nil},
		{"bca", sandbox.AccountInactive, nil},
		{"dana", "081234567890", nil},
		{"hsbc", "1234567890", models.ErrUnsupportedBank},
		{"", "1234567890", models.ErrUnsupportedBank},
		{"bca", "12345abcde", models.ErrAccountNotResolved},
		{"bca", "", models.ErrAccountNotResolved},
		{"bca", "1234", models.ErrAccountNotResolved},
		{"dana", "6281234567890", models.ErrAccountNotResolved},
		{"dana", "081234567", models.ErrAccountNotResolved},
	}
	for _, tt := range tests {
		acc, err := e.v.Inquire(context.Background(), vendors.InquiryRequest{BankCode: tt.code, AccountNo: tt.account, TransferType: models.BIFAST})
		if !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) {
			t.Errorf("Inquire(%s, %q) = %+v, %v; want %v", tt.code, tt.account, acc, err, tt.want)
		}
		if err == nil && acc.HolderName != "" {
			t.Errorf("Inquire(%s, %q) invented a holder name %q", tt.code, tt.account, acc.HolderName)
		}
	}
}

// With an inquiry bank, Inquire answers that bank's name for the accounts
// it reaches, its refusals as they are, and no name for an account it
// does not reach (Xendit pays it; the merchant supplies the name). A
// malformed account is refused before the bank is asked.
func TestInquireAsksTheInquiryBank(t *testing.T) {
	e := newEnv(t)
	bank := sandbox.NewSimBank(sandbox.Options{}) // lists banks only: no e-wallets
	counting := &countingInquirer{next: bank}
	v, err := xendit.New(xendit.Options{BaseURL: e.url, SecretKey: secretKey, CallbackToken: callbackToken,
		RetryBackoff: time.Millisecond, Now: e.clock.Now, Inquirer: counting})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		code, account string
		name          string
		want          error
	}{
		{"bca", "1234567890", "SANDBOX 7890", nil},
		{"bca", sandbox.AccountInactive, "", models.ErrAccountInactive},
		{"bca", sandbox.AccountInquiryDown, "", vendors.ErrUnavailable},
		{"dana", "081234567890", "", nil},
		{"bca", "12345abcde", "", models.ErrAccountNotResolved},
	}
	for _, tt := range tests {
		acc, err := v.Inquire(context.Background(), vendors.InquiryRequest{BankCode: tt.code, AccountNo: tt.account, TransferType: models.BIFAST})
		if !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) || acc.HolderName != tt.name {
			t.Errorf("Inquire(%s, %q) = %+v, %v; want %q, %v", tt.code, tt.account, acc, err, tt.name, tt.want)
		}
	}
	if counting.calls != 4 {
		t.Errorf("the inquiry bank was asked %d times, want 4 (never for a malformed account)", counting.calls)
	}
}

type countingInquirer struct {
	next  vendors.Inquirer
	calls int
}

func (c *countingInquirer) Inquire(ctx context.Context, req vendors.InquiryRequest) (vendors.Account, error) {
	c.calls++
	return c.next.Inquire(ctx, req)
}

// A payout without a holder name never reaches Xendit, which would refuse it.
func TestSubmitWithoutAHolderNameIsRejectedBeforeTheCall(t *testing.T) {
	e := newEnv(t)
	p := payout("no-name", "bca", "1234567890", models.Rupiah(97_500))
	p.HolderName = ""
	if _, err := e.v.Submit(context.Background(), p); !errors.Is(err, vendors.ErrRejected) || !errors.Is(err, vendors.ErrNoHolderName) {
		t.Fatalf("Submit without a name = %v, want ErrRejected with ErrNoHolderName", err)
	}
	if n := e.sim.SubmitCalls("no-name"); n != 0 {
		t.Errorf("Xendit was called %d times", n)
	}
}

// Webhooks reach the receiver when payouts turn final, signed with the
// token; ParseCallback accepts them and refuses forgeries.
func TestCallbacks(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for ref, account := range map[string]string{"ok": "1234567890", "fails": sandbox.AccountFailsLater, "returned": sandbox.AccountReturnedLater} {
		if _, err := e.submit(ref, account); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := e.sim.Flush(ctx); n != 0 || err != nil {
		t.Fatalf("Flush before anything is final: %d, %v", n, err)
	}
	e.clock.Advance(completeAfter)
	if n, err := e.sim.Flush(ctx); n != 3 || err != nil {
		t.Fatalf("Flush at CompleteAfter: %d, %v", n, err)
	}
	e.clock.Advance(completeAfter)
	if n, err := e.sim.Flush(ctx); n != 1 || err != nil {
		t.Fatalf("Flush at the return: %d, %v", n, err)
	}
	if n, _ := e.sim.Flush(ctx); n != 0 {
		t.Fatalf("a webhook sent twice: %d", n)
	}
	want := map[string]vendors.PayoutStatus{}
	for _, w := range e.webhooks {
		r, err := e.v.ParseCallback("/vendor-callbacks/xendit", w.header, w.body, e.clock.Now())
		if err != nil {
			t.Fatalf("ParseCallback(%s): %v", w.body, err)
		}
		want[r.Reference+"/"+string(r.Status)] = r.Status
		// Callers confirm with Status: it agrees with every webhook except
		// a success later returned.
		if r.Status == vendors.PayoutFailed && r.FailureReason != xenditsim.FailureRejectedByChannel {
			t.Errorf("failed webhook reason %q", r.FailureReason)
		}
	}
	for _, k := range []string{"ok/SUCCESS", "fails/FAILED", "returned/SUCCESS", "returned/RETURNED"} {
		if _, ok := want[k]; !ok {
			t.Errorf("no webhook for %s (got %v)", k, want)
		}
	}
	body := e.webhooks[0].body
	forged := []http.Header{
		{},
		{"X-Callback-Token": {""}},
		{"X-Callback-Token": {"wrong-token"}},
		{"X-Callback-Token": {callbackToken + "x"}},
		{"X-Callback-Token": {secretKey}},
		{"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte(secretKey+":"))}},
	}
	for _, h := range forged {
		if _, err := e.v.ParseCallback("/vendor-callbacks/xendit", h, body, e.clock.Now()); !errors.Is(err, vendors.ErrInvalidCallback) {
			t.Errorf("forged callback with %v: %v, want ErrInvalidCallback", h, err)
		}
	}
	// Without a configured token every callback is refused, and the
	// vendor does not notify: its paid payouts are watched for returns.
	v, _ := xendit.New(xendit.Options{BaseURL: e.url, SecretKey: secretKey})
	if _, err := v.ParseCallback("/vendor-callbacks/xendit", http.Header{"X-Callback-Token": {""}}, body, e.clock.Now()); !errors.Is(err, vendors.ErrInvalidCallback) {
		t.Errorf("no token configured: %v", err)
	}
	if vendors.Notifies(v) || !vendors.Notifies(e.v) {
		t.Errorf("notifies: without a token %v, with one %v", vendors.Notifies(v), vendors.Notifies(e.v))
	}
	// A signed body that is not a payout result.
	h := http.Header{"X-Callback-Token": {callbackToken}}
	for _, b := range []string{`{}`, `{"event":"payout.succeeded","data":{"reference_id":"x","status":"FAILED"}}`, `{"event":"invoice.paid","data":{"reference_id":"x","status":"SUCCEEDED"}}`, `[`} {
		if _, err := e.v.ParseCallback("/vendor-callbacks/xendit", h, []byte(b), e.clock.Now()); err == nil || errors.Is(err, vendors.ErrInvalidCallback) {
			t.Errorf("body %s: %v, want a decoding error", b, err)
		}
	}
}

// A receiver that fails gets the webhook again on the next Flush.
func TestWebhookRetried(t *testing.T) {
	var mu sync.Mutex
	fail := true
	var got int
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		got++
	}))
	defer hook.Close()
	c := sandboxtest.NewClock()
	sim, _ := xenditsim.New(xenditsim.Options{SecretKey: secretKey, CallbackToken: callbackToken, CallbackURL: hook.URL, Now: c.Now, Logger: quiet})
	ts := httptest.NewServer(sim)
	defer ts.Close()
	v := newVendor(t, ts.URL, secretKey, c)
	if _, err := v.Submit(context.Background(), payout("r", "bca", "1234567890", models.Rupiah(97_500))); err != nil {
		t.Fatal(err)
	}
	c.Advance(completeAfter)
	if _, err := sim.Flush(context.Background()); err == nil {
		t.Error("Flush to a failing receiver reported no error")
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	if n, err := sim.Flush(context.Background()); n != 1 || err != nil || got != 1 {
		t.Errorf("retry: %d, %v, received %d", n, err, got)
	}
}

// The request on the wire: basic auth, the derived Idempotency-key, and the
// amount as a JSON integer of whole rupiah.
func TestRequestOnTheWire(t *testing.T) {
	var req *http.Request
	var body []byte
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, body = r, must(io.ReadAll(r.Body))
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, `{"id":"disb-1","reference_id":"disb-7","status":"ACCEPTED"}`)
	}))
	defer ts.Close()
	v := newVendor(t, ts.URL, secretKey, sandboxtest.NewClock())
	if _, err := v.Submit(context.Background(), payout("disb-7", "Mandiri", "1231231231231", models.Rupiah(97_500))); err != nil {
		t.Fatal(err)
	}
	user, pass, ok := req.BasicAuth()
	if !ok || user != secretKey || pass != "" {
		t.Errorf("basic auth %q %q %v", user, pass, ok)
	}
	if k := req.Header.Get("Idempotency-key"); k != xendit.IdempotencyKey("disb-7") || k == xendit.IdempotencyKey("disb-8") || len(k) > 100 {
		t.Errorf("Idempotency-key %q", k)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	if string(m["amount"]) != "97500" || string(m["currency"]) != `"IDR"` || string(m["channel_code"]) != `"ID_MANDIRI"` || string(m["reference_id"]) != `"disb-7"` {
		t.Errorf("body %s", body)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// rawCreate creates a payout on the simulator directly, with any key.
func rawCreate(t *testing.T, base, key, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v2/payouts", strings.NewReader(body))
	req.SetBasicAuth(secretKey, "")
	req.Header.Set("Idempotency-key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Xendit does not require reference_id to be unique: when several payouts
// carry ours, Status refuses to pick one.
func TestAmbiguousReference(t *testing.T) {
	e := newEnv(t)
	body := `{"reference_id":"shared","channel_code":"ID_BCA","channel_properties":{"account_number":"1234567890","account_holder_name":"Budi Santoso"},"amount":10000,"currency":"IDR"}`
	for _, key := range []string{"someone-else-1", "someone-else-2"} {
		if code := rawCreate(t, e.url, key, body); code != http.StatusOK {
			t.Fatalf("create: HTTP %d", code)
		}
	}
	_, err := e.v.Status(context.Background(), "shared")
	if !errors.Is(err, xendit.ErrAmbiguousReference) || !errors.Is(err, vendors.ErrUnavailable) {
		t.Errorf("Status of a shared reference_id: %v", err)
	}
}

// A key conflict with no payout under the reference stays an unknown
// outcome, not an unknown payout.
func TestDuplicateWithoutPayout(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusConflict)
			io.WriteString(w, `{"error_code":"DUPLICATE_ERROR","message":"used"}`)
			return
		}
		io.WriteString(w, `[]`)
	}))
	defer ts.Close()
	v := newVendor(t, ts.URL, secretKey, sandboxtest.NewClock())
	_, err := v.Submit(context.Background(), payout("ref", "bca", "1234567890", models.Rupiah(97_500)))
	if !errors.Is(err, vendors.ErrUnavailable) || errors.Is(err, vendors.ErrUnknownPayout) || errors.Is(err, vendors.ErrRejected) {
		t.Errorf("DUPLICATE_ERROR without a payout: %v", err)
	}
}
