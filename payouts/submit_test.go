package payouts

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
)

// racingVendor is simbank whose Submit, before it answers, lets race move
// the payout (as a vendor callback arriving first would), then answers
// what simbank does.
type racingVendor struct {
	vendors.Vendor
	race func(reference string)
}

func (v *racingVendor) Submit(ctx context.Context, p vendors.Payout) (vendors.PayoutResult, error) {
	v.race(p.Reference)
	return v.Vendor.Submit(ctx, p)
}

// A vendor's answer to a submit is applied even when the payout moved
// while the vendor was being asked (its callback said REQUESTED first): it
// is judged again against the row as stored, so the payout ends SUCCESS
// at once, through a lone Submit and through a batch alike.
func TestSubmitAnswerAppliedAfterARacingCallback(t *testing.T) {
	for _, batched := range []bool{false, true} {
		name := map[bool]string{false: "lone", true: "batched"}[batched]
		t.Run(name, func(t *testing.T) {
			f, svc, simbank := batchFixture(t)
			ctx := context.Background()
			d := f.withAccount("1234567890")
			svc.vendors = vendors.NewRegistry(&racingVendor{Vendor: simbank, race: func(string) {
				current, err := svc.Get(ctx, d.ID)
				if err != nil {
					t.Error(err)
					return
				}
				if err := svc.move(ctx, current, Move{To: models.StatusRequested, Reason: "callback (test)"}); err != nil {
					t.Error(err)
				}
			}})
			if err := submitAs(ctx, svc, batched, d.ID); err != nil {
				t.Fatalf("submit: %v", err)
			}
			if got := f.statusOf(d.ID); got != models.StatusSuccess {
				t.Fatalf("stored as %s, want SUCCESS (the vendor paid it)", got)
			}
			if n := f.count("disbursement_transitions", "disbursement_id = ? AND to_status = ?", d.ID, models.StatusSuccess); n != 1 {
				t.Errorf("%d SUCCESS audit lines, want 1", n)
			}
			f.reconciled()
		})
	}
}

// A payout whose vendor is not configured is not claimed: no submit
// attempt is counted for a call that never went out.
func TestSubmitToAnUnknownVendorCountsNoAttempt(t *testing.T) {
	f, svc, _ := batchFixture(t)
	d := f.withAccount("1234567890")
	if err := f.db.Model(&models.Disbursement{}).Where("id = ?", d.ID).Update("vendor", "nosuchbank").Error; err != nil {
		t.Fatal(err)
	}
	if err := svc.Submit(context.Background(), d.ID); err == nil {
		t.Fatal("submit to an unknown vendor succeeded")
	}
	var attempts int
	if err := f.db.Raw(`SELECT submit_attempts FROM disbursements WHERE id = ?`, d.ID).Scan(&attempts).Error; err != nil {
		t.Fatal(err)
	}
	if attempts != 0 || f.statusOf(d.ID) != models.StatusVerified {
		t.Errorf("after the refused submit: %d attempts, %s; want 0, VERIFIED", attempts, f.statusOf(d.ID))
	}
}

// slowStatusVendor is simbank, counting its submits, whose status query
// takes long: the clock moves on (advance) while it is asked.
type slowStatusVendor struct {
	countingVendor
	advance func()
}

func (v *slowStatusVendor) Status(ctx context.Context, reference string) (vendors.PayoutResult, error) {
	r, err := v.countingVendor.Status(ctx, reference)
	v.advance()
	return r, err
}

// An attempt whose answer was lost is submitted again only when the
// vendor did not know the reference although the lease had already passed
// when it was asked. Asked just before the lease ends, the vendor's "never
// seen" does not count, however long its answer takes: the first call may
// have reached the vendor meanwhile, and a second would pay twice on a
// vendor that does not deduplicate references.
func TestResubmitOnlyWhenTheLeaseHadPassedBeforeTheVendorWasAsked(t *testing.T) {
	f, _, simbank := batchFixture(t)
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	v := &slowStatusVendor{countingVendor: countingVendor{Vendor: simbank}, advance: func() {
		mu.Lock()
		now = now.Add(2 * time.Second)
		mu.Unlock()
	}}
	svc := New(Options{DB: f.db, Vendors: vendors.NewRegistry(v), SubmitLease: time.Minute, Now: clock})
	d := f.withAccount("1234567890")
	attemptedAt := clock().Add(-time.Minute + time.Second) // the lease ends in a second
	if err := f.db.Model(&models.Disbursement{}).Where("id = ?", d.ID).
		Updates(map[string]any{"submit_attempts": 1, "submit_attempted_at": attemptedAt}).Error; err != nil {
		t.Fatal(err)
	}
	err := svc.Submit(context.Background(), d.ID)
	if !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("Submit = %v, want ErrOutcomeUnknown (asked again later)", err)
	}
	if n := v.submits.Load(); n != 0 || f.statusOf(d.ID) != models.StatusVerified {
		t.Fatalf("the vendor was asked to pay %d times, the payout is %s; want 0 and VERIFIED", n, f.statusOf(d.ID))
	}
	if err := svc.Submit(context.Background(), d.ID); err != nil {
		t.Fatalf("Submit once the lease had passed: %v", err)
	}
	if n := v.submits.Load(); n != 1 {
		t.Fatalf("the vendor was asked to pay %d times once the lease had passed; want 1", n)
	}
}
