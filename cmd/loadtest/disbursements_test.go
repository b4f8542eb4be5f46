package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/payoutd/payoutd/signature"
)

// pg15Output is pgbench 15's summary of a run of the ceiling script.
const pg15Output = `pgbench (15.20 (Debian 15.20-0+deb12u1))
transaction type: /tmp/create-shape.sql
scaling factor: 1
query mode: prepared
number of clients: 16
number of threads: 2
maximum number of tries: 1
duration: 10 s
number of transactions actually processed: 68743
number of failed transactions: 0 (0.000%)
latency average = 2.328 ms
initial connection time = 9.489 ms
tps = 6874.286013 (without initial connection time)
`

// pg12Output is the older form, with two tps lines.
const pg12Output = `transaction type: script.sql
scaling factor: 1
query mode: prepared
number of clients: 8
number of threads: 2
number of transactions actually processed: 4000/4000
latency average = 1.545 ms
tps = 5170.1 (including connections establishing)
tps = 5178.669866 (excluding connections establishing)
`

func TestParsePgbench(t *testing.T) {
	c, err := parsePgbench(pg15Output)
	if err != nil {
		t.Fatal(err)
	}
	want := ceiling{Clients: 16, DurationS: 10, TPS: 6874.3, LatencyAvgMS: 2.328, Transactions: 68743}
	if *c != want {
		t.Errorf("pgbench 15: got %+v, want %+v", *c, want)
	}
	c, err = parsePgbench(pg12Output)
	if err != nil {
		t.Fatal(err)
	}
	if c.TPS != 5178.7 || c.Transactions != 4000 || c.Clients != 8 {
		t.Errorf("older pgbench: got %+v, want the tps excluding connections, 4000 transactions, 8 clients", *c)
	}
	failed := strings.Replace(pg15Output, "failed transactions: 0 (0.000%)", "failed transactions: 12 (0.017%)", 1)
	if c, _ := parsePgbench(failed); c == nil || c.Failed != 12 {
		t.Errorf("failed transactions not read: %+v", c)
	}
	if _, err := parsePgbench("pgbench: error: connection to server failed\n"); err == nil {
		t.Error("output without tps accepted")
	}
}

func TestRatio(t *testing.T) {
	tests := []struct {
		figure, ceiling float64
		want            string
	}{
		{1420, 11515.2, "0.12"},
		{822, 2426.3, "0.34"},
		{300, 1000, "0.30"},
		{2500, 1000, "2.50"},
		{500, 0, "n/a"},
		{500, -1, "n/a"},
	}
	for _, tt := range tests {
		// As the summary prints it: ratioText of ratio, nil without a ceiling.
		var r *float64
		if v, ok := ratio(tt.figure, tt.ceiling); ok {
			r = &v
		}
		if got := ratioText(r); got != tt.want {
			t.Errorf("ratio(%v, %v) prints %q, want %q", tt.figure, tt.ceiling, got, tt.want)
		}
	}
	if r, ok := ratio(1, 3); !ok || r != 0.33 {
		t.Errorf("ratio(1, 3) = %v, %v", r, ok)
	}
}

func TestCreateRequestIsSignedOverItsBody(t *testing.T) {
	const secret = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	walletID := "0b9f8e7c-1d2a-4b3c-9d8e-7f6a5b4c3d2e"
	body, err := createBody(walletID, "20000")
	if err != nil {
		t.Fatal(err)
	}
	s := newCreateScenario(false, "20000")
	s.targets = []signedTarget{{body: body, apiKey: "v3_live_key", secret: secret}}
	now := time.Now()
	var keys []string
	for n := range uint64(3) {
		req, err := s.NewRequest(context.Background(), "http://api.test", n, now)
		if err != nil {
			t.Fatal(err)
		}
		if req.Method != http.MethodPost || req.URL.String() != "http://api.test/api/v3/disbursements" {
			t.Errorf("request %s %s", req.Method, req.URL)
		}
		sent, _ := io.ReadAll(req.Body)
		key := req.Header.Get("Idempotency-Key")
		if want := withReferenceID(body, key); string(sent) != string(want) || req.ContentLength != int64(len(want)) {
			t.Errorf("sent %q, want the serialised body with reference_id %q", sent, want)
		}
		var fields map[string]string
		if err := json.Unmarshal(sent, &fields); err != nil || fields["reference_id"] != key || fields["memo"] != "load test" {
			t.Errorf("sent %q: want a JSON object whose reference_id is the key (%v)", sent, err)
		}
		if v := signature.Verify(secret, req.Header.Get("x-signature"), sent, now); v.Diagnosis != signature.OK {
			t.Errorf("signature over the sent bytes: %s", v.Diagnosis)
		}
		if req.Header.Get("x-api-key") != "v3_live_key" || req.Header.Get("Content-Type") != "application/json" {
			t.Errorf("headers %v", req.Header)
		}
		if key == "" || len(key) > 64 {
			t.Errorf("Idempotency-Key %q: want 1 to 64 characters", key)
		}
		keys = append(keys, key)
	}
	if sorted := slices.Sorted(slices.Values(keys)); len(slices.Compact(sorted)) != len(keys) {
		t.Errorf("Idempotency-Keys repeat: %q", keys)
	}
	if other := newCreateScenario(false, "20000"); other.keyBase == s.keyBase {
		t.Error("two scenario runs share their Idempotency-Key prefix")
	}

	var got map[string]string
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"client_wallet_id": walletID, "amount": "20000", "bank_code": "bca",
		"account_no": "1234567890", "transfer_type": "BIFAST", "memo": "load test"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("body %s = %q, want %q", k, got[k], v)
		}
	}
}

