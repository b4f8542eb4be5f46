package admin

import (
	"context"
	"flag"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payments"
)

// PaymentSimulated is the answer of payment simulate.
type PaymentSimulated struct {
	PaymentID            string  `json:"payment_id"`
	Result               string  `json:"result"` // applied, duplicate or recorded_late
	Status               string  `json:"status"`
	PaidAt               *string `json:"paid_at"`
	RetrievalReferenceNo *string `json:"retrieval_reference_no"`
	SettleAt             *string `json:"settle_at"`
}

// runPaymentSimulate reports a payment paid or failed as the sandbox
// acquirer would; for a payment no longer PENDING the result is recorded
// as late, not applied.
func runPaymentSimulate(ctx context.Context, d Deps, fs *flag.FlagSet, args []string) (any, error) {
	raw := fs.String("id", "", "")
	status := fs.String("status", "", "")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	id, err := requireID("id", *raw)
	if err != nil {
		return nil, err
	}
	if *status != payments.ResultSuccess && *status != payments.ResultFailed {
		return nil, usageError{"--status must be SUCCESS or FAILED"}
	}
	applied, err := d.Payments.Simulate(ctx, id, *status)
	if err != nil {
		return nil, err
	}
	p, err := d.Payments.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return PaymentSimulated{PaymentID: p.ID.String(), Result: string(applied), Status: string(p.Status),
		PaidAt: models.FormatTimePtr(p.PaidAt), RetrievalReferenceNo: p.RetrievalReferenceNo, SettleAt: models.FormatTimePtr(p.SettleAt)}, nil
}
