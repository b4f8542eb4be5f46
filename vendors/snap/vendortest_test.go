package snap_test

import (
	"net/http/httptest"
	"testing"

	"github.com/payoutd/payoutd/vendors/sandbox/sandboxtest"
	"github.com/payoutd/payoutd/vendors/snap"
	"github.com/payoutd/payoutd/vendors/snap/snapsim"
	"github.com/payoutd/payoutd/vendors/vendortest"
)

// The adapter over a snapsim bank keeps the contract every vendor keeps.
func TestAdapterKeepsTheVendorContract(t *testing.T) {
	t.Parallel()
	key := testKey(t)
	vendortest.Run(t, func(t *testing.T, clock *sandboxtest.Clock) vendortest.Subject {
		bank := snapsim.New(snapsim.Options{
			PartnerPublicKey: &key.PublicKey, ClientKey: clientKey, ClientSecret: clientSecret,
			PartnerID: partnerID, SourceAccountNo: sourceAcct, Now: clock.Now, CompleteAfter: sandboxtest.CompleteAfter,
		})
		srv := httptest.NewServer(bank)
		t.Cleanup(srv.Close)
		v, err := snap.New(snap.Options{
			Bank: "bca", BaseURL: srv.URL, PartnerID: partnerID, ClientKey: clientKey, ClientSecret: clientSecret,
			ChannelID: "95221", PrivateKey: key, SourceAccountNo: sourceAcct, HTTPClient: srv.Client(), Now: clock.Now,
		})
		if err != nil {
			t.Fatal(err)
		}
		return vendortest.Subject{
			Vendor: v,
			// snapsim keeps one transfer per partnerReferenceNo.
			Payouts:     func(ref string) int { return min(bank.SubmitCalls(ref), 1) },
			SettleAfter: sandboxtest.CompleteAfter, Bank: "bca", Inquiry: vendortest.InquiryResolves, Returns: true,
		}
	})
}
