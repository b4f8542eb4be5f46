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
