package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/payoutd/payoutd/signature"
)

func TestBalanceRequestIsSigned(t *testing.T) {
	const secret = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	s := newBalanceScenario(options{}).(*balanceScenario)
	f := &Fixture{Clients: []LoadClient{{APIKey: "k1", SigningSecret: secret, WalletID: "w1"}, {APIKey: "k2", SigningSecret: secret, WalletID: "w2"}}}
	if err := s.Prepare(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	if s.wallets() != 2 {
		t.Errorf("wallets() = %d, want 2", s.wallets())
	}
	now := time.Now()
	for n, want := range []string{"w1", "w2", "w1"} {
		req, err := s.NewRequest(context.Background(), "http://api.test", uint64(n), now)
		if err != nil {
			t.Fatal(err)
		}
		if req.Method != http.MethodGet || req.URL.String() != "http://api.test/api/v3/wallets/"+want+"/balance" {
			t.Errorf("request %d: %s %s, want GET of %s's balance", n, req.Method, req.URL, want)
		}
		if v := signature.Verify(secret, req.Header.Get("x-signature"), nil, now); v.Diagnosis != signature.OK {
			t.Errorf("request %d: signature over the empty body: %s", n, v.Diagnosis)
		}
	}
	if err := s.Prepare(context.Background(), &Fixture{}); err == nil {
		t.Error("no clients accepted")
	}
}

// The select-only ceiling is pgbench -S's shape over the spread rows; a
// suite measures it only when it reads balances (all), first.
func TestCeilingRuns(t *testing.T) {
	o := options{pgbenchRows: 1234}
	so := selectOnlyRun(o)
	if so.rows != 1234 || !strings.Contains(so.script, "SELECT balance, locked FROM lt_wallets WHERE id = :id;") ||
		!strings.HasPrefix(so.script, `\set id random(1, :rows)`) || strings.Contains(so.script, "BEGIN") {
		t.Errorf("select-only run %+v: want one primary-key SELECT over the spread rows, no BEGIN/END", so)
	}
	var c ceilings
	*so.dst(&c) = &ceiling{TPS: 1}
	if c.selectOnlyCeiling().tps() != 1 || c.Spread != nil {
		t.Error("the select-only run does not fill SelectOnly")
	}
	names := func(runs []ceilingRun) string {
		var n []string
		for _, r := range runs {
			n = append(n, r.name)
		}
		return strings.Join(n, ",")
	}
	for scenario, want := range map[string]string{
		"all":           "select-only,spread,hot row",
		"disbursements": "spread,hot row",
		"concurrent":    "spread,hot row",
		"drain":         "",
	} {
		if got := names(mustScenario(scenario).suite(o).ceilings); got != want {
			t.Errorf("%s: ceilings %q, want %q", scenario, got, want)
		}
	}
	if info := mustScenario("balance"); !info.selectOnly || info.goalRate != goalRPS {
		t.Errorf("balance: %+v, want the select-only ceiling and the goal of %d req/s", info, goalRPS)
	}
}

func TestBalanceCeilingRatio(t *testing.T) {
	tests := []struct {
		name      string
		rps       float64
		c         *ceilings
		wantRatio float64 // -1: none
		wantMet   bool
	}{
		{"at the goal", 6000, &ceilings{SelectOnly: &ceiling{TPS: 20000}}, 0.3, true},
		{"below", 5000, &ceilings{SelectOnly: &ceiling{TPS: 20000}}, 0.25, false},
		{"pgbench missing", 5000, &ceilings{Unavailable: "pgbench not found"}, -1, false},
		{"no ceiling measured", 5000, nil, -1, false},
	}
	for _, tt := range tests {
		r := &result{RPS: tt.rps}
		r.judgeCeiling(tt.c)
		switch {
		case tt.wantRatio < 0 && (r.Ratio != nil || r.AimMet != nil):
			t.Errorf("%s: ratio %v, aim %v, want none", tt.name, r.Ratio, r.AimMet)
		case tt.wantRatio >= 0 && (r.Ratio == nil || *r.Ratio != tt.wantRatio || r.AimMet == nil || *r.AimMet != tt.wantMet):
			t.Errorf("%s: ratio %v, aim %v, want %v, %v", tt.name, r.Ratio, r.AimMet, tt.wantRatio, tt.wantMet)
		}
		if (tt.c != nil) != (r.GoalRatio == goalCeilingRatio && r.Ceilings == tt.c) {
			t.Errorf("%s: goal ratio %v, ceilings %v", tt.name, r.GoalRatio, r.Ceilings)
		}
	}
}

// balanceReport renders a balance run of 6,000 req/s with the ceilings c.
func balanceReport(t *testing.T, c *ceilings) (text string, fields map[string]any) {
	t.Helper()
	lat := make([]time.Duration, 100)
	for i := range lat {
		lat[i] = time.Duration(i+1) * 100 * time.Microsecond
	}
	m := &measurement{latencies: lat, elapsed: time.Second / 60} // 100 in 1/60 s: 6,000/s
	o := options{scenario: "balance", clients: 50, pgbenchClients: 16, pgbenchRows: 10000, pgbenchDuration: 10 * time.Second}
	d := runDescription{scenario: mustScenario("balance"), options: o, concurrency: 32, server: serverExternal, where: "http://api.test", ceilings: c}
	r := newResult(d, m, &cpuUsage{Cores: 2, Machine: 1.9, Postgres: 0.3, LoadGenerator: 0.3})
	var out bytes.Buffer
	printReport(&out, d, r, m)
	text = out.String()
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &fields); err != nil {
		t.Fatalf("last line is not JSON: %v\n%s", err, text)
	}
	return text, fields
}

