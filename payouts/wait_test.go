package payouts

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
)

// countingVendor counts the submits that reach the vendor; hold, when set,
// keeps each submit until it is closed.
type countingVendor struct {
	vendors.Vendor
	submits atomic.Int64
	reached chan struct{} // one send per submit when not nil
	hold    chan struct{}
}

func (v *countingVendor) Submit(ctx context.Context, p vendors.Payout) (vendors.PayoutResult, error) {
	v.submits.Add(1)
	if v.reached != nil {
		v.reached <- struct{}{}
	}
	if v.hold != nil {
		<-v.hold
	}
	return v.Vendor.Submit(ctx, p)
}

// wakeFunc is a Notifier: what another process's subscriber would do.
type wakeFunc func(ids []uuid.UUID)

func (f wakeFunc) Notify(_ context.Context, ids []uuid.UUID) { f(ids) }

// inlineFixture is a service that submits inline and never re-checks
// during a test (recheck huge) unless told otherwise.
func inlineFixture(t *testing.T, recheck time.Duration) (*fixture, *Service, *countingVendor) {
	f, _, simbank := batchFixture(t)
	v := &countingVendor{Vendor: simbank}
	svc := New(Options{DB: f.db, Vendors: vendors.NewRegistry(v), SubmitLease: time.Minute, SubmitInline: true, WaitRecheck: recheck})
	return f, svc, v
}

// A waiting create submits its payout itself and answers with the vendor's
// answer, woken by its own commit, not by a re-read; the queued task that
// runs afterwards finds the work done: the vendor is asked once and one
// attempt is counted.
func TestInlineSubmitPaysOnceAndTheTaskDoesNothing(t *testing.T) {
	f, svc, v := inlineFixture(t, time.Hour)
	ctx := context.Background()
	d := f.withAccount("1234567890")
	got, err := svc.SubmitAndWait(ctx, d, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status == models.StatusVerified {
		t.Fatalf("answered %s, want the vendor's answer", got.Status)
	}
	if err := svc.Submit(ctx, d.ID); err != nil {
		t.Fatalf("the worker's task: %v", err)
	}
	stored, err := svc.Get(ctx, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n := v.submits.Load(); n != 1 || stored.SubmitAttempts != 1 {
		t.Fatalf("vendor asked %d times, %d attempts counted; want 1 and 1", n, stored.SubmitAttempts)
	}
	if n := svc.WaitRechecks(); n != 0 {
		t.Fatalf("%d re-checks; the commit should have woken the wait", n)
	}
	f.reconciled()
}

// waitingFor blocks until svc has a waiter for id.
func waitingFor(t *testing.T, svc *Service, id uuid.UUID) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		svc.waiting.mu.Lock()
		n := len(svc.waiting.byID[id])
		svc.waiting.mu.Unlock()
		if n > 0 {
			return
		}
	}
	t.Fatal("nobody waits")
}

// When another process holds the submit (the worker claimed it first),
// the inline submit does nothing and the create is woken by the other
// process's commit, published to it, without re-reading the row.
func TestWaiterWokenByAnotherProcessesCommit(t *testing.T) {
	f, api, v := inlineFixture(t, time.Hour)
	ctx := context.Background()
	worker := New(Options{DB: f.db, Vendors: api.vendors, SubmitLease: time.Minute,
		Notifier: wakeFunc(func(ids []uuid.UUID) { api.Wake(ids...) })})
	d := f.withAccount("1234567890")
	claimedCopy := *d
	if claimed, err := worker.claim(ctx, []*models.Disbursement{&claimedCopy}); err != nil || !claimed[d.ID] {
		t.Fatalf("worker's claim: %v %v", claimed, err)
	}
	answered := make(chan *models.Disbursement, 1)
	go func() {
		got, err := api.SubmitAndWait(ctx, d, time.Minute)
		if err != nil {
			t.Error(err)
		}
		answered <- got
	}()
	waitingFor(t, api, d.ID)
	if err := worker.move(ctx, &claimedCopy, Move{To: models.StatusRequested, Reason: "vendor accepted (test)"}); err != nil {
		t.Fatal(err)
	}
	got := <-answered
	if got.Status != models.StatusRequested {
		t.Fatalf("answered %s, want REQUESTED", got.Status)
	}
	if n := v.submits.Load(); n != 0 {
		t.Fatalf("the losing inline submit asked the vendor %d times", n)
	}
	if n := api.WaitRechecks(); n != 0 {
		t.Fatalf("%d re-checks; the publish should have woken the wait", n)
	}
}

// A lost publish (pub/sub is at most once) costs a re-check, not the
// answer.
func TestLostWakeIsCoveredByTheRecheck(t *testing.T) {
	f, api, _ := inlineFixture(t, 5*time.Millisecond)
	ctx := context.Background()
	worker := New(Options{DB: f.db, Vendors: api.vendors, SubmitLease: time.Minute}) // publishes nothing
	d := f.withAccount("1234567890")
	claimedCopy := *d
	if _, err := worker.claim(ctx, []*models.Disbursement{&claimedCopy}); err != nil {
		t.Fatal(err)
	}
	answered := make(chan *models.Disbursement, 1)
	go func() {
		got, _ := api.SubmitAndWait(ctx, d, time.Minute)
		answered <- got
	}()
	waitingFor(t, api, d.ID)
	if err := worker.move(ctx, &claimedCopy, Move{To: models.StatusRequested, Reason: "vendor accepted (test)"}); err != nil {
		t.Fatal(err)
	}
	if got := <-answered; got.Status != models.StatusRequested {
		t.Fatalf("answered %s, want REQUESTED", got.Status)
	}
	if api.WaitRechecks() == 0 {
		t.Fatal("answered with no re-check and no wake-up")
	}
}

// A merchant who hangs up while the vendor is being asked ends the wait
// (answered VERIFIED), not the submit: the vendor's answer is applied, the
// payout asked for once, and the books reconcile.
func TestHangUpMidSubmitLeavesAConsistentPayout(t *testing.T) {
	f, svc, v := inlineFixture(t, time.Hour)
	v.reached, v.hold = make(chan struct{}, 1), make(chan struct{})
	d := f.withAccount("1234567890")
	ctx, hangUp := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	var got *models.Disbursement
	go func() {
		defer wg.Done()
		got, _ = svc.SubmitAndWait(ctx, d, time.Minute)
	}()
	<-v.reached
	hangUp()
	wg.Wait()
	if got.Status != models.StatusVerified {
		t.Fatalf("answered %s after the hang-up, want VERIFIED", got.Status)
	}
	// The worker's task while the inline call is out: the attempt is
	// counted already, the vendor does not know the reference yet, so the
	// task is retried later without a second submit.
	if err := svc.Submit(context.Background(), d.ID); !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("the worker's task while the inline submit is out: %v, want a retry", err)
	}
	close(v.hold)
	for deadline := time.Now().Add(30 * time.Second); f.statusOf(d.ID) == models.StatusVerified; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the vendor's answer was never applied")
		}
	}
	if err := svc.Submit(context.Background(), d.ID); err != nil {
		t.Fatalf("the worker's task: %v", err)
	}
	stored, err := svc.Get(context.Background(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n := v.submits.Load(); n != 1 || stored.SubmitAttempts != 1 {
		t.Fatalf("vendor asked %d times, %d attempts counted; want 1 and 1", n, stored.SubmitAttempts)
	}
	f.reconciled()
}
