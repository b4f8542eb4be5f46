// Package breaker guards each payout vendor with a bound on the calls
// under way and a circuit breaker (github.com/sony/gobreaker/v2), at the
// registry: Wrap returns the registry with every vendor guarded, so every
// caller (quotes and creates, submit pumps, submit tasks, inline submits,
// polls, callbacks' status queries) goes through it.
//
// A call is refused, before it leaves the process, with a
// *vendors.RefusedError (vendors.ErrNotSent, also vendors.ErrUnavailable)
// when the vendor's breaker is open (or half-open with its probe under
// way), or when every one of the vendor's slots (MaxConcurrency) stayed
// taken for the bounded wait (QueueWait). A refused call never reached
// the vendor: a refused submit was not attempted.
//
// What counts: a call that ended with vendors.ErrVendorDown (no answer, a
// timeout, a 5xx, a documented "try again later" code, see Classify) is a
// failure; any answer (a payout, a rejection, an unknown account or
// payout, a 4xx) is a success; a call the caller itself cancelled counts
// as neither. The breaker opens after Failures consecutive failures, or
// when at least half of the calls failed among at least 4×Failures calls
// of the last Window; it stays open OpenFor, then lets one probe through
// (half-open): an answer closes it, a failure opens it again.
//
// State is per process: each api and worker process has breakers of its
// own, which each learn from their own calls.
package breaker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"
	"golang.org/x/sync/semaphore"

	"github.com/payoutd/payoutd/vendors"
)

// Options configure the guards; zero values take the defaults.
type Options struct {
	// MaxConcurrency bounds the calls under way to one vendor from this
	// process (VENDOR_MAX_CONCURRENCY, default 64). A batch submit to a
	// vendor that takes batches is one call.
	MaxConcurrency int
	// QueueWait is how long a call waits for a slot before it is refused
	// (VENDOR_QUEUE_WAIT, default 1 s).
	QueueWait time.Duration
	// Failures is how many consecutive failures open the breaker
	// (VENDOR_BREAKER_FAILURES, default 5).
	Failures int
	// OpenFor is how long the breaker stays open before a probe
	// (VENDOR_BREAKER_OPEN_FOR, default 10 s).
	OpenFor time.Duration
	// Window is the period over which the failure ratio is counted
	// (default 30 s).
	Window time.Duration
	// OnStateChange, when set, is told of every transition (metrics);
	// each is also logged at warn. It must not call back into the breaker.
	OnStateChange func(vendor string, from, to State)
}

// Defaults.
const (
	DefaultMaxConcurrency = 64
	DefaultQueueWait      = time.Second
	DefaultFailures       = 5
	DefaultOpenFor        = 10 * time.Second
	DefaultWindow         = 30 * time.Second
)

func (o Options) withDefaults() Options {
	if o.MaxConcurrency <= 0 {
		o.MaxConcurrency = DefaultMaxConcurrency
	}
	if o.QueueWait <= 0 {
		o.QueueWait = DefaultQueueWait
	}
	if o.Failures <= 0 {
		o.Failures = DefaultFailures
	}
	if o.OpenFor <= 0 {
		o.OpenFor = DefaultOpenFor
	}
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	return o
}

// State is a breaker's state; its number is the metric's value.
type State int

// States.
const (
	Closed   State = 0
	HalfOpen State = 1
	Open     State = 2
)

func (s State) String() string {
	switch s {
	case HalfOpen:
		return "half-open"
	case Open:
		return "open"
	}
	return "closed"
}

func stateOf(s gobreaker.State) State {
	switch s {
	case gobreaker.StateHalfOpen:
		return HalfOpen
	case gobreaker.StateOpen:
		return Open
	}
	return Closed
}

// Outcome is how a call's end counts for the breaker.
type Outcome int

// Outcomes.
const (
	Success  Outcome = iota // the vendor answered
	Failure                 // the vendor is failing
	Excluded                // neither: the caller gave up, or the call never left
)

