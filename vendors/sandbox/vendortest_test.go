package sandbox_test

import (
	"context"
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
			Vendor: v,
			// One record per reference by construction: a reference is
			// paid once if the vendor knows it.
			Payouts: func(ref string) int {
				if _, err := v.Status(context.Background(), ref); err != nil {
					return 0
				}
				return 1
			},
			SettleAfter: sandboxtest.CompleteAfter, Bank: "bca", Inquiry: vendortest.InquiryResolves, Returns: true,
		}
	})
}
