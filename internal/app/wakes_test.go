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
	mu  sync.Mutex
	ids map[uuid.UUID]bool
}

func (w *wakeRecorder) Wake(ids ...uuid.UUID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		w.ids[id] = true
	}
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
