package sim

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
)

// The same seed must tell the same story, byte for byte: a failure found
// overnight is only useful if its seed replays it.
func TestSameSeedSameHistory(t *testing.T) {
	for _, seed := range []uint64{3} {
		a, b := Run(seed, 60), Run(seed, 60)
		if a.Err != nil {
			t.Fatalf("seed %d failed: %v\n%s", seed, a.Err, tail(a.History))
		}
		if a.Hash() != b.Hash() {
			t.Fatalf("seed %d: two runs differ: %s", seed, firstDiff(a.History, b.History))
		}
		if len(a.History) < 60 {
			t.Fatalf("seed %d: only %d history lines for 60 steps", seed, len(a.History))
		}
	}
}

// A few seeds hold every invariant (make sim runs many more, without the
// race detector).
func TestSeedsHold(t *testing.T) {
	for seed := uint64(20); seed < 22; seed++ {
		if r := Run(seed, 80); r.Err != nil {
			t.Fatalf("seed %d failed at step %d: %v\n%s", seed, r.Steps, r.Err, tail(r.History))
		}
	}
}

// Seeds that once failed hold, each with what it found: a seed is the
// cheapest regression test there is.
func TestSeedsThatFailedOnceHold(t *testing.T) {
	for _, c := range []struct {
		seed  uint64
		steps int
		found string
	}{
		{1001985, 300, "an inline submit's request landed after its claim's lease, past the deadline on its call: paid twice"},
	} {
		if r := Run(c.seed, c.steps); r.Err != nil {
			t.Fatalf("seed %d (%s) failed again at step %d: %v\n%s", c.seed, c.found, r.Steps, r.Err, tail(r.History))
		}
	}
}

// The checks can fail: a reference the vendor paid twice, and a payout
// stored paid that the vendor never received, are each named.
func TestChecksNameWhatBroke(t *testing.T) {
	w, r := simulate(5, drawConfig(rand.New(rand.NewPCG(5, 0x5eed)), 60))
	defer w.close()
	if r.Err != nil {
		t.Fatalf("seed 5 failed: %v", r.Err)
	}
	var d models.Disbursement
	if err := w.db.Where("status = ?", models.StatusSuccess).Order("created_at, id").Take(&d).Error; err != nil {
		t.Fatalf("seed 5 left no paid payout to tamper with: %v", err)
	}
	vp := w.vendor.byRef[d.VendorReference]
	if err := w.check(true); err != nil {
		t.Fatalf("before tampering: %v", err)
	}

	vp.executed = 2
	if err := w.check(true); err == nil || !strings.Contains(err.Error(), "paid twice") {
		t.Fatalf("a reference the vendor paid twice: check says %v", err)
	}
	vp.executed = 1

	delete(w.vendor.byRef, d.VendorReference)
	if err := w.check(true); err == nil || !strings.Contains(err.Error(), "is SUCCESS (debited) but the vendor says never received") {
		t.Fatalf("a payout stored paid that the vendor never received: check says %v", err)
	}
	w.vendor.byRef[d.VendorReference] = vp

	vp.status = vendors.PayoutFailed
	if err := w.check(true); err == nil || !strings.Contains(err.Error(), "but the vendor says FAILED") {
		t.Fatalf("a payout stored paid that the vendor failed: check says %v", err)
	}
}

func tail(h []string) string {
	if len(h) > 40 {
		h = h[len(h)-40:]
	}
	return strings.Join(h, "\n")
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return a[i] + "\n" + b[i]
		}
	}
	return "one is a prefix of the other"
}
