package payouts

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
)

// scriptedVendor is simbank with its submits and status queries played by
// the test: call n (from 1) of each kind runs the test's function, which
// hands the call to simbank (pay, or Vendor.Status) or answers itself.
type scriptedVendor struct {
	vendors.Vendor
	mu                sync.Mutex
	submits, statuses int
	onSubmit          func(n int, ctx context.Context, p vendors.Payout) (vendors.PayoutResult, error)
	onStatus          func(n int, ctx context.Context, ref string) (vendors.PayoutResult, error)
	paid              atomic.Int64 // transfers simbank took
}

func (v *scriptedVendor) Submit(ctx context.Context, p vendors.Payout) (vendors.PayoutResult, error) {
	v.mu.Lock()
	v.submits++
	n := v.submits
	v.mu.Unlock()
	return v.onSubmit(n, ctx, p)
}

func (v *scriptedVendor) Status(ctx context.Context, ref string) (vendors.PayoutResult, error) {
	v.mu.Lock()
	v.statuses++
	n := v.statuses
	v.mu.Unlock()
	if v.onStatus == nil {
		return v.Vendor.Status(ctx, ref)
	}
	return v.onStatus(n, ctx, ref)
}

// pay hands p to simbank, which takes the transfer.
func (v *scriptedVendor) pay(ctx context.Context, p vendors.Payout) (vendors.PayoutResult, error) {
	v.paid.Add(1)
	return v.Vendor.Submit(ctx, p)
}

// manualClock is a clock the test moves.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *manualClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// scriptedFixture is batchFixture's with simbank scripted (v) and the
// service on a manual clock, its submit lease a minute.
func scriptedFixture(t *testing.T) (*fixture, *Service, *scriptedVendor, *manualClock) {
	f, _, simbank := batchFixture(t)
	v := &scriptedVendor{Vendor: simbank}
	clock := &manualClock{now: models.Now()} // to the microsecond, as the service keeps time
	svc := New(Options{DB: f.db, Vendors: vendors.NewRegistry(v), SubmitLease: time.Minute, Now: clock.Now})
	return f, svc, v, clock
}

// attempted records an earlier submit attempt of d, claimed at.
func (f *fixture) attempted(d *models.Disbursement, at time.Time) {
	f.t.Helper()
	if err := f.db.Model(&models.Disbursement{}).Where("id = ?", d.ID).
		Updates(map[string]any{"submit_attempts": 1, "submit_attempted_at": at}).Error; err != nil {
		f.t.Fatal(err)
	}
}

// A resubmit's rejection that is written only after a later resubmit was
// sent (its process stalled past the lease) is not applied: that later
// attempt may be, and here is, paid by a vendor that rejects a reference
// and accepts it again. Written, the FAILED would release the lock of a
// payout the vendor paid.
func TestARejectionWrittenAfterALaterAttemptLeavesThePayoutToIt(t *testing.T) {
	f, svc, v, clock := scriptedFixture(t)
	ctx := context.Background()
	rejecting, answerRejection := make(chan struct{}), make(chan struct{})
	paying, answerPayment := make(chan struct{}), make(chan struct{})
	v.onSubmit = func(n int, ctx context.Context, p vendors.Payout) (vendors.PayoutResult, error) {
		if n == 1 {
			close(rejecting)
			<-answerRejection
			return vendors.PayoutResult{}, fmt.Errorf("%w: account blocked for now (test)", vendors.ErrRejected)
		}
		r, err := v.pay(ctx, p)
		if n == 2 {
			close(paying)
			<-answerPayment
		}
		return r, err
	}
	d := f.withAccount("1234567890")
	f.attempted(d, clock.Now().Add(-2*time.Minute)) // an attempt whose answer was lost, its lease over

	first := make(chan error, 1)
	go func() { first <- svc.Submit(ctx, d.ID) }() // resubmits; the vendor rejects, the write stalls
	<-rejecting
	clock.advance(2 * time.Minute) // past the resubmit's lease
	second := make(chan error, 1)
	go func() { second <- svc.Submit(ctx, d.ID) }() // asks, resubmits, the vendor pays
	<-paying
	close(answerRejection)
	if err := <-first; err != nil && !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("the stalled resubmit: %v, want done or outcome unknown", err)
	}
	close(answerPayment)
	if err := <-second; err != nil {
		t.Fatalf("the later resubmit: %v", err)
	}
	if st := f.statusOf(d.ID); st != models.StatusRequested && st != models.StatusSuccess {
		t.Fatalf("the vendor paid the later attempt and the payout is %s, want REQUESTED or SUCCESS", st)
	}
	if n := v.paid.Load(); n != 1 {
		t.Fatalf("the vendor took %d transfers, want 1", n)
	}
	f.reconciled()
}

