package payouts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
)

// ErrOutcomeUnknown: the vendor could not say what happened to a submit or
// a status check. The caller retries later; the retry asks the vendor for
// the reference before it submits anything.
var ErrOutcomeUnknown = errors.New("payout outcome unknown; will ask the vendor again")

// PollDelay is the wait before status check n (0-based) of a REQUESTED
// payout: quick at first, then backing off to five minutes.
func PollDelay(n int) time.Duration {
	delays := []time.Duration{time.Second, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
		15 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute}
	if n < len(delays) {
		return delays[n]
	}
	return 5 * time.Minute
}

// Submit carries a VERIFIED disbursement to the vendor: the payout:submit
// task. It is idempotent: any other status is left alone, and a submit
// attempted before is resolved by asking the vendor for the reference; the
// vendor is asked to pay again only when it has never seen the reference
// and the earlier call is surely over (the submit lease). It returns
// ErrOutcomeUnknown (wrapped) when the task should be retried. It is the
// one-at-a-time submit; SubmitFresh is the same for a batch of first
// submits: either way the claim, the vendor call and the moves are
// submitAll's. (When a submit runs is package dispatch's.)
func (s *Service) Submit(ctx context.Context, id uuid.UUID) error {
	d, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	switch {
	case d.Status != models.StatusVerified:
		return nil
	case d.SubmitAttempts > 0:
		return s.resolveAttempted(ctx, d)
	case !s.clock().Before(d.LockExpiresAt):
		return s.expire(ctx, d, "lock expired before submission")
	}
	return s.submitAll(ctx, []*models.Disbursement{d})[0]
}

// resolveAttempted asks the vendor what became of an earlier submit whose
// answer never arrived.
func (s *Service) resolveAttempted(ctx context.Context, d *models.Disbursement) error {
	vendor, err := s.vendors.Get(d.Vendor)
	if err != nil {
		return err
	}
	// The lease is read before the vendor is asked: its "never seen" says
	// the earlier call is over only if the lease had passed when it was
	// asked. Read after the answer, a call landing meanwhile is missed.
	asked := s.clock()
	result, err := vendor.Status(ctx, d.VendorReference)
	switch {
	case err == nil:
		return s.applyResult(ctx, d, result)
	case errors.Is(err, vendors.ErrNotSent):
		// Not asked (the vendor's breaker): still unknown, asked later.
		return fmt.Errorf("%w: status of %s not asked: %w", ErrOutcomeUnknown, d.VendorReference, err)
	case !errors.Is(err, vendors.ErrUnknownPayout):
		return s.unknownOutcome(ctx, d, "status", err)
	case asked.Sub(*d.SubmitAttemptedAt) < s.submitLease:
		// The earlier call may still be on its way to the vendor.
		return fmt.Errorf("%w: submit of %s may still be in flight", ErrOutcomeUnknown, d.VendorReference)
	case !s.clock().Before(d.LockExpiresAt):
		return s.expire(ctx, d, "lock expired; the vendor never received the payout")
	default:
		return s.submitAll(ctx, []*models.Disbursement{d})[0]
	}
}

// expire moves d to EXPIRED unless a submit started since d was read
// (the attempts guarded as a claim guards them, count and time, so that an
// attempt given back and claimed again is not expired under it).
func (s *Service) expire(ctx context.Context, d *models.Disbursement, reason string) error {
	read := models.AttemptsRead{Count: d.SubmitAttempts, LatestAt: d.SubmitAttemptedAt}
	err := s.move(ctx, d, Move{To: models.StatusExpired, Reason: reason, IfAttempts: &read})
	if errors.Is(err, models.ErrStaleStatus) {
		return fmt.Errorf("%w: %s changed while expiring", ErrOutcomeUnknown, d.VendorReference)
	}
	return err
}

// unknownOutcome records when to look again and asks for a retry.
func (s *Service) unknownOutcome(ctx context.Context, d *models.Disbursement, call string, cause error) error {
	slog.WarnContext(ctx, "vendor outcome unknown", slog.String("disbursement_id", d.ID.String()),
		slog.String("call", call), slog.Any("error", cause))
	return fmt.Errorf("%w: %s %s: %v", ErrOutcomeUnknown, call, d.VendorReference, cause)
}

// applyResult brings d to what the vendor reports, as a status check
// (poll, submit answer) learnt it: applyObserved with SourcePoll.
func (s *Service) applyResult(ctx context.Context, d *models.Disbursement, r vendors.PayoutResult) error {
	return s.applyObserved(ctx, d, r, models.SourcePoll)
}

