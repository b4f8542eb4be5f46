package model

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The model is checked with Spin (Debian's spin package): spin -a writes
// the verifier (pan.c) for the model as built with some -D flags, gcc
// compiles it, and one run of pan checks one property (-N). CI installs
// spin and gcc (scripts/backends.sh), so there a missing tool fails.

// A property of submit.pml; liveness ones need acceptance cycles (-a)
// under weak fairness (-f).
type property struct {
	name     string
	liveness bool
	means    string
}

var (
	paidOnce     = property{"paid_once", false, "the vendor pays the disbursement at most once"}
	neverLost    = property{"never_lost", false, "the ledger follows the status, and at rest the store agrees with the vendor"}
	terminates   = property{"terminates", true, "with weak fairness, the payout reaches a final status"}
	returnOnce   = property{"return_once", false, "a return is credited once, and only for a return the vendor made"}
	finalStays   = property{"final_stays", false, "nothing is written on a final row but a return"}
	withinBounds = property{"within_bounds", false, "the model's bounds cut nothing"}
	// safety is every safety property above at once: one search.
	safety = property{"safety", false, "every safety property"}
	// neverQuiet fails when the model can come to rest: the check that
	// never_lost's "at rest" half is not vacuous.
	neverQuiet = property{"never_quiet", false, "the model never comes to rest"}
)

var safeties = []property{paidOnce, neverLost, returnOnce, finalStays, withinBounds}

// twoFaults is the define that lets a run hold two faults at once (one
// unless told).
const twoFaults = "MAXFAULT=2"

// Every property holds on the model of the protocol as the code runs it,
// and the model can come to rest.
func TestModelKeepsEveryProperty(t *testing.T) {
	t.Parallel()
	pan := build(t)
	pan.holds()
	if r := pan.check(terminates); r.violated {
		t.Errorf("%s (%s) is violated:\n%s", terminates.name, terminates.means, r.out)
	}
	if r := pan.check(neverQuiet); !r.violated {
		t.Errorf("the model never comes to rest, so never_lost's check at rest proves nothing:\n%s", r.out)
	}
	// Liveness needs the fairness: without it a process may be left
	// waiting for ever (the vendor never settles, the clock never runs).
	if r := pan.run("-a", "-N", terminates.name); !r.violated {
		t.Errorf("terminates holds even without fairness; the liveness check would prove nothing:\n%s", r.out)
	}
}

// Each guard of the protocol, removed (the model's -D flags), breaks the
// properties it is there for: the checker finds a run that violates each
// of them. Most guards are alone in what they keep, and one fault shows
// it. Three rules keep one attempt from stepping on another, and their
// runs need two faults: a submit ends with its lease (NO_DEADLINE,
// NO_RESUBMIT_DEADLINE remove it), a claim and an expiry check the latest
// attempt's time (CLAIM_COUNT_ONLY, EXPIRY_COUNT_ONLY), a rejection is
// written only for the latest attempt (UNGUARDED_REJECTION). The deadline
// keeps on its own what the other two keep, so each of those is removed
// with it, from a model that keeps every property then (TestTwoFaults).
func TestEachGuardIsNeeded(t *testing.T) {
	t.Parallel()
	for _, g := range []struct {
		defines []string
		guard   string
		breaks  []property
	}{
		{[]string{"NO_ASK"}, "a lost submit is resent only after the vendor was asked about it (resolveAttempted)",
			[]property{paidOnce, neverLost}},
		{[]string{"NO_LEASE"}, "a reference the vendor does not know is resent only once the lease has passed",
			[]property{paidOnce, neverLost}},
		{[]string{"LEASE_AFTER_QUERY"}, "the lease is read before the vendor is asked, not after it answered",
			[]property{paidOnce, neverLost}},
		{[]string{"NO_CLAIM_GUARD"}, "the claim counts an attempt only if the attempts are still those read",
			[]property{paidOnce, neverLost}},
		{[]string{"NO_ATTEMPT_GUARD"}, "the expiry moves a payout only if its attempts are still those read",
			[]property{neverLost}},
		{[]string{"UNGUARDED_MOVE"}, "a move is written only if the row is still in the status read (transitionAll)",
			[]property{neverLost, returnOnce, finalStays}},
		{[]string{"UNGUARDED_RETURN"}, "the return is written only if the row is still SUCCESS",
			[]property{returnOnce}},
		{[]string{"TRUST_CALLBACK"}, "a callback is only a hint: the status query is applied, not the callback",
			[]property{neverLost}},
		{[]string{"NO_SWEEP"}, "the sweep resolves an attempted payout whose answer was lost",
			[]property{terminates}},
		{[]string{"CLAIM_COUNT_ONLY", "NO_DEADLINE", twoFaults},
			"a claim checks the latest attempt's claim time as read, not only the count",
			[]property{paidOnce}},
		{[]string{"EXPIRY_COUNT_ONLY", "NO_DEADLINE", twoFaults},
			"an expiry checks the latest attempt's claim time as read, not only the count",
			[]property{neverLost}},
		{[]string{"UNGUARDED_REJECTION", "NO_RESUBMIT_DEADLINE", twoFaults},
			"a rejection is written only while its attempt is the latest",
			[]property{neverLost}},
	} {
		t.Run(strings.Join(g.defines, "+"), func(t *testing.T) {
			t.Parallel()
			pan := build(t, g.defines...)
			for _, p := range g.breaks {
				if r := pan.check(p); !r.violated {
					t.Errorf("without the guard (%s), %s still holds: %s; the model no longer shows why the guard is there",
						g.guard, p.name, p.means)
				}
			}
		})
	}
}

// Two faults at once made the runs docs/model.md tells of ("Two faults"):
// a given-back attempt counted again or expired under a stale reader, a
// late rejection written over a resubmit. With the rules that close them
// every property holds with two faults too. The deadline at the lease
// closes those runs on its own, and the guard variants that show the
// other rules needed remove it from a model that keeps every safety
// property: without a resubmit's deadline, or without any.
func TestTwoFaults(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		defines []string
	}{
		{"model", nil},
		{"deadline only", []string{"CLAIM_COUNT_ONLY", "EXPIRY_COUNT_ONLY", "UNGUARDED_REJECTION"}},
		{"no resubmit deadline", []string{"NO_RESUBMIT_DEADLINE"}},
		{"no deadline", []string{"NO_DEADLINE"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			pan := build(t, append(c.defines, twoFaults)...)
			pan.holds()
			if c.defines != nil {
				return
			}
			if r := pan.check(terminates); r.violated {
				t.Errorf("%s (%s) is violated with two faults:\n%s", terminates.name, terminates.means, r.out)
			}
		})
	}
}

