package faults

import (
	"context"
	"testing"
	"time"

	"github.com/payoutd/payoutd/models"
)

// Kill tests: each process of the service, and the vendor, dies by
// SIGKILL mid-batch (no clean shutdown, nothing flushed), is restarted,
// and every payout committed is paid exactly once.

// The API dies while its inline submits (DISBURSEMENT_SUBMIT_WAIT > 0)
// are on the wire: payouts committed with their first attempt claimed,
// the vendor taking the submits (the front holds each a while) after the
// caller is gone. Merchants whose creates were cut retry with the same
// Idempotency-Key on the restarted API, which replays the stored payout
// (or creates it, once, if it never committed); the worker's sweep takes
// the orphaned submits over once DISBURSEMENT_SUBMIT_LEASE (2 s here) and
// its grace have passed, asking the vendor first, so that those the vendor
// took are not submitted again.
func TestAPIKilled(t *testing.T) {
	scenario(t, quick)
	c := newClusterWith(t, privateRedis(t), clusterOptions{submitDelay: 300 * time.Millisecond, noCallbacks: true})
	api := c.startAPI("DISBURSEMENT_SUBMIT_WAIT=5s")
	c.startPayoutd("worker", []string{"worker"})

	ctx, stop := context.WithTimeout(context.Background(), 12*time.Second)
	defer stop()
	d := c.drive(ctx, 16, 30*time.Second)
	time.Sleep(3 * time.Second)
	waitFor(t, "inline submits on the wire", 10*time.Second, func() bool { return c.front.onWire.Load() >= 4 })
	api.kill()
	d.markFault()
	orphaned := c.claimedUnanswered()
	t.Logf("killed the API with %d submits on the wire and %d payouts claimed, unanswered", c.front.onWire.Load(), orphaned)
	time.Sleep(time.Second)
	api.restart()
	waitReady(t, c.apiAddr, 30*time.Second)
	d.wait()

	s := c.settle("api-killed", d, 90*time.Second)
	c.logTakeover(orphaned)
	if s.committed == 0 || s.succeeded == 0 {
		t.Fatalf("nothing was paid: %s", s)
	}
	if orphaned == 0 {
		t.Error("no payout was left claimed and unanswered by the dead API: the scenario showed nothing about the takeover")
	}
	if n := c.front.unheard.Load(); n == 0 {
		t.Error("the vendor took no submit whose caller had died: nothing was there to be paid twice")
	} else {
		t.Logf("the vendor took %d submits after their caller died", n)
	}
}

// The worker dies while its submit pumps have a batch on the wire (the
// front holds each submit a while): claimed payouts whose answers never
// came, some of which the vendor takes after the worker is gone. The
// restarted worker's sweep resolves each once the lease and its grace
// have passed by asking the vendor about that attempt, and resubmits only
// what the vendor never received.
func TestWorkerKilled(t *testing.T) {
	scenario(t, quick)
	c := newClusterWith(t, privateRedis(t), clusterOptions{submitDelay: 300 * time.Millisecond, noCallbacks: true})
	c.startAPI()
	worker := c.startPayoutd("worker", []string{"worker"})

	ctx, stop := context.WithTimeout(context.Background(), 12*time.Second)
	defer stop()
	d := c.drive(ctx, 8, 30*time.Second)
	time.Sleep(3 * time.Second)
	waitFor(t, "pumped submits on the wire", 10*time.Second, func() bool { return c.front.onWire.Load() >= 4 })
	worker.kill()
	d.markFault()
	orphaned := c.claimedUnanswered()
	t.Logf("killed the worker with %d submits on the wire and %d payouts claimed, unanswered", c.front.onWire.Load(), orphaned)
	time.Sleep(time.Second)
	worker.restart()
	d.wait()

	s := c.settle("worker-killed", d, 90*time.Second)
	c.logTakeover(orphaned)
	if s.committed == 0 || s.succeeded == 0 {
		t.Fatalf("nothing was paid: %s", s)
	}
	if orphaned == 0 {
		t.Error("no payout was left claimed and unanswered by the dead worker: the scenario showed nothing")
	}
	if n := c.front.unheard.Load(); n == 0 {
		t.Error("the vendor took no submit whose caller had died: nothing was there to be paid twice")
	} else {
		t.Logf("the vendor took %d submits after their caller died", n)
	}
}

// The vendor simulator, a `payoutd vendorsim` process keeping its payouts
// in a database of its own, dies mid-batch (submits on the wire, some of
// them recorded and not yet answered, as it answers 300 ms late; payouts
// in flight whose callbacks it had not sent yet) and comes back a few
// seconds later. Meanwhile submits fail as unknown
// (nothing answered), creates wait for its account inquiries (503,
// retried by the merchants) and status checks fail. Once it is back the
// service learns each outcome by asking: unanswered submits are resolved
// through a status check before anything is resubmitted, payouts whose
// callback died with the process are found by polling, and nothing is
// paid twice, counted from the vendor's own store.
func TestVendorSimKilled(t *testing.T) {
	scenario(t, quick)
	c := newClusterWith(t, privateRedis(t), clusterOptions{simProcess: true, simAnswerDelay: 300 * time.Millisecond, submitDelay: 50 * time.Millisecond})
	c.startAPI()
	c.startPayoutd("worker", []string{"worker"})

	ctx, stop := context.WithTimeout(context.Background(), 14*time.Second)
	defer stop()
	d := c.drive(ctx, 8, 30*time.Second)
	time.Sleep(3 * time.Second)
	waitFor(t, "submits on the wire", 10*time.Second, func() bool { return c.front.onWire.Load() >= 4 })
	wire := c.front.onWire.Load()
	c.simProc.kill()
	d.markFault()
	time.Sleep(3 * time.Second)
	orphaned := c.claimedUnanswered()
	t.Logf("killed the vendor with %d submits on the wire; %d payouts claimed, unanswered while it is down", wire, orphaned)
	c.simProc.restart()
	c.waitSimReady(30 * time.Second)
	d.wait()

	s := c.settle("vendorsim-killed", d, 2*time.Minute)
	c.logTakeover(orphaned)
	if s.committed == 0 || s.succeeded == 0 {
		t.Fatalf("nothing was paid: %s", s)
	}
	if orphaned == 0 {
		t.Error("no submit was left unanswered by the dead vendor: the scenario showed nothing")
	}
}

// claimedUnanswered counts the payouts whose submit was claimed but not
// answered yet: VERIFIED with an attempt counted.
func (c *cluster) claimedUnanswered() int64 {
	var n int64
	c.db.Model(&models.Disbursement{}).Where("status = ? AND submit_attempts > 0", models.StatusVerified).Count(&n)
	return n
}

// logTakeover says how many payouts were left claimed and unanswered
// when counted, and how many payouts in all the sweep submitted again
// (a second attempt) because the vendor, asked first, said it never had
// them; every other unanswered attempt was settled by the vendor's answer.
func (c *cluster) logTakeover(orphaned int64) {
	var again int64
	c.db.Model(&models.Disbursement{}).Where("submit_attempts > 1").Count(&again)
	c.t.Logf("%d payouts were claimed and unanswered when counted; %d in all were submitted again because the vendor, asked first, never had them", orphaned, again)
}
