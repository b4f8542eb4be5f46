package payouts

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"gorm.io/gorm"

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
	if s.handoff != nil {
		s.handoff.Due(ctx, d)
	}
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
	read := models.AttemptsRead{Count: d.SubmitAttempts}
	if err := s.move(ctx, d, Move{To: models.StatusCancelled, Reason: "cancelled by " + operator, IfAttempts: &read}); err != nil {
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

// LateResults lists the vendor results that contradicted a final
// disbursement, oldest first: the unresolved ones, or all with all.
func (s *Service) LateResults(ctx context.Context, all bool) ([]models.DisbursementLateResult, error) {
	q := s.db.WithContext(ctx).Order("id")
	if !all {
		q = q.Where("resolved_at IS NULL")
	}
	var out []models.DisbursementLateResult
	return out, q.Find(&out).Error
}

// ResolveLateResult closes a late vendor result with the operator's note
// (what was found with the vendor, what was done by hand). It changes no
// money: corrections go through their own commands (wallet adjust).
// ErrLateResultNotFound, ErrLateResultResolved.
func (s *Service) ResolveLateResult(ctx context.Context, id int64, operator, note string) (*models.DisbursementLateResult, error) {
	now := s.clock()
	res := s.db.WithContext(ctx).Model(&models.DisbursementLateResult{}).Where("id = ? AND resolved_at IS NULL", id).
		Updates(map[string]any{"resolved_at": now, "resolved_by": operator, "note": note})
	if res.Error != nil {
		return nil, res.Error
	}
	var r models.DisbursementLateResult
	err := s.db.WithContext(ctx).Where("id = ?", id).Take(&r).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return nil, fmt.Errorf("%w: %d", models.ErrLateResultNotFound, id)
	case err != nil:
		return nil, err
	case res.RowsAffected == 0:
		return nil, fmt.Errorf("%w: %d was resolved at %s by %s", models.ErrLateResultResolved, id,
			models.FormatTime(*r.ResolvedAt), deref(r.ResolvedBy))
	}
	return &r, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