// With a vendor that deduplicates references (as the vendors payoutd
// connects to do), the protocol keeps every property too, and asking
// before a resubmit is a second defence: without it that vendor still
// pays once, but the payout may be expired while the vendor pays it.
func TestDeduplicatingVendor(t *testing.T) {
	t.Parallel()
	build(t, "VENDOR_DEDUP").holds()
	noAsk := build(t, "VENDOR_DEDUP", "NO_ASK")
	if r := noAsk.check(paidOnce); r.violated {
		t.Errorf("a deduplicating vendor paid twice:\n%s", r.out)
	}
	if r := noAsk.check(neverLost); !r.violated {
		t.Errorf("without asking first, nothing is lost even with a deduplicating vendor; the model no longer shows the risk")
	}
}

// A vendor that pays a payout after it reported it FAILED contradicts the
// stored final status: the contradiction is recorded for operators and
// never moves the payout nor money.
func TestContradictingVendor(t *testing.T) {
	t.Parallel()
	build(t, "CONTRA").holds()
}

// verifier is pan, built from the model with some -D flags.
type verifier struct {
	t   *testing.T
	dir string
}

// result is what one run of pan found.
type result struct {
	violated bool
	out      string
}

// How long one spin, gcc or pan run may take before the test gives up
// on it (a loaded machine is slow; a model that grew is found here).
const runLimit = 5 * time.Minute