func TestDrainRate(t *testing.T) {
	tests := []struct {
		n     int
		spanS float64
		want  float64
	}{
		{1001, 2, 500},
		{1, 0, 0},
		{0, 0, 0},
		{5, 0, 0},
	}
	for _, tt := range tests {
		if got := drainRate(tt.n, tt.spanS); got != tt.want {
			t.Errorf("drainRate(%d, %v) = %v, want %v", tt.n, tt.spanS, got, tt.want)
		}
	}
}

func TestSuiteJudge(t *testing.T) {
	r := &suiteResult{
		Ceilings:   &ceilings{Spread: &ceiling{TPS: 4000}, Hot: &ceiling{TPS: 1000}},
		CreateMany: &createFigures{CreatesPerS: 1200, Creates: 12000, P99MS: 40},
		CreateHot:  &createFigures{CreatesPerS: 350, Creates: 3500, P99MS: 30},
		Drain:      &drainResult{PayoutsPerS: 600},
	}
	r.judge()
	if *r.CreateMany.Ratio != 0.3 || *r.CreateHot.Ratio != 0.35 || *r.DrainRatio != 0.6 {
		t.Errorf("ratios %v %v %v", *r.CreateMany.Ratio, *r.CreateHot.Ratio, *r.DrainRatio)
	}
	if !r.GoalMet || r.AimMet == nil || !*r.AimMet {
		t.Errorf("goal %v aim %v, want both met", r.GoalMet, r.AimMet)
	}
	r.CreateHot.P99MS = 55
	r.judge()
	if r.GoalMet {
		t.Error("p99 of 55 ms met the goal")
	}
	r.Ceilings = &ceilings{Unavailable: "pgbench not found"}
	r.judge()
	if r.AimMet != nil || r.CreateMany.Ratio != nil || r.DrainRatio != nil {
		t.Error("ratios without a ceiling")
	}
	if !r.clean() {
		t.Error("no errors, yet not clean")
	}
	r.Drain.Failed = 1
	if r.clean() {
		t.Error("a failed payout counts as clean")
	}
}

func TestServerEnv(t *testing.T) {
	o := options{sandboxCompleteAfter: time.Microsecond, serverEnv: []string{"GOGC=200", "DISBURSEMENT_SUBMIT_WAIT=1s"}}
	got := serverEnv(o, mustScenario("create-many"))
	want := []string{"DISBURSEMENT_SUBMIT_WAIT=0s", "SANDBOX_COMPLETE_AFTER=1µs", "GOGC=200", "DISBURSEMENT_SUBMIT_WAIT=1s"}
	if !slices.Equal(got, want) {
		t.Errorf("create env = %q, want %q (-server-env last, so it wins)", got, want)
	}
	if got := serverEnv(o, mustScenario("balance")); !slices.Equal(got, o.serverEnv) {
		t.Errorf("balance env = %q, want only -server-env", got)
	}
}

func TestPgbenchConninfo(t *testing.T) {
	info, pw, err := pgbenchConninfo("postgres://load:s3cret@127.0.0.1:5432/payoutd_load?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	if info != "postgres://load@127.0.0.1:5432/payoutd_load?sslmode=disable" || pw != "s3cret" {
		t.Errorf("got %q, %q", info, pw)
	}
}

func TestFlushRedisRefuses(t *testing.T) {
	for _, u := range []string{"redis://10.1.2.3:6379/9", "redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379"} {
		if err := flushRedis(context.Background(), u); err == nil {
			t.Errorf("flushRedis(%q) accepted", u)
		}
	}
}

func TestCPUPerOp(t *testing.T) {
	api := 0.75
	u := &cpuUsage{Server: &api, Postgres: 0.7, Redis: 0.05}
	got := cpuPerOp(u, 1000, "api", "create")
	if want := "per create: api 0.750 ms, PostgreSQL 0.700 ms, Redis 0.050 ms"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if cpuPerOp(u, 0, "api", "create") != "" {
		t.Error("a rate of 0 gave a per-operation line")
	}
}