// Every submit, first or again, calls the vendor and writes its answer
// under a deadline at the claim's lease: after it, the sweep may ask the
// vendor and submit again, so nothing of this attempt may land later.
func TestASubmitEndsWithItsLease(t *testing.T) {
	for _, earlier := range []bool{false, true} {
		t.Run(fmt.Sprintf("earlier attempt %v", earlier), func(t *testing.T) {
			f, svc, v, clock := scriptedFixture(t)
			var deadline time.Time
			var hasDeadline bool
			v.onSubmit = func(_ int, ctx context.Context, p vendors.Payout) (vendors.PayoutResult, error) {
				deadline, hasDeadline = ctx.Deadline()
				return v.pay(ctx, p)
			}
			d := f.withAccount("1234567890")
			if earlier {
				f.attempted(d, clock.Now().Add(-2*time.Minute))
			}
			if err := svc.Submit(context.Background(), d.ID); err != nil {
				t.Fatal(err)
			}
			if want := clock.Now().Add(time.Minute); !hasDeadline || !deadline.Equal(want) {
				t.Fatalf("the vendor call's deadline: %v (set %v), want the lease's end %v", deadline, hasDeadline, want)
			}
		})
	}
}

// An attempt refused before it left is given back (1 -> 0) and may be
// claimed again (0 -> 1) while a process that read the first attempt asks
// the vendor about it, which does not know the reference yet: the new
// attempt is on its way. That process must leave the payout alone although
// the count is 1 again: its claim must not pass (a second transfer), nor,
// once the lock has run out, its expiry (the lock of a payout the vendor
// pays released). The expiry needs the give-back to land after its lease,
// a write that outlived its deadline (clocks apart, a commit racing it),
// which the manual clock makes here.
func TestAnAttemptClaimedAgainIsLeftAloneByAStaleReader(t *testing.T) {
	for _, lockRunsOut := range []bool{false, true} {
		t.Run(fmt.Sprintf("lock runs out %v", lockRunsOut), func(t *testing.T) {
			f, svc, v, clock := scriptedFixture(t)
			ctx := context.Background()
			refusing, refuse := make(chan struct{}), make(chan struct{})
			sending, answerSend := make(chan struct{}), make(chan struct{})
			asked, answerAsk := make(chan struct{}), make(chan struct{})
			v.onSubmit = func(n int, ctx context.Context, p vendors.Payout) (vendors.PayoutResult, error) {
				switch n {
				case 1:
					close(refusing)
					<-refuse
					return vendors.PayoutResult{}, &vendors.RefusedError{Vendor: "simbank", Reason: vendors.RefusedConcurrencyBusy}
				case 2:
					r, err := v.pay(ctx, p)
					close(sending)
					<-answerSend
					return r, err
				}
				return v.pay(ctx, p)
			}
			v.onStatus = func(n int, ctx context.Context, ref string) (vendors.PayoutResult, error) {
				r, err := v.Vendor.Status(ctx, ref) // the vendor's answer as of now
				if n == 1 {
					close(asked)
					<-answerAsk
				}
				return r, err
			}
			d := f.withAccount("1234567890") // its lock runs out in an hour

			refused := make(chan error, 1)
			go func() { refused <- svc.Submit(ctx, d.ID) }() // claims 0 -> 1; the call is held, then refused
			<-refusing
			clock.advance(2 * time.Minute) // past its lease
			stale := make(chan error, 1)
			go func() { stale <- svc.Submit(ctx, d.ID) }() // reads attempt 1, asks the vendor: not known
			<-asked
			close(refuse) // the give-back lands, after the lease
			if err := <-refused; !errors.Is(err, vendors.ErrNotSent) {
				t.Fatalf("the refused submit: %v, want not sent (its attempt given back)", err)
			}
			clock.advance(time.Second)
			pumped := make(chan error, 1)
			go func() { _, err := svc.SubmitDue(ctx, 8); pumped <- err }() // claims 0 -> 1 again and sends it
			<-sending
			if lockRunsOut {
				clock.advance(2 * time.Hour) // while the answer is on its way
			}
			close(answerAsk)
			staleErr := <-stale
			close(answerSend)
			if err := <-pumped; err != nil {
				t.Fatalf("the pump: %v", err)
			}
			if n := v.paid.Load(); n != 1 {
				t.Fatalf("the vendor took %d transfers, want 1", n)
			}
			if st := f.statusOf(d.ID); st == models.StatusExpired {
				t.Fatalf("the payout is EXPIRED, its lock released, while the vendor took its transfer")
			}
			if !errors.Is(staleErr, ErrOutcomeUnknown) {
				t.Fatalf("the stale reader's submit: %v, want outcome unknown (the attempt changed)", staleErr)
			}
			f.reconciled()
		})
	}
}
