package sim

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payouts"
	"github.com/payoutd/payoutd/vendors"
)

// An action is one kind of step: it reports false when it could not run
// now (nothing to resume, no task due), and the step draws again.
type action struct {
	name   string
	weight func(w *World) int
	run    func(w *World) bool
}

func always(n int) func(*World) int { return func(*World) int { return n } }

// rate turns a per-step probability of the run's Config into a weight
// among the others (whose weights add up to about 100).
func rate(f func(Config) float64) func(*World) int {
	return func(w *World) int { return int(f(w.cfg) * 100) }
}

var actions = []action{
	{"create", always(14), (*World).stepCreate},
	{"quote", always(3), (*World).stepQuote},
	{"inline submit", always(8), (*World).stepInlineSubmit},
	{"resume", always(18), (*World).stepResume},
	{"task", always(14), (*World).stepTask},
	{"sweep", always(5), (*World).stepSweep},
	{"expire", always(2), (*World).stepExpire},
	{"webhook sweep", always(2), (*World).stepWebhookSweep},
	{"payment create", always(4), (*World).stepPaymentCreate},
	{"payer pays", always(4), (*World).stepPayerPays},
	{"payment sweep", always(2), (*World).stepPaymentSweep},
	{"callback", always(5), (*World).stepCallback},
	{"vendor settles", always(7), (*World).stepVendorSettles},
	{"operator", always(3), (*World).stepOperator},
	{"advance", always(12), (*World).stepAdvance},
	{"vendor returns", rate(func(c Config) float64 { return c.ReturnRate }), (*World).stepVendorReturns},
	{"vendor contradicts", rate(func(c Config) float64 { return c.ContradictRate }), (*World).stepVendorContradicts},
	{"crash", rate(func(c Config) float64 { return c.CrashRate }), (*World).stepCrash},
	{"redis lost", rate(func(c Config) float64 { return c.RedisLossRate }), (*World).stepRedisLost},
}

// stepOnce draws and runs one step of the fault phase.
func (w *World) stepOnce() {
	total := 0
	for _, a := range actions {
		total += a.weight(w)
	}
	for tries := 0; tries < 20; tries++ {
		n := w.rng.IntN(total)
		for _, a := range actions {
			if n -= a.weight(w); n < 0 {
				if a.run(w) {
					return
				}
				break
			}
		}
	}
	w.stepAdvance()
}

// run runs fn as an operation of p and logs how it ended, or that it
// parked.
func (w *World) run(p *proc, name string, fn func(ctx context.Context) error) {
	w.logEvent(p, name, w.sched.start(p, name, fn))
}

func (w *World) logEvent(p *proc, name string, ev event) {
	switch {
	case ev.panicked != nil:
		panic(fmt.Sprintf("%s: %s panicked: %v", p.name, name, ev.panicked))
	case !ev.done:
		w.logf("%s: %s … parked at %s", p.name, name, ev.op.at)
	default:
		w.logf("%s: %s → %s", p.name, name, w.outcome(ev.err))
	}
}

var uuidPattern = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// outcome is an error as the history shows it: ids by their names.
func (w *World) outcome(err error) string {
	if err == nil {
		return "ok"
	}
	msg := uuidPattern.ReplaceAllStringFunc(err.Error(), w.name)
	if len(msg) > 120 {
		msg = msg[:120] + "…"
	}
	return "error: " + msg
}

// createReq is a create as a merchant sent it, kept for its retries.
type createReq struct {
	key string
	req payouts.CreateRequest
}

