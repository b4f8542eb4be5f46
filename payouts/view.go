package payouts

import (
	"github.com/payoutd/payoutd/models"
)

// Body holds the fields of a disbursement every view shows, named as the
// spec names them. Amounts are decimal strings; timestamps RFC 3339 UTC.
type Body struct {
	ID                string  `json:"id"`
	ClientID          string  `json:"client_id"`
	WalletID          string  `json:"wallet_id"`
	Status            string  `json:"status"`
	Amount            string  `json:"amount"`
	PlatformFee       string  `json:"platform_fee"`
	NetAmount         string  `json:"net_amount"`
	Currency          string  `json:"currency"`
	TransferType      string  `json:"transfer_type"`
	BankCode          string  `json:"bank_code"`
	BankName          string  `json:"bank_name"`
	AccountNo         string  `json:"account_no"`
	AccountHolderName string  `json:"account_holder_name"`
	Memo              *string `json:"memo"`
	ReferenceID       *string `json:"reference_id,omitempty"`
	FailedReason      *string `json:"failed_reason"`
	CreatedAt         string  `json:"created_at"`
}

// Creation is the answer of a create (fresh or replayed).
type Creation struct {
	Body
	IdempotencyKey string `json:"idempotency_key"`
}

// Record is the answer of GET /api/v3/disbursements/{id}, and what the
// operator commands print.
type Record struct {
	Body
	RequestedAt *string `json:"requested_at"`
	CompletedAt *string `json:"completed_at"`
	// ReturnedAt is set on RETURNED: when the bank returned the paid payout.
	ReturnedAt *string `json:"returned_at"`
}

// CreationView shows d as a create answers it.
func CreationView(d *models.Disbursement) Creation {
	return Creation{Body: body(d), IdempotencyKey: d.IdempotencyKey}
}

// RecordView shows d as GET answers it.
func RecordView(d *models.Disbursement) Record {
	return Record{Body: body(d), RequestedAt: models.FormatTimePtr(d.RequestedAt), CompletedAt: models.FormatTimePtr(d.CompletedAt),
		ReturnedAt: models.FormatTimePtr(d.ReturnedAt)}
}

func body(d *models.Disbursement) Body {
	return Body{
		ID: d.ID.String(), ClientID: d.ClientID.String(), WalletID: d.WalletID.String(), Status: string(d.Status),
		Amount: d.Amount.String(), PlatformFee: d.PlatformFee.String(), NetAmount: d.NetAmount.String(),
		Currency: d.Currency, TransferType: string(d.TransferType), BankCode: d.BankCode, BankName: d.BankName,
		AccountNo: d.AccountNo, AccountHolderName: d.AccountHolderName,
		Memo: d.Memo, ReferenceID: d.ReferenceID, FailedReason: d.FailedReason,
		CreatedAt: models.FormatTime(d.CreatedAt),
	}
}
