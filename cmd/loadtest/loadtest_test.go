package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	tests := []struct {
		name    string
		samples []time.Duration
		p       float64
		want    time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one", ms(7), 99, 7 * time.Millisecond},
		{"p50 of 1..100", ms(hundred...), 50, 50 * time.Millisecond},
		{"p90 of 1..100", ms(hundred...), 90, 90 * time.Millisecond},
		{"p99 of 1..100", ms(hundred...), 99, 99 * time.Millisecond},
		{"max of 1..100", ms(hundred...), 100, 100 * time.Millisecond},
		{"p50 of four", ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"p99 of four", ms(1, 2, 3, 4), 99, 4 * time.Millisecond},
		{"p0 is the minimum", ms(1, 2, 3), 0, 1 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := percentile(tt.samples, tt.p); got != tt.want {
			t.Errorf("%s: percentile(p%v) = %v, want %v", tt.name, tt.p, got, tt.want)
		}
	}
}

func TestPrefixWriter(t *testing.T) {
	var out bytes.Buffer
	w := &prefixWriter{w: &out, prefix: []byte("server: ")}
	io.WriteString(w, "one\ntw")
	io.WriteString(w, "o\nthree")
	if got, want := out.String(), "server: one\nserver: two\n"; got != want {
		t.Errorf("got %q, want %q (an unfinished line waits)", got, want)
	}
}

func TestAccessLogsOn(t *testing.T) {
	tests := []struct {
		env  []string
		want bool
	}{
		{nil, false},
		{[]string{"GOGC=200"}, false},
		{[]string{"LOG_LEVEL=info"}, true},
		{[]string{"LOG_LEVEL=debug"}, true},
		{[]string{"LOG_LEVEL=info", "LOG_LEVEL=error"}, false},
	}
	for _, tt := range tests {
		if got := accessLogsOn(tt.env); got != tt.want {
			t.Errorf("accessLogsOn(%q) = %v, want %v", tt.env, got, tt.want)
		}
	}
}