// Classify says how a call that ended with err, under ctx, counts. A
// business answer (a rejection, an unknown account or payout, a 4xx) is
// a Success: the vendor works. vendors.ErrVendorDown (marked by the
// adapters: no answer, a timeout, a 5xx, a "try again later" code), or an
// unavailability caused by the network or a deadline, is a Failure. A
// call cancelled by its caller (a merchant hanging up), or one refused
// before it left, is Excluded.
func Classify(ctx context.Context, err error) Outcome {
	switch {
	case err == nil:
		return Success
	case errors.Is(err, vendors.ErrNotSent):
		return Excluded
	case errors.Is(ctx.Err(), context.Canceled) && errors.Is(err, context.Canceled):
		return Excluded
	case errors.Is(err, vendors.ErrVendorDown):
		return Failure
	case !errors.Is(err, vendors.ErrUnavailable):
		return Success
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return Failure
	}
	return Success // an answer the adapter did not understand: the vendor answered
}

// classified carries a call's outcome through gobreaker's callbacks.
type classified struct{ outcome Outcome }

func (classified) Error() string { return "classified vendor outcome" }

// Guard is one vendor's bound and breaker.
type Guard struct {
	name     string
	o        Options
	cb       *gobreaker.TwoStepCircuitBreaker[struct{}]
	slots    *semaphore.Weighted
	inFlight atomic.Int64
	refused  atomic.Int64 // calls refused, for the operators' view

	mu       sync.Mutex
	openedAt time.Time // when it last opened
	since    time.Time // when it entered its current state
}

func newGuard(name string, o Options) *Guard {
	g := &Guard{name: name, o: o, slots: semaphore.NewWeighted(int64(o.MaxConcurrency)), since: time.Now()}
	g.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        name,
		MaxRequests: 1,
		Interval:    o.Window,
		Timeout:     o.OpenFor,
		ReadyToTrip: func(c gobreaker.Counts) bool {
			if c.ConsecutiveFailures >= uint32(o.Failures) {
				return true
			}
			return c.Requests >= uint32(4*o.Failures) && 2*c.TotalFailures >= c.Requests
		},
		IsSuccessful: func(err error) bool {
			var c classified
			return !errors.As(err, &c) || c.outcome != Failure
		},
		IsExcluded: func(err error) bool {
			var c classified
			return errors.As(err, &c) && c.outcome == Excluded
		},
		OnStateChange: g.changed,
	})
	return g
}

// changed runs under gobreaker's lock: it records, logs and tells.
func (g *Guard) changed(_ string, from, to gobreaker.State) {
	now := time.Now()
	g.mu.Lock()
	g.since = now
	if to == gobreaker.StateOpen {
		g.openedAt = now
	}
	g.mu.Unlock()
	f, t := stateOf(from), stateOf(to)
	slog.Warn("vendor circuit breaker "+t.String(), slog.String("vendor", g.name), slog.String("from", f.String()),
		slog.String("to", t.String()), slog.Duration("open_for", g.o.OpenFor))
	if g.o.OnStateChange != nil {
		g.o.OnStateChange(g.name, f, t)
	}
}

// State is the breaker's state now (an open breaker whose OpenFor passed
// reads half-open).
func (g *Guard) State() State { return stateOf(g.cb.State()) }

// retryIn is how long until an open breaker lets a probe through: at
// least a second, so that callers do not spin.
func (g *Guard) retryIn() time.Duration {
	g.mu.Lock()
	opened := g.openedAt
	g.mu.Unlock()
	return max(time.Until(opened.Add(g.o.OpenFor)), time.Second)
}

// Ready implements the vendor's part of vendors.Gate: closed, or
// half-open with no call under way (the probe is free).
func (g *Guard) Ready() (bool, time.Duration) {
	switch g.State() {
	case Closed:
		return true, 0
	case HalfOpen:
		if g.inFlight.Load() == 0 {
			return true, 0
		}
		return false, time.Second
	}
	return false, g.retryIn()
}

