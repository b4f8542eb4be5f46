package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/payoutd/payoutd/internal/database"
)

// evidenceTick is how often -evidence samples PostgreSQL and Redis.
const evidenceTick = 100 * time.Millisecond

// workerPprofSource is added to package main of cmd/payoutd by go build
// -overlay when -evidence asks (buildPayoutdWith): the worker serves no
// /debug/pprof of its own, so a process given LOADTEST_PPROF_ADDR serves
// net/http/pprof on that loopback address. Nothing else changes.
const workerPprofSource = `package main

import (
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
)

func init() {
	addr := os.Getenv("LOADTEST_PPROF_ADDR")
	if addr == "" {
		return
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return
	}
	go http.Serve(ln, nil)
}
`

// writePprofOverlay writes workerPprofSource and the -overlay file that
// adds it to cmd/payoutd into dir, and returns the overlay's path.
func writePprofOverlay(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-f", "{{.Dir}}", "github.com/payoutd/payoutd/cmd/payoutd").Output()
	if err != nil {
		return "", fmt.Errorf("go list ./cmd/payoutd: %w", err)
	}
	src := filepath.Join(dir, "loadtest_pprof.go")
	if err := os.WriteFile(src, []byte(workerPprofSource), 0o600); err != nil {
		return "", err
	}
	target := filepath.Join(strings.TrimSpace(string(out)), "zz_loadtest_pprof.go")
	overlay, _ := json.Marshal(map[string]map[string]string{"Replace": {target: src}})
	path := filepath.Join(dir, "overlay.json")
	return path, os.WriteFile(path, overlay, 0o600)
}

// countRow is one thing seen and how many samples saw it.
type countRow struct {
	What  string `json:"what"`
	Count int    `json:"count"`
}

// statementRow is one pg_stat_statements entry.
type statementRow struct {
	Query   string  `json:"query"`
	Calls   int64   `json:"calls"`
	TotalMS float64 `json:"total_ms"`
	MeanMS  float64 `json:"mean_ms"`
}

// phaseEvidence is what -evidence found during one concurrent sub-phase.
type phaseEvidence struct {
	Samples int `json:"samples"`
	// ActiveBackends sums the active backends of the load database over the
	// samples; WaitEvents splits them by wait_event_type:wait_event
	// ("CPU" when an active backend waits on nothing).
	ActiveBackends int        `json:"active_backends"`
	WaitEvents     []countRow `json:"wait_events"`
	// BlockedLocks are the lock requests not granted (pg_locks), by lock
	// type, relation and mode; Blockers pairs a waiting statement with the
	// statement of the backend it waits for (pg_blocking_pids).
	BlockedLocks          []countRow     `json:"blocked_locks"`
	Blockers              []countRow     `json:"blockers"`
	Statements            []statementRow `json:"statements,omitempty"`
	StatementsUnavailable string         `json:"statements_unavailable,omitempty"`
	// RedisPing are round trips of PING to the run's Redis, sampled.
	RedisPingP50MS float64 `json:"redis_ping_p50_ms"`
	RedisPingP99MS float64 `json:"redis_ping_p99_ms"`
	RedisPingMaxMS float64 `json:"redis_ping_max_ms"`
	// Groups are the api's and the worker's group commits over the window
	// (groupStages).
	Groups      []groupStage        `json:"groups,omitempty"`
	Profiles    map[string]string   `json:"profiles,omitempty"` // process → file
	ProfileTops map[string][]string `json:"-"`
	Errors      []string            `json:"errors,omitempty"`
	Dir         string              `json:"dir"`
}

// evidenceRun is -evidence for the concurrent phase: where the files go
// and whether pg_stat_statements answers.
type evidenceRun struct {
	dir             string
	pgssUnavailable string
}

func newEvidenceRun(ctx context.Context, dir string, db *gorm.DB) (*evidenceRun, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("-evidence-dir: %w", err)
	}
	return &evidenceRun{dir: dir, pgssUnavailable: pgStatStatements(ctx, db)}, nil
}

// write saves a sub-phase's summary as JSON beside its raw files.
func (r *evidenceRun) write(phase string, ev *phaseEvidence) {
	b, _ := json.MarshalIndent(ev, "", "  ")
	if err := os.WriteFile(filepath.Join(r.dir, "concurrent-"+phase+"-summary.json"), b, 0o644); err != nil {
		ev.Errors = append(ev.Errors, err.Error())
	}
}

