package sim

import (
	"context"
	"fmt"
	"strings"

	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/webhooks"
)

// reconcileEvery is how often, in fault steps, check runs the ledger's
// reconcile (the costliest check by far); the other checks run after
// every step, reconcile at the end and on every step of the liveness
// phase's last check.
const reconcileEvery = 4

// check verifies the invariants that hold after every step; quiescent
// adds those that hold once the faults stopped and everything settled.
// It returns the first broken one.
func (w *World) check(quiescent bool) error {
	for _, ref := range w.vendor.order {
		if vp := w.vendor.byRef[ref]; vp != nil && vp.executed > 1 {
			return fmt.Errorf("paid twice: the vendor carried out %d submits of %s", vp.executed, w.name(ref))
		}
	}
	if err := w.checkTransitions(); err != nil {
		return err
	}
	if w.merchant.bad != nil {
		return w.merchant.bad
	}
	if err := w.checkStore(quiescent); err != nil {
		return err
	}
	if err := w.checkWebhooks(quiescent); err != nil {
		return err
	}
	if err := w.checkPayments(quiescent); err != nil {
		return err
	}
	if !quiescent && w.step%reconcileEvery != 0 {
		return nil
	}
	rep, err := ledger.Reconcile(context.Background(), w.db, w.clock.Now())
	if err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	for _, p := range rep.Problems {
		if !quiescent && strings.Contains(p, "(late result ") {
			continue // an operator's to resolve; it must be by the end
		}
		return fmt.Errorf("reconcile: %s", uuidPattern.ReplaceAllStringFunc(p, w.name))
	}
	return nil
}

// checkStore compares every stored payout with the vendor (agrees).
func (w *World) checkStore(quiescent bool) error {
	var ds []models.Disbursement
	if err := w.db.Order("created_at, id").Find(&ds).Error; err != nil {
		return err
	}
	for _, d := range ds {
		if err := w.agrees(&d, quiescent); err != nil {
			return err
		}
	}
	return nil
}

// eventOf is the webhook event a move into status records ("" for none).
var eventOf = map[models.DisbursementStatus]string{
	models.StatusSuccess: webhooks.DisbursementSuccess, models.StatusFailed: webhooks.DisbursementFailed,
	models.StatusReturned: webhooks.DisbursementReturned,
}

// checkWebhooks: every move that tells the merchant recorded its event
// exactly once, and, once quiet, every event was delivered and taken by
// the merchant's receiver, or its retry schedule ran out.
func (w *World) checkWebhooks(quiescent bool) error {
	var moves []struct {
		DisbursementID string
		ToStatus       models.DisbursementStatus
		N              int
	}
	if err := w.db.Model(&models.DisbursementTransition{}).Select("disbursement_id, to_status, COUNT(*) AS n").
		Where("to_status IN ?", []models.DisbursementStatus{models.StatusSuccess, models.StatusFailed, models.StatusReturned}).
		Group("disbursement_id, to_status").Order("disbursement_id, to_status").Scan(&moves).Error; err != nil {
		return err
	}
	var events []models.WebhookEvent
	if err := w.db.Where("event LIKE ?", "disbursement.%").Order("created_at, id").Find(&events).Error; err != nil {
		return err
	}
	recorded := map[string]int{}
	for _, e := range events {
		recorded[e.SubjectID.String()+" "+e.Event]++
		if !quiescent {
			continue
		}
		switch {
		case e.State == models.WebhookPending:
			return fmt.Errorf("not live: webhook %s %s still pending once the faults stopped", e.Event, w.name(e.ID.String()))
		case e.State == models.WebhookDelivered && w.merchant.received[e.ID.String()] == 0:
			return fmt.Errorf("webhook %s %s stored delivered but the merchant never took it", e.Event, w.name(e.ID.String()))
		}
	}
	for _, m := range moves {
		key := m.DisbursementID + " " + eventOf[m.ToStatus]
		if recorded[key] != m.N {
			return fmt.Errorf("%s moved to %s %d time(s) but %d %s event(s) recorded", w.name(m.DisbursementID), m.ToStatus, m.N, recorded[key], eventOf[m.ToStatus])
		}
		delete(recorded, key)
	}
	for key, n := range recorded {
		return fmt.Errorf("%d webhook event(s) %s without the move", n, key)
	}
	return nil
}

// checkTransitions reads the audit lines written since the last check:
// each must be a move the table allows.
func (w *World) checkTransitions() error {
	var ts []models.DisbursementTransition
	if err := w.db.Where("id > ?", w.lastTransition).Order("id").Find(&ts).Error; err != nil {
		return err
	}
	for _, t := range ts {
		w.lastTransition = t.ID
		ok := t.FromStatus.CanMoveTo(t.ToStatus)
		if t.FromStatus == "" {
			ok = models.CanCreateAs(t.ToStatus)
		}
		if !ok {
			return fmt.Errorf("move not allowed: %s %s → %s", w.name(t.DisbursementID.String()), t.FromStatus, t.ToStatus)
		}
	}
	return nil
}

// agrees compares a stored payout with what the vendor knows of it: money
// the store says moved must have moved at the vendor, and, once quiet,
// the other way round too.
func (w *World) agrees(d *models.Disbursement, quiescent bool) error {
	vp := w.vendor.byRef[d.VendorReference]
	if vp != nil && vp.contradicted {
		return nil // the vendor contradicts itself: an operator's case
	}
	n := w.name(d.ID.String())
	vendorSays := vendors.PayoutStatus("never received")
	if vp != nil {
		vendorSays = vp.status
	}
	switch d.Status {
	case models.StatusSuccess:
		if vp == nil || (vp.status != vendors.PayoutSuccess && vp.status != vendors.PayoutReturned) {
			return fmt.Errorf("%s is SUCCESS (debited) but the vendor says %s", n, vendorSays)
		}
	case models.StatusReturned:
		if vp == nil || vp.status != vendors.PayoutReturned {
			return fmt.Errorf("%s is RETURNED (credited back) but the vendor says %s", n, vendorSays)
		}
	case models.StatusFailed, models.StatusExpired, models.StatusCancelled:
		if vp != nil && (vp.status == vendors.PayoutSuccess || vp.status == vendors.PayoutReturned) {
			return fmt.Errorf("lost: %s is %s (money released) but the vendor paid it", n, d.Status)
		}
		if quiescent && vp != nil && vp.status == vendors.PayoutPending {
			return fmt.Errorf("lost: %s is %s but the vendor still pays it", n, d.Status)
		}
	}
	if !quiescent {
		return nil
	}
	if !d.Status.Terminal() {
		return fmt.Errorf("not live: %s is still %s once the faults stopped (the vendor says %s)", n, d.Status, vendorSays)
	}
	if vp != nil && vp.status == vendors.PayoutSuccess && d.Status != models.StatusSuccess {
		return fmt.Errorf("%s is %s but the vendor paid it", n, d.Status)
	}
	if vp != nil && vp.status == vendors.PayoutReturned && d.Status != models.StatusReturned {
		return fmt.Errorf("%s is %s but the bank returned it", n, d.Status)
	}
	return nil
}
