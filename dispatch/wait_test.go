package dispatch

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payouts"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
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

// submitRecorder is a Queue (and a payouts.Queue) that records the
// submit tasks queued.
type submitRecorder struct {
	mu      sync.Mutex
	submits []uuid.UUID
}

func (q *submitRecorder) EnqueueSubmit(_ context.Context, id uuid.UUID, _ string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.submits = append(q.submits, id)
	return nil
}

func (q *submitRecorder) EnqueuePoll(context.Context, uuid.UUID, string, time.Duration) error {
	return nil
}
func (q *submitRecorder) EnqueueWebhook(context.Context, uuid.UUID, string) error { return nil }

func (q *submitRecorder) queued() []uuid.UUID {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]uuid.UUID(nil), q.submits...)
}

// inlineFixture is a service that submits inline and its dispatcher,
// which never re-checks during a test (recheck huge) unless told
// otherwise.
func inlineFixture(t *testing.T, recheck time.Duration) (*fixture, *payouts.Service, *Dispatcher, *countingVendor, *submitRecorder) {
	f, _, _, simbank := batchFixture(t)
	v := &countingVendor{Vendor: simbank}
	queue := &submitRecorder{}
	svc, x := New(payouts.Options{DB: f.db, Vendors: vendors.NewRegistry(v), SubmitLease: time.Minute, SubmitInline: true, Queue: queue},
		Options{Queue: queue, WaitRecheck: recheck})
	return f, svc, x, v, queue
}

// createInline creates a payout of 100,000 to account through svc.
func (f *fixture) createInline(svc *payouts.Service, account string) *payouts.Created {
	f.t.Helper()
	created, err := svc.Create(context.Background(), f.client, payouts.CreateRequest{IdempotencyKey: uuid.NewString(), WaitsForSubmit: true,
		Params: payouts.Params{WalletID: f.wallet.ID, Amount: models.Rupiah(100_000), BankCode: "bca", AccountNo: account, TransferType: models.BIFAST}})
	if err != nil {
		f.t.Fatal(err)
	}
	return created
}

// A create that submits inline is stored with its first attempt claimed,
// queues no task, and answers with the vendor's answer as committed, with
// no re-read; should the worker's sweep run the task anyway, it finds the
// work done: the vendor is asked once and one attempt is counted.
func TestInlineSubmitPaysOnceAndQueuesNothing(t *testing.T) {
	f, svc, x, v, queue := inlineFixture(t, time.Hour)
	ctx := context.Background()
	created := f.createInline(svc, "1234567890")
	if d := created.Disbursement; d.SubmitAttempts != 1 || d.SubmitAttemptedAt == nil {
		t.Fatalf("stored with %d attempts (at %v), want the first claimed", d.SubmitAttempts, d.SubmitAttemptedAt)
	}
	got, err := x.SubmitAndWait(ctx, created, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := svc.Get(ctx, got.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != models.StatusSuccess || stored.Status != got.Status {
		t.Fatalf("answered %s, stored %s; want SUCCESS both", got.Status, stored.Status)
	}
	if q := queue.queued(); len(q) != 0 {
		t.Fatalf("submit tasks queued: %v; the inline submit finished the payout", q)
	}
	if err := svc.Submit(ctx, got.ID); err != nil {
		t.Fatalf("the worker's task: %v", err)
	}
	if stored, _ = svc.Get(ctx, got.ID); v.submits.Load() != 1 || stored.SubmitAttempts != 1 {
		t.Fatalf("vendor asked %d times, %d attempts counted; want 1 and 1", v.submits.Load(), stored.SubmitAttempts)
	}
	if n := x.WaitRechecks(); n != 0 {
		t.Fatalf("%d re-checks; the inline submit should have answered", n)
	}
	f.reconciled()
}

// An inline submit whose answer is lost is handed to the worker: its task
// is queued, the merchant waits for whoever finishes it, and the worker
// resolves it by asking the vendor about the claimed attempt, never by a
// second payout.
func TestInlineSubmitLeftToTheWorker(t *testing.T) {
	f, svc, x, v, queue := inlineFixture(t, 5*time.Millisecond)
	ctx := context.Background()
	created := f.createInline(svc, sandbox.AccountFirstSubmitLost)
	answered := make(chan *models.Disbursement, 1)
	go func() {
		got, err := x.SubmitAndWait(ctx, created, time.Minute)
		if err != nil {
			t.Error(err)
		}
		answered <- got
	}()
	id := created.Disbursement.ID
	var queued []uuid.UUID
	for deadline := time.Now().Add(30 * time.Second); len(queued) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the unfinished inline submit queued no task")
		}
		queued = queue.queued()
	}
	if len(queued) != 1 || queued[0] != id {
		t.Fatalf("queued %v, want %s once", queued, id)
	}
	if err := svc.Submit(ctx, id); err != nil {
		t.Fatalf("the worker's task: %v", err)
	}
	if got := <-answered; got.Status == models.StatusVerified {
		t.Fatalf("answered %s, want the worker's result", got.Status)
	}
	if n := v.submits.Load(); n != 1 {
		t.Fatalf("vendor asked to pay %d times, want once", n)
	}
	f.reconciled()
}