// applyObserved judges a vendor result against d as stored. A payout
// still open moves to what the vendor reports (accepted: REQUESTED; paid:
// SUCCESS; failed: FAILED; returned: SUCCESS then RETURNED); a paid one
// moves to RETURNED when the vendor reports it returned. A result equal
// to the stored final status changes and records nothing. Any other result
// for a final payout contradicts it: it is never applied (money never
// moves by itself) but recorded for operators (recordLate). When the row
// moved meanwhile, the result is judged once more against the new status.
func (s *Service) applyObserved(ctx context.Context, d *models.Disbursement, r vendors.PayoutResult, source string) error {
	for attempt := 0; ; attempt++ {
		switch {
		case !d.Status.Terminal() || (d.Status == models.StatusSuccess && r.Status == vendors.PayoutReturned):
			moves := s.resultMoves(d, r, s.clock())
			if len(moves) == 0 {
				return nil
			}
			err := s.moveGrouped(d, moves...)
			if !errors.Is(err, models.ErrStaleStatus) || attempt > 0 {
				return err
			}
			fresh, err := s.Get(ctx, d.ID)
			if err != nil {
				return err
			}
			*d = *fresh
		case sameResult(d.Status, r.Status), olderNews(d.Status, r.Status):
			return nil
		default:
			return s.recordLate(ctx, d, r, source)
		}
	}
}

// sameResult reports whether a vendor status is what a final stored
// status already says.
func sameResult(stored models.DisbursementStatus, reported vendors.PayoutStatus) bool {
	switch stored {
	case models.StatusSuccess:
		return reported == vendors.PayoutSuccess
	case models.StatusFailed:
		return reported == vendors.PayoutFailed
	case models.StatusReturned:
		return reported == vendors.PayoutReturned
	}
	return false // EXPIRED, CANCELLED: the vendor never had it
}

// olderNews reports whether a vendor status is older than the final stored
// status, not a contradiction of it: SUCCESS, FAILED and RETURNED are what
// the vendor itself reported, and a vendor never takes a final payout back
// to pending, so a pending report (a submit's acceptance overtaken by the
// vendor's notification of the result) is news from before. EXPIRED and
// CANCELLED are ours: the vendor was never to have the payout, and its
// pending report is a contradiction to record.
func olderNews(stored models.DisbursementStatus, reported vendors.PayoutStatus) bool {
	return !reported.Final() && (stored == models.StatusSuccess || stored == models.StatusFailed || stored == models.StatusReturned)
}

// recordLate keeps a result contradicting d's final status in
// disbursement_late_results, once per disbursement and reported status
// (a repeat counts and moves last_seen_at), logs it at error level and
// counts it. Nothing else changes: an operator looks at it with the
// vendor and resolves it (payoutd admin disbursement resolve-late-result).
func (s *Service) recordLate(ctx context.Context, d *models.Disbursement, r vendors.PayoutResult, source string) error {
	now := s.clock()
	var rows []struct {
		ID        int64
		SeenCount int
	}
	err := s.db.WithContext(ctx).Raw(`INSERT INTO disbursement_late_results
		(disbursement_id, vendor, vendor_reference, stored_status, reported_status, reason, source,
		 first_seen_at, last_seen_at, seen_count)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1)
		ON CONFLICT (disbursement_id, reported_status) DO UPDATE
			SET last_seen_at = excluded.last_seen_at, seen_count = disbursement_late_results.seen_count + 1
		RETURNING id, seen_count`,
		d.ID, d.Vendor, d.VendorReference, string(d.Status), string(r.Status), r.FailureReason, source, now, now).
		Scan(&rows).Error
	if err != nil {
		return fmt.Errorf("record late vendor result for %s: %w", d.ID, err)
	}
	s.metrics.DisbursementLateResult(d.Vendor, string(d.Status), string(r.Status))
	attrs := []any{slog.String("disbursement_id", d.ID.String()), slog.String("vendor", d.Vendor),
		slog.String("vendor_reference", d.VendorReference), slog.String("stored_status", string(d.Status)),
		slog.String("reported_status", string(r.Status)), slog.String("reason", r.FailureReason),
		slog.String("source", source)}
	if len(rows) == 1 {
		attrs = append(attrs, slog.Int64("late_result_id", rows[0].ID), slog.Int("seen_count", rows[0].SeenCount))
	}
	slog.ErrorContext(ctx, "vendor result contradicts the disbursement's final status: recorded, not applied", attrs...)
	return nil
}

