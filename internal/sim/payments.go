package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payments"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/webhooks"
)

// Payment tasks, as the worker's handlers are named.
const (
	taskPaymentExpire = "payment:expire"
	taskPaymentSettle = "payment:settle"
)

// acquired is a payment as the acquirer knows it: what it told the
// service, and whether the payer paid.
type acquired struct {
	id      uuid.UUID
	paid    bool   // the payer's money is at the acquirer
	result  string // the result it reports (SUCCESS or FAILED), "" before
	paidAt  time.Time
	price   models.Amount
	acked   bool // the service answered its notification
	reports int
}

func (q *queue) EnqueuePaymentExpire(ctx context.Context, id uuid.UUID, at time.Time) error {
	return q.add(taskPaymentExpire, id, "", max(at.Sub(q.w.clock.Now()), 0))
}

func (q *queue) EnqueuePaymentSettle(ctx context.Context, id uuid.UUID, at time.Time) error {
	return q.add(taskPaymentSettle, id, "", max(at.Sub(q.w.clock.Now()), 0))
}

// stepPaymentCreate is a payer opening the merchant's checkout: the API
// creates a payment with a QRIS.
func (w *World) stepPaymentCreate() bool {
	price := models.Rupiah(int64(15+w.rng.IntN(485)) * 1000)
	req := payments.CreateRequest{Price: price, PayerID: fmt.Sprintf("payer-%d", len(w.acquirer)+1), Flow: models.PaymentFlowEmbed,
		ExpiresIn: time.Duration(1+w.rng.IntN(60)) * time.Minute}
	w.run(w.api, "payment create "+price.String(), func(ctx context.Context) error {
		created, err := w.api.pay.Create(ctx, w.client, req)
		if err == nil {
			w.acquirer = append(w.acquirer, &acquired{id: created.Payment.ID, price: price})
			w.logf("api: payment %s PENDING, expires in %s", w.name(created.Payment.ID.String()), req.ExpiresIn)
		}
		return err
	})
	return true
}

// stepPayerPays is the acquirer learning a payer's answer (paid, mostly)
// and notifying the API, or notifying again (a repeat, or a late one).
func (w *World) stepPayerPays() bool {
	if len(w.acquirer) == 0 {
		return false
	}
	a := w.acquirer[w.rng.IntN(len(w.acquirer))]
	if a.result == "" {
		a.result, a.paidAt = payments.ResultSuccess, w.clock.Now()
		a.paid = true
		if w.rng.IntN(6) == 0 {
			a.result, a.paid = payments.ResultFailed, false
		}
		w.logf("acquirer: payment %s %s", w.name(a.id.String()), a.result)
	}
	w.notifyPayment(a)
	return true
}

// notifyPayment is the acquirer's notification of a's result to the API.
func (w *World) notifyPayment(a *acquired) {
	r := vendors.AcquirerResult{PaymentID: a.id, Status: a.result, PaidAt: a.paidAt, Amount: a.price}
	if a.result == payments.ResultSuccess {
		r.RetrievalReferenceNo = fmt.Sprintf("%012d", 1+len(w.names))
	} else {
		r.FailureReason = "payer cancelled"
	}
	a.reports++
	w.run(w.api, fmt.Sprintf("payment notification %s %s", w.name(a.id.String()), a.result), func(ctx context.Context) error {
		applied, err := w.api.pay.ApplyResult(ctx, r, "callback")
		if err == nil {
			if o := w.sched.current(); o != nil && !o.dead() {
				a.acked = true
			}
			w.logf("api: payment %s result %s", w.name(a.id.String()), applied)
		}
		return err
	})
}

func (w *World) stepPaymentSweep() bool {
	p := w.worker
	w.run(p, "payment sweep", func(ctx context.Context) error {
		_, err := p.pay.Sweep(ctx)
		return err
	})
	return true
}

// checkPayments: a payment stored paid was paid at the acquirer, one the
// acquirer reports failed is not stored paid, each final payment recorded
// its one event; once quiet, every payment is final and every paid one
// settled.
func (w *World) checkPayments(quiescent bool) error {
	var ps []models.Payment
	if err := w.db.Order("created_at, id").Find(&ps).Error; err != nil {
		return err
	}
	byID := map[uuid.UUID]*acquired{}
	for _, a := range w.acquirer {
		byID[a.id] = a
	}
	events := map[string]int{}
	var evs []models.WebhookEvent
	if err := w.db.Where("event LIKE ?", "payment.%").Find(&evs).Error; err != nil {
		return err
	}
	for _, e := range evs {
		events[e.SubjectID.String()+" "+e.Event]++
	}
	want := map[models.PaymentStatus]string{models.PaymentSuccess: webhooks.PaymentSuccess,
		models.PaymentExpired: webhooks.PaymentExpired, models.PaymentFailed: webhooks.PaymentFailed}
	for _, p := range ps {
		n := w.name(p.ID.String())
		a := byID[p.ID]
		if p.Status == models.PaymentSuccess && (a == nil || !a.paid) {
			return fmt.Errorf("payment %s is SUCCESS but the payer never paid", n)
		}
		for status, event := range want {
			got, expect := events[p.ID.String()+" "+event], 0
			if p.Status == status {
				expect = 1
			}
			if got != expect {
				return fmt.Errorf("payment %s is %s with %d %s event(s)", n, p.Status, got, event)
			}
		}
		if !quiescent {
			continue
		}
		switch {
		case p.Status == models.PaymentPending:
			return fmt.Errorf("not live: payment %s still PENDING once the faults stopped", n)
		case p.Status == models.PaymentSuccess && p.SettledAt == nil:
			return fmt.Errorf("not live: payment %s paid but not settled once the faults stopped (settle at %v)", n, p.SettleAt)
		}
	}
	return nil
}
