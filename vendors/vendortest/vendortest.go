// Package vendortest is the contract every payout vendor adapter keeps with
// the payout lifecycle, whatever rail it speaks: one payment per reference
// however often and however concurrently it is submitted, a lost answer
// resolved by a status query, results that only move forward (pending,
// then paid or failed, then possibly returned), and errors of the kinds
// vendors.Vendor declares. The sandbox magic account numbers
// (docs/design.md, Sandbox vendors) drive the outcomes; each simulator maps them onto its own states.
//
// It runs against each adapter over its simulator: the in-process sandbox,
// the vendorsim client over HTTP, Xendit over xenditsim and a SNAP bank
// over snapsim. What only the sandbox promises (its bank lists, holder
// names, completing by hand) stays in vendors/sandbox/sandboxtest. Only
// tests import it.
package vendortest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/sandbox/sandboxtest"
)

// Inquiry says what a rail's account inquiry can tell before a payout.
type Inquiry int

const (
	// InquiryResolves: a real-time inquiry names the holder and tells an
	// inactive account (1000000001) and an unknown one (1000000002).
	InquiryResolves Inquiry = iota
	// InquiryNone: the rail has no real-time inquiry; an account of a
	// served bank is accepted, its holder unknown until the payout.
	InquiryNone
)

// Subject is one adapter over a simulator of its own, on the suite's clock.
type Subject struct {
	Vendor vendors.Vendor
	// Payouts counts the payouts the simulator holds for reference: what
	// it would pay, not how often it was asked.
	Payouts func(reference string) int
	// SettleAfter is how long the simulator keeps an ordinary payout
	// pending after accepting it.
	SettleAfter time.Duration
	// Bank is a bank code the vendor pays to over BI-FAST.
	Bank string
	// Inquiry is what the rail's inquiry tells.
	Inquiry Inquiry
	// Returns: the rail reports a return after success (1000000008).
	Returns bool
}

// OneRecordPerReference is Subject.Payouts for a simulator that keeps at
// most one record per reference by construction (the sandbox): a
// reference is paid once if the vendor knows it.
func OneRecordPerReference(v vendors.Vendor) func(reference string) int {
	return func(reference string) int {
		if _, err := v.Status(context.Background(), reference); err != nil {
			return 0
		}
		return 1
	}
}

// Setup builds a Subject on fresh state whose simulator runs on clock.
type Setup func(t *testing.T, clock *sandboxtest.Clock) Subject

const (
	ordinaryAccount = "1234567890"
	// amount is a net amount every rail accepts: whole rupiah, within
	// every documented cap.
	amount = 97_500
)

// Run runs the whole contract, each part on a Subject of its own.
func Run(t *testing.T, setup Setup) {
	parts := []struct {
		name string
		f    func(*testing.T, Subject, *sandboxtest.Clock)
	}{
		{"BanksAreOnTheDirectory", testBanks},
		{"Inquiry", testInquiry},
		{"UnknownReference", testUnknownReference},
		{"ResubmitPaysOnce", testResubmitPaysOnce},
		{"RejectedAtSubmit", testRejectedAtSubmit},
		{"FailsLater", testFailsLater},
		{"StaysPending", testStaysPending},
		{"FirstAnswerLost", testFirstAnswerLost},
		{"ReturnedAfterSuccess", testReturned},
		{"ConcurrentSubmitsPayOnce", testConcurrentSubmits},
	}
	for _, p := range parts {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			clock := sandboxtest.NewClock()
			p.f(t, setup(t, clock), clock)
		})
	}
}

func submit(s Subject, ref, account string) (vendors.PayoutResult, error) {
	return s.Vendor.Submit(context.Background(), vendors.Payout{HolderName: "Budi Santoso", Reference: ref, BankCode: s.Bank, AccountNo: account,
		TransferType: models.BIFAST, Amount: models.Rupiah(amount)})
}

// settle advances the clock past the simulator's processing time.
func settle(s Subject, clock *sandboxtest.Clock) { clock.Advance(s.SettleAfter + time.Second) }

// statusOf is the vendor's status of ref, failing the test on an error.
func statusOf(t *testing.T, s Subject, ref string) vendors.PayoutResult {
	t.Helper()
	st, err := s.Vendor.Status(context.Background(), ref)
	if err != nil {
		t.Fatalf("Status(%s): %v", ref, err)
	}
	if st.Reference != ref {
		t.Fatalf("Status(%s) answered for reference %q", ref, st.Reference)
	}
	return st
}

// accepted reports whether a submit's answer is an acceptance: no error,
// the reference echoed, and pending or already paid.
func accepted(res vendors.PayoutResult, err error, ref string) bool {
	return err == nil && res.Reference == ref && (res.Status == vendors.PayoutPending || res.Status == vendors.PayoutSuccess)
}

func wantPayouts(t *testing.T, s Subject, ref string, want int) {
	t.Helper()
	if n := s.Payouts(ref); n != want {
		t.Errorf("%s: the simulator holds %d payouts, want %d", ref, n, want)
	}
}

