package main

import (
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"

	"github.com/payoutd/payoutd/internal/testenv"
)

// api and worker refuse to start on a Redis that may evict keys (the
// used-signature records, task leases), saying why and how to override;
// with REDIS_EVICTION_CHECK=skip they start.
func TestStartRefusesAnEvictingRedis(t *testing.T) {
	_, dbURL := testenv.DBWithURL(t)
	m := miniredis.RunT(t)
	if err := m.Server().Register("CONFIG", func(c *server.Peer, cmd string, args []string) {
		c.WriteMapLen(1)
		c.WriteBulk("maxmemory-policy")
		c.WriteBulk("volatile-lru")
	}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABASE_URL": dbURL, "REDIS_URL": "redis://" + m.Addr() + "/0",
		"SECRETS_KEY": hex.EncodeToString(make([]byte, 32)), "APP_ENV": "staging", "LOG_LEVEL": "warn", "HTTP_ADDR": "127.0.0.1:0"}
	getenv := func(k string) string { return env[k] }
	for _, cmd := range []string{"api", "worker"} {
		var stdout, stderr strings.Builder
		code := run(context.Background(), []string{cmd}, &stdout, &stderr, getenv)
		if code == 0 || !strings.Contains(stderr.String(), "maxmemory-policy is volatile-lru") ||
			!strings.Contains(stderr.String(), "REDIS_EVICTION_CHECK=skip") {
			t.Errorf("payoutd %s on a volatile-lru Redis: exit %d, stderr %q; want a refusal that says why", cmd, code, stderr.String())
		}
	}

	// With the override the check is not made: the api starts and
	// answers its health check.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	env["REDIS_EVICTION_CHECK"], env["HTTP_ADDR"] = "skip", addr
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stderr strings.Builder
	go func() { done <- run(ctx, []string{"api"}, io.Discard, &stderr, getenv) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case code := <-done:
			done <- code
			t.Fatalf("payoutd api with REDIS_EVICTION_CHECK=skip exited %d: %s", code, stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("payoutd api with REDIS_EVICTION_CHECK=skip never answered /healthz")
		}
	}
}
