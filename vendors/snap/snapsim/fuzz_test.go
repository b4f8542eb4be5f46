package snapsim

import (
	"net/http"
	"testing"
)

// The schema check answers any request to any of the four services with
// nil or a refusal, never a panic.
func FuzzValidateRequest(f *testing.F) {
	paths := []string{"/v1.0/access-token/b2b", "/v1.0/account-inquiry-external", "/v1.0/transfer-interbank", "/v1.0/transfer/status"}
	f.Add(uint8(2), "2026-11-27T10:00:00+07:00", []byte(`{"partnerReferenceNo":"r","amount":{"value":"10000.00","currency":"IDR"},"beneficiaryAccountName":"A","beneficiaryAccountNo":"1234567890","beneficiaryBankCode":"002","sourceAccountNo":"8880001111","transactionDate":"2026-11-27T10:00:00+07:00"}`))
	f.Add(uint8(1), "x", []byte(`{"beneficiaryBankCode":"002","beneficiaryAccountNo":"1234"}`))
	f.Add(uint8(0), "", []byte(`{"grantType":"client_credentials"}`))
	f.Add(uint8(3), "2026-11-27T10:00:00+07:00", []byte(`{"amount":{"value":1}}`))
	f.Fuzz(func(t *testing.T, which uint8, timestamp string, body []byte) {
		h := http.Header{}
		h.Set("Content-Type", "application/json")
		h.Set("X-TIMESTAMP", timestamp)
		h.Set("Authorization", "Bearer token")
		h.Set("X-PARTNER-ID", "P")
		h.Set("X-EXTERNAL-ID", "123")
		h.Set("CHANNEL-ID", "95221")
		h.Set("X-SIGNATURE", "sig")
		h.Set("X-CLIENT-KEY", "K")
		_ = ValidateRequest(paths[int(which)%len(paths)], h, body)
	})
}
