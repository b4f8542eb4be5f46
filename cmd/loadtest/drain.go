package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/tasks"
)

const (
	// drainPoll is how often the drain counts the disbursements (a scan of
	// the table: often enough to end the window on time, seldom enough to
	// cost PostgreSQL little; the rate itself comes from completed_at).
	drainPoll = 500 * time.Millisecond
	// drainStartTimeout bounds the wait for the first SUCCESS after the
	// worker starts.
	drainStartTimeout = 30 * time.Second
)

// drainResult is what the worker made of the queued payouts.
type drainResult struct {
	// Queued is the disbursements waiting for the worker (VERIFIED or
	// REQUESTED) when it started; QueuedTasks the payout:submit tasks
	// pending in Redis then.
	Queued      int `json:"queued"`
	QueuedTasks int `json:"queued_tasks"`
	// Drained is how many reached SUCCESS by the end of the window,
	// Failed how many reached FAILED, EXPIRED or CANCELLED.
	Drained int `json:"drained"`
	Failed  int `json:"failed"`
	// Complete: every queued payout was final before the window closed.
	Complete bool `json:"complete"`
	// SpanS runs from the first to the last SUCCESS (their completed_at).
	SpanS       float64   `json:"span_s"`
	PayoutsPerS float64   `json:"payouts_per_s"`
	CPU         *cpuUsage `json:"cpu_cores,omitempty"`
}

// disbursementCounts is one look at the disbursements table.
type disbursementCounts struct {
	success, open, failed int
	first, last           sql.NullTime // completed_at of the first and last SUCCESS
}

func countDisbursements(ctx context.Context, db *gorm.DB) (disbursementCounts, error) {
	var c disbursementCounts
	row := db.WithContext(ctx).Raw(`SELECT
		count(*) FILTER (WHERE status = @success),
		count(*) FILTER (WHERE status IN @open),
		count(*) FILTER (WHERE status IN @failed),
		min(completed_at) FILTER (WHERE status = @success),
		max(completed_at) FILTER (WHERE status = @success)
		FROM disbursements`,
		sql.Named("success", models.StatusSuccess),
		sql.Named("open", []models.DisbursementStatus{models.StatusVerified, models.StatusRequested}),
		sql.Named("failed", []models.DisbursementStatus{models.StatusFailed, models.StatusExpired, models.StatusCancelled}),
	).Row()
	if err := row.Scan(&c.success, &c.open, &c.failed, &c.first, &c.last); err != nil {
		return c, fmt.Errorf("count disbursements: %w", err)
	}
	return c, nil
}

// pendingSubmitTasks counts the tasks waiting in the queue the API
// enqueues payout:submit into; -1 when Redis cannot say.
func pendingSubmitTasks(ctx context.Context, redisURL string) int {
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		return -1
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	n, err := rdb.LLen(ctx, "asynq:{"+tasks.QueueCritical+"}:pending").Result()
	if err != nil {
		return -1
	}
	return int(n)
}

// measureDrain starts `payoutd worker` on the payouts the creates left
// queued and measures how fast they reach SUCCESS: from the first SUCCESS
// until all are final or o.drainDuration has passed, counting by polling
// the database; the rate is taken from the rows' completed_at.
func measureDrain(ctx context.Context, s *runSetup, bin *payoutdBinary, cfg serverConfig, stderr io.Writer) (*drainResult, error) {
	before, err := countDisbursements(ctx, s.db)
	if err != nil {
		return nil, err
	}
	if before.open == 0 {
		return nil, fmt.Errorf("drain: no disbursement waits for the worker (%d SUCCESS already)", before.success)
	}
	d := &drainResult{Queued: before.open, QueuedTasks: pendingSubmitTasks(ctx, s.o.redisURL)}
	progress(stderr, "starting `payoutd worker` on %d queued payouts (%d tasks in Redis); measuring up to %s from the first SUCCESS",
		d.Queued, d.QueuedTasks, s.o.drainDuration)
	checkpoint(ctx, s.db, stderr)
	w, err := startWorker(bin, cfg, stderr)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := w.stop(); err != nil {
			progress(stderr, "warning: %v", err)
		}
	}()
	window := &cpuWindow{serverPID: w.pid()}
	end, err := watchDrain(ctx, s.db, w, before, s.o.drainDuration, window)
	if err != nil {
		return nil, err
	}
	d.Drained = end.success - before.success
	d.Failed = end.failed - before.failed
	d.Complete = end.open == 0
	d.CPU = window.usage()
	if end.first.Valid && end.last.Valid {
		d.SpanS = round(end.last.Time.Sub(end.first.Time).Seconds(), 3)
	}
	d.PayoutsPerS = drainRate(d.Drained, d.SpanS)
	return d, nil
}

// watchDrain polls until every queued payout is final or window has been
// open for limit; the window opens at the first SUCCESS seen.
func watchDrain(ctx context.Context, db *gorm.DB, w *serverProcess, before disbursementCounts, limit time.Duration, window *cpuWindow) (disbursementCounts, error) {
	started := time.Now()
	var firstSeen time.Time
	tick := time.NewTicker(drainPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return disbursementCounts{}, ctx.Err()
		case <-w.exited:
			return disbursementCounts{}, fmt.Errorf("payoutd worker exited during the drain: %v", w.err)
		case <-tick.C:
		}
		c, err := countDisbursements(ctx, db)
		if err != nil {
			return c, err
		}
		if firstSeen.IsZero() && c.success > before.success {
			firstSeen = time.Now()
			window.opened()
		}
		switch {
		case c.open == 0 || (!firstSeen.IsZero() && time.Since(firstSeen) >= limit):
			if !firstSeen.IsZero() {
				window.closed()
			}
			return c, nil
		case firstSeen.IsZero() && time.Since(started) > drainStartTimeout:
			return c, fmt.Errorf("drain: no payout reached SUCCESS within %s of starting the worker (%d failed)", drainStartTimeout, c.failed-before.failed)
		}
	}
}

// drainRate is payouts per second from the first to the last SUCCESS:
// n completions span n-1 intervals. 0 when fewer than two.
func drainRate(n int, spanS float64) float64 {
	if n < 2 || spanS <= 0 {
		return 0
	}
	return round(float64(n-1)/spanS, 1)
}