// evidenceHooks are the sub-phase's evidence: the sampler, the CPU
// profiles of the api (its /debug/pprof, with operator credentials added
// to apiCfg) and of the worker (the overlay's listener), and both
// processes' group commits (their /metrics).
func (cr *concurrentRun) evidenceHooks(name string, apiCfg *serverConfig) (*phaseEvidence, []windowHooks, error) {
	dir := cr.evidence.dir
	ev := &phaseEvidence{Dir: dir, Profiles: map[string]string{
		"api": filepath.Join(dir, "concurrent-"+name+"-api.pprof"), "worker": filepath.Join(dir, "concurrent-"+name+"-worker.pprof"),
	}}
	apiProf, err := newServerProfile(ev.Profiles["api"], cr.s.o.duration)
	if err != nil {
		return nil, nil, err
	}
	apiCfg.extraEnv = append(apiCfg.extraEnv, apiProf.env()...)
	workerProf := &serverProfile{path: ev.Profiles["worker"], base: "http://" + cr.workerPP, window: cr.s.o.duration}
	sampler := &evidenceSampler{db: cr.s.db, redisURL: cr.s.o.redisURL, raw: filepath.Join(dir, "concurrent-"+name+"-samples.jsonl"),
		pgss: cr.evidence.pgssUnavailable == "", ev: ev}
	ev.StatementsUnavailable = cr.evidence.pgssUnavailable
	// Closed last first: the CPU windows (added after these) close before
	// the profiles are waited for.
	return ev, []windowHooks{apiProf, workerProf, sampler, &groupStages{prof: apiProf, ev: ev},
		&groupStages{prof: cr.workerMetrics, ev: ev, process: "worker"}}, nil
}

// finishEvidence notes the profiles' failures, reads their tops and
// writes the sub-phase's summary file.
func (cr *concurrentRun) finishEvidence(name string, ev *phaseEvidence, hooks []windowHooks) {
	profs := map[string]error{}
	for _, h := range hooks {
		if sp, ok := h.(*serverProfile); ok {
			proc := "worker"
			if sp.user != "" {
				proc = "api"
			}
			profs[proc] = sp.err
		}
	}
	ev.ProfileTops = map[string][]string{}
	for proc, path := range ev.Profiles {
		if err := profs[proc]; err != nil {
			ev.Errors = append(ev.Errors, fmt.Sprintf("%s profile: %v", proc, err))
			continue
		}
		if top := profileTop(path, 10); len(top) > 0 {
			ev.ProfileTops[proc] = top
		} else {
			ev.Errors = append(ev.Errors, fmt.Sprintf("%s profile: none read from %s", proc, path))
		}
	}
	cr.evidence.write(name, ev)
}

// evidenceSampler samples pg_stat_activity, pg_locks and Redis every
// evidenceTick between opened and closed, and reads pg_stat_statements
// at the end; it writes each sample as a JSON line to raw.
type evidenceSampler struct {
	db       *gorm.DB
	redisURL string
	raw      string // JSON lines file
	pgss     bool   // pg_stat_statements answers
	ev       *phaseEvidence

	cancel context.CancelFunc
	done   chan struct{}
	waits  map[string]int
	locks  map[string]int
	blocks map[string]int
	pings  []time.Duration
}

// pgStatStatements makes the extension in the load database and tells
// whether it answers: it needs shared_preload_libraries, which the tool
// never changes (that needs a restart of PostgreSQL). "" when it does.
func pgStatStatements(ctx context.Context, db *gorm.DB) string {
	if database.DialectOfDB(db) != database.Postgres {
		return "not PostgreSQL"
	}
	// The failures below are expected and reported: not logged as errors.
	db = db.Session(&gorm.Session{Logger: logger.Discard})
	var preload string
	db.WithContext(ctx).Raw(`SHOW shared_preload_libraries`).Scan(&preload)
	if err := db.WithContext(ctx).Exec(`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`).Error; err != nil {
		return fmt.Sprintf("CREATE EXTENSION pg_stat_statements: %v", err)
	}
	if err := db.WithContext(ctx).Exec(`SELECT pg_stat_statements_reset()`).Error; err != nil {
		return fmt.Sprintf("pg_stat_statements is not loaded (shared_preload_libraries = %q): it needs "+
			"shared_preload_libraries = 'pg_stat_statements' and a restart of PostgreSQL, which the tool does not do", preload)
	}
	return ""
}

func (e *evidenceSampler) opened() {
	// Its queries wait on a busy server: no slow-query warnings for them.
	e.db = e.db.Session(&gorm.Session{Logger: logger.Discard})
	e.waits, e.locks, e.blocks = map[string]int{}, map[string]int{}, map[string]int{}
	if e.pgss {
		e.db.Exec(`SELECT pg_stat_statements_reset()`)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan struct{})
	go e.loop(ctx)
}

