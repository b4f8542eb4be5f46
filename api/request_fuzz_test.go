package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

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
	b.fund(b.newWallet(m.id, "Main", sandbox.SimBank, false), "1000")
	f.Add("GET", "/api/v3/wallets", "", "", "", true, true)
	f.Add("POST", "/api/v3/debug/signature-check", `{"a":1}`, "t=1,v1=zz", "", true, false)
	f.Add("POST", "/api/v3/disbursements", `{"amount":"1e9"}`, "", "gzip", true, true)
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
		// 501 is the honest answer of a route whose capability is not built
		// yet (the disbursement routes); any other 5xx is a defect.
		if rec.Code >= 500 && rec.Code != http.StatusNotImplemented {
			t.Fatalf("%s %s answered %d: %s", method, path, rec.Code, rec.Body)
		}
		if rec.Code >= 400 {
			var e map[string]string
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || len(e) != 1 || e["error"] == "" {
				t.Fatalf("%s %s answered %d with body %q", method, path, rec.Code, rec.Body)
			}
		}
	})
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
