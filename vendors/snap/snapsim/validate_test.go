package snapsim

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/payoutd/payoutd/vendors/snap"
)

// docFixture is a request copied from SNAP documentation
// (testdata/fixtures/docs): the headers and body a document shows, with
// its URL and the date it was read.
type docFixture struct {
	Source  string            `json:"source"`
	Read    string            `json:"read"`
	Service string            `json:"service"`
	Path    string            `json:"path"`
	Header  map[string]string `json:"header"`
	Request json.RawMessage   `json:"request"`
}

func docFixtures(t *testing.T) map[string]docFixture {
	t.Helper()
	files, err := filepath.Glob("../testdata/fixtures/docs/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no documentation fixtures: %v", err)
	}
	out := map[string]docFixture{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var fx docFixture
		if err := json.Unmarshal(raw, &fx); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if !strings.Contains(fx.Source, "https://") || fx.Read == "" {
			t.Errorf("%s: a documentation fixture names its URL and the date it was read", f)
		}
		out[fx.Service] = fx
	}
	for _, sc := range []string{snap.ServiceAccessToken, snap.ServiceInquiry, snap.ServiceTransfer, snap.ServiceStatus} {
		if _, ok := out[sc]; !ok {
			t.Fatalf("no documentation fixture of service %s", sc)
		}
	}
	return out
}

// rig is a Bank configured with the credentials the documentation
// examples carry, and a client that signs what it sends properly, so
// that only the document can refuse it.
type rig struct {
	t      *testing.T
	bank   *Bank
	key    *rsa.PrivateKey
	secret string
	now    time.Time
	fx     map[string]docFixture
	token  string
}

func newRig(t *testing.T) *rig {
	t.Helper()
	pemBytes, err := os.ReadFile("../testdata/TEST_ONLY_partner_private_key.pem")
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(pemBytes)
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, key: k.(*rsa.PrivateKey), secret: "TEST_ONLY_client_secret", fx: docFixtures(t)}
	r.bank = New(Options{
		PartnerPublicKey: &r.key.PublicKey,
		ClientKey:        r.fx[snap.ServiceAccessToken].Header["X-CLIENT-KEY"],
		ClientSecret:     r.secret,
		PartnerID:        r.fx[snap.ServiceTransfer].Header["X-PARTNER-ID"],
		Now:              func() time.Time { return r.now },
	})
	return r
}

// answer is what the bank said.
type answer struct {
	status  int
	code    string
	message string
	body    map[string]any
}

// send POSTs body to the service of fx with fx's headers changed by edit
// (nil: none), signed as the documents say: the asymmetric signature for
// the access token, the symmetric one with a fresh token for the others.
// The clock is set to the request's X-TIMESTAMP, so that the examples'
// dates are in the window. Headers edit deletes stay deleted.
func (r *rig) send(fx docFixture, body []byte, edit func(http.Header)) answer {
	r.t.Helper()
	h := http.Header{}
	for k, v := range fx.Header {
		h.Set(k, v)
	}
	if fx.Path == snap.PathAccessToken {
		sig, err := snap.SignToken(r.key, h.Get("X-CLIENT-KEY"), h.Get("X-TIMESTAMP"))
		if err != nil {
			r.t.Fatal(err)
		}
		h.Set("X-SIGNATURE", sig)
	} else {
		if r.token == "" {
			r.token = r.issueToken()
		}
		h.Set("Authorization", "Bearer "+r.token)
		sig, err := snap.SignService(r.secret, http.MethodPost, fx.Path, r.token, body, h.Get("X-TIMESTAMP"))
		if err != nil {
			sig = "unsignable" // a body that is not JSON: the document refuses it first
		}
		h.Set("X-SIGNATURE", sig)
	}
	if edit != nil {
		edit(h)
		// A changed X-TIMESTAMP is signed as sent: only the document may refuse it.
		if fx.Path == snap.PathAccessToken && h.Get("X-SIGNATURE") != "" {
			sig, _ := snap.SignToken(r.key, h.Get("X-CLIENT-KEY"), h.Get("X-TIMESTAMP"))
			h.Set("X-SIGNATURE", sig)
		} else if h.Get("X-SIGNATURE") != "" {
			if sig, err := snap.SignService(r.secret, http.MethodPost, fx.Path, r.token, body, h.Get("X-TIMESTAMP")); err == nil {
				h.Set("X-SIGNATURE", sig)
			}
		}
	}
	if ts, err := snap.ParseTimestamp(h.Get("X-TIMESTAMP")); err == nil {
		r.now = ts
	}
	req := httptest.NewRequest(http.MethodPost, fx.Path, strings.NewReader(string(body)))
	req.Header = h
	w := httptest.NewRecorder()
	r.bank.ServeHTTP(w, req)
	var a answer
	a.status = w.Code
	if err := json.Unmarshal(w.Body.Bytes(), &a.body); err != nil {
		r.t.Fatalf("%s answered %d with a body that is not JSON: %q", fx.Path, w.Code, w.Body.String())
	}
	a.code, _ = a.body["responseCode"].(string)
	a.message, _ = a.body["responseMessage"].(string)
	return a
}

