package payouts

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// pollRecorder is a Queue that records the status checks enqueued.
type pollRecorder struct {
	mu    sync.Mutex
	polls []recordedPoll
}

type recordedPoll struct {
	slot  string
	after time.Duration
}

func (q *pollRecorder) EnqueueSubmit(context.Context, uuid.UUID, string) error { return nil }

func (q *pollRecorder) EnqueuePoll(_ context.Context, _ uuid.UUID, slot string, after time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.polls = append(q.polls, recordedPoll{slot: slot, after: after})
	return nil
}

func (q *pollRecorder) EnqueueWebhook(context.Context, uuid.UUID, string) error { return nil }

// A payout the vendor keeps pending is checked again and again with a
// growing wait (1 s, 1 s, 2 s … 2 min, then every 5 min), each check a
// task of its own (slot = the check's number, so a duplicate enqueue of
// the same check is one task), and the row's next_check_at follows, so the
// sweep does not step in while a check is simply waiting.
func TestPollBacksOffWhileThePayoutIsPending(t *testing.T) {
	t.Parallel()
	f := newFixture(t, models.Rupiah(1_000_000))
	simbank := sandbox.NewSimBank(sandbox.Options{CompleteAfter: time.Nanosecond})
	queue := &pollRecorder{}
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	svc := New(Options{DB: f.db, Vendors: vendors.NewRegistry(simbank), Queue: queue, Now: func() time.Time { return now }})

	d := f.stored(models.StatusRequested, models.Rupiah(100_000))
	if err := f.db.Model(&models.Disbursement{}).Where("id = ?", d.ID).Update("account_no", sandbox.AccountStaysRequested).Error; err != nil {
		t.Fatal(err)
	}
	payout := vendors.Payout{HolderName: "Budi Santoso", Reference: d.VendorReference, BankCode: "bca", AccountNo: sandbox.AccountStaysRequested,
		TransferType: models.BIFAST, Amount: d.NetAmount}
	if _, err := simbank.Submit(context.Background(), payout); err != nil {
		t.Fatal(err)
	}

	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 15 * time.Second,
		30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 5 * time.Minute, 5 * time.Minute}
	for i, delay := range want {
		if err := svc.Poll(context.Background(), d.ID); err != nil {
			t.Fatalf("check %d: %v", i+1, err)
		}
		got := queue.polls[len(queue.polls)-1]
		if got.after != delay || got.slot != strconv.Itoa(i+1) {
			t.Fatalf("after check %d the next waits %s in slot %q, want %s in slot %q", i+1, got.after, got.slot, delay, strconv.Itoa(i+1))
		}
		var row models.Disbursement
		if err := f.db.Where("id = ?", d.ID).Take(&row).Error; err != nil {
			t.Fatal(err)
		}
		if row.Checks != i+1 || row.NextCheckAt == nil || !row.NextCheckAt.Equal(now.Add(delay+sweepGrace)) || row.Status != models.StatusRequested {
			t.Fatalf("after check %d: checks %d, next_check_at %v, status %s", i+1, row.Checks, row.NextCheckAt, row.Status)
		}
		now = now.Add(delay)
	}
	if PollDelay(0) != time.Second {
		t.Fatalf("the first check waits %s, want 1s", PollDelay(0))
	}
	f.reconciled()
}