// do runs call if the breaker and a slot allow it, and counts how it
// ended (outcome reads call's error).
func (g *Guard) do(ctx context.Context, call func() error, outcome func() Outcome) error {
	done, err := g.cb.Allow()
	if err != nil {
		g.refused.Add(1)
		return &vendors.RefusedError{Vendor: g.name, Reason: vendors.RefusedBreakerOpen, RetryAfter: g.retryIn()}
	}
	wait, cancel := context.WithTimeout(ctx, g.o.QueueWait)
	err = g.slots.Acquire(wait, 1)
	cancel()
	if err != nil {
		done(classified{Excluded})
		g.refused.Add(1)
		return &vendors.RefusedError{Vendor: g.name, Reason: vendors.RefusedConcurrencyBusy, RetryAfter: time.Second}
	}
	g.inFlight.Add(1)
	defer func() {
		g.inFlight.Add(-1)
		g.slots.Release(1)
	}()
	callErr := call()
	done(classified{outcome()})
	return callErr
}

// Status is a guard's state for operators (GET /ops/vendors).
type Status struct {
	Vendor              string    `json:"vendor"`
	State               string    `json:"state"`
	Since               time.Time `json:"since"`
	RetryInSeconds      float64   `json:"retry_in_seconds,omitempty"`
	InFlight            int64     `json:"in_flight"`
	MaxConcurrency      int       `json:"max_concurrency"`
	ConsecutiveFailures uint32    `json:"consecutive_failures"`
	Refused             int64     `json:"refused_calls"`
}

// Status reads the guard's state.
func (g *Guard) Status() Status {
	st := g.State()
	g.mu.Lock()
	since := g.since
	g.mu.Unlock()
	s := Status{Vendor: g.name, State: st.String(), Since: since.UTC(), InFlight: g.inFlight.Load(),
		MaxConcurrency: g.o.MaxConcurrency, ConsecutiveFailures: g.cb.Counts().ConsecutiveFailures, Refused: g.refused.Load()}
	if st == Open {
		s.RetryInSeconds = g.retryIn().Seconds()
	}
	return s
}

// Set is the guards of a registry, by vendor name. It implements
// vendors.Gate. A nil *Set lets everything through and lists nothing.
type Set struct {
	guards map[string]*Guard
}

// Ready implements vendors.Gate; a vendor without a guard is ready.
func (s *Set) Ready(vendor string) (bool, time.Duration) {
	if s == nil {
		return true, 0
	}
	g, ok := s.guards[vendor]
	if !ok {
		return true, 0
	}
	return g.Ready()
}

// Guard returns the vendor's guard, nil when it has none.
func (s *Set) Guard(vendor string) *Guard {
	if s == nil {
		return nil
	}
	return s.guards[vendor]
}

// Statuses lists every guard's state, by vendor name.
func (s *Set) Statuses() []Status {
	if s == nil {
		return []Status{}
	}
	out := make([]Status, 0, len(s.guards))
	for _, g := range s.guards {
		out = append(out, g.Status())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Vendor < out[j].Vendor })
	return out
}

// BreakerStates is each guard's state now, by vendor name, as its number
// (State's: the metric's value); nil lists nothing.
func (s *Set) BreakerStates() map[string]int {
	if s == nil {
		return nil
	}
	out := make(map[string]int, len(s.guards))
	for name, g := range s.guards {
		out[name] = int(g.State())
	}
	return out
}