func (r *rig) issueToken() string {
	r.t.Helper()
	fx := r.fx[snap.ServiceAccessToken]
	a := r.send(fx, fx.Request, nil)
	tok, _ := a.body["accessToken"].(string)
	if a.code != "2007300" || tok == "" {
		r.t.Fatalf("the documentation's access token request: %d %s %q", a.status, a.code, a.message)
	}
	return tok
}

// edited is raw with the member at the dotted path removed (v == nil) or
// set to v.
func edited(t *testing.T, raw json.RawMessage, path string, v any) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(path, ".")
	cur := m
	for _, p := range parts[:len(parts)-1] {
		next, ok := cur[p].(map[string]any)
		if !ok {
			t.Fatalf("%s: no object at %s", path, p)
		}
		cur = next
	}
	if v == nil {
		delete(cur, parts[len(parts)-1])
	} else {
		cur[parts[len(parts)-1]] = v
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The document's mandatory members, as the service tables give them (the
// schema file names the tables). A change to the document shows here.
func TestMandatoryFieldsAreTheTables(t *testing.T) {
	want := map[string][]string{
		"73": {"grantType"},
		"16": {"beneficiaryBankCode", "beneficiaryAccountNo"},
		"18": {"partnerReferenceNo", "amount", "amount.value", "amount.currency", "beneficiaryAccountName",
			"beneficiaryAccountNo", "beneficiaryBankCode", "sourceAccountNo", "transactionDate"},
		"36": {"serviceCode"},
	}
	for sc, fields := range want {
		if got := MandatoryFields(sc); !slices.Equal(got, fields) {
			t.Errorf("MandatoryFields(%s) = %v, want %v", sc, got, fields)
		}
	}
	if got := MandatoryFields("99"); got != nil {
		t.Errorf("MandatoryFields(99) = %v", got)
	}
}

// The complete documentation examples are served: a token, the holder, an
// accepted transfer and its status.
func TestDocumentationExamplesAreAccepted(t *testing.T) {
	r := newRig(t)
	for _, c := range []struct{ sc, want string }{
		{snap.ServiceAccessToken, "2007300"},
		{snap.ServiceInquiry, "2001600"},
		{snap.ServiceTransfer, "2001800"},
		{snap.ServiceStatus, "2003600"},
	} {
		fx := r.fx[c.sc]
		if a := r.send(fx, fx.Request, nil); a.code != c.want || a.status != http.StatusOK {
			t.Errorf("%s (%s): %d %s %q, want %s", fx.Path, fx.Source[:40], a.status, a.code, a.message, c.want)
		}
	}
}

// Each mandatory body member left out of a documentation example, the rest
// properly signed, is refused with 400xx02 naming it.
func TestEachMissingMandatoryMemberIsNamed(t *testing.T) {
	for _, sc := range []string{snap.ServiceAccessToken, snap.ServiceInquiry, snap.ServiceTransfer, snap.ServiceStatus} {
		for _, field := range MandatoryFields(sc) {
			t.Run(sc+"/"+field, func(t *testing.T) {
				r := newRig(t)
				fx := r.fx[sc]
				a := r.send(fx, edited(t, fx.Request, field, nil), nil)
				want := "400" + sc + "02"
				if a.status != http.StatusBadRequest || a.code != want || a.message != "Invalid Mandatory Field {"+field+"}" {
					t.Errorf("without %s: %d %s %q, want 400 %s \"Invalid Mandatory Field {%s}\"", field, a.status, a.code, a.message, want, field)
				}
			})
		}
	}
}

// Each mandatory header left out is refused with 400xx02 naming it; a
// missing Authorization is 401xx03 "Token Not Found (B2B)".
func TestEachMissingMandatoryHeaderIsNamed(t *testing.T) {
	headers := map[string][]string{
		snap.ServiceAccessToken: {"Content-Type", "X-TIMESTAMP", "X-CLIENT-KEY", "X-SIGNATURE"},
		snap.ServiceInquiry:     {"Content-Type", "X-TIMESTAMP", "X-SIGNATURE", "X-PARTNER-ID", "X-EXTERNAL-ID", "CHANNEL-ID"},
	}
	headers[snap.ServiceTransfer] = headers[snap.ServiceInquiry]
	headers[snap.ServiceStatus] = headers[snap.ServiceInquiry]
	for sc, names := range headers {
		for _, name := range append(names, "Authorization") {
			if sc == snap.ServiceAccessToken && name == "Authorization" {
				continue
			}
			t.Run(sc+"/"+name, func(t *testing.T) {
				r := newRig(t)
				fx := r.fx[sc]
				a := r.send(fx, fx.Request, func(h http.Header) { h.Del(name) })
				want, msg := "400"+sc+"02", "Invalid Mandatory Field {"+name+"}"
				if name == "Authorization" {
					want, msg = "401"+sc+"03", "Token Not Found (B2B)"
				}
				if a.code != want || a.message != msg {
					t.Errorf("without %s: %d %s %q, want %s %q", name, a.status, a.code, a.message, want, msg)
				}
			})
		}
	}
}

// Malformed members and headers are refused with 400xx01 naming them; a
// body member the document does not name, or a body that is not JSON, with
// 400xx00.
func TestMalformedFieldsAreRefused(t *testing.T) {
	long := func(n int) string { return strings.Repeat("7", n) }
	for _, c := range []struct {
		name, sc string
		field    string // body member to set to value
		value    any
		header   func(http.Header)
		raw      string // the body, instead of the fixture's
		code     string
		message  string
	}{
		{name: "amount without decimals", sc: "18", field: "amount.value", value: "10000", code: "4001801", message: "Invalid Field Format {amount.value}"},
		{name: "amount with one decimal", sc: "18", field: "amount.value", value: "10000.0", code: "4001801", message: "Invalid Field Format {amount.value}"},
		{name: "amount as a number", sc: "18", field: "amount.value", value: 10000.00, code: "4001801", message: "Invalid Field Format {amount.value}"},
		{name: "amount in USD", sc: "18", field: "amount.currency", value: "USD", code: "4001801", message: "Invalid Field Format {amount.currency}"},
		{name: "partnerReferenceNo of 65", sc: "18", field: "partnerReferenceNo", value: long(65), code: "4001801", message: "Invalid Field Format {partnerReferenceNo}"},
		{name: "beneficiaryAccountName of 101", sc: "18", field: "beneficiaryAccountName", value: strings.Repeat("a", 101), code: "4001801", message: "Invalid Field Format {beneficiaryAccountName}"},
		{name: "beneficiaryAccountNo of 35", sc: "18", field: "beneficiaryAccountNo", value: long(35), code: "4001801", message: "Invalid Field Format {beneficiaryAccountNo}"},
		{name: "beneficiaryBankCode of 9", sc: "16", field: "beneficiaryBankCode", value: long(9), code: "4001601", message: "Invalid Field Format {beneficiaryBankCode}"},
		{name: "sourceAccountNo of 20", sc: "18", field: "sourceAccountNo", value: long(20), code: "4001801", message: "Invalid Field Format {sourceAccountNo}"},
		{name: "transactionDate without offset", sc: "18", field: "transactionDate", value: "2020-12-17T10:55:00", code: "4001801", message: "Invalid Field Format {transactionDate}"},
		// what no schema says, checked by hand after the document
		{name: "amount zero", sc: "18", field: "amount.value", value: "0.00", code: "4001801", message: "Invalid Field Format {amount.value}"},
		{name: "transactionDate 31 February", sc: "18", field: "transactionDate", value: "2020-02-31T10:55:00+07:00", code: "4001801", message: "Invalid Field Format {transactionDate}"},
		{name: "empty beneficiaryBankCode", sc: "18", field: "beneficiaryBankCode", value: "", code: "4001802", message: "Invalid Mandatory Field {beneficiaryBankCode}"},
		{name: "grantType password", sc: "73", field: "grantType", value: "password", code: "4007301", message: "Invalid Field Format {grantType}"},
		{name: "serviceCode of 3", sc: "36", field: "serviceCode", value: "180", code: "4003601", message: "Invalid Field Format {serviceCode}"},
		{name: "a member no table names", sc: "18", field: "beneficiaryAcountNo", value: "888801000157508", code: "4001800", message: "Bad Request"},
		{name: "a body that is not JSON", sc: "16", raw: "beneficiaryBankCode=002", code: "4001600", message: "Bad Request"},
		{name: "a JSON array", sc: "16", raw: "[]", code: "4001600", message: "Bad Request"},
		{name: "X-TIMESTAMP with a space", sc: "16", header: func(h http.Header) { h.Set("X-TIMESTAMP", "2020-12-17 10:55:00+07:00") }, code: "4001601", message: "Invalid Field Format {X-TIMESTAMP}"},
		{name: "X-TIMESTAMP without offset", sc: "73", header: func(h http.Header) { h.Set("X-TIMESTAMP", "2024-08-01T07:07:21") }, code: "4007301", message: "Invalid Field Format {X-TIMESTAMP}"},
		{name: "X-TIMESTAMP with milliseconds", sc: "18", header: func(h http.Header) { h.Set("X-TIMESTAMP", "2020-12-17T10:55:00.000+07:00") }, code: "4001801", message: "Invalid Field Format {X-TIMESTAMP}"},
		{name: "X-EXTERNAL-ID not numeric", sc: "36", header: func(h http.Header) { h.Set("X-EXTERNAL-ID", "ext-1") }, code: "4003601", message: "Invalid Field Format {X-EXTERNAL-ID}"},
		{name: "X-EXTERNAL-ID of 37", sc: "36", header: func(h http.Header) { h.Set("X-EXTERNAL-ID", long(37)) }, code: "4003601", message: "Invalid Field Format {X-EXTERNAL-ID}"},
		{name: "CHANNEL-ID of 6", sc: "16", header: func(h http.Header) { h.Set("CHANNEL-ID", "880011") }, code: "4001601", message: "Invalid Field Format {CHANNEL-ID}"},
		{name: "Content-Type text", sc: "18", header: func(h http.Header) { h.Set("Content-Type", "text/plain") }, code: "4001801", message: "Invalid Field Format {Content-Type}"},
		{name: "Authorization not Bearer", sc: "16", header: func(h http.Header) { h.Set("Authorization", "Basic eDp5") }, code: "4011603", message: "Token Not Found (B2B)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t)
			fx := r.fx[c.sc]
			body := []byte(fx.Request)
			switch {
			case c.raw != "":
				body = []byte(c.raw)
			case c.field != "":
				body = edited(t, fx.Request, c.field, c.value)
			}
			a := r.send(fx, body, c.header)
			status, _ := snap.ParseCode(c.code)
			if a.status != status.HTTP || a.code != c.code || a.message != c.message {
				t.Errorf("%d %s %q, want %s %q", a.status, a.code, a.message, c.code, c.message)
			}
		})
	}
}

