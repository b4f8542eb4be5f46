package main

import (
	"context"
	"errors"
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
