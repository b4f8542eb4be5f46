package snap_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox/sandboxtest"
	"github.com/payoutd/payoutd/vendors/snap"
)

// behindLoss is newEnv with the adapter reaching the bank through a
// LostAnswers that loses the first transfer's answer (unforwarded: the
// transfer itself). The adapter has its default client, which keeps
// connections; the proxy closes each after its answer, so the transfer
// goes on a fresh one.
func behindLoss(t *testing.T, unforwarded bool) (*env, *testenv.LostAnswers) {
	var front *testenv.LostAnswers
	e := newEnv(t, func(o *snap.Options) {
		front = testenv.NewLostAnswers(t, o.BaseURL, testenv.LostAnswersOptions{Losses: []testenv.Loss{
			{Method: http.MethodPost, Path: snap.PathTransfer, Times: 1, Unforwarded: unforwarded}}})
		o.BaseURL, o.HTTPClient = front.URL(), nil
	})
	return e, front
}

// The transfer's answer is lost after the bank accepted it: Submit reports
// the unknown outcome, the status inquiry finds the one transfer, and it
// ends paid once.
func TestTransferAnswerLost(t *testing.T) {
	e, front := behindLoss(t, false)
	ctx := context.Background()
	const ref = "disb-answer-lost"
	_, err := e.submit(ref, "1234567890", models.BIFAST, models.Rupiah(97_500))
	if !errors.Is(err, vendors.ErrUnavailable) || errors.Is(err, vendors.ErrRejected) {
		t.Fatalf("Submit with its answer lost: %v; want only ErrUnavailable", err)
	}
	if front.Dropped() != 1 || front.Reused() != 0 {
		t.Fatalf("%d answers dropped, %d requests on a reused connection; want 1 and 0", front.Dropped(), front.Reused())
	}
	if n := e.bank.SubmitCalls(ref); n != 1 {
		t.Fatalf("the bank got %d transfer requests; want 1", n)
	}
	res, err := e.v.Status(ctx, ref)
	if err != nil || res.Status != vendors.PayoutPending {
		t.Fatalf("Status after the lost answer: %+v, %v; want PENDING", res, err)
	}
	if n := e.bank.StatusCalls(ref); n != 1 {
		t.Errorf("%d status inquiries; want 1", n)
	}
	e.clock.Advance(sandboxtest.CompleteAfter)
	if res, err := e.v.Status(ctx, ref); err != nil || res.Status != vendors.PayoutSuccess {
		t.Errorf("after CompleteAfter: %+v, %v; want SUCCESS", res, err)
	}
	if n := e.bank.SubmitCalls(ref); n != 1 {
		t.Errorf("the bank got %d transfer requests; want paid once", n)
	}
}

// The transfer is lost on its way, before the bank saw it: Submit reports
// the unknown outcome, the status inquiry answers "not found" (the
// service's cue to submit again once the first call is surely over), and
// the resubmit, the same transfer with the same X-EXTERNAL-ID, is paid once.
func TestTransferLostBeforeTheBank(t *testing.T) {
	e, front := behindLoss(t, true)
	ctx := context.Background()
	const ref = "disb-request-lost"
	_, err := e.submit(ref, "1234567890", models.BIFAST, models.Rupiah(97_500))
	if !errors.Is(err, vendors.ErrUnavailable) || errors.Is(err, vendors.ErrRejected) {
		t.Fatalf("Submit with its request lost: %v; want only ErrUnavailable", err)
	}
	if front.Dropped() != 1 || e.bank.SubmitCalls(ref) != 0 {
		t.Fatalf("%d requests dropped, the bank got %d transfers; want 1 and 0", front.Dropped(), e.bank.SubmitCalls(ref))
	}
	if _, err := e.v.Status(ctx, ref); !errors.Is(err, vendors.ErrUnknownPayout) {
		t.Fatalf("Status of a transfer the bank never got: %v; want ErrUnknownPayout", err)
	}
	if n := e.bank.StatusCalls(ref); n != 1 {
		t.Errorf("%d status inquiries; want 1", n)
	}
	res, err := e.submit(ref, "1234567890", models.BIFAST, models.Rupiah(97_500))
	if err != nil || res.Status != vendors.PayoutPending {
		t.Fatalf("resubmit: %+v, %v; want PENDING", res, err)
	}
	e.clock.Advance(sandboxtest.CompleteAfter)
	if res, err := e.v.Status(ctx, ref); err != nil || res.Status != vendors.PayoutSuccess {
		t.Errorf("after CompleteAfter: %+v, %v; want SUCCESS", res, err)
	}
	if n := e.bank.SubmitCalls(ref); n != 1 {
		t.Errorf("the bank got %d transfer requests; want paid once", n)
	}
}
