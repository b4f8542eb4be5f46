package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
)

// runDescription is what the report says about how the figures were made.
type runDescription struct {
	scenario    scenarioInfo
	options     options
	concurrency int      // workers, after the scenario's default
	serverEnv   []string // what the tool added to a started server's environment
	server      string   // serverSeparate, serverExternal or serverInProcess
	where       string   // the server's base URL, when it has one
	accessLogs  *bool    // nil when unknown (an external server)
	revision    string   // the started server's commit, "" when unknown
	// ceilings (balance) is the select-only ceiling measured before the
	// load, or why there is none; nil when the scenario has no ceiling.
	ceilings *ceilings
}

// result is the figures of a run: the JSON line of the report.
type result struct {
	Scenario     string      `json:"scenario"`
	Concurrency  int         `json:"concurrency"`
	DurationS    float64     `json:"duration_s"`
	Requests     int         `json:"requests"`
	Errors       int         `json:"errors"`
	RPS          float64     `json:"rps"`
	P50MS        float64     `json:"p50_ms"`
	P90MS        float64     `json:"p90_ms"`
	P99MS        float64     `json:"p99_ms"`
	MaxMS        float64     `json:"max_ms"`
	GOMAXPROCS   int         `json:"gomaxprocs"`
	Server       string      `json:"server"`
	AccessLogs   *bool       `json:"access_logs,omitempty"`
	ServerEnv    []string    `json:"server_env,omitempty"`
	Revision     string      `json:"revision,omitempty"`
	Clients      int         `json:"clients"`
	WarmupS      float64     `json:"warmup_s"`
	WarmupErrors int         `json:"warmup_errors"`
	CPUs         int         `json:"cpus"`
	CPU          *cpuUsage   `json:"cpu_cores,omitempty"`
	Allocs       *allocStats `json:"allocs,omitempty"` // in-process runs only
	// Groups are the started api's group commits over the window, read
	// from its /metrics with -server-profile's credentials.
	Groups      []groupStage `json:"groups,omitempty"`
	GroupErrors []string     `json:"group_errors,omitempty"`
	GoalRate    float64      `json:"goal_rate"`
	GoalP99MS   float64      `json:"goal_p99_ms"`
	GoalMet     bool         `json:"goal_met"`
	PaymentAuth string       `json:"payment_auth,omitempty"` // payments only
	// Balance only: the pgbench select-only ceiling of the same run
	// (Ceilings, its tps in CeilingTPS), the rate as a ratio of it and
	// whether that ratio is at least GoalRatio (AimMet, as a suite's; nil
	// without a ceiling).
	Ceilings   *ceilings `json:"pgbench,omitempty"`
	CeilingTPS float64   `json:"ceiling_tps,omitempty"`
	Ratio      *float64  `json:"ratio,omitempty"`
	GoalRatio  float64   `json:"goal_ratio,omitempty"`
	AimMet     *bool     `json:"aim_met,omitempty"`
}

func newResult(d runDescription, m *measurement, cpu *cpuUsage) *result {
	r := &result{
		Scenario:     d.options.scenario,
		Concurrency:  d.concurrency,
		DurationS:    round(m.elapsed.Seconds(), 3),
		Requests:     len(m.latencies) + m.errors,
		Errors:       m.errors,
		RPS:          m.perSecond(),
		P50MS:        m.ms(50),
		P90MS:        m.ms(90),
		P99MS:        m.ms(99),
		MaxMS:        m.ms(100),
		GOMAXPROCS:   runtime.GOMAXPROCS(0),
		Server:       d.server,
		AccessLogs:   d.accessLogs,
		ServerEnv:    d.serverEnv,
		Revision:     d.revision,
		Clients:      d.options.clients,
		WarmupS:      round(d.options.warmup.Seconds(), 3),
		WarmupErrors: m.warmupErrors,
		CPUs:         runtime.NumCPU(),
		CPU:          cpu,
		GoalRate:     d.scenario.goalRate,
		GoalP99MS:    millis(d.scenario.goalP99),
	}
	if d.scenario.name == "payments" {
		r.PaymentAuth = d.options.paymentAuth
	}
	r.GoalMet = r.rpsMet() && r.p99Met()
	r.judgeCeiling(d.ceilings)
	return r
}

