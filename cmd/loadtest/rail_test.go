package main

import (
	"bytes"
	"context"
	"crypto/rsa"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/payoutd/payoutd/internal/credentials"
	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/snap"
	"github.com/payoutd/payoutd/vendors/xendit"
)

// A tiny drain on the xendit rail, on the test backends: the tool starts
// `payoutd vendorsim --provider xendit`, provisions the wallets on vendor
// xendit, creates a few payouts through a real api and drains them with a
// real worker (an api beside it receiving the simulator's webhooks), and
// reports the rail with every payout paid.
func TestDrainOnXenditRail(t *testing.T) {
	stdout, stderr := drainOnRail(t, "xendit", xendit.Name)
	// The secrets made up for the rail never reach the output.
	for _, out := range []string{stdout, stderr} {
		if strings.Contains(out, "XENDIT_SECRET_KEY=") || strings.Contains(out, "lt_cb_") {
			t.Errorf("a rail secret in the output:\n%s", out)
		}
	}
}

// The same on the SNAP rail: `payoutd vendorsim --provider snap --bank
// bca` with key pairs made for the run, wallets on snap:bca, transfer
// notifications signed by the simulated bank and verified by the api.
func TestDrainOnSnapRail(t *testing.T) {
	stdout, stderr := drainOnRail(t, "snap", snapRailVendor)
	if !strings.Contains(stdout, "secrets and RSA keys made up for the run") {
		t.Errorf("the summary does not say the keys were made up:\n%s", stdout)
	}
	for _, out := range []string{stdout, stderr} {
		if strings.Contains(out, "CLIENT_SECRET=") || strings.Contains(out, "PRIVATE KEY-----") {
			t.Errorf("a rail secret in the output:\n%s", out)
		}
	}
}

