package redisconn

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
	"github.com/redis/go-redis/v9"
)

// policyRedis is a miniredis whose CONFIG GET maxmemory-policy answers
// policy; "" leaves CONFIG unknown, as a managed Redis that hides it.
func policyRedis(t *testing.T, policy string) *redis.Client {
	t.Helper()
	m := miniredis.RunT(t)
	if policy != "" {
		err := m.Server().Register("CONFIG", func(c *server.Peer, cmd string, args []string) {
			c.WriteMapLen(1)
			c.WriteBulk("maxmemory-policy")
			c.WriteBulk(policy)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func TestCheckNoEviction(t *testing.T) {
	for _, tc := range []struct {
		name, policy string
		wantErr      string // "" for none
	}{
		{"noeviction", "noeviction", ""},
		{"volatile-lru evicts the used-signature records", "volatile-lru", "maxmemory-policy is volatile-lru"},
		{"allkeys-lru", "allkeys-lru", "maxmemory-policy is allkeys-lru"},
		{"volatile-ttl", "volatile-ttl", "maxmemory-policy is volatile-ttl"},
		{"CONFIG hidden", "", "cannot read Redis's maxmemory-policy"},
	} {
		unreachable, err := CheckNoEviction(context.Background(), policyRedis(t, tc.policy))
		if unreachable {
			t.Errorf("%s: reported unreachable", tc.name)
		}
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.wantErr)
		case tc.wantErr != "" && !strings.Contains(err.Error(), "REDIS_EVICTION_CHECK=skip"):
			t.Errorf("%s: %v does not name the override", tc.name, err)
		}
	}

	closed := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer closed.Close()
	if unreachable, err := CheckNoEviction(context.Background(), closed); !unreachable || err == nil {
		t.Errorf("a Redis that does not answer: unreachable %v, %v", unreachable, err)
	}

	embedded := miniredis.RunT(t)
	if err := AnswerEvictionPolicy(embedded); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: embedded.Addr()})
	defer rdb.Close()
	if _, err := CheckNoEviction(context.Background(), rdb); err != nil {
		t.Errorf("the embedded Redis: %v", err)
	}
}

// The Redis the tests run on is configured as the service needs it (the
// project's own scripts start it with noeviction, Redis's default).
func TestCheckNoEvictionOnTheTestRedis(t *testing.T) {
	raw := os.Getenv("TEST_REDIS_URL")
	if raw == "" {
		t.Skip("TEST_REDIS_URL not set")
	}
	opts, err := redis.ParseURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	if _, err := CheckNoEviction(context.Background(), rdb); err != nil {
		t.Fatal(err)
	}
}