// judgeCeiling sets the rate's ratio of the select-only ceiling c and
// its verdict; without c, or without its select-only figure, there is no
// ratio.
func (r *result) judgeCeiling(c *ceilings) {
	if c == nil {
		return
	}
	r.Ceilings, r.GoalRatio = c, goalCeilingRatio
	r.CeilingTPS = c.selectOnlyCeiling().tps()
	if v, ok := ratio(r.RPS, r.CeilingTPS); ok {
		met := v >= goalCeilingRatio
		r.Ratio, r.AimMet = &v, &met
	}
}

func (r *result) rpsMet() bool { return r.RPS >= r.GoalRate }
func (r *result) p99Met() bool { return r.Requests > r.Errors && r.P99MS < r.GoalP99MS }

// printReport writes the human summary and the JSON line.
func printReport(w io.Writer, d runDescription, r *result, m *measurement) {
	o := d.options
	fmt.Fprintf(w, "\npayoutd load test — %s: %s\n", r.Scenario, d.scenario.summary)
	fmt.Fprintf(w, "server    %s\n", serverLine(d))
	if d.server != serverExternal {
		fmt.Fprintf(w, "          PostgreSQL %s, Redis %s, %d clients\n", redact(o.databaseURL), redact(o.redisURL), r.Clients)
	}
	fmt.Fprintf(w, "load      %d workers, closed loop, keep-alive; warm-up %s, measured %.2fs\n", r.Concurrency, o.warmup, r.DurationS)
	fmt.Fprintf(w, "machine   %d CPUs shared by load generator (GOMAXPROCS %d), server, PostgreSQL and Redis\n", r.CPUs, r.GOMAXPROCS)
	if c := r.Ceilings; c != nil && c.SelectOnly != nil {
		fmt.Fprintf(w, "pgbench   %s; -c %d -j %d -M prepared -T %s before the load, over %d lt_wallets rows:\n"+
			"          %s; %.0f tps, average latency %.2f ms\n",
			c.Version, o.pgbenchClients, min(2, o.pgbenchClients), o.pgbenchDuration, c.SelectOnly.Rows, selectOnlyText, c.SelectOnly.TPS, c.SelectOnly.LatencyAvgMS)
	}
	switch {
	case d.scenario.creates && d.server == serverExternal:
		fmt.Fprintf(w, "note      the external server's DISBURSEMENT_SUBMIT_WAIT decides whether a create waits for the worker\n")
	case d.scenario.creates:
		fmt.Fprintf(w, "note      %s\n", submitWaitNote)
	case d.scenario.name == "payments":
		fmt.Fprintf(w, "note      %s\n", paymentsNote)
		fmt.Fprintf(w, "          price %d, authenticated by %s\n", paymentPrice, paymentAuthText(o.paymentAuth))
	}
	fmt.Fprintln(w)

	fmt.Fprintf(w, "requests  %d ok, %d errors   (warm-up: %d ok, %d errors)\n", r.Requests-r.Errors, r.Errors, m.warmupOK, m.warmupErrors)
	unit := d.scenario.unit
	fmt.Fprintf(w, "rate      %-50s goal ≥ %.0f %s  %s\n", fmt.Sprintf("%.0f %s", r.RPS, unit), r.GoalRate, unit, verdict(r.rpsMet()))
	printCeilingRatio(w, r)
	fmt.Fprintf(w, "latency   p50 %.2f ms  p90 %.2f ms  p99 %.2f ms  max %.2f ms   goal p99 < %.0f ms  %s\n",
		r.P50MS, r.P90MS, r.P99MS, r.MaxMS, r.GoalP99MS, verdict(r.p99Met()))
	if r.CPU != nil {
		fmt.Fprintf(w, "cpu       %s\n", cpuLine(d.server, r.CPU))
		if c := r.Ceilings; c != nil && c.SelectOnly != nil && c.SelectOnly.CPU != nil {
			u := c.SelectOnly.CPU
			fmt.Fprintf(w, "          pgbench select-only: %s\n", cpuBreakdown(u, "", "pgbench", "other"))
			if u.Other+u.Steal >= busyMachine {
				fmt.Fprintf(w, "          WARNING: other work and the hypervisor took %.2f cores during the pgbench run; the ceiling understates the machine\n", u.Other+u.Steal)
			}
		}
		// An external server's CPU is part of "other": no warning then.
		if lost := r.CPU.Other + r.CPU.Steal; lost >= busyMachine && d.server != serverExternal {
			fmt.Fprintf(w, "          WARNING: other work on the machine (%.2f cores) and the hypervisor (steal %.2f) took CPU\n"+
				"          during the run; the figures understate the service: run again when the machine is quiet\n", r.CPU.Other, r.CPU.Steal)
		}
	}
	if a := r.Allocs; a != nil {
		fmt.Fprintf(w, "allocs    %.0f objects, %.0f bytes per request (handler and request building); %d GC cycles\n",
			a.ObjectsPerRequest, a.BytesPerRequest, a.GCCycles)
	}
	for i, g := range r.Groups {
		label := ""
		if i == 0 {
			label = "groups"
		}
		fmt.Fprintf(w, "%-9s %s\n", label, g.text())
	}
	for _, e := range r.GroupErrors {
		fmt.Fprintf(w, "groups    unavailable: %s\n", e)
	}
	fmt.Fprintf(w, "result    %s\n", outcome(r.GoalMet, r.Ratio))
	printFailures(w, "first failures", m.firstFailures)
	line, _ := json.Marshal(r)
	fmt.Fprintf(w, "\n%s\n", line)
}

