package api

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-redis/redis_rate/v10"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/internal/authcache"
	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/internal/credentials"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/signature"
)

// Failed authentications are limited per source address
// (AUTH_FAILURE_RATE_LIMIT), and an unknown key is looked up in the
// database once, then remembered.

func failureLimit(n int) func(*config.Config) {
	return func(c *config.Config) { c.AuthFailureRateLimit = n }
}

// failuresPerHour makes b's failure budget n an hour instead of a minute:
// GCRA gives one back per period/n, and under load (race detector, busy
// machine) a test's requests can take longer than a minute's interval, but
// never two minutes. Redis keeps its own clock, so this is how a test
// holds the budget still.
func failuresPerHour(b *bundle, n int) {
	b.server.authFailures.limit = redis_rate.Limit{Rate: n, Burst: n, Period: time.Hour}
}

// uniqueSource is a client address of the test's own, an IPv6 address in
// a /64 of 48 random bits: failures stay counted in a shared Redis after
// the test.
func uniqueSource() string {
	var b [6]byte
	rand.Read(b[:])
	return fmt.Sprintf("[2001:db8:%x:%x:%x::1]", binary.BigEndian.Uint16(b[0:]), binary.BigEndian.Uint16(b[2:]), binary.BigEndian.Uint16(b[4:]))
}

// wantFailuresLimited fails unless r is the rate limit's 429 with a
// Retry-After of whole seconds.
func wantFailuresLimited(t *testing.T, r response) {
	t.Helper()
	r.expect(t, http.StatusTooManyRequests, models.ErrRateLimited.Error())
	if retry, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || retry < 1 {
		t.Fatalf("Retry-After %q, want whole seconds", r.header.Get("Retry-After"))
	}
}

