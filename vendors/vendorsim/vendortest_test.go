package vendorsim_test

import (
	"testing"

	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/sandbox/sandboxtest"
	"github.com/payoutd/payoutd/vendors/vendortest"
)

// The HTTP client over payoutd vendorsim keeps the contract every vendor
// keeps.
func TestClientKeepsTheVendorContract(t *testing.T) {
	t.Parallel()
	vendortest.Run(t, func(t *testing.T, clock *sandboxtest.Clock) vendortest.Subject {
		pair := pairOver(t, sandbox.Options{CompleteAfter: sandboxtest.CompleteAfter, Now: clock.Now})
		v := pair.SimBank
		return vendortest.Subject{
			Vendor:      v,
			Payouts:     vendortest.OneRecordPerReference(v),
			SettleAfter: sandboxtest.CompleteAfter, Bank: "bca", Inquiry: vendortest.InquiryResolves, Returns: true,
		}
	})
}
