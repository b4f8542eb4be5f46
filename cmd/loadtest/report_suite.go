package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// suiteResult is the figures of -scenario drain, disbursements or all:
// the JSON line of the summary.
type suiteResult struct {
	Scenario string `json:"scenario"`
	// Rail is -rail: the vendor the wallets are on and how it is served.
	Rail       string `json:"rail"`
	RailVendor string `json:"rail_vendor"`
	// RailAnswerDelay is -rail-answer-delay, when set.
	RailAnswerDelay string         `json:"rail_answer_delay,omitempty"`
	CPUs            int            `json:"cpus"`
	Revision        string         `json:"revision,omitempty"`
	ServerEnv       []string       `json:"server_env"`
	Clients         int            `json:"clients"`
	Amount          string         `json:"amount"`
	Ceilings        *ceilings      `json:"pgbench,omitempty"`
	Balance         *readFigures   `json:"balance,omitempty"` // all only: over the select-only ceiling
	CreateMany      *createFigures `json:"create_many,omitempty"`
	CreateHot       *createFigures `json:"create_hot,omitempty"`
	// Payments (all only) are payment creates, authenticated by
	// PaymentAuth.
	Payments    *createFigures `json:"payments,omitempty"`
	PaymentAuth string         `json:"payment_auth,omitempty"`
	Drain       *drainResult   `json:"drain,omitempty"`
	// Concurrent is the phase with api and worker running together.
	Concurrent *concurrentResult `json:"concurrent,omitempty"`
	// DrainRatio is the drain's rate over the hot-row ceiling.
	DrainRatio *float64 `json:"drain_ratio,omitempty"`
	// GoalMet: every absolute goal met; AimMet: every ratio at least
	// goalCeilingRatio (nil without ceilings).
	GoalMet bool  `json:"goal_met"`
	AimMet  *bool `json:"aim_met,omitempty"`
}

// createFigures are one create phase's figures.
type createFigures struct {
	Concurrency  int       `json:"concurrency"`
	Wallets      int       `json:"wallets"`
	DurationS    float64   `json:"duration_s"`
	Creates      int       `json:"creates"`
	Errors       int       `json:"errors"`
	WarmupErrors int       `json:"warmup_errors"`
	CreatesPerS  float64   `json:"creates_per_s"`
	P50MS        float64   `json:"p50_ms"`
	P90MS        float64   `json:"p90_ms"`
	P99MS        float64   `json:"p99_ms"`
	MaxMS        float64   `json:"max_ms"`
	Ratio        *float64  `json:"ratio,omitempty"` // over its pgbench ceiling
	CPU          *cpuUsage `json:"cpu_cores,omitempty"`
	failures     []string
}

// readFigures are the balance phase's figures, as createFigures are a
// create phase's, with the reads' own names.
type readFigures struct {
	Concurrency  int       `json:"concurrency"`
	Wallets      int       `json:"wallets"`
	DurationS    float64   `json:"duration_s"`
	Requests     int       `json:"requests"`
	Errors       int       `json:"errors"`
	WarmupErrors int       `json:"warmup_errors"`
	RPS          float64   `json:"rps"`
	P50MS        float64   `json:"p50_ms"`
	P90MS        float64   `json:"p90_ms"`
	P99MS        float64   `json:"p99_ms"`
	MaxMS        float64   `json:"max_ms"`
	Ratio        *float64  `json:"ratio,omitempty"` // over the select-only ceiling
	CPU          *cpuUsage `json:"cpu_cores,omitempty"`
	failures     []string
}

// readFiguresOf names a closed-loop phase's figures as reads.
func readFiguresOf(f *createFigures) *readFigures {
	return &readFigures{
		Concurrency: f.Concurrency, Wallets: f.Wallets, DurationS: f.DurationS,
		Requests: f.Creates, Errors: f.Errors, WarmupErrors: f.WarmupErrors, RPS: f.CreatesPerS,
		P50MS: f.P50MS, P90MS: f.P90MS, P99MS: f.P99MS, MaxMS: f.MaxMS, CPU: f.CPU, failures: f.failures,
	}
}

