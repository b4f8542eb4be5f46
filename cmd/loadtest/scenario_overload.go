package main

// Scenario overload measures what the API does when offered more than it
// can serve. First the capacity of creates over many wallets is measured
// (closed loop, no limits, as create-many); then `payoutd api` is started
// again with MAX_IN_FLIGHT=-overload-in-flight and offered
// -overload-factor times that capacity as an open-loop load: requests
// arrive at a fixed rate whatever the answers, as merchants' traffic does,
// so an overloaded server cannot slow its own load down as a closed loop
// lets it. Goal: no 500, and the accepted creates' p99 under
// overloadGoalP99 (100 ms); the rest are shed with 503 (or 429).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// overloadGoalP99 is the most the accepted creates' p99 may be.
const overloadGoalP99 = 100 * time.Millisecond

// overloadResult is the scenario's JSON line.
type overloadResult struct {
	Scenario        string        `json:"scenario"`
	Revision        string        `json:"revision"`
	CPUs            int           `json:"cpus"`
	InFlight        int           `json:"max_in_flight"`
	CapacityPerS    float64       `json:"capacity_creates_per_s"`
	CapacityP99Ms   float64       `json:"capacity_p99_ms"`
	OfferedPerS     float64       `json:"offered_per_s"`
	Sent            int64         `json:"sent"`
	Accepted        int64         `json:"accepted"`
	Busy            int64         `json:"busy_503"`
	Limited         int64         `json:"limited_429"`
	Status500       int64         `json:"status_500"`
	Other           int64         `json:"other"`
	OtherStatuses   map[int]int64 `json:"other_statuses,omitempty"`
	TransportErrors int64         `json:"transport_errors"`
	NotSent         int64         `json:"not_sent"`
	AcceptedPerS    float64       `json:"accepted_per_s"`
	AcceptedP50Ms   float64       `json:"accepted_p50_ms"`
	AcceptedP99Ms   float64       `json:"accepted_p99_ms"`
	AcceptedMaxMs   float64       `json:"accepted_max_ms"`
	GoalMet         bool          `json:"goal_met"`
}

// executeOverload runs the two phases and prints the report; clean means
// the goal was met.
func executeOverload(ctx context.Context, s *runSetup, info scenarioInfo, stdout, stderr io.Writer) (bool, error) {
	o := s.o
	progress(stderr, "building cmd/payoutd")
	bin, err := buildPayoutd(ctx)
	if err != nil {
		return false, err
	}
	defer bin.remove()
	res := overloadResult{Scenario: info.name, Revision: bin.revision, CPUs: runtime.NumCPU(), InFlight: o.overloadInFlight}

	sc := newCreateManyScenario(o)
	if err := sc.Prepare(ctx, s.fixture); err != nil {
		return false, err
	}
	cfg := s.serverConfig(info)
	capacity, p99, err := measureCapacity(ctx, o, bin, cfg, sc, stderr)
	if err != nil {
		return false, err
	}
	res.CapacityPerS, res.CapacityP99Ms = capacity, msOf(p99)
	res.OfferedPerS = capacity * o.overloadFactor

	// Fresh Idempotency-Keys: the capacity phase used up its own.
	sc = newCreateManyScenario(o)
	if err := sc.Prepare(ctx, s.fixture); err != nil {
		return false, err
	}
	cfg.extraEnv = append(cfg.extraEnv, fmt.Sprintf("MAX_IN_FLIGHT=%d", o.overloadInFlight))
	progress(stderr, "starting `payoutd api` with MAX_IN_FLIGHT=%d; offering %.0f creates/s (%.1f × capacity) for %s, open loop",
		o.overloadInFlight, res.OfferedPerS, o.overloadFactor, o.duration)
	srv, err := startServer(ctx, bin, cfg, stderr)
	if err != nil {
		return false, err
	}
	defer srv.stop()
	openLoop(ctx, srv.base, sc, res.OfferedPerS, o.duration, &res)
	res.GoalMet = res.Status500 == 0 && res.Accepted > 0 && res.AcceptedP99Ms < msOf(overloadGoalP99)
	printOverload(stdout, res)
	return res.GoalMet, nil
}

// measureCapacity runs create-many closed loop (32 workers, no limits)
// against a fresh `payoutd api` and returns its creates/s and p99.
func measureCapacity(ctx context.Context, o options, bin *payoutdBinary, cfg serverConfig, sc Scenario, stderr io.Writer) (float64, time.Duration, error) {
	progress(stderr, "capacity: create-many, 32 workers, closed loop, %s after a %s warm-up", o.duration, o.warmup)
	srv, err := startServer(ctx, bin, cfg, stderr)
	if err != nil {
		return 0, 0, err
	}
	defer srv.stop()
	send, closeIdle := httpSender(32)
	defer closeIdle()
	m, err := runLoad(ctx, loadPlan{scenario: sc, base: srv.base, send: send, concurrency: 32,
		warmup: o.warmup, duration: o.duration, died: srv.exited})
	if err != nil {
		return 0, 0, err
	}
	if len(m.latencies) == 0 {
		return 0, 0, fmt.Errorf("capacity: no create succeeded (%d errors: %v)", m.errors, m.firstFailures)
	}
	rate := float64(len(m.latencies)) / m.elapsed.Seconds()
	p99 := m.latencies[len(m.latencies)*99/100]
	progress(stderr, "capacity: %.0f creates/s, p99 %.1f ms", rate, msOf(p99))
	return rate, p99, nil
}

