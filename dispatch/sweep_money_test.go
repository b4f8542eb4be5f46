package dispatch

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payouts"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// failingQueue refuses the polls of one disbursement and records the rest.
type failingQueue struct {
	mu     sync.Mutex
	fail   uuid.UUID
	polled []uuid.UUID
}

func (q *failingQueue) EnqueueSubmit(context.Context, uuid.UUID, string) error { return nil }

func (q *failingQueue) EnqueuePoll(_ context.Context, id uuid.UUID, _ string, _ time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if id == q.fail {
		return errors.New("queue refused this one")
	}
	q.polled = append(q.polled, id)
	return nil
}

func (q *failingQueue) EnqueueWebhook(context.Context, uuid.UUID, string) error { return nil }

// Every item of the payout sweep is independent: of three payouts due for
// a status check, the middle one cannot be enqueued; it is counted, and
// the two others are still enqueued.
func TestPayoutSweepGoesOnAfterAFailingItem(t *testing.T) {
	t.Parallel()
	f := newFixture(t, models.Rupiah(1_000_000))
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	var ids []uuid.UUID
	for i := range 3 {
		d := f.stored(models.StatusRequested, models.Rupiah(100_000))
		if err := f.db.Model(&models.Disbursement{}).Where("id = ?", d.ID).
			Update("next_check_at", now.Add(time.Duration(i-10)*time.Second)).Error; err != nil {
			t.Fatal(err)
		}
		ids = append(ids, d.ID)
	}
	queue := &failingQueue{fail: ids[1]}
	_, x := New(payouts.Options{DB: f.db, Vendors: vendors.NewRegistry(sandbox.NewSimBank(sandbox.Options{})), Queue: queue,
		Now: func() time.Time { return now }}, Options{Queue: queue})
	report, err := x.Sweep(context.Background())
	if err != nil || report.Polls != 2 || report.Unhandled != 1 {
		t.Fatalf("sweep %+v %v", report, err)
	}
	if len(queue.polled) != 2 || queue.polled[0] != ids[0] || queue.polled[1] != ids[2] {
		t.Fatalf("polls enqueued for %v, want %v and %v", queue.polled, ids[0], ids[2])
	}
}
