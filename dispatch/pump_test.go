package dispatch

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payouts"
	"github.com/payoutd/payoutd/vendors"
)

// signalFunc is a DueSignal: what the API's publish does.
type signalFunc func()

func (f signalFunc) SubmitsDue(context.Context) { f() }

// With a due signal, a create queues no task: the signal wakes the running
// pump, which submits the payout.
func TestCreateSignalsThePump(t *testing.T) {
	t.Parallel()
	f, _, _, simbank := batchFixture(t)
	queue := &submitRecorder{}
	var signals atomic.Int64
	var x *Dispatcher
	svc, x := New(payouts.Options{DB: f.db, Vendors: vendors.NewRegistry(simbank), SubmitLease: time.Minute, Queue: queue},
		Options{Queue: queue, DueSignal: signalFunc(func() { signals.Add(1); x.WakePumps() })})
	ctx, stop := context.WithCancel(context.Background())
	pumped := make(chan struct{})
	go func() {
		defer close(pumped)
		x.RunSubmitPump(ctx, 2, 8, nil)
	}()
	defer func() { stop(); <-pumped }()
	var ids []uuid.UUID
	for range 5 {
		created, err := svc.Create(context.Background(), f.client, payouts.CreateRequest{IdempotencyKey: uuid.NewString(),
			Params: payouts.Params{WalletID: f.wallet.ID, Amount: models.Rupiah(100_000), BankCode: "bca", AccountNo: "1234567890", TransferType: models.BIFAST}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, created.Disbursement.ID)
	}
	for _, id := range ids {
		for deadline := time.Now().Add(30 * time.Second); f.statusOf(id) != models.StatusSuccess; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s never submitted by the pump", id)
			}
		}
	}
	if q := queue.queued(); len(q) != 0 || signals.Load() != int64(len(ids)) {
		t.Fatalf("tasks queued %v, %d signals; want none and %d", q, signals.Load(), len(ids))
	}
	f.reconciled()
}

// While an operator has submits paused, the pumps take nothing, woken or
// not; once the pause is lifted the payout is submitted.
func TestPausedPumpsTakeNothing(t *testing.T) {
	t.Parallel()
	f, _, _, simbank := batchFixture(t)
	v := &countingVendor{Vendor: simbank}
	queue := &submitRecorder{}
	_, x := New(payouts.Options{DB: f.db, Vendors: vendors.NewRegistry(v), SubmitLease: time.Minute, Queue: queue}, Options{Queue: queue})
	var paused atomic.Bool
	paused.Store(true)
	var checks atomic.Int64
	ctx, stop := context.WithCancel(context.Background())
	pumped := make(chan struct{})
	go func() {
		defer close(pumped)
		x.RunSubmitPump(ctx, 2, 8, func(context.Context) bool { checks.Add(1); return paused.Load() })
	}()
	defer func() { stop(); <-pumped }()
	d := f.withAccount("1234567890")
	for checks.Load() < 6 { // every pump looked three times at least
		x.WakePumps()
		time.Sleep(time.Millisecond)
	}
	if got := f.statusOf(d.ID); got != models.StatusVerified || v.submits.Load() != 0 {
		t.Fatalf("while paused: %s, vendor asked %d times; want VERIFIED and none", got, v.submits.Load())
	}
	paused.Store(false)
	x.WakePumps()
	for deadline := time.Now().Add(30 * time.Second); f.statusOf(d.ID) != models.StatusSuccess; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("never submitted after the pause was lifted")
		}
	}
}