func TestBalanceReport(t *testing.T) {
	text, fields := balanceReport(t, &ceilings{Version: "pgbench (PostgreSQL) 15.20",
		SelectOnly: &ceiling{Rows: 10000, Clients: 16, TPS: 20000, LatencyAvgMS: 0.8}})
	for _, want := range []string{
		"pgbench   pgbench (PostgreSQL) 15.20; -c 16 -j 2 -M prepared -T 10s before the load, over 10000 lt_wallets rows",
		"SELECT balance, locked FROM lt_wallets WHERE id = :id, no BEGIN/END (the shape of pgbench -S); 20000 tps, average latency 0.80 ms",
		"ratio     0.30 of pgbench select-only 20000 tps ",
		"goal ≥ 0.30 of select-only  PASS",
		"result    PASS, ratio PASS",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	if fields["ratio"] != 0.3 || fields["aim_met"] != true || fields["ceiling_tps"] != 20000.0 || fields["goal_ratio"] != 0.3 {
		t.Errorf("JSON ratio %v, aim_met %v, ceiling_tps %v, goal_ratio %v", fields["ratio"], fields["aim_met"], fields["ceiling_tps"], fields["goal_ratio"])
	}
	if pg, _ := fields["pgbench"].(map[string]any); pg == nil || pg["select_only"] == nil {
		t.Errorf("JSON pgbench %v: want the select-only ceiling", fields["pgbench"])
	}

	busy := &cpuUsage{Cores: 2, Machine: 2, Postgres: 0.9, LoadGenerator: 0.5, Other: 0.6}
	text, _ = balanceReport(t, &ceilings{SelectOnly: &ceiling{TPS: 20000, CPU: busy}})
	if !strings.Contains(text, "took 0.60 cores during the pgbench run") {
		t.Errorf("no warning of a busy machine during pgbench:\n%s", text)
	}

	text, _ = balanceReport(t, &ceilings{SelectOnly: &ceiling{TPS: 30000}})
	if !strings.Contains(text, "0.20 of pgbench select-only 30000 tps") || !strings.Contains(text, "BELOW GOAL") ||
		!strings.Contains(text, "result    PASS, ratio BELOW") {
		t.Errorf("a ratio of 0.20 is not reported below the goal:\n%s", text)
	}

	text, fields = balanceReport(t, &ceilings{Unavailable: "pgbench not found (exec: not found); install it"})
	if !strings.Contains(text, "ratio     n/a: pgbench select-only ceiling unavailable: pgbench not found") ||
		!strings.Contains(text, "result    PASS\n") || strings.Contains(text, "pgbench   ") {
		t.Errorf("report without pgbench:\n%s", text)
	}
	if _, ok := fields["ratio"]; ok || fields["aim_met"] != nil {
		t.Errorf("JSON without pgbench has a ratio: %v", fields)
	}
	if pg, _ := fields["pgbench"].(map[string]any); pg == nil || pg["unavailable"] == nil {
		t.Errorf("JSON pgbench %v: want why it is unavailable", fields["pgbench"])
	}

	text, fields = balanceReport(t, nil) // a scenario without a ceiling
	if strings.Contains(text, "\nratio ") || fields["pgbench"] != nil || fields["goal_ratio"] != nil {
		t.Errorf("a run without a ceiling mentions one:\n%s", text)
	}
}

func TestSuiteWithBalance(t *testing.T) {
	r := &suiteResult{
		Scenario: "all",
		Ceilings: &ceilings{SelectOnly: &ceiling{Rows: 10000, Clients: 16, TPS: 20000}, Spread: &ceiling{Rows: 10000, Clients: 16, TPS: 4000},
			Hot: &ceiling{Clients: 16, TPS: 1000}},
		Balance:    readFiguresOf(&createFigures{Wallets: 50, Concurrency: 32, CreatesPerS: 6000, Creates: 72000, P50MS: 4, P90MS: 8, P99MS: 15}),
		CreateMany: &createFigures{CreatesPerS: 1200, Creates: 12000, P99MS: 40},
		CreateHot:  &createFigures{CreatesPerS: 350, Creates: 3500, P99MS: 30},
		Drain:      &drainResult{PayoutsPerS: 600},
	}
	if r.Balance.Requests != 72000 || r.Balance.RPS != 6000 || r.Balance.Wallets != 50 {
		t.Errorf("read figures %+v", r.Balance)
	}
	r.judge()
	if r.Balance.Ratio == nil || *r.Balance.Ratio != 0.3 || !r.GoalMet || r.AimMet == nil || !*r.AimMet {
		t.Errorf("balance ratio %v, goal %v, aim %v: want 0.3 of select-only, both met", r.Balance.Ratio, r.GoalMet, r.AimMet)
	}
	r.Balance.RPS = 5500 // 0.275
	r.judge()
	if !r.GoalMet || *r.AimMet {
		t.Errorf("5,500 req/s over 20,000 tps: goal %v (want met), aim %v (want below)", r.GoalMet, *r.AimMet)
	}
	r.Balance.P99MS = 25
	r.judge()
	if r.GoalMet {
		t.Error("a balance p99 of 25 ms met the goal")
	}

	var out bytes.Buffer
	printSuiteTable(&out, r)
	rows := map[string]string{}
	for _, l := range strings.Split(out.String(), "\n") {
		for _, name := range []string{"balance (50 wallet(s), 32 workers)", "pgbench select-only (10000 rows, 16 clients)", "create-many"} {
			if strings.HasPrefix(l, name) {
				rows[name] = l
			}
		}
	}
	for name, wants := range map[string][]string{
		"balance (50 wallet(s), 32 workers)":           {"5500 req/s", "4.0 ms", "8.0 ms", "25.0 ms", "select-only 20000 tps", "0.28", "≥5000/s, p99<20ms; ratio ≥0.30", "BELOW GOAL, ratio BELOW"},
		"pgbench select-only (10000 rows, 16 clients)": {"20000 tps"},
		"create-many": {"spread 4000 tps", "0.30"},
	} {
		for _, want := range wants {
			if !strings.Contains(rows[name], want) {
				t.Errorf("row %q lacks %q\n%s", rows[name], want, out.String())
			}
		}
	}

	if !r.clean() {
		t.Error("no errors, yet not clean")
	}
	r.Balance.Errors = 1
	if r.clean() {
		t.Error("a failed balance read counts as clean")
	}
	line, _ := json.Marshal(r)
	for _, want := range []string{`"balance":{"concurrency":32`, `"select_only":{"rows":10000`, `"create_many":`, `"spread":`} {
		if !strings.Contains(string(line), want) {
			t.Errorf("JSON lacks %s: %s", want, line)
		}
	}
}

func TestBalanceFlags(t *testing.T) {
	o, err := parseFlags([]string{"-scenario", "balance", "-pgbench-duration", "5s"}, io.Discard, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if o.pgbenchDuration != 5*time.Second || o.pgbenchClients != 16 || o.pgbenchRows != 10000 || o.pgbench != "pgbench" {
		t.Errorf("balance's pgbench settings: %+v", o)
	}
}