// drainOnRail runs a tiny drain on the rail and checks that it reports
// the rail and every payout paid through vendor; it returns the tool's
// stdout and stderr.
func drainOnRail(t *testing.T, rail, vendor string) (string, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds cmd/payoutd and runs four processes")
	}
	db, dbURL := testenv.DBWithURL(t)
	o, err := parseFlags([]string{"-scenario", "drain", "-rail", rail, "-clients", "2", "-concurrency", "1",
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
	var stdout, stderr testenv.SyncBuffer
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
	if sum.Rail != rail || sum.RailVendor != vendor || !strings.Contains(stdout.String(), "rail      "+rail+": wallets on "+vendor) {
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
	if !slices.Equal(vendorsUsed, []string{vendor}) {
		t.Errorf("disbursements went to %q, want only %s", vendorsUsed, vendor)
	}
	return stdout.String(), stderr.String()
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
		{"-scenario", "drain", "-rail", "swift"},
		{"-scenario", "create-many", "-rail", "xendit"}, // the rails are the suites'
	} {
		if _, err := parseFlags(args, &bytes.Buffer{}, noEnv); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
}

// Every simulated rail gives its simulator and the service the same
// token and, without RSA keys, the same callback secret, never equal, and
// wallets a vendor the tool can provision. With RSA keys, the service
// gets the platform's private key and the bank's public key, the
// simulator the other halves, and neither the other's private key.
func TestRailTable(t *testing.T) {
	secrets, err := newRailSecrets()
	if err != nil {
		t.Fatal(err)
	}
	if secrets.token == secrets.callbackSecret {
		t.Fatal("the two rail secrets are equal")
	}
	// Paths only: no key is made here.
	secrets.keys = railKeys{platformKey: "/k/platform.pem", platformPublic: "/k/platform.pub.pem", bankKey: "/k/bank.pem", bankPublic: "/k/bank.pub.pem"}
	for _, r := range rails {
		if _, ok := provisionRegistry(r)[r.vendor]; !ok {
			t.Errorf("%s: vendor %q cannot be provisioned", r.name, r.vendor)
		}
		if !r.simulated() {
			continue
		}
		simEnv := r.simEnv(secrets, options{sandboxCompleteAfter: time.Microsecond})
		svcEnv := r.serviceEnv(secrets, "http://127.0.0.1:1")
		sim, svc := strings.Join(simEnv, " "), strings.Join(svcEnv, " ")
		shared := []string{secrets.token, secrets.callbackSecret}
		if r.rsaKeys {
			shared = []string{secrets.token}
			checkRailKeyFiles(t, r.name, simEnv, svcEnv, secrets.keys)
		}
		for _, v := range shared {
			if !strings.Contains(sim, v) || !strings.Contains(svc, v) {
				t.Errorf("%s: a secret is missing from the simulator's or the service's environment", r.name)
			}
		}
		if !strings.Contains(sim, "SANDBOX_COMPLETE_AFTER=1µs") {
			t.Errorf("%s: simulator not told -sandbox-complete-after: %q", r.name, sim)
		}
		args := r.simArgs("127.0.0.1:2", "http://127.0.0.1:3")
		if args[0] != "vendorsim" || !slices.Contains(args, "127.0.0.1:2") {
			t.Errorf("%s: simulator arguments %q", r.name, args)
		}
		// simbank's callback path is the service's own (VENDORSIM_URL); a
		// SNAP bank's is the colon-free /vendor-callbacks/snap/<bank>.
		path := "/vendor-callbacks/" + strings.Replace(r.vendor, "snap:", "snap/", 1)
		if r.vendor != sandbox.SimBank && !slices.Contains(args, "http://127.0.0.1:3"+path) {
			t.Errorf("%s: simulator does not call back to the api's %s: %q", r.name, path, args)
		}
	}
}

// checkRailKeyFiles: each side gets the key files it signs or verifies
// with, and never the other side's private key.
func checkRailKeyFiles(t *testing.T, rail string, sim, svc []string, k railKeys) {
	t.Helper()
	for _, c := range []struct {
		env            []string
		side           string
		want, dontWant []string
	}{
		{sim, "simulator", []string{k.platformPublic, k.bankKey}, []string{k.platformKey, k.bankPublic}},
		{svc, "service", []string{k.platformKey, k.bankPublic}, []string{k.bankKey, k.platformPublic}},
	} {
		values := map[string]bool{}
		for _, kv := range c.env {
			_, v, _ := strings.Cut(kv, "=")
			values[v] = true
		}
		for _, f := range c.want {
			if !values[f] {
				t.Errorf("%s: the %s is not given %s: %q", rail, c.side, f, c.env)
			}
		}
		for _, f := range c.dontWant {
			if values[f] {
				t.Errorf("%s: the %s is given %s: %q", rail, c.side, f, c.env)
			}
		}
	}
}

// The keys of a SNAP run: a private directory, files only their owner
// reads, pairs the service's config accepts, gone after remove.
func TestRailKeys(t *testing.T) {
	k, err := newRailKeys()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.remove() })
	dir := k.dir
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("key directory %v, %v: want mode 0700", fi, err)
	}
	for _, f := range []string{k.platformKey, k.platformPublic, k.bankKey, k.bankPublic} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 || filepath.Dir(f) != dir {
			t.Errorf("key file %s: %v, %v: want mode 0600 in %s", f, fi, err, dir)
		}
	}
	for _, pair := range [][2]string{{k.platformKey, k.platformPublic}, {k.bankKey, k.bankPublic}} {
		priv, pub := readKeyPair(t, pair[0], pair[1])
		if !priv.PublicKey.Equal(pub) || priv.N.BitLen() < 2048 {
			t.Errorf("%s and %s are not one 2048-bit pair", pair[0], pair[1])
		}
	}
	if err := k.remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("key directory still there after remove: %v", err)
	}
}

func readKeyPair(t *testing.T, private, public string) (*rsa.PrivateKey, *rsa.PublicKey) {
	t.Helper()
	b, err := os.ReadFile(private)
	if err != nil {
		t.Fatal(err)
	}
	priv, err := snap.ParseRSAPrivateKey(b)
	if err != nil {
		t.Fatalf("%s: %v", private, err)
	}
	if b, err = os.ReadFile(public); err != nil {
		t.Fatal(err)
	}
	pub, err := snap.ParseRSAPublicKey(b)
	if err != nil {
		t.Fatalf("%s: %v", public, err)
	}
	return priv, pub
}