// waitingFor blocks until x has a waiter for id.
func waitingFor(t *testing.T, x *Dispatcher, id uuid.UUID) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		x.waiting.mu.Lock()
		n := len(x.waiting.byID[id])
		x.waiting.mu.Unlock()
		if n > 0 {
			return
		}
	}
	t.Fatal("nobody waits")
}

// When another process holds the submit (the worker's: the inline submit
// left it over), the create is woken by the other process's commit,
// published to it, without re-reading the row.
func TestWaiterWokenByAnotherProcessesCommit(t *testing.T) {
	f, _, api, v, _ := inlineFixture(t, time.Hour)
	ctx := context.Background()
	worker, _ := New(payouts.Options{DB: f.db, Vendors: vendors.NewRegistry(v.Vendor), SubmitLease: time.Minute},
		Options{Notifier: wakeFunc(func(ids []uuid.UUID) { api.Wake(ids...) })})
	d := f.withAccount(sandbox.AccountStaysRequested)
	answered := make(chan *models.Disbursement, 1)
	go func() {
		got, err := api.SubmitAndWait(ctx, &payouts.Created{Disbursement: d}, time.Minute)
		if err != nil {
			t.Error(err)
		}
		answered <- got
	}()
	waitingFor(t, api, d.ID)
	if err := worker.Submit(ctx, d.ID); err != nil {
		t.Fatal(err)
	}
	got := <-answered
	if got.Status != models.StatusRequested {
		t.Fatalf("answered %s, want REQUESTED", got.Status)
	}
	if n := v.submits.Load(); n != 0 {
		t.Fatalf("the vendor was asked %d times by the waiting process", n)
	}
	if n := api.WaitRechecks(); n != 0 {
		t.Fatalf("%d re-checks; the publish should have woken the wait", n)
	}
}

// A lost publish (pub/sub is at most once) costs a re-check, not the
// answer.
func TestLostWakeIsCoveredByTheRecheck(t *testing.T) {
	f, _, api, v, _ := inlineFixture(t, 5*time.Millisecond)
	ctx := context.Background()
	worker, _ := New(payouts.Options{DB: f.db, Vendors: vendors.NewRegistry(v.Vendor), SubmitLease: time.Minute}, Options{}) // publishes nothing
	d := f.withAccount(sandbox.AccountStaysRequested)
	answered := make(chan *models.Disbursement, 1)
	go func() {
		got, _ := api.SubmitAndWait(ctx, &payouts.Created{Disbursement: d}, time.Minute)
		answered <- got
	}()
	waitingFor(t, api, d.ID)
	if err := worker.Submit(ctx, d.ID); err != nil {
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
	f, svc, x, v, _ := inlineFixture(t, time.Hour)
	v.reached, v.hold = make(chan struct{}, 1), make(chan struct{})
	created := f.createInline(svc, "1234567890")
	d := created.Disbursement
	ctx, hangUp := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	var got *models.Disbursement
	go func() {
		defer wg.Done()
		got, _ = x.SubmitAndWait(ctx, created, time.Minute)
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
	if err := svc.Submit(context.Background(), d.ID); !errors.Is(err, payouts.ErrOutcomeUnknown) {
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

// A create that queues while another's vendor call is still out gets a
// call of its own instead of waiting for that one to answer: with a
// vendor that takes its time, each merchant waits about as long as the
// vendor, not for the call before theirs as well. Both are paid once.
func TestInlineSubmitDoesNotWaitForASlowCallBeforeIt(t *testing.T) {
	f, svc, x, v, _ := inlineFixture(t, time.Hour)
	v.reached, v.hold = make(chan struct{}, 2), make(chan struct{})
	var wg sync.WaitGroup
	answers := make([]*models.Disbursement, 2)
	submit := func(i int, created *payouts.Created) {
		wg.Go(func() {
			got, err := x.SubmitAndWait(context.Background(), created, time.Minute)
			if err != nil {
				t.Error(err)
			}
			answers[i] = got
		})
	}
	submit(0, f.createInline(svc, "1234567890"))
	<-v.reached // the first call is out, and the vendor does not answer yet
	submit(1, f.createInline(svc, "1234567891"))
	select {
	case <-v.reached:
	case <-time.After(10 * time.Second):
		close(v.hold)
		wg.Wait()
		t.Fatal("the second create's submit waited for the first's vendor call to answer")
	}
	close(v.hold)
	wg.Wait()
	for i, d := range answers {
		if d == nil || d.Status != models.StatusSuccess {
			t.Fatalf("create %d answered %v, want SUCCESS", i, d)
		}
	}
	if n := v.submits.Load(); n != 2 {
		t.Fatalf("vendor asked %d times, want 2", n)
	}
	f.reconciled()
}