func (e *evidenceSampler) closed() {
	if e.cancel == nil {
		return
	}
	e.cancel()
	<-e.done
	e.ev.WaitEvents, e.ev.BlockedLocks, e.ev.Blockers = topCounts(e.waits, 12), topCounts(e.locks, 12), topCounts(e.blocks, 8)
	slices.Sort(e.pings)
	e.ev.RedisPingP50MS, e.ev.RedisPingP99MS = millis(percentile(e.pings, 50)), millis(percentile(e.pings, 99))
	e.ev.RedisPingMaxMS = millis(percentile(e.pings, 100))
	if e.pgss {
		e.readStatements()
	}
}

// evidenceSample is one line of the raw file.
type evidenceSample struct {
	At      time.Time      `json:"at"`
	Waits   map[string]int `json:"waits"`
	Locks   map[string]int `json:"blocked_locks,omitempty"`
	Blocks  map[string]int `json:"blockers,omitempty"`
	PingMS  float64        `json:"redis_ping_ms"`
	PingErr string         `json:"redis_error,omitempty"`
}

func (e *evidenceSampler) loop(ctx context.Context) {
	defer close(e.done)
	f, err := os.Create(e.raw)
	if err != nil {
		e.ev.Errors = append(e.ev.Errors, err.Error())
		return
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	defer w.Flush()
	rdb := newRedisClient(e.redisURL)
	if rdb != nil {
		defer rdb.Close()
	}
	tick := time.NewTicker(evidenceTick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		s := e.sample(ctx, rdb)
		line, _ := json.Marshal(s)
		w.Write(append(line, '\n'))
	}
}

// sample takes one look at PostgreSQL's backends and locks and one PING.
func (e *evidenceSampler) sample(ctx context.Context, rdb *redis.Client) evidenceSample {
	s := evidenceSample{At: time.Now(), Waits: map[string]int{}, Locks: map[string]int{}, Blocks: map[string]int{}}
	e.ev.Samples++
	e.countInto(ctx, s.Waits, e.waits, `SELECT coalesce(wait_event_type, 'CPU') || ':' || coalesce(wait_event, 'running'), count(*)
		FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid() GROUP BY 1`)
	for _, n := range s.Waits {
		e.ev.ActiveBackends += n
	}
	e.countInto(ctx, s.Locks, e.locks, `SELECT l.locktype || ' ' || coalesce(c.relname, '-') || ' ' || l.mode, count(*)
		FROM pg_locks l LEFT JOIN pg_class c ON c.oid = l.relation WHERE NOT l.granted GROUP BY 1`)
	e.countInto(ctx, s.Blocks, e.blocks, `SELECT left(regexp_replace(a.query, '\s+', ' ', 'g'), 90) || '  WAITS FOR  ' ||
		left(regexp_replace(b.query, '\s+', ' ', 'g'), 90), count(*)
		FROM pg_stat_activity a CROSS JOIN LATERAL unnest(pg_blocking_pids(a.pid)) AS bp(pid)
		JOIN pg_stat_activity b ON b.pid = bp.pid WHERE a.datname = current_database() GROUP BY 1`)
	if rdb != nil {
		start := time.Now()
		if err := rdb.Ping(ctx).Err(); err != nil {
			s.PingErr = err.Error()
		} else {
			d := time.Since(start)
			e.pings = append(e.pings, d)
			s.PingMS = millis(d)
		}
	}
	return s
}

// countInto runs query (text, count rows) into this sample's and the
// phase's counts; a failing query is noted once.
func (e *evidenceSampler) countInto(ctx context.Context, sample, total map[string]int, query string) {
	rows, err := e.db.WithContext(ctx).Raw(query).Rows()
	if err != nil {
		if ctx.Err() == nil && len(e.ev.Errors) < 5 {
			e.ev.Errors = append(e.ev.Errors, err.Error())
		}
		return
	}
	defer rows.Close()
	for rows.Next() {
		var what string
		var n int
		if rows.Scan(&what, &n) == nil {
			sample[what] += n
			total[what] += n
		}
	}
}

// readStatements reads the statements that took the most time since the
// phase's reset.
func (e *evidenceSampler) readStatements() {
	rows, err := e.db.Raw(`SELECT left(regexp_replace(query, '\s+', ' ', 'g'), 160), calls, total_exec_time, mean_exec_time
		FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		ORDER BY total_exec_time DESC LIMIT 15`).Rows()
	if err != nil {
		e.ev.StatementsUnavailable = err.Error()
		return
	}
	defer rows.Close()
	for rows.Next() {
		var r statementRow
		if rows.Scan(&r.Query, &r.Calls, &r.TotalMS, &r.MeanMS) == nil {
			r.TotalMS, r.MeanMS = round(r.TotalMS, 1), round(r.MeanMS, 3)
			e.ev.Statements = append(e.ev.Statements, r)
		}
	}
}

// topCounts are the n largest counts, largest first.
func topCounts(m map[string]int, n int) []countRow {
	rows := make([]countRow, 0, len(m))
	for k, v := range m {
		rows = append(rows, countRow{What: k, Count: v})
	}
	slices.SortFunc(rows, func(a, b countRow) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.What, b.What)
	})
	return rows[:min(n, len(rows))]
}

