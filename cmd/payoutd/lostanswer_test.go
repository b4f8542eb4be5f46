package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors/snap"
	"github.com/payoutd/payoutd/worker"
)

// lossRail is a rail's submit and status query as LostAnswers sees them
// ("METHOD /path").
type lossRail struct {
	rail           rail
	submit, status string
}

var lossRails = []lossRail{
	{xenditRail, "POST /v2/payouts", "GET /v2/payouts"},
	{snapRail, "POST " + snap.PathTransfer, "POST " + snap.PathStatus},
}

// A submit whose answer is lost on a fresh connection (each answer closes
// its connection, so Go's transport cannot resend the request by itself),
// through the API and the worker, on the Xendit and SNAP rails:
//
//   - answerLost: the vendor took the payout, its answer never came. The
//     worker's submit sees an unknown outcome, its retry asks the vendor
//     (Xendit: get by reference_id; SNAP: transfer status inquiry) before
//     anything else, finds the payout and follows it to SUCCESS without a
//     second submit.
//   - requestLost: the submit never reached the vendor. The status query
//     answers "not found"; once the first call is surely over (the submit
//     lease) the payout is submitted again, under the same reference, and
//     paid once.
//
// Either way the wallet is debited once and reconcile is clean. Callbacks
// are off, so every status query is the service's own.
func TestLostSubmitAnswers(t *testing.T) {
	t.Parallel()
	for _, lr := range lossRails {
		for _, unforwarded := range []bool{false, true} {
			name := lr.rail.name + "/answerLost"
			if unforwarded {
				name = lr.rail.name + "/requestLost"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				lostSubmitAnswer(t, lr, unforwarded)
			})
		}
	}
}

func lostSubmitAnswer(t *testing.T, lr lossRail, unforwarded bool) {
	rdb, _ := testenv.Redis(t)
	opt, prefix := testenv.Queue(t, rdb)
	ro := rdb.Options()
	method, path, _ := strings.Cut(lr.submit, " ")
	s := newStack(t, stackOptions{redisURL: fmt.Sprintf("redis://%s/%d", ro.Addr, ro.DB), queuePrefix: prefix,
		completeWait: 200 * time.Millisecond, rail: lr.rail,
		lose: &testenv.LostAnswersOptions{Losses: []testenv.Loss{{Method: method, Path: path, Times: 1, Unforwarded: unforwarded}}}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- worker.Run(ctx, worker.Deps{DB: s.db, Redis: opt, Dispatch: s.dispatch, QueuePrefix: prefix, Concurrency: 4})
	}()
	t.Cleanup(func() { cancel(); <-done })

	code, body := s.create("lost-"+lr.rail.name, "1234567890")
	if code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	id := uuid.MustParse(body["id"].(string))
	s.waitFor("the payout paid", 60*time.Second, func() bool {
		d, err := s.svc.Get(context.Background(), id)
		return err == nil && d.Status == models.StatusSuccess
	})

	if n := s.lossy.Dropped(); n != 1 {
		t.Fatalf("%d answers lost; want 1: the test shows nothing", n)
	}
	if n := s.lossy.Reused(); n != 0 {
		t.Fatalf("%d requests on a reused connection: the transport could have resent the submit", n)
	}
	ref := models.VendorReferenceFor(id)
	if n := s.sim.statusCalls(ref); n == 0 {
		t.Errorf("the vendor was never asked for %s", ref)
	}
	// What reached the vendor's front, in order: the first submit (lost),
	// then a status query before any other submit.
	seen := s.lossy.Seen()
	t.Logf("requests at the vendor: %v", seen)
	first := slices.Index(seen, lr.submit)
	next := len(seen)
	if i := slices.Index(seen[first+1:], lr.submit); i >= 0 {
		next = first + 1 + i
	}
	if first < 0 || !slices.Contains(seen[first+1:next], lr.status) {
		t.Errorf("requests %v: want a status query (%s) after the lost submit and before any other", seen, lr.status)
	}
	d, err := s.svc.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	// answerLost: resolved by the status query alone. requestLost: the
	// vendor never had it, so it was submitted once more.
	wantAttempts := 1
	if unforwarded {
		wantAttempts = 2
	}
	if resubmitted := next < len(seen); d.SubmitAttempts != wantAttempts || resubmitted != unforwarded {
		t.Errorf("%d submit attempts, submitted again: %v; want %d attempts (requests %v)", d.SubmitAttempts, resubmitted, wantAttempts, seen)
	}
	// SUCCESS, the vendor asked to pay once (its count of submits for the
	// reference is 1), the wallet debited once, reconcile clean.
	s.paidOnce(1)
}
