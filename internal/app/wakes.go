package app

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/payoutd/payoutd/dispatch"
)

var _ dispatch.Notifier = RedisWakes{}

// WakeChannel is the Redis channel on which every process publishes the
// disbursements a commit moved out of VERIFIED, so that the API process
// where their create waits (DISBURSEMENT_SUBMIT_WAIT) answers at once.
const WakeChannel = "payoutd:payouts:left-verified"

// RedisWakes publishes on WakeChannel: dispatch.Notifier over Redis pub/sub.
// Pub/sub delivers at most once; a waiter's re-check covers a lost message.
type RedisWakes struct{ Redis *redis.Client }

// Notify publishes the ids in one message, space separated. A failure is
// only logged: the waiters re-check.
func (w RedisWakes) Notify(ctx context.Context, ids []uuid.UUID) {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = id.String()
	}
	if err := w.Redis.Publish(context.WithoutCancel(ctx), WakeChannel, strings.Join(parts, " ")).Err(); err != nil {
		slog.WarnContext(ctx, "publish of payouts leaving VERIFIED failed; waiters re-check", slog.Any("error", err))
	}
}

// DueChannel is the Redis channel on which the API says that payouts
// became due for their first submit, so that the workers' submit pumps
// take them at once (dispatch.DueSignal). The message carries nothing.
const DueChannel = "payoutd:payouts:due"

// RedisDue publishes on DueChannel: dispatch.DueSignal over Redis pub/sub,
// coalesced: however many creates signal at once, one PUBLISH is on its
// way at a time, and one starts after every signal, so that a pump woken
// by it sees the payout committed before the signal. Publishing does not
// hold up the create's answer.
type RedisDue struct {
	Redis            *redis.Client
	pending, sending atomic.Bool
}

var _ dispatch.DueSignal = (*RedisDue)(nil)

// SubmitsDue publishes on DueChannel, in the background. A failure is only
// logged: the pumps look again every dispatch.PumpRecheck.
func (d *RedisDue) SubmitsDue(context.Context) {
	d.pending.Store(true)
	if !d.sending.CompareAndSwap(false, true) {
		return // the running sender publishes again for this signal
	}
	go func() {
		for {
			d.pending.Store(false)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := d.Redis.Publish(ctx, DueChannel, "").Err(); err != nil {
				slog.Warn("publish of due payouts failed; the submit pumps look again shortly", slog.Any("error", err))
			}
			cancel()
			d.sending.Store(false)
			if !d.pending.Load() || !d.sending.CompareAndSwap(false, true) {
				return
			}
		}
	}()
}

// Waker is what a subscriber wakes: *dispatch.Dispatcher, its waiting
// creates (WakeChannel) and its submit pumps (DueChannel).
type Waker interface {
	Wake(ids ...uuid.UUID)
	WakePumps()
}

// SubscribeWakes hands every id published on WakeChannel to svc.Wake, and
// every message on DueChannel to svc.WakePumps, until ctx ends, subscribing again after a broken connection. It returns once
// the first subscription is confirmed (or ctx ended), so that a create
// made after it is woken.
func SubscribeWakes(ctx context.Context, rdb *redis.Client, svc Waker) {
	ready := make(chan struct{})
	go func() {
		first := ready
		for ctx.Err() == nil {
			receiveWakes(ctx, rdb, svc, first)
			first = nil
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	select {
	case <-ready:
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		slog.Warn("wake subscription not confirmed yet; waiting creates re-check meanwhile")
	}
}

// receiveWakes runs one subscription until it breaks or ctx ends; ready,
// when not nil, is closed once it is confirmed.
func receiveWakes(ctx context.Context, rdb *redis.Client, svc Waker, ready chan struct{}) {
	sub := rdb.Subscribe(ctx, WakeChannel, DueChannel)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		if ctx.Err() == nil {
			slog.Warn("wake subscription failed; retrying", slog.Any("error", err))
		}
		return
	}
	if ready != nil {
		close(ready)
	}
	for {
		msg, err := sub.ReceiveMessage(ctx)
		if err != nil {
			if ctx.Err() == nil {
				slog.Warn("wake subscription broken; resubscribing", slog.Any("error", err))
			}
			return
		}
		if msg.Channel == DueChannel {
			svc.WakePumps()
			continue
		}
		var ids []uuid.UUID
		for _, f := range strings.Fields(msg.Payload) {
			if id, err := uuid.Parse(f); err == nil {
				ids = append(ids, id)
			}
		}
		svc.Wake(ids...)
	}
}