// Cases the simulator paid before it read the document (each answered
// 2001800 then): a beneficiaryAccountName over String(100), a
// sourceAccountNo over String(19), a request without Content-Type.
func TestRefusedNowPaidBefore(t *testing.T) {
	r := newRig(t)
	fx := r.fx[snap.ServiceTransfer]
	for i, c := range []struct {
		name string
		body []byte
		edit func(http.Header)
		code string
	}{
		{"beneficiaryAccountName of 101", edited(t, fx.Request, "beneficiaryAccountName", strings.Repeat("a", 101)), nil, "4001801"},
		{"sourceAccountNo of 20", edited(t, fx.Request, "sourceAccountNo", strings.Repeat("1", 20)), nil, "4001801"},
		{"no Content-Type", fx.Request, func(h http.Header) { h.Del("Content-Type") }, "4001802"},
	} {
		// A new X-EXTERNAL-ID and partnerReferenceNo each, so that only the
		// document refuses.
		ext := fmt.Sprint(900 + i)
		body := edited(t, c.body, "partnerReferenceNo", "paid-before-"+ext)
		edit := func(h http.Header) {
			h.Set("X-EXTERNAL-ID", ext)
			if c.edit != nil {
				c.edit(h)
			}
		}
		if a := r.send(fx, body, edit); a.code != c.code {
			t.Errorf("%s: %d %s %q, want %s", c.name, a.status, a.code, a.message, c.code)
		}
	}
}

