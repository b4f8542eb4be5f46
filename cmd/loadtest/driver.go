package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A Scenario is one kind of request the tool measures. Each lives in a file
// of its own and registers itself in scenarios below.
type Scenario interface {
	// Prepare runs once, after the clients are provisioned and before any
	// request. A scenario that needs more data (payees, larger balances)
	// makes it here through f.Admin.
	Prepare(ctx context.Context, f *Fixture) error
	// NewRequest builds request number n (counting from 0 across all
	// workers) against the server at base, signed at now. Workers call it
	// concurrently.
	NewRequest(ctx context.Context, base string, n uint64, now time.Time) (*http.Request, error)
	// WantStatus is the status of a successful answer; any other counts as
	// an error.
	WantStatus() int
}

// requestTimeout bounds a single request; a stuck server fails the
// request instead of the run.
const requestTimeout = 10 * time.Second

// maxFailures is how many failure descriptions are kept to print.
const maxFailures = 5

// sendFunc performs one request and reports whether it answered want;
// failure describes it when not.
type sendFunc func(req *http.Request, want int) (ok bool, failure string)

// loadPlan is one run of the closed loop.
type loadPlan struct {
	scenario    Scenario
	base        string
	send        sendFunc
	concurrency int
	warmup      time.Duration
	duration    time.Duration
	// window is told when the measured window opens and closes; may be nil.
	window windowHooks
	// died, when not nil, is closed if the server exits; the run stops.
	died <-chan struct{}
	// expectRate sizes the sample slices (requests/s); 0 means goalRPS.
	expectRate float64
	// maxRequests, when positive, ends the run once that many requests
	// (warm-up included) have been sent, even before duration has passed.
	maxRequests uint64
}

// windowHooks are told when the measured window opens and closes.
type windowHooks interface {
	opened()
	closed()
}

// allHooks tells each of its hooks, in order on opening and in reverse
// order on closing.
type allHooks []windowHooks

func (h allHooks) opened() {
	for _, x := range h {
		x.opened()
	}
}

func (h allHooks) closed() {
	for i := len(h) - 1; i >= 0; i-- {
		h[i].closed()
	}
}

// measurement is what a run observed.
type measurement struct {
	// latencies of the successful requests of the measured window, sorted.
	latencies []time.Duration
	// errors counts the failed requests of the measured window.
	errors int
	// elapsed runs from the opening of the measured window to the end of
	// its last request.
	elapsed       time.Duration
	warmupOK      int
	warmupErrors  int
	firstFailures []string
}

// perSecond is the successful requests of the measured window per second.
func (m *measurement) perSecond() float64 {
	return round(float64(len(m.latencies))/m.elapsed.Seconds(), 1)
}

// ms is the p-th percentile of the successful requests' latencies, in
// milliseconds (100: the maximum).
func (m *measurement) ms(p float64) float64 { return millis(percentile(m.latencies, p)) }

// workerStats is one worker's tally; merged at the end, never shared.
type workerStats struct {
	latencies    []time.Duration
	errors       int
	warmupOK     int
	warmupErrors int
}

// runLoad runs plan.concurrency workers until warm-up and duration have
// passed, each sending the scenario's requests back to back.
func runLoad(ctx context.Context, plan loadPlan) (*measurement, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	serverDied := cancelWhenServerDies(ctx, cancel, plan.died)

	start := time.Now()
	measureFrom := start.Add(plan.warmup)
	stopAt := measureFrom.Add(plan.duration)
	var seq atomic.Uint64
	failures := &failureLog{}
	stats := make([]workerStats, plan.concurrency)
	samples := samplesPerWorker(plan)
	var wg sync.WaitGroup
	for i := range stats {
		stats[i].latencies = make([]time.Duration, 0, samples)
		wg.Add(1)
		go func(w *workerStats) {
			defer wg.Done()
			w.run(ctx, plan, &seq, measureFrom, stopAt, failures)
		}(&stats[i])
	}

	opened := openWindowAt(ctx, plan.window, measureFrom)
	wg.Wait()
	elapsed := time.Since(measureFrom)
	if opened && plan.window != nil {
		plan.window.closed()
	}
	switch {
	case serverDied.Load():
		return nil, errors.New("the server exited during the run")
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	return mergeStats(stats, elapsed, failures.list()), nil
}

// cancelWhenServerDies cancels the run when died (nil: never) is closed
// before ctx ends, and says whether it did.
func cancelWhenServerDies(ctx context.Context, cancel context.CancelFunc, died <-chan struct{}) *atomic.Bool {
	var serverDied atomic.Bool
	if died != nil {
		go func() {
			select {
			case <-died:
				serverDied.Store(true)
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return &serverDied
}

// samplesPerWorker is the room each worker's latency slice starts with:
// the samples expected at the goal's rate, so that slices seldom grow
// mid-run (bounded: a long run grows them anyway).
func samplesPerWorker(plan loadPlan) int {
	rate := plan.expectRate
	if rate <= 0 {
		rate = goalRPS
	}
	return min(int(plan.duration.Seconds()*rate*1.5), 1<<22) / plan.concurrency
}

// openWindowAt tells window (may be nil) that the measured window opens
// at measureFrom, unless ctx ends first; it says whether it opened.
func openWindowAt(ctx context.Context, window windowHooks, measureFrom time.Time) bool {
	select {
	case <-time.After(time.Until(measureFrom)):
		if window != nil {
			window.opened()
		}
		return true
	case <-ctx.Done():
		return false
	}
}

// mergeStats puts the workers' figures together, latencies sorted.
func mergeStats(stats []workerStats, elapsed time.Duration, firstFailures []string) *measurement {
	m := &measurement{elapsed: elapsed, firstFailures: firstFailures}
	n := 0
	for _, w := range stats {
		n += len(w.latencies)
	}
	m.latencies = make([]time.Duration, 0, n)
	for _, w := range stats {
		m.latencies = append(m.latencies, w.latencies...)
		m.errors += w.errors
		m.warmupOK += w.warmupOK
		m.warmupErrors += w.warmupErrors
	}
	slices.Sort(m.latencies)
	return m
}

func (w *workerStats) run(ctx context.Context, plan loadPlan, seq *atomic.Uint64, measureFrom, stopAt time.Time, failures *failureLog) {
	want := plan.scenario.WantStatus()
	for ctx.Err() == nil {
		now := time.Now()
		if !now.Before(stopAt) {
			return
		}
		ok, failure := false, ""
		var latency time.Duration
		sent := now
		n := seq.Add(1) - 1
		if plan.maxRequests > 0 && n >= plan.maxRequests {
			return
		}
		req, err := plan.scenario.NewRequest(ctx, plan.base, n, now)
		if err != nil {
			failure = "building the request: " + err.Error()
		} else {
			sent = time.Now()
			ok, failure = plan.send(req, want)
			latency = time.Since(sent)
		}
		if ctx.Err() != nil {
			return // cancelled mid-request: neither a sample nor an error
		}
		measured := !sent.Before(measureFrom)
		switch {
		case ok && measured:
			w.latencies = append(w.latencies, latency)
		case ok:
			w.warmupOK++
		case measured:
			w.errors++
		default:
			w.warmupErrors++
		}
		if !ok {
			failures.add(failure)
		}
	}
}

// failureLog keeps the first few failure descriptions.
type failureLog struct {
	mu    sync.Mutex
	first []string
}

func (f *failureLog) add(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.first) < maxFailures {
		f.first = append(f.first, s)
	}
}

func (f *failureLog) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.first)
}

func describeFailure(status string, body []byte) string {
	return fmt.Sprintf("%s %s", status, strings.TrimSpace(string(body)))
}