// resultMoves are the moves that bring d to what the vendor reports at now
// (one now for a whole batch, so that its moves group together). A vendor
// that reports RETURNED for a payout still REQUESTED paid it and had it
// returned: both steps are taken, so the ledger shows the payment and the
// return. The payout of a vendor that does not notify, reaching SUCCESS,
// is watched for a return (returnWatchStart).
func (s *Service) resultMoves(d *models.Disbursement, r vendors.PayoutResult, now time.Time) []Move {
	var moves []Move
	at := d.Status
	if at == models.StatusVerified && r.Status != vendors.PayoutFailed {
		moves = append(moves, Move{To: models.StatusRequested, Reason: "vendor accepted the payout", NextCheckAt: now.Add(PollDelay(0) + sweepGrace)})
		at = models.StatusRequested
	}
	switch r.Status {
	case vendors.PayoutSuccess:
		if at == models.StatusRequested {
			moves = append(moves, Move{To: models.StatusSuccess, Reason: "vendor reports the payout paid", NextCheckAt: s.returnWatchStart(d, now)})
		}
	case vendors.PayoutFailed:
		if at == models.StatusVerified || at == models.StatusRequested {
			moves = append(moves, Move{To: models.StatusFailed, FailedReason: orDefault(r.FailureReason, "vendor reports the payout failed"), Reason: "vendor reports the payout failed"})
		}
	case vendors.PayoutReturned:
		if at == models.StatusRequested {
			moves = append(moves, Move{To: models.StatusSuccess, Reason: "vendor reports the payout paid, and since returned"})
			at = models.StatusSuccess
		}
		if at == models.StatusSuccess {
			moves = append(moves, Move{To: models.StatusReturned, FailedReason: orDefault(r.FailureReason, "returned by the recipient bank"), Reason: "vendor reports the payout returned"})
		}
	}
	return moves
}

// Return watch: a vendor that does not notify (vendors.Notifies: it has no
// callbacks, or is configured without them) is asked about its paid
// payouts for returnWatch after they were paid: first
// firstReturnCheck after, then each time after as long again as the payout
// has been paid (1, 2, 4, 8 minutes, ...), at most returnCheckCap apart.
const (
	firstReturnCheck = time.Minute
	returnCheckCap   = 6 * time.Hour
)

// returnWatchStart is when a payout of d's vendor reaching SUCCESS at now
// is first asked about a return: zero (never) for a vendor that notifies,
// which reports a return the same way, or with the watch off.
func (s *Service) returnWatchStart(d *models.Disbursement, now time.Time) time.Time {
	if s.returnWatch <= 0 {
		return time.Time{}
	}
	if v, err := s.vendors.Get(d.Vendor); err != nil {
		return time.Time{}
	} else if vendors.Notifies(v) {
		return time.Time{}
	}
	return now.Add(firstReturnCheck)
}

// nextReturnCheck is when a paid payout is asked about a return next, or
// nil when its watch is over.
func (s *Service) nextReturnCheck(d *models.Disbursement, now time.Time) *time.Time {
	if d.CompletedAt == nil || s.returnWatch <= 0 || !now.Before(d.CompletedAt.Add(s.returnWatch)) {
		return nil
	}
	next := now.Add(min(max(now.Sub(*d.CompletedAt), firstReturnCheck), returnCheckCap))
	return &next
}

// checkReturn asks a vendor that does not notify whether a paid payout it is watching
// was returned, applies what it says (a return, or a contradiction kept
// for operators) and sets the next check, or ends the watch.
func (s *Service) checkReturn(ctx context.Context, d *models.Disbursement) error {
	vendor, err := s.vendors.Get(d.Vendor)
	if err != nil {
		return err
	}
	result, err := vendor.Status(ctx, d.VendorReference)
	if err == nil {
		err = s.applyObserved(ctx, d, result, models.SourcePoll)
	}
	if err != nil {
		slog.WarnContext(ctx, "return check of a paid payout failed; will ask again", slog.String("disbursement_id", d.ID.String()), slog.Any("error", err))
	}
	if d.Status != models.StatusSuccess {
		return nil
	}
	return s.db.WithContext(ctx).Model(&models.Disbursement{}).Where("id = ? AND status = ?", d.ID, models.StatusSuccess).
		Updates(map[string]any{"next_check_at": s.nextReturnCheck(d, s.clock())}).Error
}

