package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/payoutd/payoutd/internal/conformance"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/signature"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// FuzzRequest sends arbitrary methods, paths, headers and bodies, with and
// without valid credentials, and demands what every client is promised: no
// 500, no panic, and every error body exactly {"error": "..."}.
func FuzzRequest(f *testing.F) {
	// One server for the whole fuzz run: a database per input would make
	// the fuzzer crawl.
	b := setup(f)
	m := b.newMerchant()
	wallet := b.newWallet(m.id, "Main", sandbox.SimBank, false)
	b.fund(wallet, "1000000")
	f.Add("GET", "/api/v3/wallets", "", "", "", true, true)
	f.Add("POST", "/api/v3/debug/signature-check", `{"a":1}`, "t=1,v1=zz", "", true, false)
	f.Add("POST", "/api/v3/disbursements", `{"amount":"1e9"}`, "", "gzip", true, true)
	f.Add("POST", "/api/v3/disbursements/quote", `{"client_wallet_id":"`+wallet.String()+`","amount":"20000","bank_code":"bca","account_no":"1234567890","transfer_type":"BIFAST"}`, "", "", true, true)
	f.Add("POST", "/api/v3/disbursements/quote", `{"client_wallet_id":"`+wallet.String()+`","amount":"20000","bank_code":"bca","account_no":"1000000009","transfer_type":"BIFAST","account_holder_name":"Siti\u0007 Aminah"}`, "", "", true, true)
	f.Add("GET", "/api/v3/disbursements/00000000-0000-0000-0000-000000000000", "", "", "", true, true)
	f.Add("POST", "/api/v1/payments", `{"price": 15000, "playerId": "p", "expiresIn": 60}`, "", "", true, true)
	f.Add("POST", "/api/v1/payments", `{"price": 1.5e4, "playerId": 7, "flow": null}`, "", "", true, false)
	f.Add("GET", "/checkout/00000000-0000-0000-0000-000000000000/status", "", "", "", false, false)
	f.Add("POST", "/acquirer-callbacks/sandboxpay", `{"payment_id":"x"}`, "", "", false, false)
	f.Add("GET", "/api/v3/wallets/%ZZ/balance", "", "t=,v1=", "", false, false)
	f.Add("PUT", "/api/v3/wallets/00000000-0000-0000-0000-000000000000/banks", "[]", "t=99999999999999999999,v1="+strings.Repeat("A", 64), "", true, true)
	f.Fuzz(func(t *testing.T, method, path, body, sigHeader, encoding string, withKey, signIt bool) {
		if !validMethod(method) || !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \r\n\t#?") {
			t.Skip()
		}
		if _, err := url.ParseRequestURI(path); err != nil {
			t.Skip() // net/http refuses such a request line before any handler
		}
		req := httptest.NewRequest(method, "http://payoutd.test"+path, strings.NewReader(body))
		req.RemoteAddr = "203.0.113.10:40000"
		req = req.WithContext(conformance.WithTest(req.Context(), t)) // not f: the target may not fail f
		if withKey {
			req.Header.Set("x-api-key", m.apiKey)
		}
		if signIt {
			req.Header.Set("x-signature", signature.Sign(m.signingSecret, []byte(body), fixedNow))
		} else if validHeaderValue(sigHeader) {
			req.Header.Set("x-signature", sigHeader)
		}
		if validHeaderValue(encoding) {
			req.Header.Set("Content-Encoding", encoding)
		}
		rec := httptest.NewRecorder()
		b.server.Handler().ServeHTTP(rec, req)
		// 503 is the honest answer when a vendor is down or refuses a
		// payout (sandbox magic numbers); any other 5xx is a defect.
		if rec.Code >= 500 && !(rec.Code == http.StatusServiceUnavailable && vendorTrouble[errorOf(rec.Body.Bytes())]) {
			t.Fatalf("%s %s answered %d: %s", method, path, rec.Code, rec.Body)
		}
		if rec.Code >= 400 {
			var e map[string]string
			err := json.Unmarshal(rec.Body.Bytes(), &e)
			if hint, hinted := e["hint"]; err != nil || e["error"] == "" || len(e) != 1 && !(len(e) == 2 && hinted && hint != "") {
				t.Fatalf("%s %s answered %d with body %q", method, path, rec.Code, rec.Body)
			}
		}
	})
}

// vendorTrouble are the 503 messages a request can legitimately get.
var vendorTrouble = map[string]bool{
	models.ErrGatewayUnavailable.Error(): true,
	models.ErrVendorPayoutFailed.Error(): true,
}

func errorOf(body []byte) string {
	var e map[string]string
	json.Unmarshal(body, &e)
	return e["error"]
}

func validMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodHead, http.MethodOptions:
		return true
	}
	return false
}

func validHeaderValue(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}
