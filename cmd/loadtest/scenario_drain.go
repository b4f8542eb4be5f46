package main

// Scenario drain measures `payoutd worker` alone on the payouts
// create-many left queued, paid through the -rail vendor: payouts/s from
// the first to the last SUCCESS, and each paid payout's latency from the
// worker's first call to the vendor. Goal: goalPayouts payouts/s; in
// disbursements and all (which run it too), at least goalCeilingRatio of
// the pgbench hot-row ceiling.

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/tasks"
)

// drainSuite is create-many against the api alone, then the worker alone
// on the payouts it queued.
func drainSuite(options) suitePlan {
	return suitePlan{apiPhases: []string{"create-many"}, drain: true}
}

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
	// Requested is how many the vendor had accepted but not yet reported
	// final (REQUESTED) when the window closed: on a rail that answers
	// later, the payouts between submit and result.
	Requested int `json:"requested"`
	// Complete: every queued payout was final before the window closed.
	Complete bool `json:"complete"`
	// SpanS runs from the first to the last SUCCESS (their completed_at).
	SpanS       float64 `json:"span_s"`
	PayoutsPerS float64 `json:"payouts_per_s"`
	// The percentiles of a drained payout's latency: from the worker's
	// first call to the vendor (submit_attempted_at) to SUCCESS
	// (completed_at).
	P50MS float64   `json:"p50_ms"`
	P90MS float64   `json:"p90_ms"`
	P99MS float64   `json:"p99_ms"`
	MaxMS float64   `json:"max_ms"`
	CPU   *cpuUsage `json:"cpu_cores,omitempty"`
}

// paidTimes are the submit_attempted_at and completed_at of every paid
// disbursement, read through gorm so that both databases' time columns
// scan.
type paidTimes struct {
	SubmitAttemptedAt *time.Time
	CompletedAt       *time.Time
}

// drainTimes sets the span, rate and latency percentiles of d from the
// paid disbursements' times.
func drainTimes(ctx context.Context, db *gorm.DB, d *drainResult) error {
	var rows []paidTimes
	if err := db.WithContext(ctx).Model(&models.Disbursement{}).Select("submit_attempted_at", "completed_at").
		Where("status = ? AND completed_at IS NOT NULL", models.StatusSuccess).Find(&rows).Error; err != nil {
		return fmt.Errorf("read paid disbursements: %w", err)
	}
	var first, last time.Time
	latencies := make([]time.Duration, 0, len(rows))
	for _, r := range rows {
		done := *r.CompletedAt
		if first.IsZero() || done.Before(first) {
			first = done
		}
		if done.After(last) {
			last = done
		}
		if r.SubmitAttemptedAt != nil {
			latencies = append(latencies, max(0, done.Sub(*r.SubmitAttemptedAt)))
		}
	}
	slices.Sort(latencies)
	if len(rows) > 0 {
		d.SpanS = round(last.Sub(first).Seconds(), 3)
	}
	d.PayoutsPerS = drainRate(d.Drained, d.SpanS)
	d.P50MS, d.P90MS = millis(percentile(latencies, 50)), millis(percentile(latencies, 90))
	d.P99MS, d.MaxMS = millis(percentile(latencies, 99)), millis(percentile(latencies, 100))
	return nil
}

// pendingSubmitTasks counts the tasks waiting in the queue the API
// enqueues payout:submit into; -1 when Redis cannot say.
func pendingSubmitTasks(ctx context.Context, redisURL string) int {
	rdb := newRedisClient(redisURL)
	if rdb == nil {
		return -1
	}
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
// the database; the rate and latencies are taken from the rows' times. On
// a rail that calls back, an api runs beside the worker to receive the
// callbacks. stopRail stops the rail's simulator before that api, when no
// phase follows that needs it.
func measureDrain(ctx context.Context, s *runSetup, bin *payoutdBinary, cfg serverConfig, rr *railRun, stopRail bool, stderr io.Writer) (*drainResult, error) {
	before, err := countDisbursements(ctx, s.db)
	if err != nil {
		return nil, err
	}
	if before.open == 0 {
		return nil, fmt.Errorf("drain: no disbursement waits for the worker (%d SUCCESS already)", before.success)
	}
	d := &drainResult{Queued: before.open, QueuedTasks: pendingSubmitTasks(ctx, s.o.redisURL)}
	window := &cpuWindow{}
	if rr.info.calledBack() {
		progress(stderr, "starting `payoutd api` to receive the %s rail's callbacks during the drain", rr.info.name)
		api, err := startServer(ctx, bin, cfg, stderr)
		if err != nil {
			return nil, err
		}
		defer stopLogged(api, stderr)
		window.railPIDs = append(window.railPIDs, api.pid())
	}
	if pid := rr.simPID(); pid > 0 {
		window.railPIDs = append(window.railPIDs, pid)
	}
	progress(stderr, "starting `payoutd worker` on %d queued payouts (%d tasks in Redis); measuring up to %s from the first SUCCESS",
		d.Queued, d.QueuedTasks, s.o.drainDuration)
	checkpoint(ctx, s.db, stderr)
	w, err := startWorker(bin, cfg, stderr)
	if err != nil {
		return nil, err
	}
	defer stopLogged(w, stderr)
	window.serverPID = w.pid()
	end, err := watchDrain(ctx, s.db, w, before, s.o.drainDuration, window)
	if err != nil {
		return nil, err
	}
	// The worker stops first, then the simulator it calls, then (deferred)
	// the api the simulator calls back, so that no call is left without
	// its receiver.
	stopLogged(w, stderr)
	if stopRail {
		rr.stop(stderr)
	}
	d.Drained = end.success - before.success
	d.Failed = end.failed - before.failed
	d.Requested = end.requested
	d.Complete = end.open == 0
	d.CPU = window.usage()
	return d, drainTimes(ctx, s.db, d)
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
