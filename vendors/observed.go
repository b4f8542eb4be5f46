package vendors

import (
	"context"
	"errors"

	"github.com/payoutd/payoutd/models"
)

// CallObserver is told how every call of an Observed vendor ended: the
// metrics count them. Calls come from many goroutines at once.
type CallObserver interface {
	// VendorCall: vendor's call (CallInquire, CallSubmit, CallStatus)
	// ended with outcome (see CallOutcome).
	VendorCall(vendor, call, outcome string)
}

// The calls a CallObserver is told of.
const (
	CallInquire = "inquire"
	CallSubmit  = "submit"
	CallStatus  = "status"
)

// The outcomes of a call (CallOutcome), besides RefusedBreakerOpen and
// RefusedConcurrencyBusy for a call refused before it left. They are an
// operator contract (dashboards, alerts): they must not change.
const (
	OutcomeOK            = "ok"
	OutcomeRejected      = "rejected"
	OutcomeUnavailable   = "unavailable"
	OutcomeUnknownPayout = "unknown_payout"
	OutcomeError         = "error"
)

// Observed returns the registry with every vendor telling o how each of
// its calls ended. An observed vendor implements Completer and
// CallbackParser exactly when the vendor it wraps does, notifies
// (Notifies) exactly when it does (and implements BatchSubmitter always,
// through SubmitAll), so callers' type assertions answer as before. A nil
// o returns r as it is.
func Observed(r Registry, o CallObserver) Registry {
	if o == nil {
		return r
	}
	out := make(Registry, len(r))
	for name, v := range r {
		out[name] = observe(v, o)
	}
	return out
}

func observe(v Vendor, o CallObserver) Vendor {
	base := observedVendor{Vendor: v, o: o}
	completer, canComplete := v.(Completer)
	parser, parsesCallbacks := ReceiverOf(v)
	switch {
	case canComplete && parsesCallbacks:
		return struct {
			observedVendor
			Completer
			Receiver
		}{base, completer, parser}
	case canComplete:
		return struct {
			observedVendor
			Completer
		}{base, completer}
	case parsesCallbacks:
		return struct {
			observedVendor
			Receiver
		}{base, parser}
	}
	return base
}

// observedVendor tells o of the calls of Vendor; Name and Banks pass
// through.
type observedVendor struct {
	Vendor
	o CallObserver
}

func (c observedVendor) Inquire(ctx context.Context, req InquiryRequest) (Account, error) {
	a, err := c.Vendor.Inquire(ctx, req)
	c.tell(CallInquire, err)
	return a, err
}

func (c observedVendor) Submit(ctx context.Context, p Payout) (PayoutResult, error) {
	r, err := c.Vendor.Submit(ctx, p)
	c.tell(CallSubmit, err)
	return r, err
}

// SubmitBatch tells of each payout of the batch as one submit call.
func (c observedVendor) SubmitBatch(ctx context.Context, ps []Payout) []SubmitOutcome {
	out := SubmitAll(ctx, c.Vendor, ps)
	for _, o := range out {
		c.tell(CallSubmit, o.Err)
	}
	return out
}

func (c observedVendor) Status(ctx context.Context, reference string) (PayoutResult, error) {
	r, err := c.Vendor.Status(ctx, reference)
	c.tell(CallStatus, err)
	return r, err
}

func (c observedVendor) tell(call string, err error) {
	c.o.VendorCall(c.Vendor.Name(), call, CallOutcome(err))
}

// CallOutcome names a vendor's answer. A definite refusal (a rejected
// payout, an account that does not resolve or is inactive, a bank the
// vendor does not serve) is OutcomeRejected; OutcomeError is anything
// unexpected; a call refused before it left is its RefusedError's Reason.
func CallOutcome(err error) string {
	var refused *RefusedError
	switch {
	case err == nil:
		return OutcomeOK
	case errors.As(err, &refused):
		return refused.Reason // breaker_open, concurrency_limit: never sent
	case errors.Is(err, ErrRejected), errors.Is(err, models.ErrAccountNotResolved),
		errors.Is(err, models.ErrAccountInactive), errors.Is(err, models.ErrUnsupportedBank):
		return OutcomeRejected
	case errors.Is(err, ErrUnavailable):
		return OutcomeUnavailable
	case errors.Is(err, ErrUnknownPayout):
		return OutcomeUnknownPayout
	}
	return OutcomeError
}
