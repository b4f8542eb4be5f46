package api

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/internal/authcache"
	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// Two API instances share the database and Redis; each caches callers for
// an hour, so only the announcement through Redis can make an instance
// drop a client whose credentials an operator rotated.
func TestRotationReachesEveryInstanceThroughRedis(t *testing.T) {
	t.Parallel()
	hour := func(c *config.Config) { c.AuthCacheTTL = time.Hour }
	first := setup(t, setupOptions{configure: hour})
	other := setup(t, setupOptions{configure: hour, db: first.db, redis: first.redis})
	// A (re)subscription forgets everything: let both subscribe first.
	for _, b := range []*bundle{first, other} {
		select {
		case <-b.server.principalsListening:
		case <-time.After(5 * time.Second):
			t.Fatal("an instance did not subscribe to client changes")
		}
	}

	announced := first.admin
	announced.ClientChanged = func(ctx context.Context, id uuid.UUID) {
		if err := authcache.Announce(ctx, first.redis, id); err != nil {
			t.Errorf("announce: %v", err)
		}
	}
	silent := first.admin
	silent.ClientChanged = nil

	// Without an announcement the other instance keeps the caller it
	// cached (for at most AUTH_CACHE_TTL): the cache is really in play.
	quiet := first.newMerchant()
	quietPath := "/api/v3/wallets/" + first.newWallet(quiet.id, "Main", sandbox.SimBank, false).String() + "/balance"
	other.do(request{path: quietPath, apiKey: quiet.apiKey, timestamp: true}).expect(t, 200, "")
	if _, err := admin.RotateCredentials(context.Background(), silent, quiet.id); err != nil {
		t.Fatal(err)
	}
	other.do(request{path: quietPath, apiKey: quiet.apiKey, timestamp: true}).expect(t, 200, "")
	first.do(request{path: quietPath, apiKey: quiet.apiKey, timestamp: true}).expect(t, 401, "invalid API key")

	m := first.newMerchant()
	path := "/api/v3/wallets/" + first.newWallet(m.id, "Main", sandbox.SimBank, false).String() + "/balance"
	other.do(request{path: path, apiKey: m.apiKey, timestamp: true}).expect(t, 200, "")
	rotated, err := admin.RotateCredentials(context.Background(), announced, m.id)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for other.do(request{path: path, apiKey: m.apiKey, timestamp: true}).status != 401 {
		if time.Now().After(deadline) {
			t.Fatal("the old key still works on the other instance 5 s after the rotation was announced")
		}
		time.Sleep(20 * time.Millisecond)
	}
	other.do(request{path: path, apiKey: rotated.APIKey, timestamp: true}).expect(t, 200, "")
}

// A suspension made by an operator applies to the next create at once on
// the instance that was told (in-process here), although the caller was
// cached a moment before.
func TestSuspensionAppliesAtOnceToACachedCaller(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOptions{configure: func(c *config.Config) { c.AuthCacheTTL = time.Hour }})
	m := b.newMerchant()
	wallet := b.newWallet(m.id, "Main", sandbox.SimBank, false)
	b.do(request{path: "/api/v3/wallets", apiKey: m.apiKey, timestamp: true}).expect(t, 200, "")
	if _, err := admin.UpdateClient(context.Background(), b.admin, m.id, map[string]string{"withdrawals": "suspended"}); err != nil {
		t.Fatal(err)
	}
	body := `{"client_wallet_id":"` + wallet.String() + `","amount":"20000","bank_code":"bca","account_no":"1234567890","transfer_type":"BIFAST"}`
	b.do(request{method: "POST", path: "/api/v3/disbursements/quote", body: []byte(body), apiKey: m.apiKey, sign: m.signingSecret}).
		expect(t, 403, "withdrawals are suspended for this client")
}
