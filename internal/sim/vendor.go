package sim

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
)

// vendorName is the simulated vendor's name on every wallet.
const vendorName = "simvendor"

// vendorBank is the one bank it pays to.
const vendorBank = "bca"

// requestWindow bounds how long a submit may travel before the vendor
// takes it (a request held in a proxy, a retransmission): the service's
// submit lease (DISBURSEMENT_SUBMIT_LEASE, 30 s by default) is by its
// definition at least that long, or "the vendor does not know the
// reference" proves nothing. The simulation holds a request up to the
// whole lease, the edge of what the protocol allows, but never past the
// deadline the service set on the call (its claim's lease end): a request
// still on its way then is lost with its connection. The lease counts
// from the claim, and a call may leave later (an inline submit, up to
// half the lease later), so without that cut a request could land after
// the lease although it left within it.
const requestWindow = 30 * time.Second

// callTimeout is the service's client giving up on a vendor call: the
// clock never passes it with the call still parked (the simulation
// resumes the call as timed out first). Within requestWindow.
const callTimeout = 5 * time.Second

// vendorPayout is one reference as the vendor knows it.
type vendorPayout struct {
	ref    string
	amount models.Amount
	status vendors.PayoutStatus
	// executed counts the submits the vendor carried out for the
	// reference: a vendor that takes every request it receives at its
	// word pays once per submit, so more than one is a double payout.
	executed int
	// since is when the vendor took it or last changed its status.
	since time.Time
	// contradicted: the vendor later reports a status contradicting the
	// one it reported final (a bank's correction).
	contradicted bool
	// history is every status the vendor ever reported, for callbacks
	// that arrive out of order.
	history []vendors.PayoutStatus
	// acked is the last status a callback of it was answered for: a
	// vendor that notifies sends the current one until it is.
	acked vendors.PayoutStatus
}

// delayedSubmit is a submit still on its way to the vendor.
type delayedSubmit struct {
	p        vendors.Payout
	deadline time.Time // the vendor takes it by then
}

// vendor is the simulated payout vendor: it answers as real ones do
// (accepted, paid at once, rejected, 5xx, a timeout with or without the
// payout made), delays and loses requests and answers, pays and fails in
// its own time, returns paid payouts days later, and keeps count of what
// it paid.
type vendor struct {
	w       *World
	byRef   map[string]*vendorPayout
	order   []string // references in the order first seen
	delayed []*delayedSubmit
	// notifies: the vendor pushes results (callbacks); otherwise returns
	// are found by the service's return watch.
	notifies bool
}

var (
	_ vendors.Vendor         = (*vendor)(nil)
	_ vendors.BatchSubmitter = (*vendor)(nil)
	_ vendors.CallbackParser = (*vendor)(nil)
	_ vendors.Notifying      = (*vendor)(nil)
	_ vendors.Inquirer       = (*vendor)(nil)
)

func (v *vendor) Name() string { return vendorName }

func (v *vendor) Banks(context.Context) ([]vendors.Bank, error) {
	return []vendors.Bank{{Code: vendorBank, Name: "Bank Central Asia", SWIFT: "CENAIDJA",
		TransferTypes: []models.TransferType{models.BIFAST, models.RTOL}}}, nil
}

// Inquire resolves every account; a fault makes it unavailable.
func (v *vendor) Inquire(ctx context.Context, req vendors.InquiryRequest) (vendors.Account, error) {
	if v.w.chance(v.w.cfg.VendorDownRate) {
		return vendors.Account{}, vendors.ErrUnavailable
	}
	return vendors.Account{HolderName: "SIM HOLDER " + req.AccountNo[len(req.AccountNo)-2:]}, nil
}

func (v *vendor) ParseCallback(string, http.Header, []byte, time.Time) (vendors.PayoutResult, error) {
	return vendors.PayoutResult{}, vendors.ErrInvalidCallback // the simulation calls the service directly
}

func (v *vendor) Notifies() bool { return v.notifies }

func (v *vendor) Submit(ctx context.Context, p vendors.Payout) (vendors.PayoutResult, error) {
	out := v.SubmitBatch(ctx, []vendors.Payout{p})
	return out[0].Result, out[0].Err
}

// SubmitBatch takes the payouts in one call: the request travels
// (parked), the vendor acts on each as its fate says, and the answer
// travels back (parked). A process that died meanwhile hears nothing.
func (v *vendor) SubmitBatch(ctx context.Context, ps []vendors.Payout) []vendors.SubmitOutcome {
	out := make([]vendors.SubmitOutcome, len(ps))
	refs := make([]string, len(ps))
	for i, p := range ps {
		refs[i] = v.w.name(p.Reference)
	}
	w := v.w
	o := w.sched.current()
	o.deadline = w.clock.callDeadline(ctx, callTimeout)
	defer func() { o.deadline = time.Time{} }()
	switch _, why := w.sched.park(fmt.Sprintf("submit %v sent", refs)); why {
	case died:
		return lost(out)
	case timedOut: // the client gave up; the request reached the vendor, or not
		if w.rng.IntN(2) == 0 {
			for _, p := range ps {
				v.take(p)
			}
		}
		return lost(out)
	}
	switch {
	case w.chance(w.cfg.VendorDownRate): // 5xx or refused: nothing made
		w.logf("vendor: submit %v refused (503)", refs)
		return lost(out)
	case w.chance(w.cfg.DelayRate): // the request is held on its way
		arrives := w.clock.Now().Add(time.Duration(1+w.rng.IntN(int(requestWindow/time.Millisecond))) * time.Millisecond)
		if cut, ok := simDeadline(ctx); ok && !arrives.Before(cut) {
			// The service's deadline on the call (its claim's lease) comes
			// first: the connection closes with the request undelivered.
			w.logf("vendor: submit %v held on the way past the call's deadline: never arrives", refs)
			return lost(out)
		}
		for _, p := range ps {
			v.delayed = append(v.delayed, &delayedSubmit{p: p, deadline: arrives})
		}
		w.logf("vendor: submit %v delayed on the way", refs)
		return lost(out)
	}
	for i, p := range ps {
		out[i] = v.take(p)
	}
	answerLost := w.chance(w.cfg.LostAnswerRate)
	if _, why := w.sched.park(fmt.Sprintf("submit %v answered", refs)); why != goOn || answerLost || o.dead() {
		if answerLost {
			w.logf("vendor: answer to submit %v lost", refs)
		}
		return lost(out)
	}
	return out
}

