package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
)

// ceilingScript is one transaction shaped like a create's: a conditional
// update of a wallet row that cannot oversell, and one inserted row. The
// row is drawn from 1..:rows (pgbench -D rows=N): many rows for the spread
// ceiling, one for the hot row.
const ceilingScript = `\set id random(1, :rows)
BEGIN;
UPDATE lt_wallets SET locked = locked + 1 WHERE id = :id AND balance - locked >= 1;
INSERT INTO lt_ledger (wallet_id, amount, created_at) VALUES (:id, 1, now());
END;
`

// selectOnlyScript is the shape of pgbench -S (select-only) on the tool's
// own table: one read of a wallet-like row by its primary key, without
// BEGIN and END, as a balance read is one query. The row is drawn from
// 1..:rows, the spread ceiling's rows.
const selectOnlyScript = `\set id random(1, :rows)
SELECT balance, locked FROM lt_wallets WHERE id = :id;
`

// selectOnlyText describes selectOnlyScript in the reports.
const selectOnlyText = "SELECT balance, locked FROM lt_wallets WHERE id = :id, no BEGIN/END (the shape of pgbench -S)"

// pgbenchMissing says what to do when pgbench cannot be run.
const pgbenchMissing = "install it to get the ceilings: apt-get install postgresql-client " +
	"(Debian/Ubuntu; postgresql-contrib on some other distributions), or point -pgbench at it"

// ceiling is one pgbench measurement: the most transactions per second
// PostgreSQL on this machine gives one shape of work (a create's, or a
// read's for select-only).
type ceiling struct {
	Rows         int       `json:"rows"`
	Clients      int       `json:"clients"`
	DurationS    float64   `json:"duration_s"`
	TPS          float64   `json:"tps"`
	LatencyAvgMS float64   `json:"latency_avg_ms"`
	Transactions int64     `json:"transactions"`
	Failed       int64     `json:"failed"`
	CPU          *cpuUsage `json:"cpu_cores,omitempty"`
}

// ceilings are the pgbench runs of a run: spread and hot row for the
// creates and the drain, select-only for the balance reads; each is nil
// when the run did not measure it.
type ceilings struct {
	Version    string   `json:"version,omitempty"`
	Spread     *ceiling `json:"spread,omitempty"`
	Hot        *ceiling `json:"hot,omitempty"`
	SelectOnly *ceiling `json:"select_only,omitempty"`
	// Unavailable says why there are no ceilings (pgbench missing or
	// failing); the run goes on without ratios.
	Unavailable string `json:"unavailable,omitempty"`
}

// spreadCeiling, hotCeiling and selectOnlyCeiling are nil when unknown.
func (c *ceilings) spreadCeiling() *ceiling {
	if c == nil {
		return nil
	}
	return c.Spread
}

func (c *ceilings) hotCeiling() *ceiling {
	if c == nil {
		return nil
	}
	return c.Hot
}

func (c *ceilings) selectOnlyCeiling() *ceiling {
	if c == nil {
		return nil
	}
	return c.SelectOnly
}

// tps is the ceiling's transactions per second, 0 when unknown.
func (c *ceiling) tps() float64 {
	if c == nil {
		return 0
	}
	return c.TPS
}

// ceilingRun is one pgbench run of measureCeilings: its script, the rows
// it draws from and the field of ceilings it fills.
type ceilingRun struct {
	name   string // in progress lines and errors
	file   string // the script's file name
	script string
	rows   int
	dst    func(*ceilings) **ceiling
}

// selectOnlyRun is the read ceiling, over the spread ceiling's rows.
func selectOnlyRun(o options) ceilingRun {
	return ceilingRun{name: "select-only", file: "select-only.sql", script: selectOnlyScript, rows: o.pgbenchRows,
		dst: func(c *ceilings) **ceiling { return &c.SelectOnly }}
}

// createShapeRuns are the create path's ceilings: spread over
// o.pgbenchRows rows, then on one hot row.
func createShapeRuns(o options) []ceilingRun {
	return []ceilingRun{
		{name: "spread", file: "create-shape.sql", script: ceilingScript, rows: o.pgbenchRows,
			dst: func(c *ceilings) **ceiling { return &c.Spread }},
		{name: "hot row", file: "create-shape.sql", script: ceilingScript, rows: 1,
			dst: func(c *ceilings) **ceiling { return &c.Hot }},
	}
}

// measureCeilings makes the ceiling tables in the load database and runs
// pgbench on them, each of runs in turn. A missing or failing pgbench is
// reported in Unavailable, not as an error.
func measureCeilings(ctx context.Context, o options, db *gorm.DB, stderr io.Writer, runs ...ceilingRun) (*ceilings, error) {
	c := &ceilings{}
	path, err := exec.LookPath(o.pgbench)
	if err != nil {
		c.Unavailable = fmt.Sprintf("pgbench not found (%v); %s", err, pgbenchMissing)
		progress(stderr, "ceiling unavailable: %s", c.Unavailable)
		return c, nil
	}
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		c.Unavailable = fmt.Sprintf("%s --version: %v; %s", path, err, pgbenchMissing)
		progress(stderr, "ceiling unavailable: %s", c.Unavailable)
		return c, nil
	}
	c.Version = strings.TrimSpace(string(out))
	if err := makeCeilingTables(ctx, db, o.pgbenchRows); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "payoutd-pgbench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for _, run := range runs {
		script := filepath.Join(dir, run.file)
		if err := os.WriteFile(script, []byte(run.script), 0o600); err != nil {
			return nil, err
		}
		progress(stderr, "pgbench ceiling, %s: %d clients on %d row(s) for %s", run.name, o.pgbenchClients, run.rows, o.pgbenchDuration)
		checkpoint(ctx, db, stderr)
		got, err := runPgbench(ctx, path, script, o, run.rows)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			c.Unavailable = fmt.Sprintf("pgbench %s: %v", run.name, err)
			progress(stderr, "ceiling unavailable: %s", c.Unavailable)
			return c, nil
		}
		*run.dst(c) = got
	}
	return c, nil
}

