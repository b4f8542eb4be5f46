// Package worker runs the asynq server that processes the service's tasks
// and the scheduler that enqueues its periodic ones, and beside them the
// dispatcher's submit batches and pumps (dispatch.Dispatcher.Run).
// Handlers are thin: payout submits, status checks and the sweep go to
// package dispatch, the rest to the services; errors.go turns their errors
// into asynq outcomes (retry, skip, done).
package worker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/dispatch"
	"github.com/payoutd/payoutd/internal/metrics"
	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/payments"
	"github.com/payoutd/payoutd/tasks"
	"github.com/payoutd/payoutd/webhooks"
)

// Deps is what the worker's handlers need.
type Deps struct {
	DB    *gorm.DB
	Redis asynq.RedisConnOpt
	// Dispatch runs the payout service's submits and status checks (its
	// Payouts is the payout service); required.
	Dispatch *dispatch.Dispatcher
	// Webhooks delivers merchant webhook events.
	Webhooks *webhooks.Deliverer
	// Payments expires and settles payments.
	Payments *payments.Service
	// Metrics counts and times every task run (nil: not counted).
	Metrics *metrics.Metrics
	// QueuePrefix names the queues to serve (tasks.QueuePriorities); empty
	// in production, unique per test when tests share a Redis.
	QueuePrefix string
	// Concurrency is the number of tasks processed at once (default 64):
	// payout submits running at once share batches, so more of them wait
	// together for one database round instead of queueing in Redis.
	Concurrency int
	// Periods overrides the period of periodic tasks by task type (tests
	// run them every second); unset, each runs at its tasks.*Every.
	Periods map[string]time.Duration
	// Now is the clock reconcile judges by (nil: time.Now), the one the
	// services are given.
	Now func() time.Time
}

// Mux returns the task handlers.
func Mux(d Deps) *asynq.ServeMux {
	mux := asynq.NewServeMux()
	mux.HandleFunc(tasks.TypeReconcile, func(ctx context.Context, _ *asynq.Task) error {
		now := time.Now
		if d.Now != nil {
			now = d.Now
		}
		return reconcile(ctx, d.DB, d.Metrics, now())
	})
	mux.HandleFunc(tasks.TypePayoutSubmit, disbursementTask(d.Dispatch.Submit))
	mux.HandleFunc(tasks.TypePayoutPoll, disbursementTask(d.Dispatch.Poll))
	mux.HandleFunc(tasks.TypePayoutExpire, periodic("payout:expire", d.Dispatch.Payouts().ExpireLocks))
	mux.HandleFunc(tasks.TypePayoutSweep, periodic("payout:sweep", d.Dispatch.Sweep))
	mux.HandleFunc(tasks.TypeWebhookDeliver, deliverWebhook(d.Webhooks))
	mux.HandleFunc(tasks.TypePaymentExpire, paymentTask(d.Payments.Expire))
	mux.HandleFunc(tasks.TypePaymentSettle, paymentTask(d.Payments.Settle))
	mux.HandleFunc(tasks.TypePaymentSweep, func(ctx context.Context, _ *asynq.Task) error {
		report, err := d.Payments.Sweep(ctx)
		if report != (payments.SweepReport{}) {
			slog.InfoContext(ctx, "payment:sweep", slog.Any("report", report))
		}
		return err
	})
	mux.HandleFunc(tasks.TypeWebhookSweep, func(ctx context.Context, _ *asynq.Task) error {
		n, err := d.Webhooks.Sweep(ctx)
		if n > 0 {
			slog.InfoContext(ctx, "webhook:sweep", slog.Int("enqueued", n))
		}
		return err
	})
	if d.Metrics != nil {
		mux.Use(countTasks(d.Metrics))
	}
	return mux
}

// countTasks records each task's type, outcome and duration.
func countTasks(m *metrics.Metrics) asynq.MiddlewareFunc {
	return func(next asynq.Handler) asynq.Handler {
		return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
			start := time.Now()
			err := next.ProcessTask(ctx, t)
			m.TaskDone(t.Type(), err, time.Since(start))
			return err
		})
	}
}

// reconcile logs the outcome of a reconciliation; a failed invariant is an
// error-level line for alerting, not a task failure to retry. The task id
// names the period the run is for.
func reconcile(ctx context.Context, db *gorm.DB, m *metrics.Metrics, now time.Time) error {
	report, err := ledger.Reconcile(ctx, db, now)
	if err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	m.ReconcileDone(len(report.Problems), now)
	id, _ := asynq.GetTaskID(ctx)
	if !report.OK {
		slog.ErrorContext(ctx, "reconciliation found problems", slog.String("task_id", id), slog.Any("problems", report.Problems))
		return nil
	}
	slog.InfoContext(ctx, "reconciliation clean", slog.String("task_id", id), slog.Int("wallets", report.Wallets),
		slog.Int("transactions", report.Transactions))
	return nil
}

