package dispatch

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/payoutd/payoutd/models"
)

// Submits made at once while the batch loops run are answered and paid
// once each; once the loops stop, Submit still works on its own.
func TestConcurrentSubmitsThroughBatchLoops(t *testing.T) {
	f, _, x, simbank := batchFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		x.RunSubmitBatches(ctx, 2, 8)
	}()
	var ds []*models.Disbursement
	for range 24 {
		ds = append(ds, f.withAccount("1234567890"))
	}
	waitForBatches(t, x)
	var wg sync.WaitGroup
	for _, d := range ds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := x.Submit(context.Background(), d.ID); err != nil {
				t.Errorf("submit %s: %v", d.ID, err)
			}
		}()
	}
	wg.Wait()
	for _, d := range ds {
		if got := f.statusOf(d.ID); got != models.StatusSuccess {
			t.Errorf("%s is %s, want SUCCESS", d.ID, got)
		}
		if n, _ := simbank.SubmitCalls(context.Background(), d.VendorReference); n != 1 {
			t.Errorf("%s submitted %d times", d.ID, n)
		}
	}
	cancel()
	<-stopped
	last := f.withAccount("1234567890")
	if err := x.Submit(context.Background(), last.ID); err != nil || f.statusOf(last.ID) != models.StatusSuccess {
		t.Errorf("submit after the loops stopped: %v, %s", err, f.statusOf(last.ID))
	}
	f.reconciled()
}

func waitForBatches(t *testing.T, x *Dispatcher) {
	t.Helper()
	for range 200 {
		x.mu.Lock()
		running := x.batches != nil
		x.mu.Unlock()
		if running {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("batch loops did not start")
}
