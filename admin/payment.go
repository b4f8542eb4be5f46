package admin

import (
	"context"
	"flag"
	"fmt"

	"github.com/google/uuid"

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

// PaymentRecord is the answer of payment show and payment settle: the
// payment as stored, with what operators must act on (a settlement the
// ledger refused, an amount the acquirer reported that is not the price)
// and what the acquirer reported as it was.
type PaymentRecord struct {
	PaymentID            string  `json:"payment_id"`
	ClientID             string  `json:"client_id"`
	WalletID             string  `json:"wallet_id"`
	Status               string  `json:"status"`
	Amount               string  `json:"amount"`
	PlatformFee          string  `json:"platform_fee"`
	NetAmount            string  `json:"net_amount"`
	PaidAt               *string `json:"paid_at"`
	PaidAtReported       *string `json:"paid_at_reported"`
	RetrievalReferenceNo *string `json:"retrieval_reference_no"`
	FailedReason         *string `json:"failed_reason"`
	ReportedAmount       *string `json:"reported_amount"`
	HoldReason           *string `json:"hold_reason"`
	SettleAt             *string `json:"settle_at"`
	SettledAt            *string `json:"settled_at"`
	SettlementError      *string `json:"settlement_error"`
	CreatedAt            string  `json:"created_at"`
}

func toPaymentRecord(p *models.Payment) PaymentRecord {
	r := PaymentRecord{PaymentID: p.ID.String(), ClientID: p.ClientID.String(), WalletID: p.WalletID.String(),
		Status: string(p.Status), Amount: p.Amount.String(), PlatformFee: p.PlatformFee.String(), NetAmount: p.NetAmount.String(),
		PaidAt: models.FormatTimePtr(p.PaidAt), PaidAtReported: models.FormatTimePtr(p.PaidAtReported),
		RetrievalReferenceNo: p.RetrievalReferenceNo, FailedReason: p.FailedReason, HoldReason: p.HoldReason,
		SettleAt: models.FormatTimePtr(p.SettleAt), SettledAt: models.FormatTimePtr(p.SettledAt),
		SettlementError: p.SettlementError, CreatedAt: models.FormatTime(p.CreatedAt)}
	if p.ReportedAmount != nil {
		a := p.ReportedAmount.String()
		r.ReportedAmount = &a
	}
	return r
}

// paymentID parses the one flag of the payment commands, --id.
func paymentID(fs *flag.FlagSet, args []string) (uuid.UUID, error) {
	raw := fs.String("id", "", "")
	if err := parse(fs, args); err != nil {
		return uuid.Nil, err
	}
	return requireID("id", *raw)
}

// runPaymentShow prints a payment as stored.
func runPaymentShow(ctx context.Context, d Deps, fs *flag.FlagSet, args []string) (any, error) {
	id, err := paymentID(fs, args)
	if err != nil {
		return nil, err
	}
	p, err := d.Payments.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return toPaymentRecord(p), nil
}

// runPaymentSettle retries a refused settlement once its cause is
// resolved (the wallet has room again, say) and prints the payment.
func runPaymentSettle(ctx context.Context, d Deps, fs *flag.FlagSet, args []string) (any, error) {
	id, err := paymentID(fs, args)
	if err != nil {
		return nil, err
	}
	p, err := d.Payments.RetrySettlement(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("payment %s: %w", id, err)
	}
	return toPaymentRecord(p), nil
}
