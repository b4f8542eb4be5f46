package vendors_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/vendorsim"
	"github.com/payoutd/payoutd/vendors/xendit"
)

// calls is a CallObserver that counts what it is told.
type calls struct {
	mu sync.Mutex
	n  map[[3]string]int
}

func (c *calls) VendorCall(vendor, call, outcome string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[[3]string]int{}
	}
	c.n[[3]string{vendor, call, outcome}]++
}

func TestObservedVendorCalls(t *testing.T) {
	var seen calls
	simbank, err := vendors.Observed(sandbox.Registry(sandbox.Options{}), &seen).Get(sandbox.SimBank)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	payout := vendors.Payout{HolderName: "Budi Santoso", Reference: "ref-rejected", BankCode: "bca", AccountNo: sandbox.AccountSubmitRejected,
		TransferType: models.BIFAST, Amount: models.Rupiah(100_000)}
	if _, err := simbank.Submit(ctx, payout); !errors.Is(err, vendors.ErrRejected) {
		t.Fatalf("Submit = %v, want ErrRejected passed through", err)
	}
	simbank.Inquire(ctx, vendors.InquiryRequest{BankCode: "bca", AccountNo: sandbox.AccountInquiryDown, TransferType: models.BIFAST})
	simbank.Status(ctx, "never-submitted")

	for _, c := range []struct{ call, outcome string }{
		{"submit", "rejected"}, {"inquire", "unavailable"}, {"status", "unknown_payout"},
	} {
		if n := seen.n[[3]string{sandbox.SimBank, c.call, c.outcome}]; n != 1 {
			t.Errorf("simbank %s %s told %v times, want 1", c.call, c.outcome, n)
		}
	}
	if len(seen.n) != 3 {
		t.Errorf("told of %v, want 3 kinds of call", seen.n)
	}
	if simbank.Name() != sandbox.SimBank {
		t.Errorf("Name() = %q", simbank.Name())
	}
}

// The wrapper implements the optional interfaces exactly when the vendor
// it wraps does, and delegates to it: callers type-assert them.
func TestObservedVendorsKeepOptionalInterfaces(t *testing.T) {
	var seen calls
	simbank, _ := vendors.Observed(sandbox.Registry(sandbox.Options{}), &seen).Get(sandbox.SimBank)
	if _, ok := simbank.(vendors.Completer); !ok {
		t.Error("observed sandbox vendor lost Complete")
	}
	if _, ok := simbank.(vendors.CallbackParser); ok {
		t.Error("observed sandbox vendor gained ParseCallback, which it does not have")
	}
	if err := simbank.(vendors.Completer).Complete(context.Background(), "nope", vendors.PayoutSuccess, ""); !errors.Is(err, vendors.ErrUnknownPayout) {
		t.Errorf("Complete(unknown) = %v, want the vendor's ErrUnknownPayout", err)
	}

	simReg, err := vendorsim.NewRegistry("http://127.0.0.1:1", vendorsim.Secrets{Token: "token", CallbackSecret: "callback"}, vendorsim.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sim, _ := vendors.Observed(simReg, &seen).Get(sandbox.SimBank)
	parser, ok := sim.(vendors.CallbackParser)
	if !ok {
		t.Fatal("observed HTTP vendor lost ParseCallback")
	}
	if _, ok := sim.(vendors.Completer); !ok {
		t.Error("observed HTTP vendor lost Complete")
	}
	if _, err := parser.ParseCallback("/vendor-callbacks/simbank", http.Header{}, []byte(`{}`), time.Now()); !errors.Is(err, vendors.ErrInvalidCallback) {
		t.Errorf("ParseCallback(unsigned) = %v, want the vendor's ErrInvalidCallback", err)
	}

	// Whether the vendor notifies (and so whether its paid payouts are
	// watched for returns) reads the same through the wrapper.
	for token, want := range map[string]bool{"": false, "callback-token": true} {
		x, err := xendit.New(xendit.Options{SecretKey: "xnd_development_k", CallbackToken: token})
		if err != nil {
			t.Fatal(err)
		}
		wrapped, _ := vendors.Observed(vendors.NewRegistry(x), &seen).Get(xendit.Name)
		if got := vendors.Notifies(wrapped); got != want {
			t.Errorf("observed xendit with token %q notifies: %v, want %v", token, got, want)
		}
	}
	if vendors.Notifies(simbank) {
		t.Error("the observed in-process sandbox notifies")
	}
}

// Without an observer the registry is returned as it is.
func TestObservedWithoutObserver(t *testing.T) {
	r := sandbox.Registry(sandbox.Options{})
	if got := vendors.Observed(r, nil); got[sandbox.SimBank] != r[sandbox.SimBank] {
		t.Error("no observer, yet the vendors were wrapped")
	}
}

func TestCallOutcome(t *testing.T) {
	for err, want := range map[error]string{
		nil: "ok",
		fmt.Errorf("%w: closed", vendors.ErrRejected):                              "rejected",
		models.ErrAccountNotResolved:                                               "rejected",
		fmt.Errorf("%w: 503", vendors.ErrUnavailable):                              "unavailable",
		vendors.ErrUnknownPayout:                                                   "unknown_payout",
		context.DeadlineExceeded:                                                   "error",
		fmt.Errorf("wrapped twice: %w", vendors.ErrRejected):                       "rejected",
		&vendors.RefusedError{Vendor: "x", Reason: vendors.RefusedConcurrencyBusy}: "concurrency_limit",
		&vendors.RefusedError{Vendor: "x", Reason: vendors.RefusedBreakerOpen}:     "breaker_open",
	} {
		if got := vendors.CallOutcome(err); got != want {
			t.Errorf("CallOutcome(%v) = %s, want %s", err, got, want)
		}
	}
}
