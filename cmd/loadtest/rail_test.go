package main

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/payoutd/payoutd/internal/credentials"
	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors/xendit"
)

// A tiny drain on the xendit rail, on the test backends: the tool starts
// `payoutd vendorsim --provider xendit`, provisions the wallets on vendor
// xendit, creates a few payouts through a real api and drains them with a
// real worker (an api beside it receiving the simulator's webhooks), and
// reports the rail with every payout paid.
func TestDrainOnXenditRail(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/payoutd and runs four processes")
	}
	db, dbURL := testenv.DBWithURL(t)
	o, err := parseFlags([]string{"-scenario", "drain", "-rail", "xendit", "-clients", "2", "-concurrency", "1",
		"-warmup", "0s", "-duration", "300ms", "-drain-duration", "2m",
		"-database-url", dbURL, "-redis-url", testenv.RedisDatabase(t)}, &bytes.Buffer{}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	key, _ := secretsKey("")
	sealer, err := credentials.NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	info := mustScenario("drain")
	// The test's database is its own and migrated: provisioned, not
	// recreated (recreating is only for a PostgreSQL of the tool's own).
	s := &runSetup{o: o, env: models.Production, key: key, sealer: sealer, db: db}
	// Output of the child processes is copied from goroutines of their own.
	var stdout, stderr syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if err := s.prepare(ctx, info, &stderr); err != nil {
		t.Fatalf("prepare: %v\n%s", err, stderr.String())
	}
	clean, err := executeSuite(ctx, s, info, &stdout, &stderr)
	if err != nil || !clean {
		t.Fatalf("run: clean %v, err %v\nstdout:\n%s\nstderr:\n%s", clean, err, stdout.String(), stderr.String())
	}

	t.Logf("summary:\n%s", stdout.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var sum suiteResult
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("last line is not the JSON summary: %v\n%s", err, stdout.String())
	}
	if sum.Rail != "xendit" || sum.RailVendor != xendit.Name || !strings.Contains(stdout.String(), "rail      xendit: wallets on xendit") {
		t.Errorf("rail not reported: %q %q\n%s", sum.Rail, sum.RailVendor, stdout.String())
	}
	d := sum.Drain
	if sum.CreateMany == nil || d == nil || sum.CreateMany.Creates == 0 {
		t.Fatalf("no creates or no drain: %s", lines[len(lines)-1])
	}
	if !d.Complete || d.Failed != 0 || d.Requested != 0 || d.Drained != sum.CreateMany.Creates || d.Queued != d.Drained {
		t.Errorf("drain %+v: want all %d creates paid", *d, sum.CreateMany.Creates)
	}
	if d.P99MS <= 0 || d.P99MS < d.P50MS || d.MaxMS < d.P99MS {
		t.Errorf("drain latencies p50 %v p99 %v max %v", d.P50MS, d.P99MS, d.MaxMS)
	}
	var vendorsUsed []string
	if err := db.Model(&models.Disbursement{}).Distinct("vendor").Pluck("vendor", &vendorsUsed).Error; err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(vendorsUsed, []string{xendit.Name}) {
		t.Errorf("disbursements went to %q, want only xendit", vendorsUsed)
	}
	// The secrets made up for the rail never reach the output.
	for _, out := range []string{stdout.String(), stderr.String()} {
		if strings.Contains(out, "XENDIT_SECRET_KEY=") || strings.Contains(out, "lt_cb_") {
			t.Errorf("a rail secret in the output:\n%s", out)
		}
	}
}

func TestRailFlags(t *testing.T) {
	noEnv := func(string) string { return "" }
	o, err := parseFlags([]string{"-scenario", "disbursements"}, &bytes.Buffer{}, noEnv)
	if err != nil || o.rail != "sandbox" {
		t.Fatalf("default rail %q, %v: want sandbox", o.rail, err)
	}
	for _, name := range railNames() {
		if _, err := parseFlags([]string{"-scenario", "drain", "-rail", name}, &bytes.Buffer{}, noEnv); err != nil {
			t.Errorf("-rail %s: %v", name, err)
		}
	}
	for _, args := range [][]string{
		{"-scenario", "drain", "-rail", "snap"},
		{"-scenario", "create-many", "-rail", "xendit"}, // the rails are the suites'
	} {
		if _, err := parseFlags(args, &bytes.Buffer{}, noEnv); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
}

// Every simulated rail gives its simulator and the service the same two
// secrets, never equal, and wallets a vendor the tool can provision.
func TestRailTable(t *testing.T) {
	secrets, err := newRailSecrets()
	if err != nil {
		t.Fatal(err)
	}
	if secrets.token == secrets.callbackSecret {
		t.Fatal("the two rail secrets are equal")
	}
	for _, r := range rails {
		if _, ok := provisionRegistry(r)[r.vendor]; !ok {
			t.Errorf("%s: vendor %q cannot be provisioned", r.name, r.vendor)
		}
		if !r.simulated() {
			continue
		}
		sim := strings.Join(r.simEnv(secrets, options{sandboxCompleteAfter: time.Microsecond}), " ")
		svc := strings.Join(r.serviceEnv(secrets, "http://127.0.0.1:1"), " ")
		for _, v := range []string{secrets.token, secrets.callbackSecret} {
			if !strings.Contains(sim, v) || !strings.Contains(svc, v) {
				t.Errorf("%s: a secret is missing from the simulator's or the service's environment", r.name)
			}
		}
		if !strings.Contains(sim, "SANDBOX_COMPLETE_AFTER=1µs") {
			t.Errorf("%s: simulator not told -sandbox-complete-after: %q", r.name, sim)
		}
		if args := r.simArgs("127.0.0.1:2", "http://127.0.0.1:3"); args[0] != "vendorsim" || !slices.Contains(args, "127.0.0.1:2") {
			t.Errorf("%s: simulator arguments %q", r.name, args)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
