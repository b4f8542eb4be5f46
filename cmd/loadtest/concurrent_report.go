package main

import (
	"fmt"
	"io"
	"strings"
)

// concurrentNote says what the concurrent phase's create latency covers.
const concurrentNote = "hot and spread: DISBURSEMENT_SUBMIT_WAIT=0, a create is answered once stored, locked and enqueued, " +
	"while the worker finalises earlier payouts;\n          wait: the service's default DISBURSEMENT_SUBMIT_WAIT, a create waits for its submit"

// judge sets the sub-phase's verdict against the phase's goals: hot ≥ 0.5
// of the hot-row ceiling with p99 < 100 ms; spread ≥ 800 payouts/s end to
// end with the last terminal within 1.5 × the creates' time; wait p50 <
// 25 ms and p99 < 100 ms.
func (p *concurrentPhase) judge() {
	f, e := p.Create, p.EndToEnd
	ok := f.Creates > f.Errors && e != nil && e.Complete && e.Failed == 0
	switch p.Name {
	case "hot":
		p.goal = fmt.Sprintf("≥%.1f of hot, p99<%dms", goalConcHotRatio, goalConcP99.Milliseconds())
		ok = ok && f.P99MS < millis(goalConcP99) && (f.Ratio == nil || *f.Ratio >= goalConcHotRatio)
	case "spread":
		p.goal = fmt.Sprintf("≥%d payouts/s end to end, last ≤%.1f× creates", goalConcEndToEnd, goalConcLag)
		ok = ok && e.PayoutsPerS >= goalConcEndToEnd && e.SpanS <= goalConcLag*e.CreatesS
	case "wait":
		p.goal = fmt.Sprintf("p50<%dms, p99<%dms", goalConcWaitP50.Milliseconds(), goalConcP99.Milliseconds())
		ok = ok && f.P50MS < millis(goalConcWaitP50) && f.P99MS < millis(goalConcP99)
	}
	p.GoalMet = ok
}

// clean: no create failed, every payout ended and none failed, no wallet
// overdrawn and reconcile found nothing. A nil result is clean.
func (r *concurrentResult) clean() bool {
	if r == nil {
		return true
	}
	for _, p := range r.Phases {
		if p.Create.Errors > 0 || p.EndToEnd == nil || !p.EndToEnd.Complete || p.EndToEnd.Failed > 0 {
			return false
		}
		if h := p.Webhooks; h != nil && (h.Delivered < h.Expected || h.Malformed > 0) {
			return false
		}
	}
	return r.ReconcileOK && r.NegativeWallets == 0
}

// concurrentRows are the concurrent phase's rows of the suite's table: a
// creates row per sub-phase and an end-to-end row.
func (t suiteTable) concurrentRows(r *concurrentResult, c *ceilings) {
	if r == nil {
		return
	}
	for _, p := range r.Phases {
		ceil := c.spreadCeiling()
		if p.Ceiling == "hot" {
			ceil = c.hotCeiling()
		}
		ceilText := "n/a"
		if ceil != nil {
			ceilText = p.Ceiling + " " + tpsText(ceil)
		}
		f, e := p.Create, p.EndToEnd
		t.row(fmt.Sprintf("concurrent %s (%d wallet(s), %d clients, wait %s)", p.Name, f.Wallets, f.Concurrency, p.SubmitWait),
			fmt.Sprintf("%.0f creates/s", f.CreatesPerS), msText(f.P50MS), msText(f.P90MS), msText(f.P99MS), ceilText, ratioText(f.Ratio),
			p.goal, verdict(p.GoalMet))
		t.row(fmt.Sprintf("  end to end, create → terminal (%d payouts)", e.Payouts), fmt.Sprintf("%.0f payouts/s", e.PayoutsPerS),
			msText(e.P50MS), "", msText(e.P99MS), ceilText, ratioText(p.EndToEndRatio), "", "")
	}
}

// printConcurrentNotes follows the table: per sub-phase how far behind the
// worker was and the max latencies, then reconcile.
func printConcurrentNotes(w io.Writer, r *concurrentResult) {
	if r == nil {
		return
	}
	fmt.Fprintf(w, "  concurrent: api and worker running together, no warm-up, each sub-phase -duration or %d creates; every payout followed to its end\n", r.MaxCreates)
	if r.SettledBefore > 0 || r.LeftOpen > 0 {
		fmt.Fprintf(w, "    before it the worker finished %d payouts earlier phases left open; %d still open (they distort the figures when not 0)\n", r.SettledBefore, r.LeftOpen)
	}
	for _, p := range r.Phases {
		e := p.EndToEnd
		state := "all terminal"
		if !e.Complete {
			state = fmt.Sprintf("%d STILL OPEN after the %.0fs bound", e.Open, r.DrainTimeoutS)
		}
		worker := ""
		if p.WorkerCPU != nil {
			worker = fmt.Sprintf("; worker %.2f cores", *p.WorkerCPU)
		}
		fmt.Fprintf(w, "    %-6s creates max %.1f ms; %d payouts, %d SUCCESS, %d failed, %s; creates took %.2fs, the last terminal %.2fs after the last create;\n"+
			"           create → terminal max %.1f ms%s\n", p.Name, p.Create.MaxMS, e.Payouts, e.Success, e.Failed, state, e.CreatesS, e.LastTerminalAfterS, e.MaxMS, worker)
		if h := p.Webhooks; h != nil {
			fmt.Fprintf(w, "           webhooks of %d merchant(s): %d of %d payouts' events delivered (%d POSTs, %d duplicates, %d malformed);\n"+
				"           terminal → delivered p50 %.1f ms, p99 %.1f ms, max %.1f ms; the last %.2fs after the last create\n",
				h.Merchants, h.Delivered, h.Expected, h.Deliveries, h.Duplicates, h.Malformed, h.P50MS, h.P99MS, h.MaxMS, h.LastAfterS)
		}
	}
	rec := "clean"
	if !r.ReconcileOK {
		rec = "PROBLEMS: " + strings.Join(r.ReconcileProblems, "; ")
	}
	fmt.Fprintf(w, "    reconcile after the phase: %s; overdrawn wallets: %d\n", rec, r.NegativeWallets)
}