// judge sets the ratios and the verdicts.
func (r *suiteResult) judge() {
	spread, hot, selectOnly := r.Ceilings.spreadCeiling().tps(), r.Ceilings.hotCeiling().tps(), r.Ceilings.selectOnlyCeiling().tps()
	goal, aim, haveAim := true, true, false
	setRatio := func(figure, ceiling float64) *float64 {
		v, ok := ratio(figure, ceiling)
		if !ok {
			return nil
		}
		haveAim = true
		aim = aim && v >= goalCeilingRatio
		return &v
	}
	if f := r.Balance; f != nil {
		f.Ratio = setRatio(f.RPS, selectOnly)
		goal = goal && balanceGoalMet(f)
	}
	if f := r.CreateMany; f != nil {
		f.Ratio = setRatio(f.CreatesPerS, spread)
		goal = goal && createGoalMet(f, goalCreatesMany)
	}
	if f := r.CreateHot; f != nil {
		f.Ratio = setRatio(f.CreatesPerS, hot)
		goal = goal && createGoalMet(f, goalCreatesHot)
	}
	if f := r.Payments; f != nil {
		f.Ratio = setRatio(f.CreatesPerS, spread)
		goal = goal && createGoalMet(f, goalPayments)
	}
	if d := r.Drain; d != nil {
		r.DrainRatio = setRatio(d.PayoutsPerS, hot)
		goal = goal && d.PayoutsPerS >= goalPayouts
	}
	if c := r.Concurrent; c != nil {
		for _, p := range c.Phases {
			ceiling := spread
			if p.Ceiling == "hot" {
				ceiling = hot
			}
			p.Create.Ratio = setRatio(p.Create.CreatesPerS, ceiling)
			if p.EndToEnd != nil {
				p.EndToEndRatio = setRatio(p.EndToEnd.PayoutsPerS, ceiling)
			}
			p.judge()
			goal = goal && p.GoalMet
		}
	}
	r.GoalMet, r.AimMet = goal, nil
	if haveAim {
		r.AimMet = &aim
	}
}

// balanceGoalMet: the balance reads' absolute goal (-scenario balance's).
func balanceGoalMet(f *readFigures) bool {
	return f.RPS >= goalRPS && f.Requests > f.Errors && f.P99MS < millis(goalP99)
}

func createGoalMet(f *createFigures, rate float64) bool {
	return f.CreatesPerS >= rate && f.Creates > f.Errors && f.P99MS < millis(goalCreateP99)
}

// clean: no request failed and no payout failed.
func (r *suiteResult) clean() bool {
	if f := r.Balance; f != nil && (f.Errors > 0 || f.WarmupErrors > 0) {
		return false
	}
	for _, f := range []*createFigures{r.CreateMany, r.CreateHot, r.Payments} {
		if f != nil && (f.Errors > 0 || f.WarmupErrors > 0) {
			return false
		}
	}
	return (r.Drain == nil || r.Drain.Failed == 0) && r.Concurrent.clean()
}

// printSuite writes the summary table and the JSON line.
func printSuite(w io.Writer, o options, r *suiteResult, rr *railRun) {
	info, _ := lookupScenario(r.Scenario)
	fmt.Fprintf(w, "\npayoutd load test — %s: %s\n", r.Scenario, info.summary)
	build := ""
	if r.Revision != "" {
		build = ", built from " + r.Revision
	}
	drainBy := "payoutd worker alone"
	if rr.info.calledBack() {
		drainBy = "payoutd worker, with an api receiving the rail's callbacks"
	}
	if r.CreateMany != nil {
		what := "the creates"
		if r.Balance != nil {
			what = "the reads and creates"
		}
		fmt.Fprintf(w, "server    separate processes: payoutd api for %s, then %s%s\n", what, drainBy, build)
	}
	if r.Concurrent != nil {
		fmt.Fprintf(w, "concurrent payoutd api and payoutd worker together%s; hot: 1 wallet, spread and wait: %d wallets\n", build, o.concurrentWallets)
	}
	fmt.Fprintf(w, "          (APP_ENV=%s, LOG_LEVEL=warn, %s)\n", o.env, strings.Join(r.ServerEnv, " "))
	fmt.Fprintf(w, "          PostgreSQL %s, Redis %s (flushed at the start), %d clients\n", redact(o.databaseURL), redact(o.redisURL), r.Clients)
	fmt.Fprintf(w, "rail      %s\n", rr.describe(o))
	printSuiteLoad(w, o, r)
	if c := r.Ceilings; c != nil {
		if c.Unavailable != "" {
			fmt.Fprintf(w, "pgbench   ceiling unavailable: %s\n", c.Unavailable)
		} else {
			fmt.Fprintf(w, "pgbench   %s; -c %d -j %d -M prepared -T %s; BEGIN, conditional UPDATE of one lt_wallets row, INSERT into lt_ledger, END\n",
				c.Version, o.pgbenchClients, min(2, o.pgbenchClients), o.pgbenchDuration)
			if c.SelectOnly != nil {
				fmt.Fprintf(w, "          select-only: %s\n", selectOnlyText)
			}
		}
	}
	fmt.Fprintf(w, "machine   %d CPUs shared by the load generator, api or worker, PostgreSQL and Redis\n\n", r.CPUs)

	printSuiteTable(w, r)
	printSuiteCPU(w, r)
	printEvidence(w, r.Concurrent)
	if r.Balance != nil {
		printFailures(w, "first failures of balance", r.Balance.failures)
	}
	for _, p := range []struct {
		name string
		f    *createFigures
	}{{"create-many", r.CreateMany}, {"create-hot", r.CreateHot}, {"payments", r.Payments}} {
		if p.f != nil {
			printFailures(w, "first failures of "+p.name, p.f.failures)
		}
	}
	line, _ := json.Marshal(r)
	fmt.Fprintf(w, "\n%s\n", line)
}