func (w *World) stepCreate() bool {
	var c createReq
	if len(w.creates) > 0 && w.rng.IntN(6) == 0 {
		c = w.creates[w.rng.IntN(len(w.creates))] // a merchant retrying with its key
	} else {
		c.key = fmt.Sprintf("k%d", len(w.creates)+1)
		c.req = payouts.CreateRequest{
			Params: payouts.Params{
				WalletID: w.wallets[w.rng.IntN(len(w.wallets))], Amount: models.Rupiah(int64(50+w.rng.IntN(950)) * 1000),
				BankCode: vendorBank, AccountNo: fmt.Sprintf("88%08d", w.rng.IntN(100_000_000)), TransferType: models.BIFAST,
			},
			IdempotencyKey: c.key, WaitsForSubmit: w.rng.IntN(2) == 0,
		}
		w.creates = append(w.creates, c)
	}
	name := fmt.Sprintf("create %s %s", c.key, c.req.Amount)
	w.run(w.api, name, func(ctx context.Context) error {
		created, err := w.api.svc.Create(ctx, w.client, c.req)
		if err == nil {
			w.logf("api: %s stored %s %s (replay %v)", c.key, w.name(created.Disbursement.ID.String()), created.Disbursement.Status, created.Replayed)
		}
		return err
	})
	return true
}

// stepQuote asks for a quote, which must store nothing: the check after
// the step would see a payout or a lock it made.
func (w *World) stepQuote() bool {
	params := payouts.Params{WalletID: w.wallets[w.rng.IntN(len(w.wallets))], Amount: models.Rupiah(int64(50+w.rng.IntN(950)) * 1000),
		BankCode: vendorBank, AccountNo: fmt.Sprintf("88%08d", w.rng.IntN(100_000_000)), TransferType: models.BIFAST}
	var before int64
	w.db.Model(&models.Disbursement{}).Count(&before)
	w.run(w.api, "quote "+params.Amount.String(), func(ctx context.Context) error {
		_, err := w.api.svc.Quote(ctx, w.client, params)
		return err
	})
	var after int64
	w.db.Model(&models.Disbursement{}).Count(&after)
	if after != before {
		panic(fmt.Sprintf("a quote stored a payout (%d before, %d after)", before, after))
	}
	return true
}

func (w *World) stepInlineSubmit() bool {
	p := w.api
	if len(p.claimed) == 0 {
		return false
	}
	batch := p.claimed
	p.claimed = nil
	w.run(p, fmt.Sprintf("inline submit of %d", len(batch)), func(ctx context.Context) error {
		for _, d := range p.svc.SubmitClaimed(batch) {
			if err := w.queue.EnqueueSubmit(ctx, d.ID, ""); err != nil {
				return err
			}
		}
		return nil
	})
	return true
}

func (w *World) stepResume() bool {
	if len(w.sched.parked) == 0 {
		return false
	}
	o := w.sched.parked[w.rng.IntN(len(w.sched.parked))]
	w.logEvent(o.proc, o.name, w.sched.resume(o, wakeOf(o)))
	return true
}

func (w *World) stepTask() bool {
	due := w.queue.due(w.clock.Now())
	if len(due) == 0 {
		return false
	}
	w.runTask(due[w.rng.IntN(len(due))])
	return true
}

// runTask runs a task on the worker; its outcome, once the operation
// ends, retries it or marks it done. A task whose worker dies before it
// ends is handed out again (asynq's lease), so it stays pending.
func (w *World) runTask(t *task) {
	name := fmt.Sprintf("%s %s", t.kind, w.name(t.target.String()))
	p := w.worker
	w.run(p, name, func(ctx context.Context) error {
		t.running = w.sched.current()
		var err error
		switch t.kind {
		case taskSubmit:
			err = p.disp.Submit(ctx, t.target)
		case taskPoll:
			err = p.disp.Poll(ctx, t.target)
		case taskWebhook:
			err = p.hooks.Deliver(ctx, t.target)
		case taskPaymentExpire:
			err = p.pay.Expire(ctx, t.target)
		case taskPaymentSettle:
			err = p.pay.Settle(ctx, t.target)
		}
		if o := w.sched.current(); o != nil && !o.dead() {
			w.queue.finish(t, err)
		}
		return err
	})
}

func (w *World) stepSweep() bool {
	p := w.worker
	w.run(p, "sweep", func(ctx context.Context) error {
		r, err := p.disp.Sweep(ctx)
		if err == nil && r.Unhandled > 0 {
			return fmt.Errorf("%d rows unhandled", r.Unhandled)
		}
		return err
	})
	return true
}

