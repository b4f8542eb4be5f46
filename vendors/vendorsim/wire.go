// Package vendorsim runs the sandbox payout vendors over HTTP (payoutd
// vendorsim) and holds the client adapter the service uses to reach them, so
// that the HTTP vendor path (timeouts, lost answers, retries, signed
// callbacks) is exercised over a real socket.
//
// Wire format, under /v1/{vendor} with vendor simbank or simwallet; every
// request carries "Authorization: Bearer <token>":
//
//	GET  banks                        → {"banks":[{"code","name","swift","e_wallet","transfer_types"}]}
//	POST inquiries                    {"bank_code","account_no","transfer_type"} → {"holder_name"}
//	POST payouts                      {"reference","bank_code","account_no","transfer_type","amount","holder_name"} → payout
//	GET  payouts/{reference}          → payout
//	POST payouts/{reference}/complete {"status","reason"} → payout
//
// A payout is {"reference","status","failure_reason","submit_calls"}; status
// is PENDING, SUCCESS, FAILED or RETURNED (paid, then returned by the bank;
// failure_reason is the return reason). Amounts are decimal strings ("97500",
// "0.0001"). Errors are {"error":"<message>","code":"<code>"} (plus "reason"
// for a rejection), with the codes below.
//
// When a payout becomes final, and again when a paid one is returned, the
// server POSTs {"reference","status","failure_reason"} to
// <callback URL>/<vendor> with the header x-vendor-signature: t=<unix
// ms>,v1=<lowercase hex HMAC-SHA256 of t + "." + body keyed by the callback
// secret> (package signature), retried with backoff until a 2xx. The token
// and the callback secret are two different secrets.
package vendorsim

// Error codes of the wire format.
const (
	CodeAccountInactive    = "account_inactive"     // 422, models.ErrAccountInactive
	CodeAccountNotResolved = "account_not_resolved" // 422, models.ErrAccountNotResolved
	CodeUnsupportedBank    = "unsupported_bank"     // 422, models.ErrUnsupportedBank
	CodeRejected           = "rejected"             // 422, vendors.ErrRejected
	CodeUnknownPayout      = "unknown_payout"       // 404, vendors.ErrUnknownPayout
	CodeAlreadyFinal       = "already_final"        // 409, sandbox.ErrAlreadyFinal
	CodeUnavailable        = "unavailable"          // 503, vendors.ErrUnavailable
	CodeUnauthorized       = "unauthorized"         // 401, ErrUnauthorized
	CodeBadRequest         = "bad_request"          // 400
	CodeUnknownVendor      = "unknown_vendor"       // 404
	CodeNotFound           = "not_found"            // 404, no such route
	CodeInternal           = "internal"             // 500
)

// SignatureHeader carries the signature of a callback.
const SignatureHeader = "x-vendor-signature"

type bankJSON struct {
	Code          string   `json:"code"`
	Name          string   `json:"name"`
	SWIFT         string   `json:"swift,omitempty"`
	EWallet       bool     `json:"e_wallet"`
	TransferTypes []string `json:"transfer_types"`
}

type banksResponse struct {
	Banks []bankJSON `json:"banks"`
}

type inquiryRequest struct {
	BankCode     string `json:"bank_code"`
	AccountNo    string `json:"account_no"`
	TransferType string `json:"transfer_type"`
}

type inquiryResponse struct {
	HolderName string `json:"holder_name"`
}

type payoutRequest struct {
	Reference    string `json:"reference"`
	BankCode     string `json:"bank_code"`
	AccountNo    string `json:"account_no"`
	TransferType string `json:"transfer_type"`
	Amount       string `json:"amount"`
	HolderName   string `json:"holder_name"`
}

type payoutResponse struct {
	Reference     string `json:"reference"`
	Status        string `json:"status"`
	FailureReason string `json:"failure_reason"`
	SubmitCalls   int    `json:"submit_calls"`
}

type completeRequest struct {
	Status string `json:"status"`
	Reason string `json:"reason"`
}

// callbackBody is what the server POSTs when a payout becomes final.
type callbackBody struct {
	Reference     string `json:"reference"`
	Status        string `json:"status"`
	FailureReason string `json:"failure_reason"`
}

type errorBody struct {
	Error  string `json:"error"`
	Code   string `json:"code"`
	Reason string `json:"reason,omitempty"` // why a payout was rejected
}
