package payouts

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/breaker"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// switchableVendor is simbank that can be taken down: while down, every
// call fails as a vendor answering 503 would, without reaching simbank.
// It counts the submits that reached simbank.
type switchableVendor struct {
	vendors.Vendor
	down    atomic.Bool
	submits atomic.Int64
}

var errDown = vendors.Down(fmt.Errorf("%w: HTTP 503 (test)", vendors.ErrUnavailable))

func (v *switchableVendor) Submit(ctx context.Context, p vendors.Payout) (vendors.PayoutResult, error) {
	if v.down.Load() {
		return vendors.PayoutResult{}, errDown
	}
	v.submits.Add(1)
	return v.Vendor.Submit(ctx, p)
}

func (v *switchableVendor) Status(ctx context.Context, ref string) (vendors.PayoutResult, error) {
	if v.down.Load() {
		return vendors.PayoutResult{}, errDown
	}
	return v.Vendor.Status(ctx, ref)
}

func (v *switchableVendor) Inquire(ctx context.Context, r vendors.InquiryRequest) (vendors.Account, error) {
	if v.down.Load() {
		return vendors.Account{}, errDown
	}
	return v.Vendor.Inquire(ctx, r)
}

// alwaysReady is a gate that lets everything through: the breaker then
// refuses at the call, after the claim (a breaker that opened between the
// claim and the call).
type alwaysReady struct{}

func (alwaysReady) Ready(string) (bool, time.Duration) { return true, 0 }

// gateFixture is batchFixture's with simbank behind a switch and a guard
// that opens at the first failure, for openFor.
func gateFixture(t *testing.T, openFor time.Duration, lyingGate bool) (*fixture, *Service, *switchableVendor, *breaker.Set) {
	f := newFixture(t, models.Rupiah(10_000_000))
	sw := &switchableVendor{Vendor: sandbox.NewSimBank(sandbox.Options{CompleteAfter: time.Nanosecond})}
	reg, set := breaker.Wrap(vendors.NewRegistry(sw), breaker.Options{Failures: 1, OpenFor: openFor})
	var gate vendors.Gate = set
	if lyingGate {
		gate = alwaysReady{}
	}
	svc := New(Options{DB: f.db, Vendors: reg, SubmitLease: time.Minute, Gate: gate})
	return f, svc, sw, set
}

// trip takes the vendor down and fails one call, which opens the breaker.
func trip(t *testing.T, svc *Service, sw *switchableVendor, set *breaker.Set) {
	t.Helper()
	sw.down.Store(true)
	v, _ := svc.vendors.Get("simbank")
	v.Status(context.Background(), "trip")
	if st := set.Guard("simbank").State(); st != breaker.Open {
		t.Fatalf("breaker %v after a failure, want open", st)
	}
}

func (f *fixture) attempts(d *models.Disbursement) (int, *time.Time) {
	f.t.Helper()
	var row models.Disbursement
	if err := f.db.Where("id = ?", d.ID).Take(&row).Error; err != nil {
		f.t.Fatal(err)
	}
	return row.SubmitAttempts, row.SubmitAttemptedAt
}

// A submit while the vendor's breaker is open is not claimed: no attempt
// is counted, the task is asked to retry after the open period without
// it counting as a failure, and nothing reaches the vendor. Once the
// vendor recovers, the same submit pays the payout once.
func TestSubmitHeldBackByAnOpenBreaker(t *testing.T) {
	for _, batched := range []bool{false, true} {
		t.Run(map[bool]string{false: "lone", true: "batched"}[batched], func(t *testing.T) {
			f, svc, sw, set := gateFixture(t, 300*time.Millisecond, false)
			ctx := context.Background()
			d := f.withAccount("1234567890")
			trip(t, svc, sw, set)
			err := submitAs(ctx, svc, batched, d.ID)
			var asked interface{ RetryDelay() time.Duration }
			if !errors.Is(err, vendors.ErrNotSent) || errors.Is(err, ErrOutcomeUnknown) || !errors.As(err, &asked) {
				t.Fatalf("submit while open: %v; want a not-sent refusal with a retry delay, not an unknown outcome", err)
			}
			if n, at := f.attempts(d); n != 0 || at != nil || f.statusOf(d.ID) != models.StatusVerified {
				t.Fatalf("after the held-back submit: %d attempts (at %v), %s; want 0, none, VERIFIED", n, at, f.statusOf(d.ID))
			}
			if n, err := svc.SubmitDue(ctx, 8); n != 0 || err != nil {
				t.Fatalf("a pump while open claimed %d (%v), want 0", n, err)
			}
			if n, _ := f.attempts(d); n != 0 {
				t.Fatalf("the pump counted %d attempts while open", n)
			}
			if sw.submits.Load() != 0 {
				t.Fatal("a submit reached the vendor while its breaker was open")
			}

			sw.down.Store(false)
			time.Sleep(350 * time.Millisecond) // half-open: the next call is the probe
			if err := submitAs(ctx, svc, batched, d.ID); err != nil {
				t.Fatalf("submit after recovery: %v", err)
			}
			if got := f.statusOf(d.ID); got != models.StatusSuccess {
				t.Fatalf("after recovery: %s, want SUCCESS", got)
			}
			if n, _ := f.attempts(d); n != 1 || sw.submits.Load() != 1 {
				t.Fatalf("%d attempts, %d submits reached the vendor; want 1, 1", n, sw.submits.Load())
			}
			if st := set.Guard("simbank").State(); st != breaker.Closed {
				t.Fatalf("breaker %v after a good probe, want closed", st)
			}
			f.reconciled()
		})
	}
}