// profileTop is the first lines of `go tool pprof -top -cum` of a
// profile, payoutd's own frames only (the runtime's syscalls and
// allocator, which lead a flat top, say little about where a request
// goes): cumulative time, its share, the function.
func profileTop(path string, lines int) []string {
	out, err := exec.Command("go", "tool", "pprof", "-top", "-cum", "-show=github.com/payoutd", `-hide=api\.New\.`, // the middleware wraps every request
		"-nodecount="+fmt.Sprint(lines), path).Output()
	if err != nil {
		return nil
	}
	var top []string
	started := false
	for l := range strings.SplitSeq(string(out), "\n") {
		f := strings.Fields(l)
		switch {
		case slices.Contains(f, "cum%"):
			started = true
		case started && len(f) >= 6:
			top = append(top, fmt.Sprintf("%6s %6s  %s", f[3], f[4], strings.TrimPrefix(strings.Join(f[5:], " "), "github.com/payoutd/payoutd/")))
		}
	}
	return top
}

// printEvidence is the short breakdown of -evidence per sub-phase.
func printEvidence(w io.Writer, r *concurrentResult) {
	if r == nil || r.EvidenceDir == "" {
		return
	}
	fmt.Fprintf(w, "\nevidence (raw files in %s)\n", r.EvidenceDir)
	if r.PgStatStatements != "" {
		fmt.Fprintf(w, "  pg_stat_statements unavailable: %s\n", r.PgStatStatements)
	}
	for _, p := range r.Phases {
		ev := p.Evidence
		if ev == nil {
			continue
		}
		fmt.Fprintf(w, "  %s: %d samples, %.1f active backends on average; Redis PING p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
			p.Name, ev.Samples, float64(ev.ActiveBackends)/float64(max(1, ev.Samples)), ev.RedisPingP50MS, ev.RedisPingP99MS, ev.RedisPingMaxMS)
		fmt.Fprintf(w, "    waits:   %s\n", shareText(ev.WaitEvents, ev.ActiveBackends, 6))
		fmt.Fprintf(w, "    blocked lock requests per sample: %s\n", perSampleText(ev.BlockedLocks, ev.Samples, 4))
		for _, b := range ev.Blockers[:min(3, len(ev.Blockers))] {
			fmt.Fprintf(w, "    %5d× %s\n", b.Count, b.What)
		}
		for _, g := range ev.Groups {
			fmt.Fprintf(w, "    group %s\n", g.text())
		}
		for _, s := range ev.Statements[:min(5, len(ev.Statements))] {
			fmt.Fprintf(w, "    stmt %9.0f ms total, %7d calls, %.3f ms mean: %s\n", s.TotalMS, s.Calls, s.MeanMS, s.Query)
		}
		for _, proc := range []string{"api", "worker"} {
			for i, l := range ev.ProfileTops[proc] {
				label := ""
				if i == 0 {
					label = proc + " cpu:"
				}
				fmt.Fprintf(w, "    %-11s %s\n", label, l)
			}
		}
		for _, e := range ev.Errors {
			fmt.Fprintf(w, "    note: %s\n", e)
		}
	}
}

// shareText lists the first n rows with their share of total ("none"
// without rows).
func shareText(rows []countRow, total, n int) string {
	if len(rows) == 0 {
		return "none"
	}
	parts := make([]string, 0, n)
	for _, r := range rows[:min(n, len(rows))] {
		parts = append(parts, fmt.Sprintf("%s %.0f%%", r.What, 100*float64(r.Count)/float64(max(1, total))))
	}
	return strings.Join(parts, ", ")
}

// perSampleText lists the first n rows with their average count per
// sample ("none" without rows).
func perSampleText(rows []countRow, samples, n int) string {
	if len(rows) == 0 {
		return "none"
	}
	parts := make([]string, 0, n)
	for _, r := range rows[:min(n, len(rows))] {
		parts = append(parts, fmt.Sprintf("%s %.1f", r.What, float64(r.Count)/float64(max(1, samples))))
	}
	return strings.Join(parts, ", ")
}