// printSuiteLoad says what the reads, creates and payments were and what
// a create's latency covers.
func printSuiteLoad(w io.Writer, o options, r *suiteResult) {
	window := fmt.Sprintf("warm-up %s, measured %s", o.warmup, o.duration)
	if r.CreateMany == nil { // the concurrent phase alone: no warm-up
		window = fmt.Sprintf("no warm-up, each sub-phase %s or %d creates", o.duration, o.concurrentMax)
	}
	if r.Balance != nil {
		fmt.Fprintf(w, "reads     signed GET /api/v3/wallets/{wallet_id}/balance, round-robin over the clients' wallets; %s\n", window)
	}
	fmt.Fprintf(w, "creates   %s IDR %s to %s %s, a fresh Idempotency-Key each; %s\n",
		r.Amount, createTransferType, createBankCode, createAccountNo, window)
	if r.Payments != nil {
		fmt.Fprintf(w, "payments  price %d to each client's default wallet, %s; warm-up %s, measured %s\n",
			paymentPrice, paymentAuthText(r.PaymentAuth), o.warmup, o.duration)
	}
	if r.CreateMany != nil {
		fmt.Fprintf(w, "note      %s\n", submitWaitNote)
	} else {
		fmt.Fprintf(w, "note      %s\n", concurrentNote)
	}
	if r.Payments != nil {
		fmt.Fprintf(w, "          %s\n", paymentsNote)
	}
}