// maxOutstanding bounds the open loop's requests awaiting an answer; an
// arrival beyond it is counted as not sent (the generator's limit, not the
// server's answer).
const maxOutstanding = 4096

// openLoop sends requests at rate per second for d, each on its own, and
// tallies the answers into res.
func openLoop(ctx context.Context, base string, sc Scenario, rate float64, d time.Duration, res *overloadResult) {
	// The tool's own sender (raw keep-alive connections, no Transport
	// goroutines): the generator shares the cores with the server, and a
	// heavier one would take from the server it measures.
	send, closeConns := httpSender(maxOutstanding)
	defer closeConns()
	var (
		outstanding atomic.Int64
		mu          sync.Mutex
		latencies   []time.Duration
		wg          sync.WaitGroup
	)
	count := func(field *int64) { atomic.AddInt64(field, 1) }
	start := time.Now()
	interval := time.Duration(float64(time.Second) / rate)
	for n := uint64(0); ; n++ {
		due := start.Add(time.Duration(n) * interval)
		if due.Sub(start) >= d || ctx.Err() != nil {
			break
		}
		if wait := time.Until(due); wait > 0 {
			time.Sleep(wait)
		}
		count(&res.Sent)
		if outstanding.Load() >= maxOutstanding {
			count(&res.NotSent)
			continue
		}
		req, err := sc.NewRequest(ctx, base, n, time.Now())
		if err != nil {
			count(&res.NotSent)
			continue
		}
		outstanding.Add(1)
		wg.Go(func() {
			defer outstanding.Add(-1)
			began := time.Now()
			ok, failure := send(req, sc.WantStatus())
			took := time.Since(began)
			if ok {
				count(&res.Accepted)
				mu.Lock()
				latencies = append(latencies, took)
				mu.Unlock()
				return
			}
			switch status := statusOfFailure(failure); {
			case status == 0:
				count(&res.TransportErrors)
			case status == http.StatusServiceUnavailable:
				count(&res.Busy)
			case status == http.StatusTooManyRequests:
				count(&res.Limited)
			case status >= 500:
				count(&res.Status500)
			default:
				count(&res.Other)
				mu.Lock()
				if res.OtherStatuses == nil {
					res.OtherStatuses = map[int]int64{}
				}
				res.OtherStatuses[status]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(latencies)
	if len(latencies) > 0 {
		res.AcceptedP50Ms = msOf(latencies[len(latencies)/2])
		res.AcceptedP99Ms = msOf(latencies[len(latencies)*99/100])
		res.AcceptedMaxMs = msOf(latencies[len(latencies)-1])
	}
	res.AcceptedPerS = float64(res.Accepted) / elapsed.Seconds()
}

// statusOfFailure is the HTTP status a sender's failure names
// (describeFailure starts with it), 0 for a transport error.
func statusOfFailure(failure string) int {
	if len(failure) < 4 || failure[3] != ' ' {
		return 0
	}
	status, err := strconv.Atoi(failure[:3])
	if err != nil {
		return 0
	}
	return status
}

func printOverload(w io.Writer, r overloadResult) {
	fmt.Fprintf(w, "\npayoutd load test — overload: creates over many wallets offered at %.1f × capacity, open loop\n", r.OfferedPerS/r.CapacityPerS)
	fmt.Fprintf(w, "server    payoutd api, MAX_IN_FLIGHT=%d, built from %s; %d CPUs shared with the load generator\n", r.InFlight, r.Revision, r.CPUs)
	fmt.Fprintf(w, "capacity  %.0f creates/s, p99 %.1f ms (closed loop, 32 workers, no limits)\n", r.CapacityPerS, r.CapacityP99Ms)
	fmt.Fprintf(w, "offered   %.0f creates/s: %d sent, %d not sent (the generator's own bound of %d outstanding)\n", r.OfferedPerS, r.Sent, r.NotSent, maxOutstanding)
	fmt.Fprintf(w, "answers   %d accepted (%.0f/s), %d shed with 503, %d limited with 429, %d other %v, %d 5xx other than 503, %d transport errors\n",
		r.Accepted, r.AcceptedPerS, r.Busy, r.Limited, r.Other, r.OtherStatuses, r.Status500, r.TransportErrors)
	fmt.Fprintf(w, "latency   accepted p50 %.1f ms, p99 %.1f ms, max %.1f ms   goal: no 500 and p99 < %s   %s\n",
		r.AcceptedP50Ms, r.AcceptedP99Ms, r.AcceptedMaxMs, overloadGoalP99, verdict(r.GoalMet))
	line, _ := json.Marshal(r)
	fmt.Fprintf(w, "%s\n", line)
}
