package vendors_test

import (
	"context"
	"errors"
	"testing"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// An inquiry route answers unavailable until it is given a registry, and
// for a name the registry does not have; then it asks that vendor.
func TestInquiryRoute(t *testing.T) {
	route := vendors.NewInquiryRoute("simbank")
	req := vendors.InquiryRequest{BankCode: "bca", AccountNo: "1234567890", TransferType: models.BIFAST}
	if _, err := route.Inquire(context.Background(), req); !errors.Is(err, vendors.ErrUnavailable) {
		t.Errorf("before Use: %v, want ErrUnavailable", err)
	}
	route.Use(vendors.NewRegistry())
	if _, err := route.Inquire(context.Background(), req); !errors.Is(err, vendors.ErrUnavailable) {
		t.Errorf("without the vendor: %v, want ErrUnavailable", err)
	}
	route.Use(vendors.NewRegistry(sandbox.NewSimBank(sandbox.Options{})))
	if acc, err := route.Inquire(context.Background(), req); err != nil || acc.HolderName != "SANDBOX 7890" {
		t.Errorf("with the vendor: %+v, %v", acc, err)
	}
}
