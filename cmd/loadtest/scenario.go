package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/payoutd/payoutd/admin"
)

// A Scenario is one kind of request the tool measures. Each lives in a file
// of its own and registers itself in scenarios below.
type Scenario interface {
	// Prepare runs once, after the clients are provisioned and before any
	// request. A scenario that needs more data (payees, larger balances)
	// makes it here through f.Admin.
	Prepare(ctx context.Context, f *Fixture) error
	// NewRequest builds request number n (counting from 0 across all
	// workers) against the server at base, signed at now. Workers call it
	// concurrently.
	NewRequest(ctx context.Context, base string, n uint64, now time.Time) (*http.Request, error)
	// WantStatus is the status of a successful answer; any other counts as
	// an error.
	WantStatus() int
}

// scenarioInfo is an entry of the -scenario list.
type scenarioInfo struct {
	name    string
	summary string
	// new makes the scenario of a single closed-loop run; nil for a suite
	// (drain, disbursements, all), which runs several phases.
	new func(options) Scenario
	// concurrency is the default number of workers (-concurrency 0).
	concurrency int
	// unit names the rate: "req/s" or "creates/s".
	unit string
	// goalRate and goalP99 are the informational goal.
	goalRate float64
	goalP99  time.Duration
	// creates: the server is started with DISBURSEMENT_SUBMIT_WAIT=0 and
	// the tool flushes the Redis database the API enqueues into.
	creates bool
	// enqueues: the API enqueues into Redis (payment:expire), so the tool
	// flushes its Redis database first; implied by creates.
	enqueues bool
	// selectOnly: the pgbench select-only ceiling is measured before the
	// load and the rate reported as a ratio of it (balance).
	selectOnly bool
}

// flushesRedis: the tool empties its Redis database before the run.
func (s scenarioInfo) flushesRedis() bool { return s.creates || s.enqueues }

// scenarios lists every -scenario value.
var scenarios = []scenarioInfo{
	{
		name: "balance", summary: "signed GET /api/v3/wallets/{wallet_id}/balance, round-robin over the clients' wallets, as a ratio of a pgbench select-only ceiling",
		new: newBalanceScenario, concurrency: 32, unit: "req/s", goalRate: goalRPS, goalP99: goalP99, selectOnly: true,
	},
	{
		name: "create-many", summary: "signed POST /api/v3/disbursements, a fresh Idempotency-Key each, round-robin over the clients' wallets",
		new: newCreateManyScenario, concurrency: 16, unit: "creates/s", goalRate: goalCreatesMany, goalP99: goalCreateP99, creates: true,
	},
	{
		name: "create-hot", summary: "signed POST /api/v3/disbursements, a fresh Idempotency-Key each, all on one wallet of one client",
		new: newCreateHotScenario, concurrency: 8, unit: "creates/s", goalRate: goalCreatesHot, goalP99: goalCreateP99, creates: true,
	},
	{
		name: "payments", summary: "POST /api/v1/payments (x-signature, or x-timestamp with -payment-auth timestamp), round-robin over the clients, into each one's default wallet",
		new: newPaymentsScenario, concurrency: 16, unit: "creates/s", goalRate: goalPayments, goalP99: goalCreateP99, enqueues: true,
	},
	{
		name: "drain", summary: "create-many, then `payoutd worker` drains the queued payouts through the -rail vendor (payouts/s)",
		unit: "payouts/s", goalRate: goalPayouts, creates: true,
	},
	{
		name: "concurrent", summary: "pgbench ceilings, then api and worker together: creates on one wallet, over many, and with the default wait, each payout followed to its end",
		concurrency: 32, unit: "creates/s", creates: true,
	},
	{
		name: "overload", summary: "the capacity of create-many, then an open-loop load at -overload-factor times it against an api with MAX_IN_FLIGHT=-overload-in-flight: no 500, accepted p99 < 100 ms",
		unit: "creates/s", creates: true,
	},
	{
		name: "disbursements", summary: "pgbench ceilings (spread, hot row), create-many, create-hot, drain and concurrent, with each figure as a ratio of its ceiling",
		unit: "creates/s", creates: true,
	},
	{
		name: "all", summary: "disbursements with balance reads and payments added: pgbench ceilings (select-only too), balance, create-many, create-hot, payments, drain and concurrent, in one table",
		unit: "creates/s", creates: true,
	},
}

func lookupScenario(name string) (scenarioInfo, bool) {
	for _, s := range scenarios {
		if s.name == name {
			return s, true
		}
	}
	return scenarioInfo{}, false
}

func scenarioNames() []string {
	names := make([]string, len(scenarios))
	for i, s := range scenarios {
		names[i] = s.name
	}
	return names
}

func scenarioHelp() string {
	var b strings.Builder
	for _, s := range scenarios {
		fmt.Fprintf(&b, "  %-14s %s\n", s.name, s.summary)
	}
	return b.String()
}

// Fixture is what provisioning made: the merchant clients with their
// clear-text credentials, each with one funded wallet.
type Fixture struct {
	Clients []LoadClient
	// Admin provisions more, with the same database, sealer and environment.
	Admin admin.Deps
}

// LoadClient is one provisioned merchant client.
type LoadClient struct {
	ClientID      string
	APIKey        string
	SigningSecret string
	WalletID      string
}
