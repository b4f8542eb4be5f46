package api

import (
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/signature"
)

// With Redis unreachable the per-client limits still hold: each API
// process counts them itself. A quote is an account inquiry that names the
// holder; unlimited, it enumerates accounts.

// refusingRedis is a client of a Redis that refuses every connection at
// once (deadRedis's client dials five times a call): a test makes dozens
// of requests within a limit's interval.
func refusingRedis(t *testing.T) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond, DialerRetries: 1})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// redisDownBundle is an API whose Redis never answers, on the wall clock,
// with a funded merchant.
func redisDownBundle(t *testing.T, configure func(*config.Config)) (*bundle, merchant, []byte) {
	t.Helper()
	b := setup(t, setupOptions{redis: refusingRedis(t), now: time.Now, configure: configure})
	// The process's counts stand still: under load a test's requests can
	// take longer than a limit's interval.
	stopped := time.Now()
	b.server.localLimits.Now = func() time.Time { return stopped }
	m := b.newMerchant()
	wallet := b.newWallet(m.id, "Main", "simbank", false)
	b.fund(wallet, "1000000")
	quote := []byte(`{"client_wallet_id":"` + wallet.String() + `","amount":"100000","bank_code":"bca","account_no":"1234567890","transfer_type":"BIFAST"}`)
	return b, m, quote
}

func TestQuoteRateLimitWithRedisDown(t *testing.T) {
	t.Parallel()
	b, m, quote := redisDownBundle(t, func(c *config.Config) { c.QuoteRateLimit = 3 })
	for i := 1; i <= 3; i++ {
		b.do(request{method: http.MethodPost, path: "/api/v3/disbursements/quote", body: quote, apiKey: m.apiKey, sign: m.signingSecret}).
			expect(t, http.StatusOK, "")
	}
	r := b.do(request{method: http.MethodPost, path: "/api/v3/disbursements/quote", body: quote, apiKey: m.apiKey, sign: m.signingSecret})
	wantRateLimited(t, r)
	// 3 a minute: the next one fits in 20 s.
	if retry, _ := strconv.Atoi(r.header.Get("Retry-After")); r.header.Get("X-RateLimit-Limit") != "3" || retry > 20 {
		t.Fatalf("X-RateLimit-Limit %q, Retry-After %q; want 3 and at most 20", r.header.Get("X-RateLimit-Limit"), r.header.Get("Retry-After"))
	}
	// The count is per client.
	other := b.newMerchant()
	otherWallet := b.newWallet(other.id, "Main", "simbank", false)
	b.fund(otherWallet, "1000000")
	otherQuote := []byte(`{"client_wallet_id":"` + otherWallet.String() + `","amount":"100000","bank_code":"bca","account_no":"1234567890","transfer_type":"BIFAST"}`)
	b.do(request{method: http.MethodPost, path: "/api/v3/disbursements/quote", body: otherQuote, apiKey: other.apiKey, sign: other.signingSecret}).
		expect(t, http.StatusOK, "")
}

// The signature check's 20 a minute and a client's request rate hold too.
func TestOtherClientLimitsWithRedisDown(t *testing.T) {
	t.Parallel()
	b, m, _ := redisDownBundle(t, func(c *config.Config) { c.ClientReadRateLimit = 1 })
	for i := 1; i <= 20; i++ {
		b.do(request{method: http.MethodPost, path: checkPath, body: []byte(`{}`), apiKey: m.apiKey}).expect(t, http.StatusOK, "")
	}
	wantRateLimited(t, b.do(request{method: http.MethodPost, path: checkPath, body: []byte(`{}`), apiKey: m.apiKey}))

	// One read a second: the second within the second is refused.
	b.do(request{path: "/api/v3/wallets", apiKey: m.apiKey, timestamp: true}).expect(t, http.StatusOK, "")
	wantRateLimited(t, b.do(request{path: "/api/v3/wallets", apiKey: m.apiKey, timestamp: true}))
}

// A quote signature is accepted once by a process while Redis is down,
// even for the very same request; a fresh signature is accepted, and
// signed reads are still let through.
func TestQuoteSignatureOnceWithRedisDown(t *testing.T) {
	t.Parallel()
	b, m, quote := redisDownBundle(t, nil)
	sig := signature.Sign(m.signingSecret, quote, b.now())
	send := func() response {
		return b.signed(m, http.MethodPost, "/api/v3/disbursements/quote", quote, sig, "")
	}
	send().expect(t, http.StatusOK, "")
	send().expect(t, http.StatusUnauthorized, sigUsed)
	send().expect(t, http.StatusUnauthorized, sigUsed)
	b.do(request{method: http.MethodPost, path: "/api/v3/disbursements/quote", body: quote, apiKey: m.apiKey, sign: m.signingSecret}).
		expect(t, http.StatusOK, "")
	read := signature.Sign(m.signingSecret, nil, b.now().Add(time.Second))
	for range 2 {
		b.signed(m, http.MethodGet, "/api/v3/wallets", nil, read, "").expect(t, http.StatusOK, "")
	}
}

// The record of quote signatures forgets them after signatureMemory and is
// bounded per client: beyond, a quote is refused (503), never accepted
// unrecorded.
func TestLocalSignaturesBounded(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	l := newLocalSignatures()
	l.now = func() time.Time { return now }
	greedy, other := uuid.New(), uuid.New()
	for i := 0; i < maxLocalSignaturesPerClient; i++ {
		if first, err := l.record(greedy, "k"+uuid.NewString()); !first || err != nil {
			t.Fatalf("record %d: %v %v", i, first, err)
		}
	}
	if _, err := l.record(greedy, "one-more"); !errors.Is(err, errReplayCheckUnavailable) {
		t.Fatalf("beyond the client's share: %v", err)
	}
	if first, err := l.record(other, "x"); !first || err != nil {
		t.Fatalf("another client: %v %v", first, err)
	}
	if first, _ := l.record(other, "x"); first {
		t.Fatal("a signature recorded twice")
	}
	now = now.Add(signatureMemory)
	if first, err := l.record(greedy, "one-more"); !first || err != nil {
		t.Fatalf("after signatureMemory: %v %v", first, err)
	}
	if first, _ := l.record(other, "x"); !first {
		t.Fatal("a signature is remembered past signatureMemory")
	}
	if len(l.used) != 2 || len(l.perClient) != 2 {
		t.Fatalf("%d records of %d clients kept, want 2 of 2", len(l.used), len(l.perClient))
	}
}
