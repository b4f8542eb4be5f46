package vendors_test

import (
	"testing"

	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/vendors"
)

// A burst of calls to a vendor takes a connection each; the next burst
// reuses them (with Go's default of two idle per host, 14 of 16 were new).
func TestVendorCallBurstsReuseTheirConnections(t *testing.T) {
	t.Parallel()
	const burst = 16
	vendor := testenv.NewBurst(t, burst)
	client := vendors.NewHTTPClient()
	if n := vendor.Send(t, client); n != burst {
		t.Fatalf("first burst opened %d connections, want %d", n, burst)
	}
	if n := vendor.Send(t, client); n != 0 {
		t.Errorf("second burst opened %d new connections, want 0: the first burst's were not kept", n)
	}
}
