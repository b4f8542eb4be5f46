package payouts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
)

// A vendor's circuit breaker or concurrency bound (vendors/breaker, at
// the registry) may refuse a call before it leaves the process: a
// *vendors.RefusedError, vendors.ErrNotSent. The vendor never saw it, so
// it is never an unknown outcome. A submit is not claimed while its
// vendor's breaker holds calls back (heldBack); a claimed submit refused
// at the call gives its attempt back (unclaim), so that nothing later
// asks the vendor about an attempt that never went out, and the payout
// waits for the vendor as any payout never submitted (its lock TTL
// unchanged). A status check refused so is not counted as a check.

// heldBack is the refusal a call to vendor would get now, nil when the
// gate lets it through.
func (s *Service) heldBack(vendor string) error {
	if s.gate == nil {
		return nil
	}
	ok, retryIn := s.gate.Ready(vendor)
	if ok {
		return nil
	}
	return &vendors.RefusedError{Vendor: vendor, Reason: vendors.RefusedBreakerOpen, RetryAfter: retryIn}
}

// readyVendors are the configured vendors the gate lets calls through to
// now.
func (s *Service) readyVendors() []string {
	names := s.vendors.Names()
	if s.gate == nil {
		return names
	}
	ready := names[:0:0]
	for _, n := range names {
		if ok, _ := s.gate.Ready(n); ok {
			ready = append(ready, n)
		}
	}
	return ready
}

// notSent gives back the submit attempt d claimed for a call that was
// refused before it left (refusal, a vendors.ErrNotSent): the attempt
// count goes back down, the attempt time is cleared when no attempt is
// left (a later one keeps it: the lease is then counted from the refused
// claim, later than needed, never earlier), and the next check is set
// after the refusal's retry delay. It returns the submit's answer: the
// refusal, which tells the worker to try again later without counting a
// failure.
func (s *Service) notSent(ctx context.Context, d *models.Disbursement, refusal error) error {
	now := s.clock()
	var retryIn time.Duration
	var refused *vendors.RefusedError
	if errors.As(refusal, &refused) {
		retryIn = refused.RetryDelay()
	}
	next := now.Add(retryIn + sweepGrace)
	attempts := d.SubmitAttempts - 1
	var attemptedAt any = d.SubmitAttemptedAt
	if attempts == 0 {
		attemptedAt = nil
	}
	res := s.db.WithContext(ctx).Exec(`UPDATE disbursements
		SET submit_attempts = ?, submit_attempted_at = ?, next_check_at = ?, updated_at = ?
		WHERE id = ? AND status = ? AND submit_attempts = ?`,
		attempts, attemptedAt, next, now, d.ID, models.StatusVerified, d.SubmitAttempts)
	if res.Error != nil || res.RowsAffected != 1 {
		// The claim stands: the sweep resolves it as any attempt, by
		// asking the vendor after the lease.
		return s.unknownOutcome(ctx, d, "submit", fmt.Errorf("giving back the attempt of a call not sent (%v): %w", res.Error, refusal))
	}
	d.SubmitAttempts, d.NextCheckAt, d.UpdatedAt = attempts, &next, now
	if attempts == 0 {
		d.SubmitAttemptedAt = nil
	}
	slog.InfoContext(ctx, "payout submit not sent: the vendor is held back; the attempt is given back",
		slog.String("disbursement_id", d.ID.String()), slog.String("vendor", d.Vendor), slog.Any("reason", refusal))
	return fmt.Errorf("submit of %s: %w", d.VendorReference, refusal)
}

// deferPoll puts off the status check of d, a REQUESTED payout whose
// check was refused before it left (refusal): not counted as a check, it
// is asked again after the refusal's retry delay.
func (s *Service) deferPoll(ctx context.Context, d *models.Disbursement, refusal error) error {
	delay := time.Second
	var refused *vendors.RefusedError
	if errors.As(refusal, &refused) {
		delay = refused.RetryDelay()
	}
	now := s.clock()
	err := s.db.WithContext(ctx).Model(&models.Disbursement{}).
		Where("id = ? AND status = ?", d.ID, models.StatusRequested).
		Updates(map[string]any{"next_check_at": now.Add(delay + sweepGrace), "updated_at": now}).Error
	if err != nil || s.queue == nil {
		return err
	}
	slot := strconv.Itoa(d.Checks) + "-held-" + strconv.FormatInt(now.UnixMilli(), 10)
	return s.queue.EnqueuePoll(ctx, d.ID, slot, delay)
}

// gatewayHeldBack is models.ErrGatewayUnavailable (its text, its status)
// for a quote or create whose vendor call was refused before it left: it
// also says when the vendor's breaker may let a call through again, which
// the API sends as Retry-After.
type gatewayHeldBack struct{ retryAfter time.Duration }

func (e gatewayHeldBack) Error() string             { return models.ErrGatewayUnavailable.Error() }
func (e gatewayHeldBack) Unwrap() error             { return models.ErrGatewayUnavailable }
func (e gatewayHeldBack) RetryAfter() time.Duration { return e.retryAfter }

// gatewayUnavailable is the client's answer to a vendor call that failed:
// ErrGatewayUnavailable, with a retry delay when the call was refused
// before it left.
func gatewayUnavailable(err error) error {
	var refused *vendors.RefusedError
	if errors.As(err, &refused) {
		return gatewayHeldBack{retryAfter: refused.RetryDelay()}
	}
	return models.ErrGatewayUnavailable
}
