// Package worker runs the asynq server that processes the service's tasks
// and the scheduler that enqueues its periodic ones.
package worker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/tasks"
	"github.com/payoutd/payoutd/vendors"
)

// Deps is what the worker's handlers need.
type Deps struct {
	DB      *gorm.DB
	Redis   asynq.RedisConnOpt
	Vendors vendors.Registry
	// Concurrency is the number of tasks processed at once (default 20).
	Concurrency int
}

// Mux returns the task handlers.
func Mux(d Deps) *asynq.ServeMux {
	mux := asynq.NewServeMux()
	mux.HandleFunc(tasks.TypeReconcile, func(ctx context.Context, _ *asynq.Task) error {
		return reconcile(ctx, d.DB)
	})
	return mux
}

// reconcile logs the outcome of a reconciliation; a failed invariant is an
// error-level line for alerting, not a task failure to retry.
func reconcile(ctx context.Context, db *gorm.DB) error {
	report, err := ledger.Reconcile(ctx, db)
	if err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	if !report.OK {
		slog.ErrorContext(ctx, "reconciliation found problems", slog.Any("problems", report.Problems))
		return nil
	}
	slog.InfoContext(ctx, "reconciliation clean", slog.Int("wallets", report.Wallets), slog.Int("transactions", report.Transactions))
	return nil
}

// Run processes tasks and runs the scheduler until ctx is cancelled. On
// cancellation asynq stops taking tasks and gives running ones
// ShutdownTimeout to finish; unfinished ones go back to their queue.
func Run(ctx context.Context, d Deps) error {
	concurrency := d.Concurrency
	if concurrency == 0 {
		concurrency = 20
	}
	srv := asynq.NewServer(d.Redis, asynq.Config{
		Concurrency:     concurrency,
		Queues:          tasks.QueuePriorities,
		ShutdownTimeout: 20 * time.Second,
		Logger:          slogAdapter{},
		// Tasks wait for a free worker at most this long when idle.
		TaskCheckInterval: 200 * time.Millisecond,
	})
	scheduler := asynq.NewScheduler(d.Redis, &asynq.SchedulerOpts{Logger: slogAdapter{}, Location: time.UTC})
	task, opts := tasks.NewReconcile()
	if _, err := scheduler.Register(fmt.Sprintf("@every %s", tasks.ReconcileEvery), task, opts...); err != nil {
		return err
	}
	if err := srv.Start(Mux(d)); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	if err := scheduler.Start(); err != nil {
		srv.Shutdown()
		return fmt.Errorf("start scheduler: %w", err)
	}
	slog.Info("worker started", slog.Int("concurrency", concurrency))
	<-ctx.Done()
	slog.Info("worker shutting down")
	scheduler.Shutdown()
	srv.Shutdown()
	return nil
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
