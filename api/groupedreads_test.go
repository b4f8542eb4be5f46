package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/payoutd/payoutd/internal/groupcommit"
	"github.com/payoutd/payoutd/internal/metrics/metricstest"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/signature"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// One query answers a group of wallet reads (walletreads.go), so a group
// mixes callers: each must get its own wallet and nobody else's, exactly
// as a read of its own would answer.
func TestGroupedWalletReadsAnswerEachCallerAlone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m, other := b.newMerchant(), b.newMerchant()
	mine := b.newWallet(m.id, "Mine", sandbox.SimBank, false)
	theirs := b.newWallet(other.id, "Theirs", sandbox.SimBank, false)
	provisioning := b.newWallet(m.id, "Later", sandbox.SimBank, true)
	b.fund(mine, "1000")
	b.fund(theirs, "2000")

	reads := []*walletRead{
		{clientID: m.id, walletID: mine},
		{clientID: m.id, walletID: theirs}, // in the same query as its owner's read
		{clientID: other.id, walletID: theirs},
		{clientID: m.id, walletID: provisioning},
		{clientID: m.id, walletID: uuid.New()},
		{clientID: m.id, walletID: mine}, // twice in one group
	}
	group := make([]*groupcommit.Request[*walletRead], len(reads))
	for i, r := range reads {
		group[i] = groupcommit.NewRequest(r)
	}
	b.server.wallets.read(group)
	for i, req := range group {
		if err := <-req.Done(); err != nil {
			t.Fatalf("read %d answered %v", i, err)
		}
	}
	want := []struct {
		balance models.Amount
		err     error
	}{{models.Rupiah(1000), nil}, {0, models.ErrWalletNotFound}, {models.Rupiah(2000), nil},
		{0, models.ErrWalletNotFound}, {0, models.ErrWalletNotFound}, {models.Rupiah(1000), nil}}
	for i, r := range reads {
		if !errors.Is(r.err, want[i].err) || (want[i].err == nil && (r.wallet == nil || r.wallet.ID != r.walletID || r.wallet.Balance != want[i].balance)) {
			t.Errorf("read %d: wallet %+v, error %v; want balance %s, error %v", i, r.wallet, r.err, want[i].balance, want[i].err)
		}
	}
	if reads[0].wallet == reads[5].wallet {
		t.Error("two callers of one group share one wallet value")
	}
}

// Concurrent balance reads of two merchants, grouped however they fall,
// each see their own balance and a 404 for the other's wallet.
func TestConcurrentBalanceReadsStayIsolated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m, other := b.newMerchant(), b.newMerchant()
	mine := b.newWallet(m.id, "Mine", sandbox.SimBank, false)
	theirs := b.newWallet(other.id, "Theirs", sandbox.SimBank, false)
	b.fund(mine, "1000")
	b.fund(theirs, "2000")

	type read struct {
		who    merchant
		wallet uuid.UUID
		status int
		body   string
	}
	cases := []read{
		{m, mine, http.StatusOK, `"balance":"1000.0000"`},
		{other, theirs, http.StatusOK, `"balance":"2000.0000"`},
		{m, theirs, http.StatusNotFound, "wallet not found"},
		{other, mine, http.StatusNotFound, "wallet not found"},
	}
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func(c read) {
			defer wg.Done()
			r := b.do(request{path: "/api/v3/wallets/" + c.wallet.String() + "/balance", apiKey: c.who.apiKey, timestamp: true})
			if r.status != c.status || !strings.Contains(string(r.body), c.body) {
				t.Errorf("%s reading %s: %d %s, want %d with %s", c.who.id, c.wallet, r.status, r.body, c.status, c.body)
			}
		}(cases[i%len(cases)])
	}
	wg.Wait()
}

// Records of one pipeline (sigrecords.go) are still set one after the
// other: of two uses of one signature in the same group the first is
// recorded and the second learns of it.
func TestPipelinedSignatureRecordsKeepOnceOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key, other := "sigused:test:"+uuid.NewString(), "sigused:test:"+uuid.NewString()
	recs := []*signatureRecord{{key: key, use: "GET /a"}, {key: key, use: "GET /b"}, {key: other, use: "GET /c"}, {key: key, use: "GET /a"}}
	group := make([]*groupcommit.Request[*signatureRecord], len(recs))
	for i, r := range recs {
		group[i] = groupcommit.NewRequest(r)
	}
	b.server.signatures.send(group)
	for i, req := range group {
		if err := <-req.Done(); err != nil {
			t.Fatalf("record %d answered %v", i, err)
		}
	}
	wantFirst := []string{"", "GET /a", "", "GET /a"}
	for i, r := range recs {
		first := r.first
		if errors.Is(r.err, redis.Nil) {
			first = ""
		} else if r.err != nil {
			t.Fatalf("record %d: %v", i, r.err)
		}
		if first != wantFirst[i] {
			t.Errorf("record %d (%s): found %q before it, want %q", i, r.use, first, wantFirst[i])
		}
	}
	if got := b.redis.TTL(context.Background(), key).Val(); got <= 0 || got > signatureMemory {
		t.Errorf("record kept for %s, want at most %s", got, signatureMemory)
	}
}

// Operators see whether requests share round trips: each group's size
// and duration is in /metrics, by group.
func TestGroupsShowInMetrics(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{})
	e.signed(e.m, http.MethodGet, "/api/v3/wallets/"+e.wallet.String()+"/balance", nil,
		signature.Sign(e.m.signingSecret, nil, e.now()), "").expect(t, http.StatusOK, "")
	body := e.body("100000", "1234567890").json()
	e.signed(e.m, http.MethodPost, "/api/v3/disbursements", body, signature.Sign(e.m.signingSecret, body, e.now()), "k1").
		created(t, models.StatusSuccess)
	for _, group := range []string{"signature_records", "wallet_reads", "create"} {
		if n := metricstest.Value(t, e.metrics, "payoutd_group_size", "group", group); n < 1 {
			t.Errorf("group %s: %v sizes observed, want at least 1", group, n)
		}
		if n := metricstest.Value(t, e.metrics, "payoutd_group_run_duration_seconds", "group", group); n < 1 {
			t.Errorf("group %s: %v durations observed, want at least 1", group, n)
		}
	}
}
