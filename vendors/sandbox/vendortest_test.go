package sandbox_test

import (
	"testing"

	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/sandbox/sandboxtest"
	"github.com/payoutd/payoutd/vendors/vendortest"
)

// simbank in this process keeps the contract every vendor keeps.
func TestSimBankKeepsTheVendorContract(t *testing.T) {
	t.Parallel()
	vendortest.Run(t, func(t *testing.T, clock *sandboxtest.Clock) vendortest.Subject {
		v := sandbox.NewSimBank(sandbox.Options{CompleteAfter: sandboxtest.CompleteAfter, Now: clock.Now})
		return vendortest.Subject{
			Vendor:      v,
			Payouts:     vendortest.OneRecordPerReference(v),
			SettleAfter: sandboxtest.CompleteAfter, Bank: "bca", Inquiry: vendortest.InquiryResolves, Returns: true,
		}
	})
}
