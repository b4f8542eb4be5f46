package redisconn

import (
	"slices"
	"strings"
	"testing"
)

func TestParseSentinel(t *testing.T) {
	o, err := ParseSentinel("redis-sentinel://app:s3cret@10.0.0.1:26379,10.0.0.2:26379,sentinel-3:26380/2?master=payoutd&sentinel_password=watch")
	if err != nil {
		t.Fatal(err)
	}
	if o.MasterName != "payoutd" || o.DB != 2 || o.Username != "app" || o.Password != "s3cret" || o.SentinelPassword != "watch" {
		t.Fatalf("parsed %+v", o)
	}
	if want := []string{"10.0.0.1:26379", "10.0.0.2:26379", "sentinel-3:26380"}; !slices.Equal(o.SentinelAddrs, want) {
		t.Fatalf("sentinels %v, want %v", o.SentinelAddrs, want)
	}
	if o.TLSConfig != nil {
		t.Fatal("TLS without tls=true")
	}
	o, err = ParseSentinel("REDIS-SENTINEL://127.0.0.1:26379?master=m&tls=true")
	if err != nil || o.TLSConfig == nil || o.DB != 0 || o.Password != "" {
		t.Fatalf("parsed %+v, %v", o, err)
	}
}

func TestParseSentinelRefuses(t *testing.T) {
	for _, tc := range []struct{ url, says string }{
		{"redis-sentinel://127.0.0.1:26379", "master=<name> is required"},
		{"redis-sentinel://127.0.0.1:26379?master=", "master=<name> is required"},
		{"redis-sentinel://127.0.0.1?master=m", `"127.0.0.1" is not host:port`},
		{"redis-sentinel://127.0.0.1:26379,?master=m", "cannot be parsed"},
		{"redis-sentinel://:1,127.0.0.1:26379?master=m", `":1" is not host:port`},
		{"redis-sentinel://127.0.0.1:0?master=m", "no valid port"},
		{"redis-sentinel://127.0.0.1:26379/x?master=m", "not a database number"},
		{"redis-sentinel://127.0.0.1:26379/1/2?master=m", "not a database number"},
		{"redis-sentinel://127.0.0.1:26379?master=m&mastr=n", `unknown parameter "mastr"`},
		{"redis-sentinel://127.0.0.1:26379?master=m&tls=yes", "want true or false"},
		{"redis://127.0.0.1:6379?master=m", "scheme"},
	} {
		_, err := ParseSentinel(tc.url)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: error %v, want one saying %q", tc.url, err, tc.says)
		}
	}
}

// A URL that cannot be parsed is refused without repeating it: it may hold
// the password.
func TestParseSentinelKeepsThePasswordOutOfErrors(t *testing.T) {
	_, err := ParseSentinel("redis-sentinel://app:hunter2@[::1%zz]:26379?master=m")
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error %v", err)
	}
	// A malformed redis:// URL too: the process prints the error at start.
	_, err = Open("redis://:hunter2@cache:bad/0")
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "invalid port") {
		t.Fatalf("error %v", err)
	}
}

func TestOpenPicksTheClientByScheme(t *testing.T) {
	for _, raw := range []string{"redis://127.0.0.1:6379/3", "redis-sentinel://127.0.0.1:26379/3?master=m"} {
		c, err := Open(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if got := c.Options().DB; got != 3 {
			t.Errorf("%s: database %d, want 3", raw, got)
		}
		c.Close()
	}
	if _, err := Open("http://127.0.0.1:6379"); err == nil {
		t.Fatal("an http:// REDIS_URL was accepted")
	}
}
