package xendit_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
)

// lostCreate loses the answer of the first create: Xendit creates the
// payout, the answer never arrives.
var lostCreate = testenv.Loss{Method: http.MethodPost, Path: "/v2/payouts", Times: 1}

// The create's answer is lost on a fresh connection, so Go's transport
// cannot resend it: Submit reports the unknown outcome, the read-back by
// reference_id finds the one payout, and it ends paid once. The client
// holds an idle connection from an earlier call (Banks): only the proxy
// closing every connection after its answer keeps the create off it.
func TestAnswerLostOnAFreshConnection(t *testing.T) {
	e := newEnv(t)
	front := testenv.NewLostAnswers(t, e.url, testenv.LostAnswersOptions{Losses: []testenv.Loss{lostCreate}})
	v := newVendor(t, front.URL(), secretKey, e.clock)
	ctx := context.Background()
	if _, err := v.Banks(ctx); err != nil {
		t.Fatal(err)
	}
	const ref = "disb-fresh-lost"
	_, err := v.Submit(ctx, payout(ref, "bca", "1234567890", models.Rupiah(97_500)))
	if !errors.Is(err, vendors.ErrUnavailable) || errors.Is(err, vendors.ErrRejected) {
		t.Fatalf("Submit with its answer lost: %v; want only ErrUnavailable (outcome unknown)", err)
	}
	if front.Dropped() != 1 || front.Reused() != 0 {
		t.Fatalf("%d answers dropped, %d requests on a reused connection; want 1 dropped, every request on a fresh connection",
			front.Dropped(), front.Reused())
	}
	if n, calls := e.sim.Payouts(ref), e.sim.SubmitCalls(ref); n != 1 || calls != 1 {
		t.Fatalf("%d payouts from %d creates; want 1 from 1 (the transport must not have resent it)", n, calls)
	}
	if n := e.sim.ReferenceReads(ref); n != 0 {
		t.Fatalf("%d reads by reference_id before Status; want 0", n)
	}
	res, err := v.Status(ctx, ref)
	if err != nil || res.Status != vendors.PayoutPending || res.Reference != ref {
		t.Fatalf("Status after the lost answer: %+v, %v; want the payout, PENDING", res, err)
	}
	if n := e.sim.ReferenceReads(ref); n != 1 {
		t.Errorf("%d reads by reference_id; want 1", n)
	}
	e.clock.Advance(completeAfter)
	if res := e.status(t, ref); res.Status != vendors.PayoutSuccess {
		t.Errorf("after CompleteAfter: %+v, want SUCCESS", res)
	}
	if n, calls := e.sim.Payouts(ref), e.sim.SubmitCalls(ref); n != 1 || calls != 1 {
		t.Errorf("%d payouts from %d creates; want paid once", n, calls)
	}
}

// The create goes on a reused keep-alive connection that breaks before the
// answer: Go's transport resends it by itself (it carries Idempotency-key,
// so it counts as replayable), with the same key and body, and Xendit
// answers the first payout. Submit gets that answer, one payout exists,
// and no read-back was needed.
func TestAnswerLostOnAReusedConnectionIsResent(t *testing.T) {
	e := newEnv(t)
	front := testenv.NewLostAnswers(t, e.url, testenv.LostAnswersOptions{KeepAlive: true, Losses: []testenv.Loss{lostCreate}})
	v := newVendor(t, front.URL(), secretKey, e.clock)
	ctx := context.Background()
	if _, err := v.Banks(ctx); err != nil { // leaves the connection the create reuses
		t.Fatal(err)
	}
	const ref = "disb-reused-lost"
	res, err := v.Submit(ctx, payout(ref, "bca", "1234567890", models.Rupiah(97_500)))
	if err != nil || res.Status != vendors.PayoutPending || res.Reference != ref {
		t.Fatalf("Submit: %+v, %v; want the resent create answered, PENDING", res, err)
	}
	// Banks, the create whose answer was lost, its resend: three requests
	// on two connections, the first reused by the create.
	if front.Dropped() != 1 || front.Requests() != 3 || front.Connections() != 2 || front.Reused() != 1 {
		t.Fatalf("%d answers dropped, %d requests on %d connections, %d on a reused one; want 1, 3 on 2, 1",
			front.Dropped(), front.Requests(), front.Connections(), front.Reused())
	}
	if n, calls := e.sim.Payouts(ref), e.sim.SubmitCalls(ref); n != 1 || calls != 2 {
		t.Errorf("%d payouts from %d creates; want 1 from 2 (the create and the transport's resend)", n, calls)
	}
	if n := e.sim.ReferenceReads(ref); n != 0 {
		t.Errorf("%d reads by reference_id; want 0 (the resend was answered)", n)
	}
}