// Run processes tasks and runs the scheduler until ctx is cancelled. Each
// periodic task runs once per period however many workers run. On
// cancellation asynq stops taking tasks and gives running ones
// ShutdownTimeout to finish; unfinished ones go back to their queue.
func Run(ctx context.Context, d Deps) error {
	concurrency := d.Concurrency
	if concurrency == 0 {
		concurrency = 64
	}
	srv := asynq.NewServer(d.Redis, asynq.Config{
		Concurrency:     concurrency,
		Queues:          tasks.QueuePriorities(d.QueuePrefix),
		ShutdownTimeout: 20 * time.Second,
		Logger:          slogAdapter{},
		RetryDelayFunc:  tasks.RetryDelay,
		IsFailure:       isFailure,
		// An idle worker looks for tasks this often (asynq polls, sleeping
		// half to one and a half of it). Measured on Redis 7 with the three
		// queues: 96 commands/s idle at 200 ms, 224 at 50 ms, 475 at 20 ms,
		// 760 at 10 ms. A waiting create no longer waits for this (the API
		// submits it inline); 50 ms keeps the worker's pick-up after idle,
		// the fallback and DISBURSEMENT_SUBMIT_WAIT=0's first submit,
		// short for about 130 more cheap commands/s. A busy worker never
		// sleeps on it.
		TaskCheckInterval: 50 * time.Millisecond,
		// Scheduled polls and retries become due to the second: the first
		// payout poll is a second after the vendor accepted.
		DelayedTaskCheckInterval: 250 * time.Millisecond,
	})
	periodic := make([]tasks.Periodic, len(tasks.PeriodicTasks))
	for i, p := range tasks.PeriodicTasks {
		if every, ok := d.Periods[p.Type]; ok {
			p.Every = every
		}
		periodic[i] = p
	}
	enqueuer := asynq.NewClient(d.Redis)
	defer enqueuer.Close()
	sched := &scheduler{client: enqueuer, prefix: d.QueuePrefix}
	// The dispatcher's submit batches and pumps (dispatch/paths.go) outlive
	// ctx until the server has shut down, since running tasks wait on the
	// batches.
	batchCtx, stopBatches := context.WithCancel(context.WithoutCancel(ctx))
	batchesDone := make(chan struct{})
	go func() {
		defer close(batchesDone)
		paused, closePaused := submitsPaused(d.Redis, d.QueuePrefix+tasks.QueueCritical)
		defer closePaused()
		d.Dispatch.Run(batchCtx, dispatch.Worker{Concurrency: concurrency, Paused: paused})
	}()
	stop := func() {
		srv.Shutdown()
		stopBatches()
		<-batchesDone
	}
	if err := srv.Start(Mux(d)); err != nil {
		stopBatches()
		<-batchesDone
		return fmt.Errorf("start worker: %w", err)
	}
	sched.start(ctx, periodic)
	slog.Info("worker started", slog.Int("concurrency", concurrency))
	<-ctx.Done()
	slog.Info("worker shutting down")
	sched.wait()
	stop()
	return nil
}

// submitsPaused reports whether an operator paused queue (in the
// dashboard), the queue of payout:submit: the submit pumps then take
// nothing either. An unreadable pause (Redis down) does not stop them.
func submitsPaused(opt asynq.RedisConnOpt, queue string) (dispatch.Paused, func()) {
	rdb, ok := opt.MakeRedisClient().(redis.UniversalClient)
	if !ok {
		return nil, func() {}
	}
	key := "asynq:{" + queue + "}:paused" // asynq's base.PausedKey
	return func(ctx context.Context) bool {
		n, err := rdb.Exists(ctx, key).Result()
		return err == nil && n > 0
	}, func() { rdb.Close() }
}

// slogAdapter sends asynq's own log lines to slog.
type slogAdapter struct{}

func (slogAdapter) Debug(args ...any) {
	slog.Debug(fmt.Sprint(args...), slog.String("component", "asynq"))
}
func (slogAdapter) Info(args ...any) {
	slog.Info(fmt.Sprint(args...), slog.String("component", "asynq"))
}
func (slogAdapter) Warn(args ...any) {
	slog.Warn(fmt.Sprint(args...), slog.String("component", "asynq"))
}
func (slogAdapter) Error(args ...any) {
	slog.Error(fmt.Sprint(args...), slog.String("component", "asynq"))
}
func (slogAdapter) Fatal(args ...any) {
	slog.Error(fmt.Sprint(args...), slog.String("component", "asynq"))
}
