package payouts

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// countingVendor counts the submits that reach the vendor.
type countingVendor struct {
	vendors.Vendor
	submits atomic.Int64
}

func (v *countingVendor) Submit(ctx context.Context, p vendors.Payout) (vendors.PayoutResult, error) {
	v.submits.Add(1)
	return v.Vendor.Submit(ctx, p)
}

// quietQueue is a Queue that drops what it is given. payouts cannot
// queue a submit at all (Queue has no such method: submits are
// dispatch's), so no test here needs to watch for one.
type quietQueue struct{}

func (quietQueue) EnqueuePoll(context.Context, uuid.UUID, string, time.Duration) error { return nil }
func (quietQueue) EnqueueWebhook(context.Context, uuid.UUID, string) error             { return nil }

// Two pumps (two workers) taking small batches at once submit every payout
// due for its first submit exactly once, and touch nothing else: a payout
// awaiting review, one whose attempt another process claimed, one whose
// lock ran out, one of a vendor not configured here.
func TestSubmitDueTakesEachDuePayoutOnce(t *testing.T) {
	t.Parallel()
	f, _, simbank := batchFixture(t)
	v := &countingVendor{Vendor: simbank}
	registry := vendors.NewRegistry(v)
	pumps := []*Service{
		New(Options{DB: f.db, Vendors: registry, SubmitLease: time.Minute, Queue: quietQueue{}}),
		New(Options{DB: f.db, Vendors: registry, SubmitLease: time.Minute, Queue: quietQueue{}}),
	}
	var due []*models.Disbursement
	for range 10 {
		due = append(due, f.withAccount("1234567890"))
	}
	review := f.stored(models.StatusPendingVerification, models.Rupiah(100_000))
	claimed := f.withAccount("1234567890")
	expired := f.withAccount("1234567890")
	elsewhere := f.withAccount("1234567890")
	for _, set := range []struct {
		d      *models.Disbursement
		column string
		value  any
	}{{claimed, "submit_attempts", 1}, {expired, "lock_expires_at", time.Now().Add(-time.Minute)}, {elsewhere, "vendor", "nobank"}} {
		if err := f.db.Model(&models.Disbursement{}).Where("id = ?", set.d.ID).Update(set.column, set.value).Error; err != nil {
			t.Fatal(err)
		}
	}
	var claimedTotal atomic.Int64
	var wg sync.WaitGroup
	for _, p := range pumps {
		wg.Go(func() {
			for {
				n, err := p.SubmitDue(context.Background(), 3)
				if err != nil {
					t.Error(err)
					return
				}
				claimedTotal.Add(int64(n))
				if n == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	if n := claimedTotal.Load(); n != int64(len(due)) || v.submits.Load() != int64(len(due)) {
		t.Fatalf("pumps claimed %d and the vendor was asked %d times; want %d each", n, v.submits.Load(), len(due))
	}
	for _, d := range due {
		if got := f.statusOf(d.ID); got != models.StatusSuccess {
			t.Errorf("due payout %s: %s, want SUCCESS", d.ID, got)
		}
	}
	for _, d := range []*models.Disbursement{review, claimed, expired, elsewhere} {
		stored, err := pumps[0].Get(context.Background(), d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if stored.Status != d.Status || (d != claimed && stored.SubmitAttempts != 0) {
			t.Errorf("%s: %s with %d attempts; a pump must leave it", d.ID, stored.Status, stored.SubmitAttempts)
		}
	}
}

// A pumped payout whose answer is lost is left to the sweep: no task at
// once (a call cut at the lease may still sit in the vendor's queue), the
// row due when the claim's lease and the sweep's grace have passed; the
// submit task the sweep then queues asks the vendor about the attempt and
// never pays twice.
func TestSubmitDueLeavesALostAnswerToTheSweep(t *testing.T) {
	t.Parallel()
	f, _, simbank := batchFixture(t)
	v := &countingVendor{Vendor: simbank}
	svc := New(Options{DB: f.db, Vendors: vendors.NewRegistry(v), SubmitLease: time.Minute, Queue: quietQueue{}})
	d := f.withAccount(sandbox.AccountFirstSubmitLost)
	if n, err := svc.SubmitDue(context.Background(), 10); n != 1 || err != nil {
		t.Fatalf("SubmitDue = %d, %v; want 1 claimed", n, err)
	}
	stored, err := svc.Get(context.Background(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Status != models.StatusVerified || stored.SubmitAttempts != 1 || stored.NextCheckAt == nil ||
		!stored.NextCheckAt.Equal(stored.SubmitAttemptedAt.Add(time.Minute+sweepGrace)) {
		t.Fatalf("left as %s, %d attempts, next check %v after %v; want VERIFIED, 1, lease and grace later",
			stored.Status, stored.SubmitAttempts, stored.NextCheckAt, stored.SubmitAttemptedAt)
	}
	if err := svc.Submit(context.Background(), d.ID); err != nil { // the sweep's task
		t.Fatalf("the task: %v", err)
	}
	if got := f.statusOf(d.ID); got != models.StatusSuccess || v.submits.Load() != 1 {
		t.Fatalf("%s after the task, vendor asked %d times; want SUCCESS and once", got, v.submits.Load())
	}
	f.reconciled()
}

// An idle pump's probe sees only what its claim could take: a payout of a
// vendor configured in another process does not make it claim (write)
// every recheck.
func TestIdleProbeIgnoresOtherProcessesVendors(t *testing.T) {
	t.Parallel()
	f, svc, _ := batchFixture(t)
	d := f.withAccount("1234567890")
	if !svc.AnyDue(context.Background()) {
		t.Fatal("a due payout of a configured vendor not seen")
	}
	if err := f.db.Model(&models.Disbursement{}).Where("id = ?", d.ID).Update("vendor", "nobank").Error; err != nil {
		t.Fatal(err)
	}
	if svc.AnyDue(context.Background()) {
		t.Fatal("a payout of a vendor not configured here counted as due")
	}
}