// printSuiteTable prints one row per figure with its ceiling and ratio,
// then the notes under the table.
func printSuiteTable(w io.Writer, r *suiteResult) {
	t := suiteTable{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	if r.AimMet != nil {
		t.aim = fmt.Sprintf("; ratio ≥%.2f", goalCeilingRatio)
	}
	t.row("figure", "rate", "p50", "p90", "p99", "ceiling", "ratio", "goal", "result")
	if c := r.Ceilings; c != nil && c.Unavailable == "" {
		t.ceilingRows(c)
	}
	var spread, hot *ceiling
	if r.Ceilings != nil {
		spread, hot = r.Ceilings.Spread, r.Ceilings.Hot
	}
	if r.Balance != nil {
		t.balanceRow(r.Balance, r.Ceilings.selectOnlyCeiling())
	}
	t.createRow("create-many", r.CreateMany, spread, "spread", goalCreatesMany)
	t.createRow("create-hot", r.CreateHot, hot, "hot", goalCreatesHot)
	t.createRow("payments", r.Payments, spread, "spread", goalPayments)
	if d := r.Drain; d != nil {
		t.drainRow(d, hot, r.DrainRatio)
	}
	t.concurrentRows(r.Concurrent, r.Ceilings)
	t.tw.Flush()
	printSuiteNotes(w, r)
}

// suiteTable is the table of a suite's figures; aim is the ratio goal
// each row's goal mentions ("" without ceilings).
type suiteTable struct {
	tw  *tabwriter.Writer
	aim string
}

func (t suiteTable) row(cells ...string) { fmt.Fprintln(t.tw, strings.Join(cells, "\t")) }

// ceilingRows are the pgbench ceilings the suite measured, their latency
// an average.
func (t suiteTable) ceilingRows(c *ceilings) {
	if s := c.SelectOnly; s != nil {
		t.row(fmt.Sprintf("pgbench select-only (%d rows, %d clients)", s.Rows, s.Clients), tpsText(s), msText(s.LatencyAvgMS)+"*", "", "", "", "", "", "")
	}
	if s := c.Spread; s != nil {
		t.row(fmt.Sprintf("pgbench spread (%d rows, %d clients)", s.Rows, s.Clients), tpsText(s), msText(s.LatencyAvgMS)+"*", "", "", "", "", "", "")
	}
	if h := c.Hot; h != nil {
		t.row(fmt.Sprintf("pgbench hot row (%d clients)", h.Clients), tpsText(h), msText(h.LatencyAvgMS)+"*", "", "", "", "", "", "")
	}
}

// balanceRow is the balance reads' row, their rate over the select-only
// ceiling and judged against -scenario balance's goal.
func (t suiteTable) balanceRow(f *readFigures, selectOnly *ceiling) {
	ceilText := "n/a"
	if selectOnly != nil {
		ceilText = "select-only " + tpsText(selectOnly)
	}
	t.row(fmt.Sprintf("balance (%d wallet(s), %d workers)", f.Wallets, f.Concurrency), fmt.Sprintf("%.0f req/s", f.RPS),
		msText(f.P50MS), msText(f.P90MS), msText(f.P99MS), ceilText, ratioText(f.Ratio),
		fmt.Sprintf("≥%d/s, p99<%dms%s", goalRPS, goalP99.Milliseconds(), t.aim),
		outcome(balanceGoalMet(f), f.Ratio))
}

// createRow is a create phase's row (none when the phase did not run),
// its rate over ceil (labelled label) and judged against goalMin.
func (t suiteTable) createRow(name string, f *createFigures, ceil *ceiling, label string, goalMin float64) {
	if f == nil {
		return
	}
	ceilText := "n/a"
	if ceil != nil {
		ceilText = label + " " + tpsText(ceil)
	}
	t.row(fmt.Sprintf("%s (%d wallet(s), %d workers)", name, f.Wallets, f.Concurrency), fmt.Sprintf("%.0f creates/s", f.CreatesPerS),
		msText(f.P50MS), msText(f.P90MS), msText(f.P99MS), ceilText, ratioText(f.Ratio),
		fmt.Sprintf("≥%.0f/s, p99<%dms%s", goalMin, goalCreateP99.Milliseconds(), t.aim),
		outcome(createGoalMet(f, goalMin), f.Ratio))
}

// drainRow is the worker's drain, its rate over the hot-row ceiling.
func (t suiteTable) drainRow(d *drainResult, hot *ceiling, ratio *float64) {
	ceilText := "n/a"
	if hot != nil {
		ceilText = "hot " + tpsText(hot)
	}
	t.row("drain (payoutd worker)", fmt.Sprintf("%.0f payouts/s", d.PayoutsPerS), msText(d.P50MS)+"†", msText(d.P90MS)+"†", msText(d.P99MS)+"†", ceilText, ratioText(ratio),
		fmt.Sprintf("≥%d/s%s", goalPayouts, t.aim), outcome(d.PayoutsPerS >= goalPayouts, ratio))
}

// printSuiteNotes follows the table: how far the drain got, what the
// asterisk means, and the overall verdicts.
func printSuiteNotes(w io.Writer, r *suiteResult) {
	if d := r.Drain; d != nil {
		how := "all of them"
		if !d.Complete {
			how = "the window closed first"
		}
		fmt.Fprintf(w, "  drain: %d of %d queued payouts reached SUCCESS (%s), %d failed, %d accepted by the vendor and not yet final;\n"+
			"         %.2fs from the first to the last SUCCESS\n", d.Drained, d.Queued, how, d.Failed, d.Requested, d.SpanS)
		fmt.Fprintf(w, "  † latency of a payout that reached SUCCESS, from the worker's first call to the vendor (max %.1f ms)\n", d.MaxMS)
	}
	printConcurrentNotes(w, r.Concurrent)
	if r.Ceilings != nil && r.Ceilings.Unavailable == "" {
		fmt.Fprintf(w, "  * pgbench's average latency, not a percentile\n")
	}
	fmt.Fprintf(w, "  overall: goals %s", verdict(r.GoalMet))
	if r.AimMet != nil {
		fmt.Fprintf(w, ", ratios ≥%.2f %s", goalCeilingRatio, verdict(*r.AimMet))
	}
	fmt.Fprintln(w)
}

// printSuiteCPU prints where the CPU went in each phase.
func printSuiteCPU(w io.Writer, r *suiteResult) {
	type phase struct {
		name, server string
		u            *cpuUsage
		rate         float64 // operations per second
		op           string
	}
	var phases []phase
	if c := r.Ceilings; c != nil {
		if c.SelectOnly != nil {
			phases = append(phases, phase{"pgbench select-only", "", c.SelectOnly.CPU, c.SelectOnly.TPS, "transaction"})
		}
		if c.Spread != nil {
			phases = append(phases, phase{"pgbench spread", "", c.Spread.CPU, c.Spread.TPS, "transaction"})
		}
		if c.Hot != nil {
			phases = append(phases, phase{"pgbench hot", "", c.Hot.CPU, c.Hot.TPS, "transaction"})
		}
	}
	if f := r.Balance; f != nil {
		phases = append(phases, phase{"balance", "api", f.CPU, f.RPS, "read"})
	}
	if f := r.CreateMany; f != nil {
		phases = append(phases, phase{"create-many", "api", f.CPU, f.CreatesPerS, "create"})
	}
	if f := r.CreateHot; f != nil {
		phases = append(phases, phase{"create-hot", "api", f.CPU, f.CreatesPerS, "create"})
	}
	if f := r.Payments; f != nil {
		phases = append(phases, phase{"payments", "api", f.CPU, f.CreatesPerS, "payment"})
	}
	if d := r.Drain; d != nil {
		phases = append(phases, phase{"drain", "worker", d.CPU, d.PayoutsPerS, "payout"})
	}
	if c := r.Concurrent; c != nil {
		for _, p := range c.Phases {
			phases = append(phases, phase{"concurrent " + p.Name, "api", p.Create.CPU, p.Create.CreatesPerS, "create"})
		}
	}
	fmt.Fprintf(w, "\ncpu (cores, then CPU time per operation)\n")
	var busy []string
	for _, p := range phases {
		if p.u == nil {
			continue
		}
		loadGen := "load generator"
		if p.server == "" {
			loadGen = "pgbench"
		}
		breakdown, perOp := cpuBreakdown(p.u, p.server, loadGen, "other"), cpuPerOp(p.u, p.rate, p.server, p.op)
		if strings.HasPrefix(p.name, "concurrent") { // the worker runs beside the api: the "rail" processes
			breakdown = strings.Replace(breakdown, " rail ", " worker (and rail) ", 1)
			perOp = strings.Replace(perOp, " rail ", " worker (and rail) ", 1)
		}
		fmt.Fprintf(w, "  %-19s %s\n", p.name, breakdown)
		if perOp != "" {
			fmt.Fprintf(w, "  %-19s %s\n", "", perOp)
		}
		if p.u.Other+p.u.Steal >= busyMachine {
			busy = append(busy, p.name)
		}
	}
	if len(busy) > 0 {
		fmt.Fprintf(w, "  WARNING: other work on the machine or the hypervisor took CPU during %s;\n"+
			"  those figures understate the service: run again when the machine is quiet\n", strings.Join(busy, ", "))
	}
}

// cpuPerOp is the CPU time one operation cost each part, in milliseconds:
// what bounds the rate when the machine's cores are all busy.
func cpuPerOp(u *cpuUsage, rate float64, server, op string) string {
	if rate <= 0 {
		return ""
	}
	ms := func(cores float64) float64 { return cores * 1000 / rate }
	var b strings.Builder
	fmt.Fprintf(&b, "per %s:", op)
	if u.Server != nil {
		fmt.Fprintf(&b, " %s %.3f ms,", server, ms(*u.Server))
	}
	if u.Rail != nil {
		fmt.Fprintf(&b, " rail %.3f ms,", ms(*u.Rail))
	}
	fmt.Fprintf(&b, " PostgreSQL %.3f ms, Redis %.3f ms", ms(u.Postgres), ms(u.Redis))
	return b.String()
}
