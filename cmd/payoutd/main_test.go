package main

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
)

// subprocessEnv makes the test binary run `payoutd <args>` instead of the
// tests: fault tests start (and kill) real worker processes this way,
// without building a second binary.
const subprocessEnv = "PAYOUTD_TEST_SUBPROCESS"

func TestMain(m *testing.M) {
	if args := os.Getenv(subprocessEnv); args != "" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		code := run(ctx, strings.Fields(args), os.Stdout, os.Stderr, os.Getenv)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// A server of the operators' routes does not start with a short
// ADMIN_PASSWORD, and says why without printing it.
func TestShortAdminPasswordRefused(t *testing.T) {
	env := map[string]string{"DATABASE_URL": "postgres://127.0.0.1:1/none", "REDIS_URL": "redis://127.0.0.1:1/0",
		"SECRETS_KEY": strings.Repeat("ab", 32), "ADMIN_USER": "ops", "ADMIN_PASSWORD": "hunter2hunt"}
	for _, args := range [][]string{{"api"}, {"dev"}, {"worker"}} {
		getenv := func(k string) string { return env[k] }
		if args[0] == "worker" {
			getenv = func(k string) string {
				if k == "METRICS_ADDR" {
					return ":0"
				}
				return env[k]
			}
		}
		var stdout, stderr strings.Builder
		code := run(context.Background(), args, &stdout, &stderr, getenv)
		if code == 0 || !strings.Contains(stderr.String(), "ADMIN_PASSWORD is too short (11 characters): at least 12") ||
			strings.Contains(stderr.String(), env["ADMIN_PASSWORD"]) {
			t.Errorf("payoutd %s: exit %d, stderr %q; want a refusal naming the rule, not the password", args[0], code, stderr.String())
		}
	}
}