// makeCeilingTables creates lt_wallets with rows funded rows and an empty
// lt_ledger, tables of the tool's own beside the service's.
func makeCeilingTables(ctx context.Context, db *gorm.DB, rows int) error {
	for _, stmt := range []string{
		`DROP TABLE IF EXISTS lt_ledger, lt_wallets`,
		`CREATE TABLE lt_wallets (id int PRIMARY KEY, balance bigint NOT NULL, locked bigint NOT NULL DEFAULT 0)`,
		`CREATE TABLE lt_ledger (id bigserial PRIMARY KEY, wallet_id int NOT NULL, amount bigint NOT NULL, created_at timestamptz NOT NULL)`,
		`INSERT INTO lt_wallets (id, balance) SELECT g, 1000000000000000 FROM generate_series(1, ` + strconv.Itoa(rows) + `) g`,
		`VACUUM ANALYZE lt_wallets`,
	} {
		if err := db.WithContext(ctx).Exec(stmt).Error; err != nil {
			return fmt.Errorf("ceiling tables: %s: %w", strings.Fields(stmt)[0], err)
		}
	}
	return nil
}

// runPgbench runs the script for o.pgbenchDuration and parses the result,
// with the CPU the run took.
func runPgbench(ctx context.Context, path, script string, o options, rows int) (*ceiling, error) {
	conninfo, password, err := pgbenchConninfo(o.databaseURL)
	if err != nil {
		return nil, err
	}
	secs := int((o.pgbenchDuration + time.Second - 1) / time.Second)
	cmd := exec.CommandContext(ctx, path, "-n", "-f", script,
		"-c", strconv.Itoa(o.pgbenchClients), "-j", strconv.Itoa(min(2, o.pgbenchClients)),
		"-T", strconv.Itoa(secs), "-M", "prepared", "-D", "rows="+strconv.Itoa(rows), conninfo)
	cmd.Env = os.Environ()
	if password != "" {
		cmd.Env = append(cmd.Env, "PGPASSWORD="+password)
	}
	cmd.SysProcAttr = childProcAttr()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	cpu := samplePgbenchCPU(ctx, secs)
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("%w: %s", err, lastLines(out.String(), 3))
	}
	c, err := parsePgbench(out.String())
	if err != nil {
		return nil, err
	}
	c.Rows = rows
	c.CPU = cpu
	return c, nil
}

// samplePgbenchCPU measures the CPU of a pgbench run of secs seconds
// between half a second after its start and half a second before its end,
// while pgbench and its PostgreSQL backends are alive: a process that has
// exited no longer shows its CPU time.
func samplePgbenchCPU(ctx context.Context, secs int) *cpuUsage {
	if secs < 2 {
		return nil
	}
	window := &cpuWindow{}
	for _, step := range []struct {
		after time.Duration
		do    func()
	}{{500 * time.Millisecond, window.opened}, {time.Duration(secs)*time.Second - time.Second, window.closed}} {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(step.after):
			step.do()
		}
	}
	return window.usage()
}

// pgbenchConninfo is the database URL for pgbench's command line without
// its password, which goes in PGPASSWORD instead of the process list.
func pgbenchConninfo(databaseURL string) (conninfo, password string, err error) {
	u, err := url.Parse(databaseURL)
	if err != nil {
		return "", "", fmt.Errorf("-database-url: %w", err)
	}
	if u.User != nil {
		password, _ = u.User.Password()
		u.User = url.User(u.User.Username())
	}
	return u.String(), password, nil
}

// parsePgbench reads pgbench's summary. tps is the figure without the
// initial connection time (PostgreSQL 14 and later), else the one
// excluding connection establishment (older), else any tps line.
func parsePgbench(out string) (*ceiling, error) {
	c := &ceiling{}
	var tpsWithout, tpsExcluding, tpsAny float64
	var found [3]bool
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		key, value, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(line, "tps") || strings.HasPrefix(line, "latency") {
			key, value, ok = strings.Cut(line, "=")
		}
		if !ok {
			continue
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		first := firstField(value)
		switch key {
		case "number of clients":
			c.Clients, _ = strconv.Atoi(first)
		case "duration":
			if secs, err := strconv.ParseFloat(first, 64); err == nil {
				c.DurationS = secs
			}
		case "number of transactions actually processed":
			done, _, _ := strings.Cut(first, "/") // "N/M" with -t
			c.Transactions, _ = strconv.ParseInt(done, 10, 64)
		case "number of failed transactions":
			c.Failed, _ = strconv.ParseInt(first, 10, 64)
		case "latency average":
			c.LatencyAvgMS, _ = strconv.ParseFloat(first, 64)
		case "tps":
			v, err := strconv.ParseFloat(first, 64)
			if err != nil {
				continue
			}
			switch {
			case strings.Contains(value, "without initial connection time"):
				tpsWithout, found[0] = v, true
			case strings.Contains(value, "excluding connections establishing"):
				tpsExcluding, found[1] = v, true
			case !found[2]:
				tpsAny, found[2] = v, true
			}
		}
	}
	switch {
	case found[0]:
		c.TPS = tpsWithout
	case found[1]:
		c.TPS = tpsExcluding
	case found[2]:
		c.TPS = tpsAny
	default:
		return nil, errors.New("no tps line in pgbench's output: " + lastLines(out, 3))
	}
	c.TPS = round(c.TPS, 1)
	return c, nil
}

func firstField(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

// lastLines is the last n non-empty lines of s, joined with " | ".
func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