// The vendor lists banks of the directory only, each with a transfer
// type, and serves the subject's bank over BI-FAST.
func testBanks(t *testing.T, s Subject, _ *sandboxtest.Clock) {
	banks, err := s.Vendor.Banks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	directory := vendors.Directory()
	for _, b := range banks {
		if _, ok := vendors.FindBank(directory, b.Code); !ok {
			t.Errorf("bank %q is not in the directory (vendors/banks.tsv)", b.Code)
		}
		if len(b.TransferTypes) == 0 {
			t.Errorf("bank %q has no transfer type", b.Code)
		}
	}
	b, ok := vendors.FindBank(banks, s.Bank)
	if !ok || !b.SupportsTransfer(models.BIFAST) {
		t.Errorf("the subject's bank %q is not listed with BIFAST: %+v", s.Bank, b)
	}
}

func testInquiry(t *testing.T, s Subject, _ *sandboxtest.Clock) {
	ctx := context.Background()
	inquire := func(bank, account string) (vendors.Account, error) {
		return s.Vendor.Inquire(ctx, vendors.InquiryRequest{BankCode: bank, AccountNo: account, TransferType: models.BIFAST})
	}
	acct, err := inquire(s.Bank, ordinaryAccount)
	if err != nil {
		t.Fatalf("inquiry of an ordinary account: %v", err)
	}
	if s.Inquiry == InquiryResolves && acct.HolderName == "" {
		t.Error("the inquiry resolves holders but named none")
	}
	if _, err := inquire("nosuchbank", ordinaryAccount); !errors.Is(err, models.ErrUnsupportedBank) {
		t.Errorf("inquiry at an unknown bank code: %v, want ErrUnsupportedBank", err)
	}
	if s.Inquiry != InquiryResolves {
		return
	}
	if _, err := inquire(s.Bank, sandbox.AccountInactive); !errors.Is(err, models.ErrAccountInactive) {
		t.Errorf("inquiry of %s: %v, want ErrAccountInactive", sandbox.AccountInactive, err)
	}
	if _, err := inquire(s.Bank, sandbox.AccountUnresolved); !errors.Is(err, models.ErrAccountNotResolved) {
		t.Errorf("inquiry of %s: %v, want ErrAccountNotResolved", sandbox.AccountUnresolved, err)
	}
}

// A reference the vendor never accepted is unknown: the lifecycle then
// resubmits it (once the submit lease has passed), so any other answer
// would leave a payout stuck or paid twice.
func testUnknownReference(t *testing.T, s Subject, _ *sandboxtest.Clock) {
	if _, err := s.Vendor.Status(context.Background(), "vt-never-submitted"); !errors.Is(err, vendors.ErrUnknownPayout) {
		t.Errorf("Status of a reference never submitted: %v, want ErrUnknownPayout", err)
	}
}

// A reference submitted again, before and after it is paid, is the same
// payout: paid once, and every answer an acceptance of it.
func testResubmitPaysOnce(t *testing.T, s Subject, clock *sandboxtest.Clock) {
	const ref = "vt-resubmit"
	for i := range 3 {
		if res, err := submit(s, ref, ordinaryAccount); !accepted(res, err, ref) {
			t.Fatalf("submit %d: %+v, %v", i+1, res, err)
		}
		clock.Advance(100 * time.Millisecond)
	}
	settle(s, clock)
	if st := statusOf(t, s, ref); st.Status != vendors.PayoutSuccess {
		t.Fatalf("after settling: %+v, want SUCCESS", st)
	}
	if res, err := submit(s, ref, ordinaryAccount); !accepted(res, err, ref) {
		t.Errorf("resubmit after success: %+v, %v", res, err)
	}
	if st := statusOf(t, s, ref); st.Status != vendors.PayoutSuccess {
		t.Errorf("after the late resubmit: %+v, want SUCCESS", st)
	}
	wantPayouts(t, s, ref, 1)
}

// A refusal at submit is ErrRejected, never ErrUnavailable (which would
// keep the merchant's funds locked for a payout that cannot happen), and
// leaves nothing the vendor will pay.
func testRejectedAtSubmit(t *testing.T, s Subject, clock *sandboxtest.Clock) {
	ref := "vt-" + sandbox.AccountSubmitRejected
	_, err := submit(s, ref, sandbox.AccountSubmitRejected)
	if !errors.Is(err, vendors.ErrRejected) || errors.Is(err, vendors.ErrUnavailable) {
		t.Fatalf("submit to %s: %v, want ErrRejected", sandbox.AccountSubmitRejected, err)
	}
	settle(s, clock)
	st, err := s.Vendor.Status(context.Background(), ref)
	switch {
	case errors.Is(err, vendors.ErrUnknownPayout):
	case err == nil && st.Status == vendors.PayoutFailed:
	default:
		t.Errorf("Status after a rejection: %+v, %v; want unknown or FAILED", st, err)
	}
}

