package breaker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
)

func TestClassify(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	bg := context.Background()
	netErr := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want Outcome
	}{
		{"answered", bg, nil, Success},
		{"rejected payout", bg, fmt.Errorf("%w: limit", vendors.ErrRejected), Success},
		{"unknown account", bg, models.ErrAccountNotResolved, Success},
		{"inactive account", bg, models.ErrAccountInactive, Success},
		{"unsupported bank", bg, models.ErrUnsupportedBank, Success},
		{"unknown payout", bg, vendors.ErrUnknownPayout, Success},
		{"a 4xx validation refusal", bg, errors.New("vendorsim simbank POST /payouts: HTTP 400 bad_request: amount"), Success},
		{"an answer not understood", bg, fmt.Errorf("%w: vendor reported status %q", vendors.ErrUnavailable, "WEIRD"), Success},
		{"5xx marked down", bg, vendors.Down(fmt.Errorf("%w: HTTP 503", vendors.ErrUnavailable)), Failure},
		{"5xx marked down, wrapped further", bg, fmt.Errorf("submit: %w", vendors.Down(fmt.Errorf("%w: HTTP 500", vendors.ErrUnavailable))), Failure},
		{"network error", bg, fmt.Errorf("%w: %w", vendors.ErrUnavailable, netErr), Failure},
		{"timeout", bg, fmt.Errorf("%w: %w", vendors.ErrUnavailable, context.DeadlineExceeded), Failure},
		{"connection cut mid-answer", bg, fmt.Errorf("%w: reading: %w", vendors.ErrUnavailable, io.ErrUnexpectedEOF), Failure},
		{"caller hung up", cancelled, vendors.Down(fmt.Errorf("%w: %w", vendors.ErrUnavailable, context.Canceled)), Excluded},
		{"cancelled call, caller still there", bg, vendors.Down(fmt.Errorf("%w: %w", vendors.ErrUnavailable, context.Canceled)), Failure},
		{"refused before it left", bg, &vendors.RefusedError{Vendor: "v", Reason: vendors.RefusedBreakerOpen}, Excluded},
	}
	for _, tt := range tests {
		if got := Classify(tt.ctx, tt.err); got != tt.want {
			t.Errorf("%s: Classify(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

func TestRefusedErrorMatches(t *testing.T) {
	var err error = fmt.Errorf("submit of x: %w", &vendors.RefusedError{Vendor: "simbank", Reason: vendors.RefusedBreakerOpen})
	if !errors.Is(err, vendors.ErrNotSent) || !errors.Is(err, vendors.ErrUnavailable) || errors.Is(err, vendors.ErrRejected) {
		t.Fatalf("a refusal must be ErrNotSent and ErrUnavailable, never ErrRejected: %v", err)
	}
	var asked interface{ RetryDelay() time.Duration }
	if !errors.As(err, &asked) || asked.RetryDelay() < time.Second {
		t.Fatalf("a refusal asks for a retry delay of at least a second")
	}
}

// fakeVendor answers what next says, counting the calls that reached it.
type fakeVendor struct {
	calls atomic.Int64
	mu    sync.Mutex
	err   error
	block chan struct{} // when set, calls wait on it
}

func (f *fakeVendor) set(err error) { f.mu.Lock(); f.err = err; f.mu.Unlock() }

func (f *fakeVendor) answer() error {
	f.calls.Add(1)
	f.mu.Lock()
	err, block := f.err, f.block
	f.mu.Unlock()
	if block != nil {
		<-block
	}
	return err
}

func (f *fakeVendor) Name() string { return "fake" }
func (f *fakeVendor) Banks(context.Context) ([]vendors.Bank, error) {
	return nil, f.answer()
}
func (f *fakeVendor) Inquire(context.Context, vendors.InquiryRequest) (vendors.Account, error) {
	return vendors.Account{HolderName: "X"}, f.answer()
}
func (f *fakeVendor) Submit(_ context.Context, p vendors.Payout) (vendors.PayoutResult, error) {
	return vendors.PayoutResult{Reference: p.Reference, Status: vendors.PayoutPending}, f.answer()
}
func (f *fakeVendor) Status(_ context.Context, ref string) (vendors.PayoutResult, error) {
	return vendors.PayoutResult{Reference: ref, Status: vendors.PayoutPending}, f.answer()
}

var down = vendors.Down(fmt.Errorf("%w: HTTP 503", vendors.ErrUnavailable))

func guardedFake(t *testing.T, o Options) (*fakeVendor, vendors.Vendor, *Set, *[]string) {
	t.Helper()
	f := &fakeVendor{}
	var mu sync.Mutex
	moves := &[]string{}
	o.OnStateChange = func(vendor string, from, to State) {
		mu.Lock()
		*moves = append(*moves, from.String()+">"+to.String())
		mu.Unlock()
	}
	reg, set := Wrap(vendors.NewRegistry(f), o)
	return f, reg["fake"], set, moves
}

func TestBreakerOpensOnFailuresOnlyAndProbesBack(t *testing.T) {
	f, v, set, moves := guardedFake(t, Options{Failures: 3, OpenFor: 200 * time.Millisecond})
	ctx := context.Background()

	// Business answers never open it, however many.
	f.set(fmt.Errorf("%w: no", vendors.ErrRejected))
	for range 20 {
		if _, err := v.Submit(ctx, vendors.Payout{HolderName: "Budi Santoso", Reference: "r"}); !errors.Is(err, vendors.ErrRejected) {
			t.Fatalf("submit: %v, want the rejection", err)
		}
	}
	f.set(models.ErrAccountNotResolved)
	for range 20 {
		v.Inquire(ctx, vendors.InquiryRequest{})
	}
	if st := set.Guard("fake").State(); st != Closed {
		t.Fatalf("after business answers: %v, want closed", st)
	}

	// Failures, one short of the threshold, then an answer: still closed.
	f.set(down)
	v.Status(ctx, "r")
	v.Status(ctx, "r")
	f.set(nil)
	v.Status(ctx, "r")
	f.set(down)
	v.Status(ctx, "r")
	v.Status(ctx, "r")
	if st := set.Guard("fake").State(); st != Closed {
		t.Fatalf("after 2 failures, an answer, 2 failures: %v, want closed", st)
	}
	v.Status(ctx, "r") // third consecutive
	if st := set.Guard("fake").State(); st != Open {
		t.Fatalf("after 3 consecutive failures: %v, want open", st)
	}
	if ok, retry := set.Ready("fake"); ok || retry < time.Second {
		t.Fatalf("open: Ready = %v, %v; want held back for at least a second", ok, retry)
	}

	// Open: refused at once, never reaching the vendor.
	before := f.calls.Load()
	for _, call := range []func() error{
		func() error {
			_, err := v.Submit(ctx, vendors.Payout{HolderName: "Budi Santoso", Reference: "r"})
			return err
		},
		func() error { _, err := v.Inquire(ctx, vendors.InquiryRequest{}); return err },
		func() error { _, err := v.Status(ctx, "r"); return err },
		func() error { _, err := v.Banks(ctx); return err },
	} {
		err := call()
		var refused *vendors.RefusedError
		if !errors.As(err, &refused) || refused.Reason != vendors.RefusedBreakerOpen || !errors.Is(err, vendors.ErrNotSent) {
			t.Fatalf("call while open: %v, want a breaker_open refusal", err)
		}
	}
	if got := f.calls.Load(); got != before {
		t.Fatalf("%d calls reached the vendor while open", got-before)
	}

	// Half-open after OpenFor: one probe; a failure opens it again.
	time.Sleep(250 * time.Millisecond)
	if st := set.Guard("fake").State(); st != HalfOpen {
		t.Fatalf("after OpenFor: %v, want half-open", st)
	}
	if ok, _ := set.Ready("fake"); !ok {
		t.Fatal("half-open with no call under way must be ready for its probe")
	}
	v.Status(ctx, "r")
	if st := set.Guard("fake").State(); st != Open {
		t.Fatalf("after a failed probe: %v, want open", st)
	}
	// The vendor recovers: the next probe closes it.
	time.Sleep(250 * time.Millisecond)
	f.set(nil)
	if _, err := v.Status(ctx, "r"); err != nil {
		t.Fatalf("probe: %v", err)
	}
	if st := set.Guard("fake").State(); st != Closed {
		t.Fatalf("after a good probe: %v, want closed", st)
	}
	want := []string{"closed>open", "open>half-open", "half-open>open", "open>half-open", "half-open>closed"}
	if fmt.Sprint(*moves) != fmt.Sprint(want) {
		t.Fatalf("transitions %v, want %v", *moves, want)
	}
	statuses := set.Statuses()
	if len(statuses) != 1 || statuses[0].Vendor != "fake" || statuses[0].State != "closed" || statuses[0].Refused != 4 {
		t.Fatalf("statuses %+v", statuses)
	}
}

func TestBreakerOpensOnAFailureRatio(t *testing.T) {
	f, v, set, _ := guardedFake(t, Options{Failures: 3, OpenFor: time.Minute})
	ctx := context.Background()
	// Every other call fails: never 3 in a row, but half of 13.
	for i := range 13 {
		if i%2 == 0 {
			f.set(down)
		} else {
			f.set(nil)
		}
		v.Status(ctx, "r")
	}
	if st := set.Guard("fake").State(); st != Open {
		t.Fatalf("half of 13 calls failing: %v, want open", st)
	}
}

func TestHalfOpenProbeIsOnePayout(t *testing.T) {
	f, v, set, _ := guardedFake(t, Options{Failures: 1, OpenFor: 100 * time.Millisecond})
	ctx := context.Background()
	f.set(down)
	v.Status(ctx, "r")
	time.Sleep(150 * time.Millisecond)
	f.set(nil)
	before := f.calls.Load()
	ps := make([]vendors.Payout, 5)
	for i := range ps {
		ps[i].Reference = fmt.Sprint("p", i)
	}
	// The probe is still under way while the others ask.
	f.mu.Lock()
	f.block = make(chan struct{})
	f.mu.Unlock()
	done := make(chan []vendors.SubmitOutcome)
	go func() { done <- vendors.SubmitAll(ctx, v, ps) }()
	for f.calls.Load() == before {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	close(f.block)
	out := <-done
	sent, refused := 0, 0
	for _, o := range out {
		switch {
		case o.Err == nil:
			sent++
		case errors.Is(o.Err, vendors.ErrNotSent):
			refused++
		default:
			t.Fatalf("outcome %v", o.Err)
		}
	}
	if sent != 1 || refused != 4 || f.calls.Load()-before != 1 {
		t.Fatalf("half-open batch: %d sent, %d refused, %d reached the vendor; want 1, 4, 1", sent, refused, f.calls.Load()-before)
	}
	if st := set.Guard("fake").State(); st != Closed {
		t.Fatalf("after the probe: %v, want closed", st)
	}
}

func TestConcurrencyBound(t *testing.T) {
	f, v, set, _ := guardedFake(t, Options{MaxConcurrency: 2, QueueWait: 50 * time.Millisecond, Failures: 1})
	f.block = make(chan struct{})
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { v.Status(ctx, "r") })
	}
	for f.calls.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	_, err := v.Status(ctx, "r")
	var refused *vendors.RefusedError
	if !errors.As(err, &refused) || refused.Reason != vendors.RefusedConcurrencyBusy {
		t.Fatalf("third call with two under way: %v, want a concurrency_limit refusal", err)
	}
	if st := set.Statuses(); st[0].InFlight != 2 {
		t.Fatalf("in flight %d, want 2", st[0].InFlight)
	}
	close(f.block)
	wg.Wait()
	if f.calls.Load() != 2 {
		t.Fatalf("%d calls reached the vendor, want 2", f.calls.Load())
	}
	// A refusal for want of a slot is not a failure of the vendor.
	if st := set.Guard("fake").State(); st != Closed {
		t.Fatalf("after a busy refusal: %v, want closed", st)
	}
	if _, err := v.Status(ctx, "r"); err != nil {
		t.Fatalf("a slot is free again: %v", err)
	}
}

func TestCallerCancelDoesNotCount(t *testing.T) {
	f, v, set, _ := guardedFake(t, Options{Failures: 1})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f.set(vendors.Down(fmt.Errorf("%w: %w", vendors.ErrUnavailable, context.Canceled)))
	v.Status(ctx, "r")
	if st := set.Guard("fake").State(); st != Closed {
		t.Fatalf("a call its caller cancelled: %v, want closed", st)
	}
}

type callbackVendor struct{ fakeVendor }

func (*callbackVendor) ParseCallback(string, http.Header, []byte, time.Time) (vendors.PayoutResult, error) {
	return vendors.PayoutResult{}, nil
}

// silentVendor parses callbacks but is configured without them.
type silentVendor struct{ callbackVendor }

func (*silentVendor) Name() string   { return "silent" }
func (*silentVendor) Notifies() bool { return false }

func TestWrapKeepsOptionalInterfaces(t *testing.T) {
	reg, _ := Wrap(vendors.NewRegistry(&fakeVendor{}, &namedCallbackVendor{}, &silentVendor{}), Options{})
	if _, ok := reg["fake"].(vendors.CallbackParser); ok {
		t.Error("a vendor without callbacks must not gain ParseCallback")
	}
	if _, ok := reg["withcallbacks"].(vendors.CallbackParser); !ok {
		t.Error("a vendor with callbacks must keep ParseCallback")
	}
	// Whether a paid payout is watched for a return reads this through
	// the wrapper.
	for name, want := range map[string]bool{"fake": false, "withcallbacks": true, "silent": false} {
		if got := vendors.Notifies(reg[name]); got != want {
			t.Errorf("wrapped %s notifies: %v, want %v as unwrapped", name, got, want)
		}
	}
	if _, ok := reg["fake"].(vendors.BatchSubmitter); !ok {
		t.Error("a guarded vendor takes batches (per payout inside)")
	}
}

type namedCallbackVendor struct{ callbackVendor }

func (*namedCallbackVendor) Name() string { return "withcallbacks" }
