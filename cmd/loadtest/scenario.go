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
	new     func() Scenario
}

// scenarios lists every -scenario value.
var scenarios = []scenarioInfo{
	{name: "balance", summary: "signed GET /api/v3/wallets/{wallet_id}/balance, round-robin over the clients' wallets", new: newBalanceScenario},
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
		fmt.Fprintf(&b, "  %-10s %s\n", s.name, s.summary)
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
