package payouts

import (
	"testing"

	"github.com/payoutd/payoutd/models"
)

// A create reviews by the stricter of the cached and the stored review
// threshold: the lower one, and any one over none.
func TestLowerThreshold(t *testing.T) {
	r := func(n int64) *models.Amount { a := models.Rupiah(n); return &a }
	for _, tc := range []struct {
		name       string
		cached     *models.Amount
		stored     *models.Amount
		wantRupiah int64 // 0: review off
	}{
		{"both off", nil, nil, 0},
		{"turned on behind the cache", nil, r(50_000), 50_000},
		{"turned off behind the cache: the cache still reviews", r(50_000), nil, 50_000},
		{"lowered", r(100_000), r(50_000), 50_000},
		{"raised: the cache's lower one holds", r(50_000), r(100_000), 50_000},
		{"equal", r(50_000), r(50_000), 50_000},
	} {
		got := lowerThreshold(tc.cached, tc.stored)
		if (got == nil) != (tc.wantRupiah == 0) || (got != nil && *got != models.Rupiah(tc.wantRupiah)) {
			t.Errorf("%s: %v, want %d rupiah", tc.name, got, tc.wantRupiah)
		}
	}
}
