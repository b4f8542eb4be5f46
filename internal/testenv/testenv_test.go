package testenv

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Under CI=true a test whose backend variable is unset fails, saying
// which variable, instead of passing on SQLite or miniredis. Run in a
// child process so the failure is observed, not suffered.
func TestCIRequiresRealBackends(t *testing.T) {
	if name := os.Getenv("TESTENV_CHILD"); name != "" {
		if name == "TEST_DATABASE_URL" {
			DB(t)
		} else {
			Redis(t)
		}
		return
	}
	t.Parallel()
	for _, name := range []string{"TEST_DATABASE_URL", "TEST_REDIS_URL"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestCIRequiresRealBackends$", "-test.count=1")
			cmd.Env = append(os.Environ(), "TESTENV_CHILD="+name, "CI=true", name+"=")
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("CI=true without %s passed:\n%s", name, out)
			}
			if !strings.Contains(string(out), "CI=true but "+name+" is not set") {
				t.Fatalf("CI=true without %s failed without saying why:\n%s", name, out)
			}
		})
	}
}

// Two tests that each need a Redis database of their own get different
// ones, flushed; a database is free again when its test ends.
func TestRedisDatabaseIsTheTestsOwn(t *testing.T) {
	t.Parallel()
	if os.Getenv("TEST_REDIS_URL") == "" {
		t.Skip("leases are taken on TEST_REDIS_URL's server; without it each test has a miniredis")
	}
	ctx := context.Background()
	open := func(raw string) *redis.Client {
		t.Helper()
		o, err := redis.ParseURL(raw)
		if err != nil {
			t.Fatal(err)
		}
		c := redis.NewClient(o)
		t.Cleanup(func() { c.Close() })
		return c
	}
	var first string
	t.Run("first", func(t *testing.T) {
		first = RedisDatabase(t)
		open(first).Set(ctx, "left-behind", "x", 0)
		var second string
		t.Run("second, while the first runs", func(t *testing.T) { second = RedisDatabase(t) })
		if second == first {
			t.Fatalf("two tests running at once share %s", first)
		}
	})
	u, _ := url.Parse(first)
	key := fmt.Sprintf("payoutd:testenv:redis-db%s", strings.Replace(u.Path, "/", ":", 1))
	if n, err := open(os.Getenv("TEST_REDIS_URL")).Exists(ctx, key).Result(); err != nil || n != 0 {
		t.Fatalf("lease %s still held after its test ended: %d %v", key, n, err)
	}
	t.Run("again", func(t *testing.T) {
		again := RedisDatabase(t)
		if n, err := open(again).Exists(ctx, "left-behind").Result(); err != nil || n != 0 {
			t.Fatalf("database %s not flushed: %d %v", again, n, err)
		}
	})
}
