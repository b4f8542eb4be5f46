package payouts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
)

// submitAll is the one implementation of a submit, for a batch and for a
// lone payout alike. It claims each disbursement's next submit attempt
// (claim), asks each vendor to pay its claimed payouts in one call
// (vendors.SubmitAll), and applies what the vendors answered in one
// transaction (moveMany). The disbursements were read as VERIFIED with a
// running lock. It returns each one's answer, as Submit gives it.
func (s *Service) submitAll(ctx context.Context, ds []*models.Disbursement) []error {
	answers := make([]error, len(ds))
	// A payout whose vendor is not configured, or held back by its
	// circuit breaker, is not claimed: no attempt is counted for a call
	// that never went out.
	payable := make([]*models.Disbursement, 0, len(ds))
	for i, d := range ds {
		if _, err := s.vendors.Get(d.Vendor); err != nil {
			answers[i] = err
			continue
		}
		if err := s.heldBack(d.Vendor); err != nil {
			answers[i] = fmt.Errorf("submit of %s: %w", d.VendorReference, err)
			continue
		}
		payable = append(payable, d)
	}
	claimed, err := s.claim(ctx, payable)
	var ready []int
	for i, d := range ds {
		switch {
		case answers[i] != nil:
		case err != nil:
			answers[i] = err
		case !claimed[d.ID]:
			answers[i] = fmt.Errorf("%w: %s changed before its submit", ErrOutcomeUnknown, d.VendorReference)
		default:
			ready = append(ready, i)
		}
	}
	if len(ready) > 0 {
		// The vendor call and the writes of its answer end with the
		// claim's lease, as a pumped batch's do: once it is over, the
		// sweep may ask the vendor and submit again, and nothing of this
		// attempt may reach the vendor or the store after that.
		runCtx, cancel := context.WithDeadline(ctx, ds[ready[0]].SubmitAttemptedAt.Add(s.submitLease))
		defer cancel()
		ctx = runCtx
	}
	s.submitReady(ctx, ds, ready, answers)
	return answers
}

// submitClaimed is submitAll for disbursements whose attempt is claimed
// already (stored claimed by an inline create).
func (s *Service) submitClaimed(ctx context.Context, ds []*models.Disbursement) []error {
	answers := make([]error, len(ds))
	ready := make([]int, len(ds))
	for i := range ds {
		ready[i] = i
	}
	s.submitReady(ctx, ds, ready, answers)
	return answers
}

// submitReady asks the vendors to pay ds[i] for each claimed index i, one
// call per vendor, applies the answers in one transaction and sets each
// one's answer.
func (s *Service) submitReady(ctx context.Context, ds []*models.Disbursement, ready []int, answers []error) {
	byVendor := map[string][]int{} // indexes into ds
	for _, i := range ready {
		byVendor[ds[i].Vendor] = append(byVendor[ds[i].Vendor], i)
	}
	var outcomes []submitted
	for name, indexes := range byVendor {
		outcomes = append(outcomes, s.callVendor(ctx, name, ds, indexes, answers)...)
	}
	plans := make([]plan, len(outcomes))
	for k, o := range outcomes {
		plans[k] = o.plan
	}
	for k, err := range s.moveMany(ctx, plans) {
		o := outcomes[k]
		switch {
		case !errors.Is(err, models.ErrStaleStatus):
		case o.result != nil:
			// A vendor callback moved the row meanwhile: judge the
			// vendor's answer against what is stored now.
			err = s.rejudge(ctx, o.plan.d, *o.result)
		default:
			// A rejection of an attempt that is no longer the latest, or of
			// a payout that moved: it decides nothing, and the retry asks
			// the vendor about the payout as it is now.
			err = fmt.Errorf("%w: %s changed while its rejection was written: %v", ErrOutcomeUnknown, o.plan.d.VendorReference, err)
		}
		answers[o.index] = err
	}
}

// submitted is a vendor's answer to one submit as the moves it makes: the
// payout's index in submitAll's list and the result it came from (nil for
// a rejection).
type submitted struct {
	index  int
	plan   plan
	result *vendors.PayoutResult
}

