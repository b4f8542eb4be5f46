package worker_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/payoutd/payoutd/dispatch"
	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/payments"
	"github.com/payoutd/payoutd/payouts"
	"github.com/payoutd/payoutd/tasks"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/worker"
)

// logLines are the lines written to logs so far.
func logLines(logs *testenv.SyncBuffer) [][]byte {
	var out [][]byte
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		out = append(out, append([]byte(nil), sc.Bytes()...))
	}
	return out
}

// Two worker processes on one Redis run a periodic task once per period,
// not once per worker: with ops:reconcile every 2 s, over a few periods it
// runs at most once for each period that passed, each run for a period
// of its own. (asynq's Unique did not prevent this: its lock goes when the
// task finishes, so the second scheduler's enqueue of the period went in.)
// Not parallel: it reads the process's log.
func TestPeriodicTaskRunsOncePerPeriodAcrossWorkers(t *testing.T) {
	logs := &testenv.SyncBuffer{}
	previous := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	t.Cleanup(func() { slog.SetDefault(previous) })

	db := testenv.DB(t)
	rdb, _ := testenv.Redis(t)
	opt, prefix := testenv.Queue(t, rdb)
	const period = 2 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	start := time.Now()
	for i := range 2 {
		// Processes never start at the same instant: the second comes up
		// a second after the first.
		time.Sleep(time.Duration(i) * time.Second)
		_, payoutDispatch := dispatch.New(payouts.Options{DB: db, Vendors: sandbox.Registry(sandbox.Options{})}, dispatch.Options{})
		deps := worker.Deps{DB: db, Redis: opt, QueuePrefix: prefix, Concurrency: 2,
			Dispatch: payoutDispatch,
			Payments: payments.New(payments.Options{DB: db}),
			Periods:  map[string]time.Duration{tasks.TypeReconcile: period}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- worker.Run(ctx, deps)
		}()
	}
	time.Sleep(3 * period)
	cancel()
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("worker: %v", err)
		}
	}

	var runs []string
	for _, line := range logLines(logs) {
		var entry struct {
			Msg    string `json:"msg"`
			TaskID string `json:"task_id"`
		}
		if json.Unmarshal(line, &entry) == nil && (entry.Msg == "reconciliation clean" || entry.Msg == "reconciliation found problems") {
			runs = append(runs, entry.TaskID)
		}
	}
	periods := int(elapsed / period)
	if len(runs) == 0 || len(runs) > periods {
		t.Fatalf("ops:reconcile ran %d times in %s with two workers (every %s), want once per period: at most %d; task ids %v",
			len(runs), elapsed.Round(time.Millisecond), period, periods, runs)
	}
	seen := map[string]bool{}
	for _, id := range runs {
		if seen[id] {
			t.Fatalf("the period of %s ran twice; task ids %v", id, runs)
		}
		seen[id] = true
	}
}