func TestFlags(t *testing.T) {
	noEnv := func(string) string { return "" }
	o, err := parseFlags(nil, io.Discard, noEnv)
	if err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if o.scenario != "balance" || o.concurrency != 0 || o.concurrencyFor(mustScenario("balance")) != 32 || o.clients != 50 || o.duration != 10*time.Second ||
		o.warmup != 2*time.Second || o.databaseURL != defaultDatabaseURL || o.redisURL != defaultRedisURL || o.target != "" {
		t.Errorf("defaults = %+v", o)
	}
	env := func(k string) string {
		return map[string]string{"LOAD_DATABASE_URL": "postgres://x@127.0.0.1/other_load", "LOAD_REDIS_URL": "redis://127.0.0.1:1/2"}[k]
	}
	if o, err := parseFlags([]string{"-scenario", "concurrent", "-rail", "vendorsim", "-rail-answer-delay", "100ms"}, io.Discard, noEnv); err != nil || o.railAnswerDelay != 100*time.Millisecond {
		t.Errorf("-rail vendorsim -rail-answer-delay 100ms: %v, %v", o.railAnswerDelay, err)
	}
	if o, _ := parseFlags(nil, io.Discard, env); o.databaseURL != "postgres://x@127.0.0.1/other_load" || o.redisURL != "redis://127.0.0.1:1/2" {
		t.Errorf("environment defaults not used: %+v", o)
	}
	for _, args := range [][]string{
		{"-scenario", "nope"},
		{"-concurrency", "-1"},
		{"-scenario", "disbursements", "-target", "http://127.0.0.1:8080", "-secrets-key", strings.Repeat("ab", 32)},
		{"-scenario", "drain", "-inprocess-profile", "cpu.pprof"},
		{"-scenario", "disbursements", "-server-profile", "api.pprof"},
		{"-server-profile", "api.pprof", "-inprocess-profile", "cpu.pprof"},
		{"-server-profile", "api.pprof", "-duration", "51s"},
		{"-server-profile", "api.pprof", "-target", "http://127.0.0.1:8080", "-secrets-key", strings.Repeat("ab", 32)},
		{"-amount", "-5"},
		{"-sandbox-complete-after", "0s"},
		{"-scenario", "concurrent", "-rail-answer-delay", "100ms"},                    // the in-process sandbox answers at once
		{"-scenario", "concurrent", "-rail", "vendorsim", "-rail-answer-delay", "2m"}, // VENDORSIM_ANSWER_DELAY is at most 1m
		{"-scenario", "concurrent", "-rail", "vendorsim", "-rail-answer-delay", "-1s"},
		{"-pgbench-rows", "0"},
		{"-duration", "0s"},
		{"-target", "127.0.0.1:8080", "-secrets-key", strings.Repeat("ab", 32)},
		{"-target", "http://127.0.0.1:8080"}, // no secrets key
		{"-server-env", "NOEQUALS"},
		{"extra"},
	} {
		if _, err := parseFlags(args, io.Discard, noEnv); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
}

func TestConcurrencyFor(t *testing.T) {
	for name, want := range map[string]int{"balance": 32, "create-many": 16, "create-hot": 8} {
		if got := (options{}).concurrencyFor(mustScenario(name)); got != want {
			t.Errorf("%s: default concurrency %d, want %d", name, got, want)
		}
		if got := (options{concurrency: 3}).concurrencyFor(mustScenario(name)); got != 3 {
			t.Errorf("%s: -concurrency 3 gave %d", name, got)
		}
	}
}

func TestRecreateDatabaseRefuses(t *testing.T) {
	for _, u := range []string{
		"postgres://postgres@127.0.0.1:5432/postgres",
		"postgres://postgres@127.0.0.1:5432/",
		"postgres://postgres@db.example.com:5432/payoutd_load",
		"sqlite:///tmp/x.db",
	} {
		if err := recreateDatabase(context.Background(), u); err == nil {
			t.Errorf("recreateDatabase(%q) accepted", u)
		}
	}
}

// stubScenario answers want with every request to a fake handler.
type stubScenario struct{}

func (stubScenario) Prepare(context.Context, *Fixture) error { return nil }
func (stubScenario) WantStatus() int                         { return http.StatusOK }
func (stubScenario) NewRequest(ctx context.Context, base string, n uint64, _ time.Time) (*http.Request, error) {
	return http.NewRequestWithContext(ctx, http.MethodGet, base+"/x", nil)
}

func TestRunLoadCountsOnlyTheMeasuredWindow(t *testing.T) {
	var calls atomic.Int64
	send := func(req *http.Request, want int) (bool, string) {
		n := calls.Add(1)
		time.Sleep(time.Millisecond)
		if n%10 == 0 {
			return false, "503 every tenth"
		}
		return true, ""
	}
	m, err := runLoad(context.Background(), loadPlan{
		scenario: stubScenario{}, base: "http://stub", send: send,
		concurrency: 4, warmup: 50 * time.Millisecond, duration: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	total := len(m.latencies) + m.errors + m.warmupOK + m.warmupErrors
	if int64(total) != calls.Load() {
		t.Errorf("counted %d requests, sent %d", total, calls.Load())
	}
	if len(m.latencies) == 0 || m.warmupOK == 0 || m.errors == 0 {
		t.Errorf("measurement = %d ok, %d errors, %d warm-up ok", len(m.latencies), m.errors, m.warmupOK)
	}
	if m.elapsed < 200*time.Millisecond {
		t.Errorf("elapsed %v, shorter than the duration", m.elapsed)
	}
	for i := 1; i < len(m.latencies); i++ {
		if m.latencies[i] < m.latencies[i-1] {
			t.Fatal("latencies not sorted")
		}
	}
	if len(m.firstFailures) == 0 || len(m.firstFailures) > maxFailures {
		t.Errorf("first failures: %q", m.firstFailures)
	}
}