// Poll asks the vendor for the status of a REQUESTED payout: the
// payout:poll task. A payout still in flight gets its next poll enqueued
// with a growing delay; one the vendor reports final is moved there. A
// paid payout under the return watch is asked about a return.
func (s *Service) Poll(ctx context.Context, id uuid.UUID) error {
	d, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	if d.Status == models.StatusVerified {
		return s.Submit(ctx, id)
	}
	if d.Status == models.StatusSuccess && d.NextCheckAt != nil {
		return s.checkReturn(ctx, d)
	}
	if d.Status != models.StatusRequested {
		return nil
	}
	vendor, err := s.vendors.Get(d.Vendor)
	if err != nil {
		return err
	}
	result, err := vendor.Status(ctx, d.VendorReference)
	if errors.Is(err, vendors.ErrNotSent) {
		return s.deferPoll(ctx, d, err)
	}
	if errors.Is(err, vendors.ErrUnknownPayout) {
		// The vendor accepted it once: an operator must look.
		slog.ErrorContext(ctx, "vendor no longer knows a requested payout", slog.String("disbursement_id", d.ID.String()))
	} else if err != nil {
		slog.WarnContext(ctx, "payout status check failed", slog.String("disbursement_id", d.ID.String()), slog.Any("error", err))
	}
	if err == nil && result.Status != vendors.PayoutPending {
		return s.applyResult(ctx, d, result)
	}
	return s.schedulePoll(ctx, d)
}

// schedulePoll counts a status check, sets when the next is due, and
// enqueues it. Should the enqueue fail, the sweep enqueues it when due.
func (s *Service) schedulePoll(ctx context.Context, d *models.Disbursement) error {
	now := s.clock()
	delay := PollDelay(d.Checks + 1)
	err := s.db.WithContext(ctx).Model(&models.Disbursement{}).
		Where("id = ? AND status = ?", d.ID, models.StatusRequested).
		Updates(map[string]any{"checks": gorm.Expr("checks + 1"), "next_check_at": now.Add(delay + sweepGrace), "updated_at": now}).Error
	if err != nil || s.queue == nil {
		return err
	}
	return s.queue.EnqueuePoll(ctx, d.ID, strconv.Itoa(d.Checks+1), delay)
}

func (s *Service) enqueuePoll(ctx context.Context, d *models.Disbursement) {
	if s.queue == nil {
		return
	}
	if err := s.queue.EnqueuePoll(ctx, d.ID, "0", PollDelay(0)); err != nil {
		slog.WarnContext(ctx, "enqueue payout:poll failed; the sweep will retry",
			slog.String("disbursement_id", d.ID.String()), slog.Any("error", err))
	}
}

// move applies one or more moves to d in one transaction: moveAll of one.
func (s *Service) move(ctx context.Context, d *models.Disbursement, moves ...Move) error {
	return s.moveAll(ctx, []plan{{d: d, moves: moves}})
}

// plan is the moves one disbursement makes, in order.
type plan struct {
	d     *models.Disbursement
	moves []Move
}

// moveAll applies every plan in one transaction, alike plans (same status,
// same moves) together, so that a batch costs a few statements whatever
// its size; either all plans commit or none. The transaction works on
// copies: the callers' disbursements change only once it committed. Then
// it counts the transitions, enqueues the webhook events of the ones that
// reached SUCCESS or FAILED, and the first status check of those that
// reached REQUESTED.
func (s *Service) moveAll(ctx context.Context, plans []plan) error {
	now := s.clock()
	work := make([]models.Disbursement, len(plans))
	var deliver []uuid.UUID
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		groups := map[string][]*models.Disbursement{}
		paths := map[string][]Move{}
		var order []string
		for i, p := range plans {
			work[i] = *p.d
			key := fmt.Sprintf("%s %v", work[i].Status, p.moves)
			if groups[key] == nil {
				order = append(order, key)
				paths[key] = p.moves
			}
			groups[key] = append(groups[key], &work[i])
		}
		all := make([]pathGroup, len(order))
		for i, key := range order {
			all[i] = pathGroup{ds: groups[key], path: paths[key]}
		}
		var err error
		deliver, err = transitionAll(tx, all, now)
		return err
	})
	if err != nil {
		return err
	}
	var left []uuid.UUID
	for i, p := range plans {
		from := p.d.Status
		if from == models.StatusVerified && work[i].Status != models.StatusVerified {
			left = append(left, p.d.ID)
		}
		*p.d = work[i]
		for _, m := range p.moves {
			s.metrics.DisbursementTransition(string(from), string(m.To))
			from = m.To
		}
		if p.d.Status == models.StatusRequested && len(p.moves) > 0 && p.moves[len(p.moves)-1].To == models.StatusRequested {
			s.enqueuePoll(ctx, p.d)
		}
	}
	if s.handoff != nil && len(left) > 0 {
		s.handoff.LeftVerified(ctx, left)
	}
	s.enqueueEvents(ctx, deliver)
	return nil
}