// The status inquiry finds a transfer by the bank's referenceNo when the
// partner's is left out (both are optional in the standard), and needs one
// of them.
func TestStatusByEitherReference(t *testing.T) {
	r := newRig(t)
	xfer := r.fx[snap.ServiceTransfer]
	a := r.send(xfer, xfer.Request, nil)
	ref, _ := a.body["referenceNo"].(string)
	if a.code != "2001800" || ref == "" {
		t.Fatalf("transfer: %s %q", a.code, a.message)
	}
	st := r.fx[snap.ServiceStatus]
	byRef := edited(t, edited(t, st.Request, "originalPartnerReferenceNo", nil), "originalReferenceNo", ref)
	if a := r.send(st, byRef, nil); a.code != "2003600" || a.body["originalPartnerReferenceNo"] != "20201029000000000002" {
		t.Errorf("by referenceNo: %s %q %v", a.code, a.message, a.body["originalPartnerReferenceNo"])
	}
	neither := edited(t, st.Request, "originalPartnerReferenceNo", nil)
	st.Header["X-EXTERNAL-ID"] += "1"
	if a := r.send(st, neither, nil); a.code != "4003602" || a.message != "Invalid Mandatory Field {originalPartnerReferenceNo}" {
		t.Errorf("neither reference: %s %q", a.code, a.message)
	}
}

