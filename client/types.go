package client

import "time"

// Amount is an amount in IDR as a decimal string, exactly as the API sends
// and takes it: "100000", "2500", "97500.5"; balances carry 4 fraction
// digits ("10000000.0000"). Request amounts are positive, plain decimal
// digits with at most 4 fraction digits. Never convert an Amount to a
// float: parse it with a decimal library when you need arithmetic.
type Amount string

// String returns the decimal text.
func (a Amount) String() string { return string(a) }

// TransferType is how a payout travels: BIFAST or RTOL.
type TransferType string

// The transfer types.
const (
	BIFAST TransferType = "BIFAST"
	RTOL   TransferType = "RTOL"
)

// DisbursementStatus is the state of a disbursement. The normal progression
// is PENDING_VERIFICATION (only at or above the client's review threshold),
// VERIFIED, REQUESTED, SUCCESS; FAILED, EXPIRED and CANCELLED are terminal
// failures; RETURNED is a SUCCESS the bank later sent back (the net is
// back in the wallet).
type DisbursementStatus string

// The disbursement statuses.
const (
	StatusPendingVerification DisbursementStatus = "PENDING_VERIFICATION"
	StatusVerified            DisbursementStatus = "VERIFIED"
	StatusRequested           DisbursementStatus = "REQUESTED"
	StatusSuccess             DisbursementStatus = "SUCCESS"
	StatusFailed              DisbursementStatus = "FAILED"
	StatusExpired             DisbursementStatus = "EXPIRED"
	StatusCancelled           DisbursementStatus = "CANCELLED"
	StatusReturned            DisbursementStatus = "RETURNED"
)

// Final reports whether s is terminal: SUCCESS, FAILED, EXPIRED, CANCELLED
// or RETURNED. A final disbursement no longer holds a balance lock; the
// only change after one is a SUCCESS returned by the bank (RETURNED).
func (s DisbursementStatus) Final() bool {
	switch s {
	case StatusSuccess, StatusFailed, StatusExpired, StatusCancelled, StatusReturned:
		return true
	}
	return false
}

// PaymentStatus is the state of a payment: PENDING, then SUCCESS, EXPIRED
// or FAILED.
type PaymentStatus string

// The payment statuses.
const (
	PaymentStatusPending PaymentStatus = "PENDING"
	PaymentStatusSuccess PaymentStatus = "SUCCESS"
	PaymentStatusExpired PaymentStatus = "EXPIRED"
	PaymentStatusFailed  PaymentStatus = "FAILED"
)

// Wallet is an entry of the wallet list. WalletID is what disbursement
// calls take as ClientWalletID.
type Wallet struct {
	WalletID string `json:"wallet_id"`
	Name     string `json:"name"`
}

// WalletList is the answer of GET /api/v3/wallets.
type WalletList struct {
	Wallets    []Wallet `json:"wallets"`
	TotalCount int      `json:"total_count"`
}

// WalletBalance is the answer of GET /api/v3/wallets/{wallet_id}/balance.
// Balance is the settled ledger balance (it can be negative), Locked the
// gross amount held by in-flight disbursements, and Available = Balance -
// Locked what a new disbursement may use. Each has 4 fraction digits.
type WalletBalance struct {
	WalletID  string `json:"wallet_id"`
	Name      string `json:"name"`
	Balance   Amount `json:"balance"`
	Available Amount `json:"available"`
	Locked    Amount `json:"locked"`
	Currency  string `json:"currency"`
}

// Bank is an entry of a wallet's bank list. Code is the value to send as
// BankCode: a bank ("bca", "mandiri", ...) or an e-wallet ("dana", "gopay",
// "ovo", "linkaja", "shopeepay"), depending on the wallet's vendor.
type Bank struct {
	Code                   string         `json:"code"`
	Name                   string         `json:"name"`
	Swift                  string         `json:"swift"`
	SupportedTransferTypes []TransferType `json:"supported_transfer_types"`
}

// BankList is the answer of GET /api/v3/wallets/{wallet_id}/banks.
type BankList struct {
	Banks      []Bank `json:"banks"`
	TotalCount int    `json:"total_count"`
}

// QuoteRequest is the body of POST /api/v3/disbursements/quote.
type QuoteRequest struct {
	// ClientWalletID is the wallet to debit (a WalletID of the list).
	ClientWalletID string `json:"client_wallet_id"`
	// Amount is the gross amount; the fee is deducted from it.
	Amount Amount `json:"amount"`
	// BankCode is a Code of the wallet's bank list (case-insensitive).
	BankCode string `json:"bank_code"`
	// AccountNo is the account number, digits only; for an e-wallet the
	// registered phone number in local format with the leading 0.
	AccountNo    string       `json:"account_no"`
	TransferType TransferType `json:"transfer_type"`
	// AccountHolderName is the recipient's name as the bank or e-wallet
	// has it registered, at most 100 characters; empty sends none. Needed
	// only when the wallet's rail cannot inquire the name (the answer is
	// then 422 "account_holder_name is required for this recipient"); a
	// name the inquiry returns is the one used.
	AccountHolderName string `json:"account_holder_name,omitempty"`
}