// Wrap returns r with every vendor guarded, and the guards. A guarded
// vendor implements vendors.Completer and vendors.CallbackParser exactly
// when the vendor it wraps does (both pass through unguarded: an
// operator's sandbox tool, and a parse of a request the vendor sent),
// notifies (vendors.Notifies) exactly when it does, and
// vendors.BatchSubmitter always.
func Wrap(r vendors.Registry, o Options) (vendors.Registry, *Set) {
	o = o.withDefaults()
	set := &Set{guards: make(map[string]*Guard, len(r))}
	out := make(vendors.Registry, len(r))
	for name, v := range r {
		g := newGuard(name, o)
		set.guards[name] = g
		out[name] = wrapVendor(v, g)
	}
	return out, set
}

func wrapVendor(v vendors.Vendor, g *Guard) vendors.Vendor {
	base := guarded{Vendor: v, g: g}
	completer, canComplete := v.(vendors.Completer)
	parser, parsesCallbacks := vendors.ReceiverOf(v)
	switch {
	case canComplete && parsesCallbacks:
		return struct {
			guarded
			vendors.Completer
			vendors.Receiver
		}{base, completer, parser}
	case canComplete:
		return struct {
			guarded
			vendors.Completer
		}{base, completer}
	case parsesCallbacks:
		return struct {
			guarded
			vendors.Receiver
		}{base, parser}
	}
	return base
}

// guarded is a vendor whose calls go through its guard; Name passes
// through.
type guarded struct {
	vendors.Vendor
	g *Guard
}

func (v guarded) Banks(ctx context.Context) ([]vendors.Bank, error) {
	var banks []vendors.Bank
	var err error
	gerr := v.g.do(ctx, func() error { banks, err = v.Vendor.Banks(ctx); return err }, func() Outcome { return Classify(ctx, err) })
	return banks, gerr
}

func (v guarded) Inquire(ctx context.Context, req vendors.InquiryRequest) (vendors.Account, error) {
	var a vendors.Account
	var err error
	gerr := v.g.do(ctx, func() error { a, err = v.Vendor.Inquire(ctx, req); return err }, func() Outcome { return Classify(ctx, err) })
	return a, gerr
}

func (v guarded) Submit(ctx context.Context, p vendors.Payout) (vendors.PayoutResult, error) {
	var r vendors.PayoutResult
	var err error
	gerr := v.g.do(ctx, func() error { r, err = v.Vendor.Submit(ctx, p); return err }, func() Outcome { return Classify(ctx, err) })
	return r, gerr
}

func (v guarded) Status(ctx context.Context, reference string) (vendors.PayoutResult, error) {
	var r vendors.PayoutResult
	var err error
	gerr := v.g.do(ctx, func() error { r, err = v.Vendor.Status(ctx, reference); return err }, func() Outcome { return Classify(ctx, err) })
	return r, gerr
}

// SubmitBatch is one guarded call for a vendor that takes batches (a
// failure when any payout's answer is one, so that a vendor failing
// every payout of its batches opens the breaker), and one guarded Submit
// per payout otherwise, so that a half-open breaker's probe is one
// payout, not a whole batch.
func (v guarded) SubmitBatch(ctx context.Context, ps []vendors.Payout) []vendors.SubmitOutcome {
	if _, ok := v.Vendor.(vendors.BatchSubmitter); !ok {
		return vendors.SubmitAll(ctx, submitOnly{Vendor: v}, ps)
	}
	var out []vendors.SubmitOutcome
	gerr := v.g.do(ctx, func() error { out = vendors.SubmitAll(ctx, v.Vendor, ps); return nil }, func() Outcome {
		worst := Success
		for _, o := range out {
			switch Classify(ctx, o.Err) {
			case Failure:
				return Failure
			case Excluded:
				worst = Excluded
			}
		}
		return worst
	})
	if gerr != nil {
		out = make([]vendors.SubmitOutcome, len(ps))
		for i := range out {
			out[i].Err = gerr
		}
	}
	return out
}

// submitOnly hides SubmitBatch (it embeds the interface, whose methods
// alone are promoted), so that SubmitAll calls Submit per payout.
type submitOnly struct{ vendors.Vendor }
