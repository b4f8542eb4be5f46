package main

// Scenario balance measures signed GET /api/v3/wallets/{wallet_id}/balance,
// round-robin over the clients' wallets (32 workers, closed loop), after a
// pgbench select-only ceiling measured before the server starts. Goals:
// goalRPS req/s with p99 under goalP99, and the rate at least
// goalCeilingRatio of the select-only ceiling. Scenario all runs it as its
// first phase.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/payoutd/payoutd/signature"
)

// balanceScenario reads wallet balances: GET
// /api/v3/wallets/{wallet_id}/balance, signed over the empty body, spread
// round-robin over the provisioned clients.
type balanceScenario struct {
	targets []balanceTarget
}

type balanceTarget struct {
	path   string
	apiKey string
	secret string
}

func newBalanceScenario(options) Scenario { return &balanceScenario{} }

func (s *balanceScenario) Prepare(_ context.Context, f *Fixture) error {
	if len(f.Clients) == 0 {
		return errors.New("balance: no clients provisioned")
	}
	s.targets = make([]balanceTarget, len(f.Clients))
	for i, c := range f.Clients {
		s.targets[i] = balanceTarget{
			path:   "/api/v3/wallets/" + c.WalletID + "/balance",
			apiKey: c.APIKey,
			secret: c.SigningSecret,
		}
	}
	return nil
}

func (s *balanceScenario) NewRequest(ctx context.Context, base string, n uint64, now time.Time) (*http.Request, error) {
	t := s.targets[n%uint64(len(s.targets))]
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+t.path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("x-api-key", t.apiKey)
	req.Header.Set("x-signature", signature.Sign(t.secret, nil, now))
	return req, nil
}

func (s *balanceScenario) WantStatus() int { return http.StatusOK }

// wallets is how many wallets the reads go over.
func (s *balanceScenario) wallets() int { return len(s.targets) }

// measureSelectOnly measures the select-only ceiling the balance reads
// are a ratio of. With -target it measures none: the tool makes no tables
// of its own in a database it did not create.
func measureSelectOnly(ctx context.Context, s *runSetup, stderr io.Writer) (*ceilings, error) {
	if !s.selfContained {
		c := &ceilings{Unavailable: "not measured with -target (the tool makes no tables of its own in the server's database)"}
		progress(stderr, "ceiling unavailable: %s", c.Unavailable)
		return c, nil
	}
	return measureCeilings(ctx, s.o, s.db, stderr, selectOnlyRun(s.o))
}