// Quote is the answer of a quote: the fee, the net amount and the account
// holder resolved by a real-time inquiry. Nothing is locked or stored.
type Quote struct {
	Amount            Amount       `json:"amount"`
	PlatformFee       Amount       `json:"platform_fee"`
	NetAmount         Amount       `json:"net_amount"`
	Currency          string       `json:"currency"`
	TransferType      TransferType `json:"transfer_type"`
	BankCode          string       `json:"bank_code"`
	BankName          string       `json:"bank_name"`
	AccountNo         string       `json:"account_no"`
	AccountHolderName string       `json:"account_holder_name"`
}

// CreateDisbursementRequest is the body of POST /api/v3/disbursements. The
// Idempotency-Key is a separate argument of [Client.CreateDisbursement].
type CreateDisbursementRequest struct {
	// ClientWalletID is the wallet to debit (a WalletID of the list).
	ClientWalletID string `json:"client_wallet_id"`
	// Amount is the gross amount: it is locked in the wallet, the fee is
	// deducted from it and the net is paid out.
	Amount Amount `json:"amount"`
	// BankCode is a Code of the wallet's bank list (case-insensitive).
	BankCode string `json:"bank_code"`
	// AccountNo is the account number, digits only; for an e-wallet the
	// registered phone number in local format with the leading 0.
	AccountNo    string       `json:"account_no"`
	TransferType TransferType `json:"transfer_type"`
	// AccountHolderName: as on QuoteRequest. It is compared in replays
	// like AccountNo.
	AccountHolderName string `json:"account_holder_name,omitempty"`
	// Memo is free text of at most 255 characters; empty sends none.
	Memo string `json:"memo,omitempty"`
	// ReferenceID is your own business reference of at most 64
	// characters, echoed in answers and in the webhook as referenceId;
	// empty sends none.
	ReferenceID string `json:"reference_id,omitempty"`
}

// Disbursement is a disbursement as the service answers it: the answer of
// a create and of GET /api/v3/disbursements/{id}.
type Disbursement struct {
	ID                string             `json:"id"`
	ClientID          string             `json:"client_id"`
	WalletID          string             `json:"wallet_id"`
	Status            DisbursementStatus `json:"status"`
	Amount            Amount             `json:"amount"`       // gross
	PlatformFee       Amount             `json:"platform_fee"` // deducted from Amount
	NetAmount         Amount             `json:"net_amount"`   // paid to the recipient
	Currency          string             `json:"currency"`
	TransferType      TransferType       `json:"transfer_type"`
	BankCode          string             `json:"bank_code"`
	BankName          string             `json:"bank_name"`
	AccountNo         string             `json:"account_no"`
	AccountHolderName string             `json:"account_holder_name"`
	Memo              *string            `json:"memo"`
	// ReferenceID is empty when none was supplied at creation.
	ReferenceID  string    `json:"reference_id,omitempty"`
	FailedReason *string   `json:"failed_reason"`
	CreatedAt    time.Time `json:"created_at"`

	// IdempotencyKey is set in the answer of a create only.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// RequestedAt (the vendor accepted the payout) and CompletedAt (it
	// reached SUCCESS or FAILED) are set in the answer of GET only.
	RequestedAt *time.Time `json:"requested_at,omitempty"`
	CompletedAt *time.Time `json:"completed_at,omitempty"`
	// ReturnedAt is when the bank returned a paid payout (RETURNED); GET
	// only.
	ReturnedAt *time.Time `json:"returned_at,omitempty"`

	// Replayed is set by CreateDisbursement when the service answered
	// with Idempotent-Replayed: true: the key had been used before (by an
	// earlier call, or by an earlier attempt of this call whose answer was
	// lost) and this is the disbursement as stored now.
	Replayed bool `json:"-"`
}

// SignatureCheck is the answer of POST /api/v3/debug/signature-check.
type SignatureCheck struct {
	Valid       bool                 `json:"valid"`
	Diagnostics SignatureDiagnostics `json:"diagnostics"`
}

// SignatureDiagnostics explains how the service verified a signature.
// Diagnosis is "ok" or the first problem found (signature_mismatch,
// timestamp_out_of_window, hex_case_mismatch, ...).
type SignatureDiagnostics struct {
	ReceivedBody            string `json:"received_body"`
	ReceivedBodyLength      int64  `json:"received_body_length"`
	ReceivedBodySHA256      string `json:"received_body_sha256"`
	ReceivedTimestamp       string `json:"received_timestamp"`
	ServerTimeMS            int64  `json:"server_time_ms"`
	WindowDeltaMS           int64  `json:"window_delta_ms"`
	WindowOK                bool   `json:"window_ok"`
	SignedPayloadString     string `json:"signed_payload_string"`
	ClientProvidedSignature string `json:"client_provided_signature"`
	Diagnosis               string `json:"diagnosis"`
}
