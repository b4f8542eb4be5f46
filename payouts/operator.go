package payouts

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
)

// Approve releases a PENDING_VERIFICATION disbursement for submission
// (payoutd admin disbursement approve). The lock's clock restarts: the
// submission gets a full TTL from the approval.
func (s *Service) Approve(ctx context.Context, id uuid.UUID, operator string) (*models.Disbursement, error) {
	d, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	now := s.clock()
	err = s.move(ctx, d, Move{To: models.StatusVerified, Reason: "approved by " + operator,
		LockExpiresAt: now.Add(s.lockTTL), NextCheckAt: now.Add(firstSweepAfter)})
	if err != nil {
		return nil, err
	}
	s.enqueueSubmit(ctx, d)
	return d, nil
}

// Cancel cancels a disbursement not yet submitted and releases its lock
// (payoutd admin disbursement cancel). Once the vendor may have been asked
// to pay, only the vendor's answer decides.
func (s *Service) Cancel(ctx context.Context, id uuid.UUID, operator string) (*models.Disbursement, error) {
	d, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if d.SubmitAttempts > 0 && d.Status == models.StatusVerified {
		return nil, fmt.Errorf("%w: %s was already sent to the vendor", models.ErrTransitionRefused, d.ID)
	}
	attempts := d.SubmitAttempts
	if err := s.move(ctx, d, Move{To: models.StatusCancelled, Reason: "cancelled by " + operator, IfSubmitAttempts: &attempts}); err != nil {
		return nil, err
	}
	return d, nil
}

// CompleteSandbox finishes a sandbox payout that stays REQUESTED (payoutd
// admin sandbox complete): the vendor marks it final, then the result is
// applied as a status check would.
func (s *Service) CompleteSandbox(ctx context.Context, id uuid.UUID, status vendors.PayoutStatus, reason string) (*models.Disbursement, error) {
	if status != vendors.PayoutSuccess && status != vendors.PayoutFailed {
		return nil, errors.New("--status must be SUCCESS or FAILED")
	}
	d, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if d.Status != models.StatusRequested {
		return nil, fmt.Errorf("%w: %s is %s, only a REQUESTED payout can be completed", models.ErrTransitionRefused, d.ID, d.Status)
	}
	vendor, err := s.vendors.Get(d.Vendor)
	if err != nil {
		return nil, err
	}
	completer, ok := vendor.(interface {
		Complete(ctx context.Context, reference string, status vendors.PayoutStatus, reason string) error
	})
	if !ok {
		return nil, fmt.Errorf("vendor %s is not a sandbox vendor", d.Vendor)
	}
	if status == vendors.PayoutFailed && reason == "" {
		reason = "failed by the sandbox operator"
	}
	if err := completer.Complete(ctx, d.VendorReference, status, reason); err != nil {
		return nil, err
	}
	result, err := vendor.Status(ctx, d.VendorReference)
	if err != nil {
		return nil, err
	}
	if err := s.applyResult(ctx, d, result); err != nil && !errors.Is(err, models.ErrStaleStatus) {
		return nil, err
	}
	return s.Get(ctx, id)
}
