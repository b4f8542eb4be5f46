package xendit

import "encoding/json"

// Wire types of Xendit Payouts v2, as the adapter sends and reads them.
// Field names follow the documents cited on each type; the official Go SDK
// (github.com/xendit/xendit-go, package payout, models CreatePayoutRequest,
// DigitalPayoutChannelProperties, GetPayouts200ResponseDataInner, Channel,
// Error) was read to confirm the names, not copied.

// createPayoutRequest is the body of POST /v2/payouts.
//
// Source: "Create Payout" API reference, https://docs.xendit.co/apidocs/create-payout,
// and the integration guide "Payouts", https://docs.xendit.co/docs/integration-payouts
// (example request: reference_id, channel_code, channel_properties
// {account_number, account_holder_name}, amount, description, currency).
// Amount: "For IDR currency, number should be integer".
type createPayoutRequest struct {
	ReferenceID       string            `json:"reference_id"`
	ChannelCode       string            `json:"channel_code"`
	ChannelProperties channelProperties `json:"channel_properties"`
	Amount            json.Number       `json:"amount"`
	Description       string            `json:"description,omitempty"`
	Currency          string            `json:"currency"`
}

// channelProperties of a bank or e-wallet destination. Both fields are
// Required by the current API reference (account_holder_name: "Needs to
// match the registered account name exactly", 1 to 100 characters), though
// an older SDK's DigitalPayoutChannelProperties marks the name nullable:
// the API refuses a create without it.
//
// Source: "Create Payout" API reference, https://docs.xendit.co/apidocs/create-payout.
type channelProperties struct {
	AccountNumber     string `json:"account_number"`
	AccountHolderName string `json:"account_holder_name,omitempty"`
}

// payoutObject is the Payout object answered by create, get by id, get by
// reference_id, cancel, and carried in webhooks as data.
//
// Sources: "Get payout by ID", https://docs.xendit.co/apidocs/get-payout;
// "Get all payouts by reference id", https://docs.xendit.co/apidocs/get-all-payouts;
// "Payout Webhook", https://docs.xendit.co/apidocs/payout-webhook-notification.
// failure_code: "If the Payout failed, we include a failure code" (SDK Payout model).
type payoutObject struct {
	ID                   string            `json:"id"`
	Amount               json.Number       `json:"amount"`
	ChannelCode          string            `json:"channel_code"`
	Currency             string            `json:"currency"`
	Description          string            `json:"description,omitempty"`
	ReferenceID          string            `json:"reference_id"`
	Status               string            `json:"status"`
	Created              string            `json:"created"`
	Updated              string            `json:"updated"`
	EstimatedArrivalTime string            `json:"estimated_arrival_time,omitempty"`
	BusinessID           string            `json:"business_id"`
	FailureCode          string            `json:"failure_code,omitempty"`
	ChannelProperties    channelProperties `json:"channel_properties"`
}

// payoutList is the SDK's shape of GET /v2/payouts?reference_id= (model
// GetPayouts200Response: data, has_more, links). The API reference page
// "Get all payouts by reference id" (https://docs.xendit.co/apidocs/get-all-payouts)
// documents a bare JSON array instead; decodePayoutList accepts both.
type payoutList struct {
	Data    []payoutObject `json:"data"`
	HasMore bool           `json:"has_more"`
}

// channel is one entry of GET /payouts_channels.
//
// Source: "Get payout channels", https://docs.xendit.co/apidocs/get-payout-channels
// ("Returns array of Payout Channel objects sorted by alphabetical order by
// channel_code"; channel_category one of BANK, EWALLET, OTC).
type channel struct {
	ChannelCode     string       `json:"channel_code"`
	ChannelCategory string       `json:"channel_category"`
	Currency        string       `json:"currency"`
	ChannelName     string       `json:"channel_name"`
	AmountLimits    amountLimits `json:"amount_limits"`
}

type amountLimits struct {
	Minimum          json.Number `json:"minimum"`
	Maximum          json.Number `json:"maximum"`
	MinimumIncrement json.Number `json:"minimum_increment"`
}

// webhookBody is what Xendit POSTs to the payout webhook URL.
//
// Source: "Payout Webhook", https://docs.xendit.co/apidocs/payout-webhook-notification
// (events payout.succeeded, payout.failed, payout.reversed; header
// x-callback-token carries the Verification Token of the dashboard).
type webhookBody struct {
	Event      string       `json:"event"`
	BusinessID string       `json:"business_id"`
	Created    string       `json:"created"`
	Data       payoutObject `json:"data"`
}