// build writes and compiles the verifier for submit.pml with defines.
// pan is compiled without optimisation (it compiles in a fraction of the
// time, and the runs are short), with the fairness of the model's
// processes (-DNFAIR) and a memory bound, so that a model grown too large
// fails instead of filling the machine.
func build(t *testing.T, defines ...string) *verifier {
	t.Helper()
	spin, gcc := tools(t)
	model, err := os.ReadFile("submit.pml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "submit.pml"), model, 0o644); err != nil {
		t.Fatal(err)
	}
	args := make([]string, 0, len(defines)+2)
	for _, d := range defines {
		args = append(args, "-D"+d)
	}
	command(t, dir, spin, append(args, "-a", "submit.pml")...)
	command(t, dir, gcc, "-O0", "-DNFAIR=3", "-DMEMLIM=1024", "-o", "pan", "pan.c")
	return &verifier{t: t, dir: dir}
}

// holds checks that every safety property holds, in one search; should
// one fail, each is searched on its own to say which.
func (v *verifier) holds() {
	v.t.Helper()
	if r := v.check(safety); !r.violated {
		return
	}
	for _, p := range safeties {
		if r := v.check(p); r.violated {
			v.t.Errorf("%s (%s) is violated:\n%s", p.name, p.means, r.out)
		}
	}
}

// check runs pan on one property: a search of every state (and, for
// liveness, every fair cycle).
func (v *verifier) check(p property) result {
	if p.liveness {
		return v.run("-a", "-f", "-N", p.name)
	}
	return v.run("-N", p.name)
}

var (
	errorCount   = regexp.MustCompile(`errors: (\d+)`)
	statesStored = regexp.MustCompile(`(\d+) states, stored`)
)

// run runs pan with args and reads whether it found a violation. A search
// that could not finish (memory, depth) fails the test: it would prove
// nothing either way. It logs the states stored and the time taken (go
// test -v), so that a model growing slower is seen.
func (v *verifier) run(args ...string) result {
	v.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "./pan", append([]string{"-m100000", "-w22"}, args...)...)
	cmd.Dir = v.dir
	began := time.Now()
	raw, err := cmd.CombinedOutput()
	out := string(raw)
	if m := statesStored.FindStringSubmatch(out); m != nil {
		v.t.Logf("pan %s: %s states stored, %.1fs", strings.Join(args, " "), m[1], time.Since(began).Seconds())
	}
	m := errorCount.FindStringSubmatch(out)
	if m == nil {
		v.t.Fatalf("pan %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	errors, _ := strconv.Atoi(m[1])
	for _, incomplete := range []string{"max search depth too small", "out of memory", "memory limit", "too many processes"} {
		if strings.Contains(out, incomplete) {
			v.t.Fatalf("pan %s could not finish its search (%s):\n%s", strings.Join(args, " "), incomplete, out)
		}
	}
	if errors == 0 && strings.Contains(out, "Search not completed") {
		v.t.Fatalf("pan %s did not search every state:\n%s", strings.Join(args, " "), out)
	}
	return result{violated: errors > 0, out: out}
}

// command runs name with args in dir and fails the test if it fails.
func command(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// tools finds spin and gcc: without them the test is skipped, except in
// CI, which must run it.
func tools(t *testing.T) (spin, gcc string) {
	t.Helper()
	var missing []string
	find := func(name string) string {
		path, err := exec.LookPath(name)
		if err != nil {
			missing = append(missing, name)
		}
		return path
	}
	spin, gcc = find("spin"), find("gcc")
	if len(missing) > 0 {
		what := strings.Join(missing, " and ")
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s missing (CI=true): scripts/backends.sh installs the spin and gcc packages", what)
		}
		t.Skipf("%s missing: apt-get install spin gcc to check the submit protocol's model", what)
	}
	return spin, gcc
}