// Every request fixture under vendors/snap/testdata is a request the
// document accepts.
func TestEveryRequestFixtureIsValid(t *testing.T) {
	docs := docFixtures(t)
	headers := func(path string) http.Header {
		h := http.Header{}
		sc := services[path]
		if sc != snap.ServiceAccessToken {
			sc = snap.ServiceTransfer
			h.Set("Authorization", "Bearer fixture-token")
		}
		for k, v := range docs[sc].Header {
			h.Set(k, v)
		}
		h.Set("X-SIGNATURE", "fixture-signature")
		return h
	}
	files, _ := filepath.Glob("../testdata/fixtures/*.json")
	more, _ := filepath.Glob("../testdata/fixtures/docs/*.json")
	files = append(files, more...)
	if len(files) < 14 {
		t.Fatalf("only %d fixtures", len(files))
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var fx struct {
			Path    string          `json:"path"`
			Request json.RawMessage `json:"request"`
		}
		if err := json.Unmarshal(raw, &fx); err != nil || fx.Path == "" || len(fx.Request) == 0 {
			t.Fatalf("%s: not a request fixture: %v", f, err)
		}
		if err := ValidateRequest(fx.Path, headers(fx.Path), fx.Request); err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
		}
	}
	kat, err := os.ReadFile("../testdata/kat_transfer_body_pretty.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := ValidateRequest(snap.PathTransfer, headers(snap.PathTransfer), kat); err != nil {
		t.Errorf("kat_transfer_body_pretty.json: %v", err)
	}
}

func TestValidateRequestUnknownPath(t *testing.T) {
	err := ValidateRequest("/v1.0/transfer-intrabank", http.Header{}, []byte(`{}`))
	var re *RequestError
	if err == nil || errors.As(err, &re) {
		t.Errorf("an unserved path: %v", err)
	}
}
