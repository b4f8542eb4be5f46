package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/payoutd/payoutd/api"
	"github.com/payoutd/payoutd/internal/app"
	"github.com/payoutd/payoutd/worker"
)

// TestDevModeRunsOnePayoutService starts `payoutd dev` and checks that its
// api, its worker and the demo's provisioning share the one payout (and
// payment) service the composition root built: dev mode used to build two
// payout services, wired differently. Not parallel: the process-wide count
// of payout services must see only dev mode's.
func TestDevModeRunsOnePayoutService(t *testing.T) {
	type seen struct {
		app    *app.App
		api    api.Deps
		worker worker.Deps
	}
	got := make(chan seen, 1)
	devStarted = func(a *app.App, apiDeps api.Deps, workerDeps worker.Deps) { got <- seen{a, apiDeps, workerDeps} }
	t.Cleanup(func() { devStarted = nil })

	before := app.PayoutServicesBuilt()
	ctx, cancel := context.WithCancel(context.Background())
	env := map[string]string{"HTTP_ADDR": "127.0.0.1:0", "DEV_DATA_DIR": t.TempDir(), "LOG_LEVEL": "warn"}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"dev"}, io.Discard, io.Discard, func(k string) string { return env[k] })
	}()

	var s seen
	select {
	case s = <-got:
	case code := <-done:
		t.Fatalf("payoutd dev exited %d before it started", code)
	case <-time.After(20 * time.Second):
		t.Fatal("payoutd dev did not start within 20 s")
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("payoutd dev exited %d", code)
	}

	if n := app.PayoutServicesBuilt() - before; n != 1 {
		t.Errorf("dev mode built %d payout services, want 1", n)
	}
	if s.app.Payouts == nil || s.api.Payouts != s.app.Payouts || s.worker.Dispatch.Payouts() != s.app.Payouts {
		t.Errorf("payout services: app %p, api %p, worker %p; want one", s.app.Payouts, s.api.Payouts, s.worker.Dispatch.Payouts())
	}
	if s.app.Dispatch == nil || s.api.Dispatch != s.app.Dispatch || s.worker.Dispatch != s.app.Dispatch {
		t.Errorf("dispatchers: app %p, api %p, worker %p; want one", s.app.Dispatch, s.api.Dispatch, s.worker.Dispatch)
	}
	if s.app.Payments == nil || s.api.Payments != s.app.Payments || s.worker.Payments != s.app.Payments {
		t.Errorf("payment services: app %p, api %p, worker %p; want one", s.app.Payments, s.api.Payments, s.worker.Payments)
	}
	if s.api.Metrics != s.app.Metrics || s.api.Redis != s.app.Redis {
		t.Error("the api does not run on the app's metrics and Redis pool")
	}
}