// WebhookBatchQueue is a Queue that enqueues many webhook deliveries in
// one call (tasks.Client: several at once). A batch's events one after
// another were a Redis round trip each on the batch's path, and an inline
// batch answers its merchants only after them (with half the merchants
// hooked they doubled the batch's time); how to do better is the queue's
// business, so that the rules never start goroutines of their own.
type WebhookBatchQueue interface {
	// EnqueueWebhooks enqueues webhook:deliver for each event and reports
	// how many failed, and the first failure.
	EnqueueWebhooks(ctx context.Context, ids []uuid.UUID) (failed int, first error)
}

// enqueueEvents enqueues the webhook events a committed move recorded for
// delivery: in one call when the queue takes batches, otherwise one after
// another. A failure is only logged: the webhook sweep enqueues the event
// later.
func (s *Service) enqueueEvents(ctx context.Context, ids []uuid.UUID) {
	if s.queue == nil || len(ids) == 0 {
		return
	}
	var failed int
	var first error
	if b, ok := s.queue.(WebhookBatchQueue); ok {
		failed, first = b.EnqueueWebhooks(ctx, ids)
	} else {
		for _, id := range ids {
			if err := s.queue.EnqueueWebhook(ctx, id, ""); err != nil {
				if failed++; first == nil {
					first = err
				}
			}
		}
	}
	if failed > 0 {
		slog.WarnContext(ctx, "enqueue webhook:deliver failed; the sweep will retry",
			slog.Int("events", failed), slog.Any("error", first))
	}
}

// ApplyVendorResult handles a result the vendor pushed (its verified
// callback). The callback is a hint, not the truth: the vendor's own
// status query for the reference is asked, and what it says is applied as
// a poll's result would be (applyObserved), so a forged or stale callback
// cannot finalise a payout. The reference must be one of this vendor's
// (ErrDisbursementNotFound). When the status query cannot answer, it
// returns ErrGatewayUnavailable: the vendor is answered 503 and sends the
// callback again, while polls go on meanwhile. A callback about a payout
// never sent to the vendor is logged and ignored.
func (s *Service) ApplyVendorResult(ctx context.Context, vendor string, r vendors.PayoutResult) error {
	var d models.Disbursement
	err := s.db.WithContext(ctx).Where("vendor = ? AND vendor_reference = ?", vendor, r.Reference).Take(&d).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return models.ErrDisbursementNotFound
	}
	if err != nil {
		return err
	}
	attrs := []any{slog.String("disbursement_id", d.ID.String()), slog.String("vendor", vendor),
		slog.String("stored_status", string(d.Status)), slog.String("callback_status", string(r.Status))}
	if d.SubmitAttempts == 0 {
		slog.WarnContext(ctx, "vendor callback for a payout never sent to the vendor; ignored", attrs...)
		return nil
	}
	v, err := s.vendors.Get(vendor)
	if err != nil {
		return err
	}
	confirmed, err := v.Status(ctx, d.VendorReference)
	if err != nil {
		slog.WarnContext(ctx, "vendor callback not confirmed: the vendor's status query failed; the vendor is asked to send it again",
			append(attrs, slog.Any("error", err))...)
		return models.ErrGatewayUnavailable
	}
	if confirmed.Status != r.Status {
		slog.WarnContext(ctx, "vendor callback differs from the vendor's status query; the status query is applied",
			append(attrs, slog.String("status_query", string(confirmed.Status)))...)
	}
	err = s.applyObserved(ctx, &d, confirmed, models.SourceCallback)
	if errors.Is(err, models.ErrStaleStatus) {
		return nil // moved twice meanwhile: the poll or a twin callback applied it
	}
	return err
}

func rejectionReason(err error) string {
	msg := err.Error()
	prefix := vendors.ErrRejected.Error() + ": "
	if len(msg) > len(prefix) && msg[:len(prefix)] == prefix {
		return msg[len(prefix):]
	}
	return msg
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
