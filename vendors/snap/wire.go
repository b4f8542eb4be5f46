package snap

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/payoutd/payoutd/models"
)

// Paths and service codes of the services used ([BI-SNAP]; [MT-INQ],
// [MT-XFER], [MT-STATUS] give the same paths under /{version}).
const (
	PathAccessToken = "/v1.0/access-token/b2b"
	PathInquiry     = "/v1.0/account-inquiry-external"
	PathTransfer    = "/v1.0/transfer-interbank"
	PathStatus      = "/v1.0/transfer/status"

	ServiceAccessToken = "73"
	ServiceInquiry     = "16"
	ServiceTransfer    = "18"
	ServiceStatus      = "36"
)

// Money is a SNAP amount: {"value": "10000.00", "currency": "IDR"}, the
// value a decimal string with exactly two fraction digits ([MT-XFER]
// amount.value String(16,2): "IDR 10.000 will be placed with 10000.00";
// amount.currency String(3), always IDR).
type Money struct {
	Value    string `json:"value"`
	Currency string `json:"currency"`
}

// Errors of the amount codec.
var (
	ErrAmountFormat   = errors.New("snap: amount value must be digits, a point and exactly 2 fraction digits")
	ErrAmountCurrency = errors.New("snap: amount currency must be IDR")
	ErrAmountRange    = errors.New("snap: amount out of range")
	ErrAmountSubCent  = errors.New("snap: amount has a fraction of a cent, SNAP carries 2 fraction digits")
)

// maxValueLen: String(16,2) is 16 characters at most ([MT-XFER]).
const maxValueLen = 16

// FormatAmount renders a as SNAP Money, without floats. Amounts that are
// not positive, or carry a fraction of a sen (1/100 rupiah, below what
// SNAP's 2 fraction digits express), are refused rather than rounded.
func FormatAmount(a models.Amount) (Money, error) {
	if a <= 0 || a > models.MaxAmount {
		return Money{}, ErrAmountRange
	}
	if a%100 != 0 {
		return Money{}, ErrAmountSubCent
	}
	cents := int64(a) / 100
	v := strconv.FormatInt(cents/100, 10) + "." + fmt.Sprintf("%02d", cents%100)
	if len(v) > maxValueLen {
		return Money{}, ErrAmountRange
	}
	return Money{Value: v, Currency: "IDR"}, nil
}

// ParseAmount reads SNAP Money back into a models.Amount, strictly: IDR,
// digits, a point, exactly two fraction digits, at most 16 characters, no
// sign, exponent or space; zero is allowed (an inquiry may echo it).
func ParseAmount(m Money) (models.Amount, error) {
	if m.Currency != "IDR" {
		return 0, ErrAmountCurrency
	}
	v := m.Value
	dot := strings.IndexByte(v, '.')
	if len(v) > maxValueLen || dot < 1 || len(v)-dot-1 != 2 {
		return 0, ErrAmountFormat
	}
	intPart, frac := v[:dot], v[dot+1:]
	if !allDigits(intPart) || !allDigits(frac) {
		return 0, ErrAmountFormat
	}
	// 13 integer digits at most (16 - ".00"): far below int64 overflow.
	n, err := strconv.ParseInt(intPart, 10, 64)
	if err != nil {
		return 0, ErrAmountFormat
	}
	f, _ := strconv.ParseInt(frac, 10, 64)
	a := models.Amount(n*10000 + f*100)
	if a > models.MaxAmount {
		return 0, ErrAmountRange
	}
	return a, nil
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// TokenRequest is the body of POST /v1.0/access-token/b2b ([BI-SNAP]
// service 73; [DOKU-B2B]: grantType "client_credentials").
type TokenRequest struct {
	GrantType      string            `json:"grantType"`
	AdditionalInfo map[string]string `json:"additionalInfo,omitempty"`
}

// TokenResponse is its answer: responseCode 2007300 on success, the
// token, "Bearer" and expiresIn in seconds, a string in [BI-SNAP]
// ("900"); a number is accepted too.
type TokenResponse struct {
	ResponseCode    string          `json:"responseCode"`
	ResponseMessage string          `json:"responseMessage"`
	AccessToken     string          `json:"accessToken,omitempty"`
	TokenType       string          `json:"tokenType,omitempty"`
	ExpiresIn       json.RawMessage `json:"expiresIn,omitempty"`
}

// ExpiresInSeconds reads expiresIn, as a string or a number.
func (r TokenResponse) ExpiresInSeconds() (int64, error) {
	raw := bytes.TrimSpace(r.ExpiresIn)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, err
		}
		raw = []byte(s)
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n <= 0 || n > 7*24*3600 {
		return 0, fmt.Errorf("snap: expiresIn %q is not a positive number of seconds", raw)
	}
	return n, nil
}

// InquiryRequest is the body of POST /v1.0/account-inquiry-external
// ([MT-INQ]: beneficiaryBankCode String(8), the 3-digit BI bank code
// optionally followed by a 4-digit branch; beneficiaryAccountNo String(20)).
type InquiryRequest struct {
	BeneficiaryBankCode  string         `json:"beneficiaryBankCode"`
	BeneficiaryAccountNo string         `json:"beneficiaryAccountNo"`
	PartnerReferenceNo   string         `json:"partnerReferenceNo,omitempty"`
	AdditionalInfo       map[string]any `json:"additionalInfo,omitempty"`
}

