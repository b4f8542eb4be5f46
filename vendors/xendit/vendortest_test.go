package xendit_test

import (
	"net/http/httptest"
	"testing"

	"github.com/payoutd/payoutd/vendors/sandbox/sandboxtest"
	"github.com/payoutd/payoutd/vendors/vendortest"
	"github.com/payoutd/payoutd/vendors/xendit/xenditsim"
)

// The adapter over xenditsim keeps the contract every vendor keeps. Xendit
// has no real-time account inquiry (see Inquire).
func TestAdapterKeepsTheVendorContract(t *testing.T) {
	t.Parallel()
	vendortest.Run(t, func(t *testing.T, clock *sandboxtest.Clock) vendortest.Subject {
		sim, err := xenditsim.New(xenditsim.Options{SecretKey: secretKey, CallbackToken: callbackToken,
			CompleteAfter: completeAfter, Now: clock.Now, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(sim)
		t.Cleanup(ts.Close)
		return vendortest.Subject{
			Vendor: newVendor(t, ts.URL, secretKey, clock), Payouts: sim.Payouts,
			SettleAfter: completeAfter, Bank: "bca", Inquiry: vendortest.InquiryNone, Returns: true,
		}
	})
}
