package main

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/payoutd/payoutd/internal/credentials"
	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
)

// A tiny concurrent phase on the test backends: a real api and a real
// worker run together while a few creates come on one wallet, over three
// and with the default submit wait; the phase follows every payout to its
// end and the ledger reconciles clean afterwards. Two of the three
// merchants (the hot one among them) have a webhook URL to the tool's
// HTTPS sink: the worker, in production, delivers every event of theirs
// there, trusting the sink through SSL_CERT_FILE. No timing is asserted.
func TestConcurrentPhase(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/payoutd and runs its api and worker")
	}
	db, dbURL := testenv.DBWithURL(t)
	o, err := parseFlags([]string{"-scenario", "concurrent", "-clients", "2", "-concurrency", "2",
		"-duration", "2s", "-concurrent-max", "12", "-concurrent-wallets", "3", "-concurrent-drain-timeout", "2m",
		"-concurrent-webhooks", "0.6",
		"-pgbench", "/nonexistent/pgbench",
		"-database-url", dbURL, "-redis-url", testenv.RedisDatabase(t)}, &bytes.Buffer{}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	key, _ := secretsKey("")
	sealer, err := credentials.NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	info := mustScenario("concurrent")
	s := &runSetup{o: o, env: models.Production, key: key, sealer: sealer, db: db}
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
	c := sum.Concurrent
	if c == nil || len(c.Phases) != 3 || sum.CreateMany != nil || sum.Drain != nil {
		t.Fatalf("want the three concurrent sub-phases and no isolated phase: %s", lines[len(lines)-1])
	}
	if !c.ReconcileOK || c.NegativeWallets != 0 {
		t.Errorf("reconcile ok %v, problems %q, overdrawn wallets %d", c.ReconcileOK, c.ReconcileProblems, c.NegativeWallets)
	}
	wallets := map[string]int{"hot": 1, "spread": 3, "wait": 3}
	for _, p := range c.Phases {
		e := p.EndToEnd
		if p.Create.Creates == 0 || p.Create.Creates > 12 || p.Create.Errors != 0 {
			t.Errorf("%s: %d creates, %d errors: want 1 to 12 (-concurrent-max), none failed", p.Name, p.Create.Creates, p.Create.Errors)
		}
		if e == nil || !e.Complete || e.Open != 0 || e.Success != p.Create.Creates || e.Payouts != p.Create.Creates {
			t.Errorf("%s: end to end %+v: want every one of %d payouts SUCCESS", p.Name, e, p.Create.Creates)
		}
		if p.Create.Wallets != wallets[p.Name] {
			t.Errorf("%s: %d wallets, want %d", p.Name, p.Create.Wallets, wallets[p.Name])
		}
		h := p.Webhooks
		if h == nil || h.Expected == 0 || h.Delivered != h.Expected || h.Malformed != 0 || h.Deliveries < h.Delivered {
			t.Errorf("%s: webhooks %+v: want every expected event delivered to the sink", p.Name, h)
		} else if merchants := map[string]int{"hot": 1, "spread": 2, "wait": 2}[p.Name]; h.Merchants != merchants ||
			(p.Name == "hot" && h.Expected != e.Success) || h.Expected > e.Success {
			t.Errorf("%s: webhooks of %d merchants, %d expected of %d payouts: want %d merchants (the hot one all of its payouts)",
				p.Name, h.Merchants, h.Expected, e.Success, merchants)
		}
	}
	if w := c.Phases[2].SubmitWait; w != "default" {
		t.Errorf("wait sub-phase ran with DISBURSEMENT_SUBMIT_WAIT %q, want the default", w)
	}
	if !strings.Contains(stdout.String(), "reconcile after the phase: clean") {
		t.Errorf("summary does not report reconcile:\n%s", stdout.String())
	}
}

func TestEvidenceFlags(t *testing.T) {
	noEnv := func(string) string { return "" }
	if _, err := parseFlags([]string{"-scenario", "concurrent", "-evidence"}, &bytes.Buffer{}, noEnv); err != nil {
		t.Errorf("-evidence with concurrent: %v", err)
	}
	for _, args := range [][]string{
		{"-scenario", "create-many", "-evidence"},
		{"-scenario", "drain", "-evidence"},
		{"-scenario", "concurrent", "-evidence", "-duration", "1m"},
		{"-scenario", "concurrent", "-concurrent-max", "0"},
	} {
		if _, err := parseFlags(args, &bytes.Buffer{}, noEnv); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
}

func TestConcurrentPhasesFlag(t *testing.T) {
	for _, tc := range []struct {
		arg  string
		want []string // nil: refused
	}{
		{"hot,spread,wait", []string{"hot", "spread", "wait"}},
		{"wait", []string{"wait"}},
		{"wait, hot", []string{"hot", "wait"}},
		{"", nil},
		{"hot,drain", nil},
	} {
		subs, err := selectConcurrentSubs(tc.arg)
		var got []string
		for _, s := range subs {
			got = append(got, s.name)
		}
		if (err == nil) != (tc.want != nil) || !slices.Equal(got, tc.want) {
			t.Errorf("selectConcurrentSubs(%q) = %q, %v; want %q", tc.arg, got, err, tc.want)
		}
	}
	if _, err := parseFlags([]string{"-scenario", "concurrent", "-concurrent-phases", "spread,nope"}, &bytes.Buffer{}, func(string) string { return "" }); err == nil {
		t.Error("an unknown sub-phase was accepted")
	}
}