func (w *World) stepWebhookSweep() bool {
	p := w.worker
	w.run(p, "webhook sweep", func(ctx context.Context) error {
		_, err := p.hooks.Sweep(ctx)
		return err
	})
	return true
}

func (w *World) stepExpire() bool {
	p := w.worker
	w.run(p, "expire locks", func(ctx context.Context) error {
		_, err := p.svc.ExpireLocks(ctx)
		return err
	})
	return true
}

func (w *World) stepCallback() bool {
	v := w.vendor
	if len(v.order) == 0 {
		return false
	}
	vp := v.byRef[v.order[w.rng.IntN(len(v.order))]]
	status := vp.history[w.rng.IntN(len(vp.history))] // stale, repeated or current
	w.callback(vp, status)
	return true
}

// callback is the vendor pushing status for vp to the API; an answered
// callback of the current status is acknowledged.
func (w *World) callback(vp *vendorPayout, status vendors.PayoutStatus) {
	r := vendors.PayoutResult{Reference: vp.ref, Status: status}
	w.run(w.api, fmt.Sprintf("callback %s %s", w.name(vp.ref), status), func(ctx context.Context) error {
		err := w.api.svc.ApplyVendorResult(ctx, vendorName, r)
		if errors.Is(err, models.ErrDisbursementNotFound) {
			err = nil
		}
		if o := w.sched.current(); err == nil && o != nil && !o.dead() && status == w.vendor.reported(vp) {
			vp.acked = status
		}
		return err
	})
}

func (w *World) stepVendorSettles() bool {
	now := w.clock.Now()
	pending := w.vendor.refs(func(vp *vendorPayout) bool {
		return vp.status == vendors.PayoutPending && now.Sub(vp.since) >= time.Second
	})
	if len(pending) == 0 {
		return false
	}
	w.settle(w.vendor.byRef[pending[w.rng.IntN(len(pending))]])
	return true
}

// settle is the vendor finishing a payout it accepted: mostly paid.
func (w *World) settle(vp *vendorPayout) {
	vp.status = vendors.PayoutSuccess
	if w.rng.IntN(8) == 0 {
		vp.status = vendors.PayoutFailed
	}
	vp.since = w.clock.Now()
	vp.history = append(vp.history, vp.status)
	w.logf("vendor: %s %s", w.name(vp.ref), vp.status)
}

func (w *World) stepVendorReturns() bool {
	now := w.clock.Now()
	paid := w.vendor.refs(func(vp *vendorPayout) bool {
		return vp.status == vendors.PayoutSuccess && !vp.contradicted && now.Sub(vp.since) < 48*time.Hour
	})
	if len(paid) == 0 {
		return false
	}
	vp := w.vendor.byRef[paid[w.rng.IntN(len(paid))]]
	vp.status, vp.since = vendors.PayoutReturned, now
	vp.history = append(vp.history, vp.status)
	w.logf("vendor: %s RETURNED by the bank", w.name(vp.ref))
	return true
}

func (w *World) stepVendorContradicts() bool {
	paid := w.vendor.refs(func(vp *vendorPayout) bool { return vp.status == vendors.PayoutSuccess && !vp.contradicted })
	if len(paid) == 0 {
		return false
	}
	vp := w.vendor.byRef[paid[w.rng.IntN(len(paid))]]
	vp.contradicted = true
	vp.history = append(vp.history, vendors.PayoutFailed)
	w.logf("vendor: %s now reported FAILED although paid", w.name(vp.ref))
	return true
}

// stepOperator approves or cancels a payout waiting for review, or
// resolves the late results.
func (w *World) stepOperator() bool {
	var ids []uuid.UUID
	w.db.Model(&models.Disbursement{}).Where("status = ?", models.StatusPendingVerification).Order("created_at, id").Pluck("id", &ids)
	p := w.operator
	if len(ids) == 0 || w.rng.IntN(4) == 0 {
		w.run(p, "resolve late results", func(ctx context.Context) error { return w.resolveLate(ctx, p) })
		return true
	}
	id := ids[w.rng.IntN(len(ids))]
	if w.rng.IntN(3) == 0 {
		w.run(p, "cancel "+w.name(id.String()), func(ctx context.Context) error {
			_, err := p.svc.Cancel(ctx, id, "sim")
			return err
		})
		return true
	}
	w.run(p, "approve "+w.name(id.String()), func(ctx context.Context) error {
		_, err := p.svc.Approve(ctx, id, "sim")
		return err
	})
	return true
}

