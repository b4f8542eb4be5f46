package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/models"
)

// addWebhooks starts the webhook sink and gives the first
// -concurrent-webhooks share of the phase's merchants (at least one, and
// the hot sub-phase's own) a payout webhook URL to it; cfg gets what the
// api and the worker need to deliver there. stop closes the sink.
func (cr *concurrentRun) addWebhooks(ctx context.Context, cfg *serverConfig) (stop func(), err error) {
	dir, err := os.MkdirTemp("", "payoutd-loadtest-sink-")
	if err != nil {
		return nil, err
	}
	sink, err := startWebhookSink(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	stop = func() {
		sink.close()
		os.RemoveAll(dir)
	}
	clients := cr.spread.Clients
	n := hookedMerchants(cr.s.o.concurrentWebhooks, len(clients))
	cr.hooked = make(map[uuid.UUID]bool, n)
	for _, c := range clients[:n] {
		clientID, err := uuid.Parse(c.ClientID)
		if err == nil {
			_, err = admin.UpdateClient(ctx, cr.spread.Admin, clientID, map[string]string{"payout-webhook-url": sink.url})
		}
		if err != nil {
			stop()
			return nil, fmt.Errorf("webhook URL of a load test merchant: %w", err)
		}
		walletID, err := uuid.Parse(c.WalletID)
		if err != nil {
			stop()
			return nil, err
		}
		cr.hooked[walletID] = true
	}
	cfg.railEnv = append(slices.Clone(cfg.railEnv), sink.env()...)
	cr.sink = sink
	progress(cr.stderr, "concurrent: %d of %d merchants have a payout webhook URL to the tool's HTTPS sink", n, len(clients))
	return stop, nil
}

// hookedMerchants is share of n, rounded up: at least one when share > 0.
func hookedMerchants(share float64, n int) int {
	return min(n, max(1, int(math.Ceil(share*float64(n)))))
}

// waitDeliveries waits until every SUCCESS or FAILED payout of the
// sub-phase on a hooked wallet has had its event delivered to the sink,
// at most -concurrent-drain-timeout, and measures the deliveries.
func (cr *concurrentRun) waitDeliveries(ctx context.Context, keyBase string, hot bool) (*webhookFigures, error) {
	rows, err := readPayoutTimes(ctx, cr.s.db, keyBase)
	if err != nil {
		return nil, err
	}
	var lastCreate time.Time
	var expect []hookedPayout
	ids := []uuid.UUID{}
	for _, r := range rows {
		lastCreate = later(lastCreate, r.CreatedAt)
		if !cr.hooked[r.WalletID] || (r.Status != models.StatusSuccess && r.Status != models.StatusFailed) {
			continue
		}
		expect = append(expect, hookedPayout{id: r.ID, terminal: r.ended()})
		ids = append(ids, r.ID)
	}
	deadline := time.Now().Add(cr.s.o.concurrentDrainTimeout)
	for cr.sink.received(ids) < len(ids) && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-cr.worker.exited:
			return nil, fmt.Errorf("payoutd worker exited during the concurrent phase: %v", cr.worker.err)
		case <-time.After(concurrentPollGap / 5):
		}
	}
	merchants := len(cr.hooked)
	if hot {
		merchants = 1
	}
	return cr.sink.figures(expect, lastCreate, merchants), nil
}
