package xendit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/payoutd/payoutd/vendors"
)

// FuzzDecodeWebhook: any body decodes to a final result with a reference,
// or to an error; never a panic, never a PENDING "result".
func FuzzDecodeWebhook(f *testing.F) {
	raw, err := os.ReadFile(filepath.Join("testdata", "webhook_payout_succeeded.json"))
	if err != nil {
		f.Fatal(err)
	}
	body := string(raw[strings.Index(string(raw), `"body": `)+len(`"body": `) : strings.LastIndex(string(raw), "}")])
	f.Add(body)
	f.Add(strings.Replace(strings.Replace(body, "payout.succeeded", "payout.failed", 1), "SUCCEEDED", "FAILED", 1))
	f.Add(strings.Replace(strings.Replace(body, "payout.succeeded", "payout.reversed", 1), "SUCCEEDED", "REVERSED", 1))
	f.Add(`{"event":"payout.failed","data":{"reference_id":"r","status":"CANCELLED","failure_code":"\u0000x"}}`)
	f.Add(`{"event":"payout.succeeded","data":{"reference_id":"","status":"SUCCEEDED"}}`)
	f.Add(`[]`)
	f.Add(`null`)
	f.Fuzz(func(t *testing.T, body string) {
		r, err := DecodeWebhook([]byte(body))
		if err != nil {
			return
		}
		if !r.Status.Final() || r.Reference == "" || strings.ContainsRune(r.Reference, 0) || strings.ContainsRune(r.FailureReason, 0) {
			t.Fatalf("DecodeWebhook(%q) = %+v", body, r)
		}
		if r.Status == vendors.PayoutSuccess && r.FailureReason != "" {
			t.Fatalf("a success with a reason: %+v", r)
		}
	})
}

// FuzzDecodePayoutList: the answer of get by reference_id never panics the
// decoder, and each decoded payout maps to a known status or to
// ErrUnavailable.
func FuzzDecodePayoutList(f *testing.F) {
	raw, err := os.ReadFile(filepath.Join("testdata", "get_payouts_by_reference_response.json"))
	if err != nil {
		f.Fatal(err)
	}
	s := string(raw)
	f.Add(s[strings.Index(s, `"body": `)+len(`"body": `) : strings.LastIndex(s, "}")])
	f.Add(`{"data":[{"reference_id":"r","status":"REQUESTED"}],"has_more":false}`)
	f.Add(`[{"reference_id":"r","status":"REVERSED","amount":"12"}]`)
	f.Add(`{"data":null}`)
	f.Fuzz(func(t *testing.T, body string) {
		list, err := decodePayoutList([]byte(body))
		if err != nil {
			return
		}
		for _, p := range list {
			r, err := resultOf(p)
			if err == nil && (r.Reference == "" || r.Status == "") {
				t.Fatalf("resultOf(%+v) = %+v", p, r)
			}
		}
	})
}