// countKeyLookups counts the API key lookups db answers from now on.
func countKeyLookups(t *testing.T, db *gorm.DB) *atomic.Int64 {
	t.Helper()
	n := &atomic.Int64{}
	err := db.Callback().Row().After("gorm:row").Register("test:count_key_lookups", func(tx *gorm.DB) {
		if strings.Contains(tx.Statement.SQL.String(), "api_key_hash") {
			n.Add(1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitListening waits until each instance hears client changes: its
// (re)subscription forgets every key it remembered.
func waitListening(t *testing.T, bundles ...*bundle) {
	t.Helper()
	for _, b := range bundles {
		select {
		case <-b.server.principalsListening:
		case <-time.After(5 * time.Second):
			t.Fatal("an instance did not subscribe to client changes")
		}
	}
}

// The audit's reproduction: 40 requests with an unknown key from one
// address got 40 × 401, each a database lookup. Now the first 30 are 401
// and looked up once; the rest are 429 with Retry-After, and so is the
// right key from that address meanwhile (a guesser must not learn it
// guessed right). Another address is not affected.
func TestUnknownKeysLimitedPerSource(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOptions{configure: failureLimit(30)})
	failuresPerHour(b, 30)
	waitListening(t, b)
	m := b.newMerchant()
	lookups := countKeyLookups(t, b.db)
	ip := uniqueSource()
	unknown := credentials.Generate(b.env, true).APIKey
	wallets := func(key, ip string) response {
		return b.do(request{path: "/api/v3/wallets", apiKey: key, timestamp: true, remoteIP: ip})
	}
	for i := 1; i <= 30; i++ {
		wallets(unknown, ip).expect(t, http.StatusUnauthorized, models.ErrInvalidAPIKey.Error())
	}
	for i := 31; i <= 40; i++ {
		wantFailuresLimited(t, wallets(unknown, ip))
	}
	wantFailuresLimited(t, wallets(m.apiKey, ip))
	if n := lookups.Load(); n != 1 {
		t.Fatalf("the database was asked %d times for one unknown key, want once", n)
	}
	wallets(m.apiKey, uniqueSource()).expect(t, http.StatusOK, "")

	// Keys that differ each time are each looked up, until the budget
	// is spent: then none is.
	ip, before := uniqueSource(), lookups.Load()
	for i := 1; i <= 40; i++ {
		r := wallets(credentials.Generate(b.env, true).APIKey, ip)
		if i <= 30 {
			r.expect(t, http.StatusUnauthorized, models.ErrInvalidAPIKey.Error())
		} else {
			wantFailuresLimited(t, r)
		}
	}
	if n := lookups.Load() - before; n != 30 {
		t.Fatalf("%d lookups for 40 different unknown keys, want 30", n)
	}
}

// Wrong signatures and keys of the other environment or generation count
// too; a missing key or a stale timestamp (mistakes, not guesses) and
// successful requests do not.
func TestAuthFailuresThatCount(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOptions{configure: failureLimit(6)})
	failuresPerHour(b, 6)
	m := b.newMerchant()
	ip := uniqueSource()
	wrongSig := map[string]string{"x-signature": signature.Sign("not-the-secret", nil, b.now())}
	for range 20 {
		b.do(request{path: "/api/v3/wallets", remoteIP: ip}).expect(t, http.StatusUnauthorized, errMissingAPIKey.Error())
		b.do(request{path: "/api/v3/wallets", apiKey: m.apiKey, remoteIP: ip, headers: map[string]string{"x-timestamp": "1"}}).
			expect(t, http.StatusBadRequest, "")
		b.do(request{path: "/api/v3/wallets", apiKey: m.apiKey, timestamp: true, remoteIP: ip}).expect(t, http.StatusOK, "")
	}
	for range 2 {
		b.do(request{path: "/api/v3/wallets", apiKey: m.apiKey, remoteIP: ip, headers: wrongSig}).expect(t, http.StatusUnauthorized, "")
	}
	for range 2 {
		// Unknown here, with the other environment's prefix: an invalid
		// key (the hint names the prefix).
		b.do(request{path: "/api/v3/wallets", apiKey: credentials.Generate(models.Staging, true).APIKey, timestamp: true, remoteIP: ip}).
			expect(t, http.StatusUnauthorized, models.ErrInvalidAPIKey.Error())
	}
	for _, key := range []string{"sk_live_0123456789abcdef", "v3_live_tooshort"} {
		b.do(request{path: "/api/v3/wallets", apiKey: key, timestamp: true, remoteIP: ip}).expect(t, http.StatusUnauthorized, "")
	}
	wantFailuresLimited(t, b.do(request{path: "/api/v3/wallets", apiKey: m.apiKey, remoteIP: ip, headers: wrongSig}))
}

// Failures are counted in Redis: the budget spent on one instance is
// spent on every other, which then refuses the source before a lookup.
func TestAuthFailuresSharedByInstances(t *testing.T) {
	t.Parallel()
	first := setup(t, setupOptions{configure: failureLimit(5)})
	other := setup(t, setupOptions{configure: failureLimit(5), db: first.db, redis: first.redis})
	failuresPerHour(first, 5)
	failuresPerHour(other, 5)
	m := first.newMerchant()
	ip := uniqueSource()
	for range 5 {
		first.do(request{path: "/api/v3/wallets", apiKey: credentials.Generate(first.env, true).APIKey, timestamp: true, remoteIP: ip}).
			expect(t, http.StatusUnauthorized, models.ErrInvalidAPIKey.Error())
	}
	wantFailuresLimited(t, other.do(request{path: "/api/v3/wallets", apiKey: credentials.Generate(first.env, true).APIKey, timestamp: true, remoteIP: ip}))
	wantFailuresLimited(t, other.do(request{path: "/api/v3/wallets", apiKey: m.apiKey, timestamp: true, remoteIP: ip}))
}

// Without Redis each process counts the failures itself: 5 a minute, so
// the sixth within 12 s is refused for at most 12 s.
func TestAuthFailuresWithRedisDown(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOptions{redis: refusingRedis(t), now: time.Now, configure: failureLimit(5)})
	stopped := time.Now()
	b.server.authFailures.local.Now = func() time.Time { return stopped }
	b.server.authFailures.now = b.server.authFailures.local.Now
	ip := uniqueSource()
	for range 5 {
		b.do(request{path: "/api/v3/wallets", apiKey: credentials.Generate(b.env, true).APIKey, timestamp: true, remoteIP: ip}).
			expect(t, http.StatusUnauthorized, models.ErrInvalidAPIKey.Error())
	}
	r := b.do(request{path: "/api/v3/wallets", apiKey: credentials.Generate(b.env, true).APIKey, timestamp: true, remoteIP: ip})
	wantRateLimited(t, r)
	if retry, _ := strconv.Atoi(r.header.Get("Retry-After")); retry > 12 {
		t.Fatalf("Retry-After %d, want at most one interval of 12 s", retry)
	}
}

// The source is the client address gin reports; an IPv6 address counts by
// its /64, which one host usually holds whole.
func TestAuthSource(t *testing.T) {
	t.Parallel()
	for remote, want := range map[string]string{
		"192.0.2.7:1234":              "192.0.2.7",
		"[2001:db8:1:2:aaaa::1]:1234": "2001:db8:1:2::/64",
		"[2001:db8:1:2:bbbb::9]:1234": "2001:db8:1:2::/64",
		"[::ffff:192.0.2.8]:1234":     "192.0.2.8",
		"[2001:db8:1:3::1]:1234":      "2001:db8:1:3::/64",
		"not an address":              "",
	} {
		c, _ := gin.CreateTestContext(httptest.NewRecorder())
		c.Request = httptest.NewRequest(http.MethodGet, "/", nil)
		c.Request.RemoteAddr = remote
		if got := authSource(c); got != want {
			t.Errorf("%s: source %q, want %q", remote, got, want)
		}
	}
}

// A key unknown a moment ago works at once on every instance when it is
// created: the creation's announcement makes each forget its unknown
// keys. Until then the miss is really remembered (no lookup).
func TestUnknownKeyForgottenWhenAKeyIsCreated(t *testing.T) {
	t.Parallel()
	first := setup(t)
	other := setup(t, setupOptions{db: first.db, redis: first.redis})
	waitListening(t, first, other)
	m := first.newMerchant()
	lookups := countKeyLookups(t, first.db)
	issued := credentials.Generate(first.env, true)
	wallets := func() response {
		return other.do(request{path: "/api/v3/wallets", apiKey: issued.APIKey, timestamp: true})
	}
	for range 3 {
		wallets().expect(t, http.StatusUnauthorized, models.ErrInvalidAPIKey.Error())
	}
	if n := lookups.Load(); n != 1 {
		t.Fatalf("%d lookups of one unknown key, want 1", n)
	}

	// The operator issues that very key (as rotate-credentials would a
	// random one) and the change is announced.
	ctx := context.Background()
	credID := models.NewID()
	cred := &models.Credential{ID: credID, APIKeyHash: credentials.HashAPIKey(issued.APIKey), APIKeyPrefix: credentials.DisplayPrefix(issued.APIKey),
		CallbackSecretEnc: first.admin.Sealer.Seal(issued.CallbackSecret, credentials.CredentialBinding(m.id, credID, credentials.FieldCallbackSecret)),
		CreatedAt:         models.Now()}
	if err := models.NewStore(first.db).RotateCredential(ctx, m.id, cred); err != nil {
		t.Fatal(err)
	}
	wallets().expect(t, http.StatusUnauthorized, models.ErrInvalidAPIKey.Error())
	if err := authcache.Announce(ctx, first.redis, m.id); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for wallets().status != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("the new key is still refused 5 s after its creation was announced")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