// callVendor asks vendor name to pay ds[i] for each of indexes, in one
// call, and returns the moves the answers make. An answer that moves
// nothing leaves its answer nil (done); an unknown outcome sets it to a
// retry.
func (s *Service) callVendor(ctx context.Context, name string, ds []*models.Disbursement, indexes []int, answers []error) []submitted {
	vendor, err := s.vendors.Get(name)
	if err != nil {
		for _, i := range indexes {
			answers[i] = err
		}
		return nil
	}
	payouts := make([]vendors.Payout, len(indexes))
	for k, i := range indexes {
		d := ds[i]
		payouts[k] = vendors.Payout{Reference: d.VendorReference, BankCode: d.BankCode, AccountNo: d.AccountNo,
			TransferType: d.TransferType, Amount: d.NetAmount, HolderName: d.AccountHolderName}
	}
	now := s.clock()
	var out []submitted
	for k, o := range vendors.SubmitAll(ctx, vendor, payouts) {
		i, d := indexes[k], ds[indexes[k]]
		switch {
		case o.Err == nil:
			if moves := s.resultMoves(d, o.Result, now); len(moves) > 0 {
				out = append(out, submitted{index: i, plan: plan{d: d, moves: moves}, result: &o.Result})
			}
		case errors.Is(o.Err, vendors.ErrNotSent):
			// Refused before it left (the vendor's breaker or concurrency
			// bound): not an attempt.
			answers[i] = s.notSent(ctx, d, o.Err)
		case errors.Is(o.Err, vendors.ErrRejected):
			// A rejection answers this attempt only: written over a later
			// one (claimed once this one's lease had passed), it would fail
			// a payout that attempt may have had paid. The count tells
			// (a later attempt is a higher one; d's claim time is this
			// process's, not as stored to the microsecond).
			attempt := models.AttemptsRead{Count: d.SubmitAttempts}
			moves := []Move{{To: models.StatusFailed, FailedReason: rejectionReason(o.Err), Reason: "vendor rejected the payout",
				IfAttempts: &attempt}}
			out = append(out, submitted{index: i, plan: plan{d: d, moves: moves}})
		default:
			answers[i] = s.unknownOutcome(ctx, d, "submit", o.Err)
		}
	}
	return out
}

// rejudge applies a vendor result to d after d moved since it was read:
// re-read, then judged as any observed result (applyObserved).
func (s *Service) rejudge(ctx context.Context, d *models.Disbursement, r vendors.PayoutResult) error {
	fresh, err := s.Get(ctx, d.ID)
	if err != nil {
		return err
	}
	*d = *fresh
	return s.applyResult(ctx, d, r)
}

// claim counts the next submit attempt of each disbursement with a guarded
// update (one per distinct read of the attempts: in practice one): only
// rows still VERIFIED, with the attempts they were read with and a running
// lock are claimed, so that a payout is asked for once however many tasks
// carry it. The guard includes the latest attempt's time
// (models.AttemptsRead), so that an attempt given back and claimed again
// since the read is not claimed over. It returns the ids claimed and
// brings those disbursements up to date.
func (s *Service) claim(ctx context.Context, ds []*models.Disbursement) (map[uuid.UUID]bool, error) {
	claimed := make(map[uuid.UUID]bool, len(ds))
	if len(ds) == 0 {
		return claimed, nil
	}
	now := s.clock()
	next := now.Add(s.submitLease + sweepGrace)
	for _, g := range byAttemptsRead(ds) {
		// One statement that locks the rows in id order (ledger's lock
		// order) before it updates them, so that the claim cannot deadlock
		// with a transaction moving some of them.
		db := s.db.WithContext(ctx)
		got, err := models.DriverOf(db).ClaimSubmits(db, g.ids, g.read, now, next)
		if err != nil {
			return nil, err
		}
		for _, id := range got {
			claimed[id] = true
		}
	}
	for _, d := range ds {
		if claimed[d.ID] {
			d.SubmitAttempts++
			d.SubmitAttemptedAt, d.NextCheckAt, d.UpdatedAt = &now, &next, now
		}
	}
	return claimed, nil
}

// attemptsGroup is the disbursements read with the same attempts.
type attemptsGroup struct {
	read models.AttemptsRead
	ids  []uuid.UUID
}

// byAttemptsRead groups ds by the attempts they were read with, in the
// order each read first appears (so that the statements run in one order).
func byAttemptsRead(ds []*models.Disbursement) []attemptsGroup {
	var groups []attemptsGroup
	for _, d := range ds {
		read := models.AttemptsRead{Count: d.SubmitAttempts, LatestAt: d.SubmitAttemptedAt}
		i := slices.IndexFunc(groups, func(g attemptsGroup) bool { return sameRead(g.read, read) })
		if i < 0 {
			groups = append(groups, attemptsGroup{read: read})
			i = len(groups) - 1
		}
		groups[i].ids = append(groups[i].ids, d.ID)
	}
	return groups
}

func sameRead(a, b models.AttemptsRead) bool {
	if a.Count != b.Count || (a.LatestAt == nil) != (b.LatestAt == nil) {
		return false
	}
	return a.LatestAt == nil || a.LatestAt.Equal(*b.LatestAt)
}

// moveMany applies the plans in one transaction; should it fail (a row a
// vendor callback moved meanwhile, a deadlock), each plan is applied on its
// own, so that one stale row does not hold up the others. It returns each
// plan's error.
func (s *Service) moveMany(ctx context.Context, plans []plan) []error {
	errs := make([]error, len(plans))
	if len(plans) == 0 {
		return errs
	}
	err := s.moveAll(ctx, plans)
	if err == nil || len(plans) == 1 {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	slog.InfoContext(ctx, "batched payout moves failed; applying them one by one", slog.Int("payouts", len(plans)), slog.Any("error", err))
	for i, p := range plans {
		errs[i] = s.moveAll(ctx, []plan{p})
	}
	return errs
}