// errorBody is Xendit's error answer. The SDK's Error model has error_code
// and message (plus errors: [{path, message}]); the reference page of
// "Get payout channels" shows error_message for its 401 example. Both are
// read.
type errorBody struct {
	ErrorCode    string          `json:"error_code"`
	Message      string          `json:"message,omitempty"`
	ErrorMessage string          `json:"error_message,omitempty"`
	Errors       []errorsElement `json:"errors,omitempty"`
}

type errorsElement struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

func (e errorBody) text() string {
	if e.Message != "" {
		return e.Message
	}
	return e.ErrorMessage
}

// Payout statuses.
//
// Source: "Payout Status Lifecycle", https://docs.xendit.co/docs/payout-status-lifecycle
// (ACCEPTED, PENDING_COMPLIANCE_ASSESSMENT, COMPLIANCE_REJECTED, REQUESTED,
// FAILED, SUCCEEDED, CANCELLED, REVERSED; READY, LOCKED, EXPIRED are for
// cash payouts only, which this adapter never creates).
const (
	StatusAccepted                    = "ACCEPTED"
	StatusPendingComplianceAssessment = "PENDING_COMPLIANCE_ASSESSMENT"
	StatusComplianceRejected          = "COMPLIANCE_REJECTED"
	StatusRequested                   = "REQUESTED"
	StatusFailed                      = "FAILED"
	StatusSucceeded                   = "SUCCEEDED"
	StatusCancelled                   = "CANCELLED"
	StatusReversed                    = "REVERSED"
)

// Webhook events. Source: "Payout Webhook",
// https://docs.xendit.co/apidocs/payout-webhook-notification.
const (
	EventSucceeded = "payout.succeeded"
	EventFailed    = "payout.failed"
	EventReversed  = "payout.reversed"
)

// Error codes of the Payouts API.
//
// Sources: "Error Handling" of the Payouts API,
// https://docs.xendit.co/api-payouts-beta/payouts-errors/ (errors in
// creating the payout: API_VALIDATION_ERROR, INVALID_JSON_FORMAT,
// CHANNEL_CODE_NOT_SUPPORTED_ERROR, RECIPIENT_ACCOUNT_NUMBER_ERROR,
// RECIPIENT_AMOUNT_ERROR, MAXIMUM_TRANSFER_LIMIT_ERROR,
// DUPLICATE_TRANSACTION_ERROR, REQUEST_FORBIDDEN_ERROR, SERVER_ERROR);
// "Create Payout" (v3, https://docs.xendit.co/apidocs/create-payout-v3),
// whose idempotency rule is the v2 one: "Same Idempotency Key + different
// request body → DUPLICATE_ERROR"; "Get payout channels"
// (INVALID_API_KEY on 401); cancellation refused while not ACCEPTED
// (CANCELLATION_NOT_ALLOWED); DATA_NOT_FOUND for an unknown payout id;
// RATE_LIMIT_EXCEEDED on 429.
const (
	CodeAPIValidation           = "API_VALIDATION_ERROR"
	CodeInvalidJSONFormat       = "INVALID_JSON_FORMAT"
	CodeChannelNotSupported     = "CHANNEL_CODE_NOT_SUPPORTED_ERROR"
	CodeChannelNotSupportedBare = "CHANNEL_CODE_NOT_SUPPORTED"
	CodeRecipientAccountNumber  = "RECIPIENT_ACCOUNT_NUMBER_ERROR"
	CodeRecipientAmount         = "RECIPIENT_AMOUNT_ERROR"
	CodeMaximumTransferLimit    = "MAXIMUM_TRANSFER_LIMIT_ERROR"
	CodeInsufficientBalance     = "INSUFFICIENT_BALANCE"
	CodeDuplicate               = "DUPLICATE_ERROR"
	CodeDuplicateTransaction    = "DUPLICATE_TRANSACTION_ERROR"
	CodeRequestForbidden        = "REQUEST_FORBIDDEN_ERROR"
	CodeInvalidAPIKey           = "INVALID_API_KEY"
	CodeDataNotFound            = "DATA_NOT_FOUND"
	CodeCancellationNotAllowed  = "CANCELLATION_NOT_ALLOWED"
	CodeRateLimitExceeded       = "RATE_LIMIT_EXCEEDED"
	CodeServerError             = "SERVER_ERROR"
)