// 1000000004 is accepted, then fails with a reason.
func testFailsLater(t *testing.T, s Subject, clock *sandboxtest.Clock) {
	ref := "vt-" + sandbox.AccountFailsLater
	if res, err := submit(s, ref, sandbox.AccountFailsLater); err != nil || res.Status != vendors.PayoutPending {
		t.Fatalf("submit: %+v, %v; want PENDING", res, err)
	}
	settle(s, clock)
	if st := statusOf(t, s, ref); st.Status != vendors.PayoutFailed || st.FailureReason == "" {
		t.Errorf("after settling: %+v, want FAILED with a reason", st)
	}
	wantPayouts(t, s, ref, 1)
}

// 1000000005 stays pending, however long one waits.
func testStaysPending(t *testing.T, s Subject, clock *sandboxtest.Clock) {
	ref := "vt-" + sandbox.AccountStaysRequested
	if res, err := submit(s, ref, sandbox.AccountStaysRequested); !accepted(res, err, ref) {
		t.Fatalf("submit: %+v, %v", res, err)
	}
	for range 3 {
		clock.Advance(10 * (s.SettleAfter + time.Second))
		if st := statusOf(t, s, ref); st.Status != vendors.PayoutPending {
			t.Fatalf("later: %+v, want PENDING", st)
		}
	}
}

// 1000000007's first answer is lost: the submit reports an unknown
// outcome (ErrUnavailable, never a rejection), the status query finds the
// payout, a resubmit does not pay it again, and it is paid.
func testFirstAnswerLost(t *testing.T, s Subject, clock *sandboxtest.Clock) {
	ref := "vt-" + sandbox.AccountFirstSubmitLost
	_, err := submit(s, ref, sandbox.AccountFirstSubmitLost)
	if !errors.Is(err, vendors.ErrUnavailable) || errors.Is(err, vendors.ErrRejected) {
		t.Fatalf("first submit: %v, want ErrUnavailable", err)
	}
	if st := statusOf(t, s, ref); st.Status != vendors.PayoutPending && st.Status != vendors.PayoutSuccess {
		t.Fatalf("Status after the lost answer: %+v, want the payout accepted", st)
	}
	if res, err := submit(s, ref, sandbox.AccountFirstSubmitLost); !accepted(res, err, ref) {
		t.Errorf("resubmit after the lost answer: %+v, %v", res, err)
	}
	settle(s, clock)
	if st := statusOf(t, s, ref); st.Status != vendors.PayoutSuccess {
		t.Errorf("after settling: %+v, want SUCCESS", st)
	}
	wantPayouts(t, s, ref, 1)
}

// 1000000008 is paid, then returned with a reason; nothing else follows
// SUCCESS. A rail without returns pays it like any account.
func testReturned(t *testing.T, s Subject, clock *sandboxtest.Clock) {
	ref := "vt-" + sandbox.AccountReturnedLater
	if res, err := submit(s, ref, sandbox.AccountReturnedLater); !accepted(res, err, ref) {
		t.Fatalf("submit: %+v, %v", res, err)
	}
	// Walk time in steps shorter than the processing time, so that SUCCESS
	// is seen before the return.
	step := max(s.SettleAfter/2, time.Millisecond)
	var seen []vendors.PayoutStatus
	for range 12 {
		clock.Advance(step)
		st := statusOf(t, s, ref)
		if len(seen) == 0 || seen[len(seen)-1] != st.Status {
			seen = append(seen, st.Status)
		}
		if st.Status == vendors.PayoutReturned {
			if st.FailureReason == "" {
				t.Error("RETURNED without a reason")
			}
			break
		}
	}
	want := []vendors.PayoutStatus{vendors.PayoutPending, vendors.PayoutSuccess}
	if s.Returns {
		want = append(want, vendors.PayoutReturned)
	}
	if len(seen) > 0 && seen[0] == vendors.PayoutSuccess {
		want = want[1:] // paid before the first look
	}
	if !equal(seen, want) {
		t.Errorf("statuses seen: %v, want %v", seen, want)
	}
}

func equal(a, b []vendors.PayoutStatus) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Tasks carrying one payout may run at once on several workers: however
// many submits of one reference arrive together, one payout is made.
func testConcurrentSubmits(t *testing.T, s Subject, clock *sandboxtest.Clock) {
	const ref, n = "vt-concurrent", 12
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = submit(s, ref, ordinaryAccount)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		// An unknown outcome is allowed (the lifecycle asks for the
		// status); a rejection is not: the payout is valid.
		if err != nil && !errors.Is(err, vendors.ErrUnavailable) {
			t.Errorf("submit %d: %v", i, err)
		}
	}
	wantPayouts(t, s, ref, 1)
	settle(s, clock)
	if st := statusOf(t, s, ref); st.Status != vendors.PayoutSuccess {
		t.Errorf("after settling: %+v, want SUCCESS", st)
	}
}