// A submit claimed and then refused at the call (the breaker opened in
// between) gives its attempt back: the payout is as if never submitted,
// so nothing later asks the vendor about an attempt that never went out,
// and the pump takes it again once the vendor is let through.
func TestSubmitRefusedAtTheCallGivesTheAttemptBack(t *testing.T) {
	f, svc, sw, set := gateFixture(t, time.Hour, true)
	ctx := context.Background()
	pumped := f.withAccount("1234567890")
	lone := f.withAccount("1234567891")
	trip(t, svc, sw, set)

	n, err := svc.SubmitDue(ctx, 8)
	if err != nil || n != 2 {
		t.Fatalf("pump: claimed %d (%v), want 2 (the gate lets it claim)", n, err)
	}
	for _, d := range []*models.Disbursement{pumped, lone} {
		if n, at := f.attempts(d); n != 0 || at != nil || f.statusOf(d.ID) != models.StatusVerified {
			t.Fatalf("after the refused pumped submit: %d attempts (at %v), %s; want 0, none, VERIFIED", n, at, f.statusOf(d.ID))
		}
	}
	if err := svc.Submit(ctx, lone.ID); !errors.Is(err, vendors.ErrNotSent) {
		t.Fatalf("task submit refused at the call: %v, want not sent", err)
	}
	if n, at := f.attempts(lone); n != 0 || at != nil {
		t.Fatalf("after the refused task submit: %d attempts (at %v), want 0", n, at)
	}
	if sw.submits.Load() != 0 {
		t.Fatal("a refused submit reached the vendor")
	}
	f.reconciled()
}

// An earlier attempt whose outcome is unknown stays unknown while the
// breaker is open: the status query is not made, the attempt is kept, and
// the retry comes after the open period, not counted as a failure.
func TestResolveAttemptedHeldBack(t *testing.T) {
	f, svc, sw, set := gateFixture(t, time.Hour, false)
	ctx := context.Background()
	d := f.withAccount("1234567890")
	past := models.Now().Add(-2 * time.Minute)
	if err := f.db.Model(&models.Disbursement{}).Where("id = ?", d.ID).
		Updates(map[string]any{"submit_attempts": 1, "submit_attempted_at": past}).Error; err != nil {
		t.Fatal(err)
	}
	trip(t, svc, sw, set)
	err := svc.Submit(ctx, d.ID)
	if !errors.Is(err, ErrOutcomeUnknown) || !errors.Is(err, vendors.ErrNotSent) {
		t.Fatalf("resolve while open: %v, want unknown and not sent", err)
	}
	if n, _ := f.attempts(d); n != 1 || f.statusOf(d.ID) != models.StatusVerified {
		t.Fatalf("%d attempts, %s; want 1, VERIFIED (nothing expired, nothing resubmitted)", n, f.statusOf(d.ID))
	}
}

// A status check refused by an open breaker is not a check: the count
// stays, and the next check is set after the open period.
func TestPollHeldBack(t *testing.T) {
	f, svc, sw, set := gateFixture(t, time.Hour, false)
	ctx := context.Background()
	d := f.stored(models.StatusRequested, models.Rupiah(100_000))
	if err := f.db.Model(&models.Disbursement{}).Where("id = ?", d.ID).Update("submit_attempts", 1).Error; err != nil {
		t.Fatal(err)
	}
	trip(t, svc, sw, set)
	before := models.Now()
	if err := svc.Poll(ctx, d.ID); err != nil {
		t.Fatalf("poll while open: %v", err)
	}
	var row models.Disbursement
	if err := f.db.Where("id = ?", d.ID).Take(&row).Error; err != nil {
		t.Fatal(err)
	}
	if row.Checks != 0 || row.Status != models.StatusRequested {
		t.Fatalf("after a held-back poll: %d checks, %s; want 0, REQUESTED", row.Checks, row.Status)
	}
	if row.NextCheckAt == nil || row.NextCheckAt.Before(before.Add(time.Minute)) {
		t.Fatalf("next check at %v, want after the open period", row.NextCheckAt)
	}
}