func lost(out []vendors.SubmitOutcome) []vendors.SubmitOutcome {
	for i := range out {
		out[i] = vendors.SubmitOutcome{Err: fmt.Errorf("%w: sim: no answer", vendors.ErrUnavailable)}
	}
	return out
}

// take is the vendor receiving one submit.
func (v *vendor) take(p vendors.Payout) vendors.SubmitOutcome {
	w := v.w
	vp := v.byRef[p.Reference]
	if vp == nil {
		vp = &vendorPayout{ref: p.Reference, amount: p.Amount}
		v.byRef[p.Reference] = vp
		v.order = append(v.order, p.Reference)
	}
	if w.chance(w.cfg.RejectRate) && vp.executed == 0 {
		vp.status = vendors.PayoutFailed
		vp.since = w.clock.Now()
		vp.history = append(vp.history, vp.status)
		w.logf("vendor: %s rejected", w.name(p.Reference))
		return vendors.SubmitOutcome{Err: fmt.Errorf("%w: sim: account closed", vendors.ErrRejected)}
	}
	vp.executed++
	if vp.executed > 1 {
		w.logf("vendor: %s PAID AGAIN (submit %d)", w.name(p.Reference), vp.executed)
	}
	vp.status = vendors.PayoutPending
	if w.chance(w.cfg.InstantRate) {
		vp.status = vendors.PayoutSuccess
	}
	vp.since = w.clock.Now()
	vp.history = append(vp.history, vp.status)
	w.logf("vendor: %s taken, %s", w.name(p.Reference), vp.status)
	return vendors.SubmitOutcome{Result: vendors.PayoutResult{Reference: p.Reference, Status: vp.status}}
}

// Status answers the vendor's status query: parked on the way there and
// back.
func (v *vendor) Status(ctx context.Context, reference string) (vendors.PayoutResult, error) {
	w := v.w
	o := w.sched.current()
	o.deadline = w.clock.callDeadline(ctx, callTimeout)
	defer func() { o.deadline = time.Time{} }()
	if _, why := w.sched.park("status " + w.name(reference) + " asked"); why != goOn {
		return vendors.PayoutResult{}, fmt.Errorf("%w: sim: no answer", vendors.ErrUnavailable)
	}
	if w.chance(w.cfg.VendorDownRate) {
		w.logf("vendor: status %s refused (503)", w.name(reference))
		return vendors.PayoutResult{}, fmt.Errorf("%w: sim: 503", vendors.ErrUnavailable)
	}
	var r vendors.PayoutResult
	var err error
	vp := v.byRef[reference]
	if vp == nil {
		err = vendors.ErrUnknownPayout
	} else {
		r = vendors.PayoutResult{Reference: reference, Status: v.reported(vp)}
		if r.Status == vendors.PayoutFailed {
			r.FailureReason = "sim: failed"
		}
	}
	if _, why := w.sched.park("status " + w.name(reference) + " answered"); why != goOn || o.dead() {
		return vendors.PayoutResult{}, fmt.Errorf("%w: sim: no answer", vendors.ErrUnavailable)
	}
	return r, err
}

// reported is what the vendor says of vp now: a contradicted payout is
// reported failed although it was paid.
func (v *vendor) reported(vp *vendorPayout) vendors.PayoutStatus {
	if vp.contradicted {
		return vendors.PayoutFailed
	}
	return vp.status
}

// deliverDue hands the vendor every delayed submit whose deadline is at
// or before now (the clock never passes a deadline undelivered).
func (v *vendor) deliverDue(now time.Time) {
	keep := v.delayed[:0]
	for _, d := range v.delayed {
		if d.deadline.After(now) {
			keep = append(keep, d)
			continue
		}
		v.w.logf("vendor: delayed submit %s arrives", v.w.name(d.p.Reference))
		v.take(d.p)
	}
	v.delayed = keep
}

// nextDeadline is the earliest delayed submit's deadline, or zero.
func (v *vendor) nextDeadline() time.Time {
	var t time.Time
	for _, d := range v.delayed {
		if t.IsZero() || d.deadline.Before(t) {
			t = d.deadline
		}
	}
	return t
}

// refs lists the references in the order first seen, filtered by keep.
func (v *vendor) refs(keep func(*vendorPayout) bool) []string {
	return slices.DeleteFunc(slices.Clone(v.order), func(ref string) bool { return !keep(v.byRef[ref]) })
}
