package app

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/internal/testenv"
)

// wakeRecorder records the ids it is woken for.
type wakeRecorder struct {
	mu    sync.Mutex
	ids   map[uuid.UUID]bool
	pumps int
}

func (w *wakeRecorder) Wake(ids ...uuid.UUID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		w.ids[id] = true
	}
}

func (w *wakeRecorder) WakePumps() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pumps++
}

func (w *wakeRecorder) pumpWakes() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pumps
}

func (w *wakeRecorder) has(id uuid.UUID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ids[id]
}

// What one process publishes when payouts leave VERIFIED wakes the waiters
// of another through Redis (miniredis in the embedded mode), each id.
func TestRedisWakesReachAnotherProcess(t *testing.T) {
	rdb, _ := testenv.Redis(t)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	rec := &wakeRecorder{ids: map[uuid.UUID]bool{}}
	SubscribeWakes(ctx, rdb, rec)
	a, b := uuid.New(), uuid.New()
	RedisWakes{Redis: rdb}.Notify(ctx, []uuid.UUID{a, b})
	for deadline := time.Now().Add(30 * time.Second); !rec.has(a) || !rec.has(b); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the published ids never woke the subscriber")
		}
	}
}

// A burst of due signals (one per create) reaches another process's pumps
// as at least one wake-up, and a signal after the burst as another: the
// publishes are coalesced, never dropped after a signal.
func TestDueSignalsWakeAnotherProcessesPumps(t *testing.T) {
	rdb, _ := testenv.Redis(t)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	rec := &wakeRecorder{ids: map[uuid.UUID]bool{}}
	SubscribeWakes(ctx, rdb, rec)
	due := &RedisDue{Redis: rdb}
	for range 50 {
		due.SubmitsDue(ctx)
	}
	waitFor := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); rec.pumpWakes() < n; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d pump wake-ups, want at least %d", rec.pumpWakes(), n)
			}
		}
	}
	waitFor(1)
	for due.sending.Load() {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // the burst's last message arrives
	before := rec.pumpWakes()
	due.SubmitsDue(ctx)
	waitFor(before + 1)
	if n := rec.pumpWakes(); n > 51 {
		t.Fatalf("%d wake-ups for 51 signals", n)
	}
}
