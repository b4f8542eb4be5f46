package xenditsim

import (
	"os"
	"testing"
)

// The schema check answers any body with nil or a refusal, never a panic;
// the documentation's example is accepted.
func FuzzValidateCreateBody(f *testing.F) {
	raw, err := os.ReadFile("../testdata/create_payout_request.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add([]byte(`{"reference_id":"r","channel_code":"ID_BCA","channel_properties":{"account_number":"1234567890","account_holder_name":"A"},"amount":10000,"currency":"IDR"}`))
	f.Add([]byte(`{"channel_properties":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		_ = ValidateCreateBody(body)
	})
}