// InquiryResponse is its answer ([MT-INQ]; [BI-SNAP] service 16:
// responseCode 2001600, the holder's name in beneficiaryAccountName).
type InquiryResponse struct {
	ResponseCode           string         `json:"responseCode"`
	ResponseMessage        string         `json:"responseMessage"`
	ReferenceNo            string         `json:"referenceNo,omitempty"`
	PartnerReferenceNo     string         `json:"partnerReferenceNo,omitempty"`
	BeneficiaryAccountName string         `json:"beneficiaryAccountName,omitempty"`
	BeneficiaryAccountNo   string         `json:"beneficiaryAccountNo,omitempty"`
	BeneficiaryBankCode    string         `json:"beneficiaryBankCode,omitempty"`
	BeneficiaryBankName    string         `json:"beneficiaryBankName,omitempty"`
	Currency               string         `json:"currency,omitempty"`
	AdditionalInfo         map[string]any `json:"additionalInfo,omitempty"`
}

// TransferRequest is the body of POST /v1.0/transfer-interbank
// ([MT-XFER]; [BI-SNAP] service 18). partnerReferenceNo is the payout
// reference (String(64), unique for two months at the bank).
//
// AdditionalInfo carries "transferType": "BIFAST" or "RTOL". The standard
// has no network field for service 18: the provider routes (BI-FAST when
// the receiving bank supports it, online transfer otherwise, [MT-ROUTE]),
// and additionalInfo is the standard's place for bank-specific fields. A
// bank that ignores it routes as it likes; the simulator honours it (and
// its caps).
type TransferRequest struct {
	PartnerReferenceNo     string         `json:"partnerReferenceNo"`
	Amount                 Money          `json:"amount"`
	BeneficiaryAccountName string         `json:"beneficiaryAccountName"`
	BeneficiaryAccountNo   string         `json:"beneficiaryAccountNo"`
	BeneficiaryBankCode    string         `json:"beneficiaryBankCode"`
	SourceAccountNo        string         `json:"sourceAccountNo"`
	TransactionDate        string         `json:"transactionDate"`
	AdditionalInfo         map[string]any `json:"additionalInfo,omitempty"`
}

// TransferResponse is its answer ([MT-XFER]; [BI-SNAP]): 2001800
// Successful or 2021800 Request In Progress, the bank's referenceNo. Some
// banks add latestTransactionStatus; when present it is honoured.
type TransferResponse struct {
	ResponseCode            string         `json:"responseCode"`
	ResponseMessage         string         `json:"responseMessage"`
	ReferenceNo             string         `json:"referenceNo,omitempty"`
	PartnerReferenceNo      string         `json:"partnerReferenceNo,omitempty"`
	Amount                  *Money         `json:"amount,omitempty"`
	BeneficiaryAccountNo    string         `json:"beneficiaryAccountNo,omitempty"`
	BeneficiaryBankCode     string         `json:"beneficiaryBankCode,omitempty"`
	SourceAccountNo         string         `json:"sourceAccountNo,omitempty"`
	LatestTransactionStatus string         `json:"latestTransactionStatus,omitempty"`
	AdditionalInfo          map[string]any `json:"additionalInfo,omitempty"`
}

// StatusRequest is the body of POST /v1.0/transfer/status ([MT-STATUS];
// [BI-SNAP] service 36): the original partnerReferenceNo and serviceCode
// "18"; originalExternalId and originalReferenceNo when known.
type StatusRequest struct {
	OriginalPartnerReferenceNo string `json:"originalPartnerReferenceNo"`
	OriginalReferenceNo        string `json:"originalReferenceNo,omitempty"`
	OriginalExternalID         string `json:"originalExternalId,omitempty"`
	ServiceCode                string `json:"serviceCode"`
	TransactionDate            string `json:"transactionDate,omitempty"`
}

// StatusResponse is its answer ([MT-STATUS]; [BI-SNAP] service 36):
// 2003600 and latestTransactionStatus (see transactionStatuses).
type StatusResponse struct {
	ResponseCode               string         `json:"responseCode"`
	ResponseMessage            string         `json:"responseMessage"`
	OriginalReferenceNo        string         `json:"originalReferenceNo,omitempty"`
	OriginalPartnerReferenceNo string         `json:"originalPartnerReferenceNo,omitempty"`
	OriginalExternalID         string         `json:"originalExternalId,omitempty"`
	ServiceCode                string         `json:"serviceCode,omitempty"`
	TransactionDate            string         `json:"transactionDate,omitempty"`
	Amount                     *Money         `json:"amount,omitempty"`
	BeneficiaryAccountNo       string         `json:"beneficiaryAccountNo,omitempty"`
	BeneficiaryBankCode        string         `json:"beneficiaryBankCode,omitempty"`
	SourceAccountNo            string         `json:"sourceAccountNo,omitempty"`
	LatestTransactionStatus    string         `json:"latestTransactionStatus,omitempty"`
	TransactionStatusDesc      string         `json:"transactionStatusDesc,omitempty"`
	AdditionalInfo             map[string]any `json:"additionalInfo,omitempty"`
}

// Envelope is the part every SNAP answer has.
type Envelope struct {
	ResponseCode    string `json:"responseCode"`
	ResponseMessage string `json:"responseMessage"`
}

// DecodeResponse decodes a SNAP answer into v and checks its responseCode:
// seven digits whose first three are the HTTP status the answer came with
// ([BI-SNAP]: responseCode = HTTP status + service code + case code). A
// body that is not that is an error.
func DecodeResponse(httpStatus int, body []byte, v any) (Code, error) {
	var env Envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return Code{}, fmt.Errorf("snap: undecodable answer (HTTP %d): %w", httpStatus, err)
	}
	c, err := ParseCode(env.ResponseCode)
	if err != nil {
		return Code{}, err
	}
	if c.HTTP != httpStatus {
		return c, fmt.Errorf("snap: responseCode %s came with HTTP %d", c, httpStatus)
	}
	c.Message = env.ResponseMessage
	if v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			return c, fmt.Errorf("snap: undecodable answer %s: %w", c, err)
		}
	}
	return c, nil
}