func (w *World) resolveLate(ctx context.Context, p *proc) error {
	late, err := p.svc.LateResults(ctx, false)
	if err != nil {
		return err
	}
	for _, l := range late {
		if _, err := p.svc.ResolveLateResult(ctx, l.ID, "sim", "checked with the vendor"); err != nil {
			return err
		}
	}
	return nil
}

// stepAdvance moves the clock: mostly milliseconds, sometimes seconds,
// minutes or hours, and sometimes to just before or just after the next
// boundary a rule judges by (a submit lease ending, a lock expiring, a
// check falling due), where off-by-a-moment mistakes live.
func (w *World) stepAdvance() bool {
	var d time.Duration
	switch n := w.rng.IntN(100); {
	case n < 15:
		if b := w.nextBoundary(); b > 0 {
			d = max(b+time.Duration(w.rng.IntN(2001)-1000)*time.Millisecond, time.Millisecond)
			break
		}
		fallthrough
	case n < 60:
		d = time.Duration(1+w.rng.IntN(1000)) * time.Millisecond
	case n < 85:
		d = time.Duration(1+w.rng.IntN(30)) * time.Second
	case n < 96:
		d = time.Duration(1+w.rng.IntN(30)) * time.Minute
	default:
		d = time.Duration(1+w.rng.IntN(24)) * time.Hour
	}
	w.advance(d)
	return true
}

// nextBoundary is how far ahead the nearest of the rules' boundaries is:
// a claimed submit's lease ending, a lock expiring, a check falling due (0
// when none is ahead).
func (w *World) nextBoundary() time.Duration {
	now := w.clock.Now()
	var ds []models.Disbursement
	w.db.Select("submit_attempted_at", "lock_expires_at", "next_check_at").
		Where("status IN ?", []models.DisbursementStatus{models.StatusVerified, models.StatusPendingVerification, models.StatusRequested}).Find(&ds)
	var best time.Duration
	consider := func(t *time.Time) {
		if t != nil && t.After(now) && (best == 0 || t.Sub(now) < best) {
			best = t.Sub(now)
		}
	}
	for _, d := range ds {
		if d.SubmitAttemptedAt != nil {
			end := d.SubmitAttemptedAt.Add(w.api.svc.SubmitLease())
			consider(&end)
		}
		consider(&d.LockExpiresAt)
		consider(d.NextCheckAt)
	}
	return best
}

// advance moves the clock by d, letting the vendor take each delayed
// submit at its deadline on the way.
func (w *World) advance(d time.Duration) {
	until := w.clock.Now().Add(d)
	for {
		next, call := w.vendor.nextDeadline(), w.sched.nextDeadline()
		switch {
		case call != nil && !call.deadline.After(until) && (next.IsZero() || !next.Before(call.deadline)):
			w.clock.now = call.deadline
			w.logf("clock: %s's vendor call times out", call.name)
			w.logEvent(call.proc, call.name, w.sched.resume(call, timedOut))
			continue
		case !next.IsZero() && !next.After(until):
			w.clock.now = next
			w.vendor.deliverDue(next)
			continue
		}
		break
	}
	w.clock.now = until
	w.queue.forget(until)
	w.logf("clock: +%s", d)
}

// wakeOf is how a parked operation is resumed: dead if its process died.
func wakeOf(o *op) wake {
	if o.dead() {
		return died
	}
	return goOn
}

func (w *World) stepCrash() bool {
	p := []*proc{w.api, w.worker, w.api, w.worker, w.operator}[w.rng.IntN(5)]
	w.crash(p, "between steps")
	return true
}

func (w *World) stepRedisLost() bool {
	w.queue.lose()
	w.logf("redis: state lost")
	return true
}