// printCeilingRatio is the rate as a ratio of the select-only ceiling,
// judged against goalCeilingRatio, or why there is no ratio; nothing for
// a scenario without a ceiling.
func printCeilingRatio(w io.Writer, r *result) {
	switch c := r.Ceilings; {
	case c == nil:
	case r.Ratio == nil:
		reason := c.Unavailable
		if reason == "" {
			reason = "no select-only figure"
		}
		fmt.Fprintf(w, "ratio     n/a: pgbench select-only ceiling unavailable: %s\n", reason)
	default:
		fmt.Fprintf(w, "ratio     %-50s goal ≥ %.2f of select-only  %s\n",
			fmt.Sprintf("%.2f of pgbench select-only %.0f tps", *r.Ratio, r.CeilingTPS), r.GoalRatio, verdict(*r.AimMet))
	}
}

func serverLine(d runDescription) string {
	switch d.server {
	case serverSeparate:
		logs := "LOG_LEVEL=warn: access logs off"
		if *d.accessLogs {
			logs = "access logs ON"
		}
		extra := ""
		if len(d.serverEnv) > 0 {
			extra = ", " + strings.Join(d.serverEnv, " ")
		}
		build := ""
		if d.revision != "" {
			build = ", built from " + d.revision
		}
		return fmt.Sprintf("separate process: payoutd api at %s (APP_ENV=%s, %s%s%s)", d.where, d.options.env, logs, extra, build)
	case serverInProcess:
		return fmt.Sprintf("in-process handler, no HTTP or TCP (APP_ENV=%s, access logs off); CPU profile in %s", d.options.env, d.options.inprocessProfile)
	default:
		return "external: " + d.where
	}
}

func cpuLine(server string, u *cpuUsage) string {
	loadGen, other := "load generator", "other"
	switch server {
	case serverInProcess:
		loadGen = "load generator with the in-process server"
	case serverExternal:
		other = "other (the server among them)"
	}
	return cpuBreakdown(u, "server", loadGen, other)
}
