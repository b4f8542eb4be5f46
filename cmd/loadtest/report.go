package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// submitWaitNote says what a create's latency covers.
const submitWaitNote = "the API answers a create without waiting for the worker (DISBURSEMENT_SUBMIT_WAIT=0): " +
	"201 once the row is stored, the amount locked and payout:submit enqueued"

// busyMachine is how much CPU (in cores) other processes and the
// hypervisor may take during the run before the report warns that the
// figures are distorted.
const busyMachine = 0.15

// percentile is the nearest-rank percentile of sorted samples: the
// smallest sample with at least p% of the samples at or below it. 100
// gives the maximum; no samples give 0.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

func millis(d time.Duration) float64 { return round(float64(d)/float64(time.Millisecond), 3) }

func round(x float64, digits int) float64 {
	scale := math.Pow(10, float64(digits))
	return math.Round(x*scale) / scale
}

// msOf is d in milliseconds, for the report.
func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// ratio is figure as a share of ceiling, rounded to 2 digits; ok is false
// when the ceiling is unknown.
func ratio(figure, ceiling float64) (float64, bool) {
	if ceiling <= 0 {
		return 0, false
	}
	return round(figure/ceiling, 2), true
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "BELOW GOAL"
}

// outcome is the verdict of a row: its absolute goal, then its ratio.
func outcome(goal bool, r *float64) string {
	s := verdict(goal)
	switch {
	case r == nil:
	case *r >= goalCeilingRatio:
		s += ", ratio PASS"
	default:
		s += ", ratio BELOW"
	}
	return s
}

func msText(v float64) string { return fmt.Sprintf("%.1f ms", v) }

func tpsText(c *ceiling) string {
	if c == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.0f tps", c.TPS)
}

func ratioText(r *float64) string {
	if r == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", *r)
}

// cpuBreakdown prints u with the given names of the started process, the
// load generator and the rest.
func cpuBreakdown(u *cpuUsage, server, loadGen, other string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%.2f of %d cores busy:", u.Machine, u.Cores)
	if u.Server != nil {
		fmt.Fprintf(&b, " %s %.2f,", server, *u.Server)
	}
	if u.Rail != nil {
		fmt.Fprintf(&b, " rail %.2f,", *u.Rail)
	}
	fmt.Fprintf(&b, " PostgreSQL %.2f, %s %.2f, Redis %.2f, %s %.2f", u.Postgres, loadGen, u.LoadGenerator, u.Redis, other, u.Other)
	if u.Steal >= 0.05 {
		fmt.Fprintf(&b, " (hypervisor steal %.2f)", u.Steal)
	}
	return b.String()
}

// printFailures lists the first failed requests of a run or phase under
// heading, if any.
func printFailures(w io.Writer, heading string, failures []string) {
	if len(failures) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s:\n", heading)
	for _, f := range failures {
		fmt.Fprintf(w, "  %s\n", f)
	}
}
