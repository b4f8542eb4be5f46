package xenditsim_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/payoutd/payoutd/vendors/xendit/xenditsim"
)

// exampleBody is the body of the documentation's example create
// (testdata/create_payout_request.json), decoded afresh for each case.
func exampleBody(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile("../testdata/create_payout_request.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		Body map[string]any `json:"body"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&fx); err != nil || fx.Body == nil {
		t.Fatalf("fixture: %v", err)
	}
	return fx.Body
}

func newSim(t *testing.T) (*xenditsim.Server, *httptest.Server) {
	t.Helper()
	sim, err := xenditsim.New(xenditsim.Options{SecretKey: key, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(sim)
	t.Cleanup(ts.Close)
	return sim, ts
}

// answer is what the simulator answered.
type answer struct {
	status int
	raw    string
	body   struct {
		ErrorCode    string `json:"error_code"`
		Message      string `json:"message"`
		ErrorMessage string `json:"error_message"`
	}
}

// do sends a request with the secret key; header sets or, with an empty
// value, deletes headers.
func do(t *testing.T, ts *httptest.Server, method, path string, body []byte, header map[string]string) answer {
	t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(key, "")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, raw: string(raw)}
	json.Unmarshal(raw, &a.body)
	return a
}

func create(t *testing.T, ts *httptest.Server, body map[string]any, idemKey string) answer {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return do(t, ts, http.MethodPost, "/v2/payouts", raw, map[string]string{"Idempotency-key": idemKey})
}

// wantRefusal checks a 400 with code whose message (in both fields)
// names the field, in the reference's quotes.
func wantRefusal(t *testing.T, a answer, code, field string) {
	t.Helper()
	if a.status != http.StatusBadRequest || a.body.ErrorCode != code {
		t.Fatalf("answered HTTP %d %s, want 400 %s", a.status, a.raw, code)
	}
	if field != "" && !strings.Contains(a.body.Message, `"`+field+`"`) {
		t.Errorf("message %q does not name %q", a.body.Message, field)
	}
	if a.body.ErrorMessage != a.body.Message {
		t.Errorf("error_message %q, message %q: want the same text in both", a.body.ErrorMessage, a.body.Message)
	}
}

// remove deletes the field at a dotted path.
func remove(body map[string]any, path string) {
	parts := strings.Split(path, ".")
	m := body
	for _, p := range parts[:len(parts)-1] {
		m = m[p].(map[string]any)
	}
	delete(m, parts[len(parts)-1])
}

// set replaces the field at a dotted path.
func set(body map[string]any, path string, v any) {
	parts := strings.Split(path, ".")
	m := body
	for _, p := range parts[:len(parts)-1] {
		m = m[p].(map[string]any)
	}
	m[parts[len(parts)-1]] = v
}

// The API reference marks these Required (Create a Payout,
// https://docs.xendit.co/apidocs/create-payout, read 2026-11-27); the
// schema must say so, account_holder_name above all: a create without it
// fails at Xendit.
func TestRequiredFieldsAreTheDocumented(t *testing.T) {
	want := []string{"reference_id", "channel_code", "channel_properties",
		"channel_properties.account_holder_name", "channel_properties.account_number", "amount", "currency"}
	got := xenditsim.RequiredFields()
	if !slices.Equal(got, want) {
		t.Errorf("RequiredFields() = %q, want %q", got, want)
	}
}

// Each required field removed in turn from the documentation's example:
// the simulator refuses the create naming the field, and creates nothing;
// the complete example is accepted.
func TestCreateRefusesEachMissingRequiredField(t *testing.T) {
	sim, ts := newSim(t)
	for i, field := range xenditsim.RequiredFields() {
		t.Run(field, func(t *testing.T) {
			body := exampleBody(t)
			remove(body, field)
			a := create(t, ts, body, fmt.Sprintf("missing-%d", i))
			wantRefusal(t, a, "API_VALIDATION_ERROR", field)
			if want := fmt.Sprintf("Should have required property %q", field); a.body.Message != want {
				t.Errorf("message %q, want %q", a.body.Message, want)
			}
			raw, _ := json.Marshal(body)
			if err := xenditsim.ValidateCreateBody(raw); err == nil || !strings.Contains(err.Error(), `"`+field+`"`) {
				t.Errorf("ValidateCreateBody = %v, want an error naming %q", err, field)
			}
		})
	}
	ref := exampleBody(t)["reference_id"].(string)
	if n := sim.Payouts(ref); n != 0 {
		t.Fatalf("%d payouts created by refused requests", n)
	}
	a := create(t, ts, exampleBody(t), "complete")
	if a.status != http.StatusOK {
		t.Fatalf("the documentation's example: HTTP %d %s", a.status, a.raw)
	}
	if n := sim.Payouts(ref); n != 1 {
		t.Errorf("%d payouts after the example, want 1", n)
	}
	raw, _ := json.Marshal(exampleBody(t))
	if err := xenditsim.ValidateCreateBody(raw); err != nil {
		t.Errorf("ValidateCreateBody(example) = %v", err)
	}
}

// Wrong types, lengths, enums and forms of the documented fields.
func TestCreateRefusesMalformedFields(t *testing.T) {
	_, ts := newSim(t)
	long := func(n int) string { return strings.Repeat("a", n) }
	manyKeys := map[string]any{}
	for i := range 51 {
		manyKeys[fmt.Sprintf("k%d", i)] = "v"
	}
	cases := []struct {
		name  string
		field string
		value any
		code  string
		named string // the path the message names, if not field
	}{
		{"holder name too long", "channel_properties.account_holder_name", long(101), "API_VALIDATION_ERROR", ""},
		{"holder name empty", "channel_properties.account_holder_name", "", "API_VALIDATION_ERROR", ""},
		{"holder name null", "channel_properties.account_holder_name", nil, "API_VALIDATION_ERROR", ""},
		{"holder name a number", "channel_properties.account_holder_name", 7, "API_VALIDATION_ERROR", ""},
		{"account number too long", "channel_properties.account_number", strings.Repeat("1", 101), "API_VALIDATION_ERROR", ""},
		{"account number a number", "channel_properties.account_number", 1231231231231, "API_VALIDATION_ERROR", ""},
		{"account type not listed", "channel_properties.account_type", "SAVINGS", "API_VALIDATION_ERROR", ""},
		{"channel properties a string", "channel_properties", "1231231231231", "API_VALIDATION_ERROR", ""},
		{"reference too long", "reference_id", long(256), "API_VALIDATION_ERROR", ""},
		{"reference empty", "reference_id", "", "API_VALIDATION_ERROR", ""},
		{"channel code empty", "channel_code", "", "API_VALIDATION_ERROR", ""},
		{"amount quoted", "amount", "10000", "API_VALIDATION_ERROR", ""},
		{"amount negative", "amount", -1, "API_VALIDATION_ERROR", ""},
		{"currency not listed", "currency", "USD", "API_VALIDATION_ERROR", ""},
		{"currency lower case", "currency", "idr", "API_VALIDATION_ERROR", ""},
		{"description too long", "description", long(101), "API_VALIDATION_ERROR", ""},
		{"description empty", "description", "", "API_VALIDATION_ERROR", ""},
		{"four receipt addresses", "receipt_notification", map[string]any{"email_to": []string{"a@x.co", "b@x.co", "c@x.co", "d@x.co"}}, "API_VALIDATION_ERROR", "receipt_notification.email_to"},
		{"receipt address not an address", "receipt_notification", map[string]any{"email_cc": []string{"a@x.co", "nobody"}}, "API_VALIDATION_ERROR", "receipt_notification.email_cc.1"},
		{"metadata 51 keys", "metadata", manyKeys, "API_VALIDATION_ERROR", ""},
		{"metadata key of 41", "metadata", map[string]any{long(41): "v"}, "API_VALIDATION_ERROR", ""},
		{"metadata value of 501", "metadata", map[string]any{"k": long(501)}, "API_VALIDATION_ERROR", "metadata.k"},
		{"metadata a list", "metadata", []string{"a"}, "API_VALIDATION_ERROR", ""},
		{"unknown field", "channel_properties.bank_code", "BCA", "INVALID_JSON_FORMAT", "-"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := exampleBody(t)
			set(body, c.field, c.value)
			named := c.field
			switch c.named {
			case "-":
				named = ""
			case "":
			default:
				named = c.named
			}
			wantRefusal(t, create(t, ts, body, fmt.Sprintf("bad-%d", i)), c.code, named)
			raw, _ := json.Marshal(body)
			if err := xenditsim.ValidateCreateBody(raw); err == nil || !strings.HasPrefix(err.Error(), c.code+": ") {
				t.Errorf("ValidateCreateBody = %v, want %s", err, c.code)
			}
		})
	}
}

// The documented limits are limits, not off by one: these are accepted.
func TestCreateAcceptsTheDocumentedBounds(t *testing.T) {
	_, ts := newSim(t)
	cases := map[string]any{
		"channel_properties.account_holder_name": strings.Repeat("N", 100),
		"reference_id":                           strings.Repeat("r", 255),
		"description":                            strings.Repeat("d", 100),
		"channel_properties.account_type":        "BANK_ACCOUNT",
		"receipt_notification":                   map[string]any{"email_to": []string{"a@x.co", "b@x.co", "c@x.co"}},
		"metadata":                               map[string]any{strings.Repeat("k", 40): strings.Repeat("v", 500), "outlet_no": 24},
	}
	for field, v := range cases {
		t.Run(field, func(t *testing.T) {
			body := exampleBody(t)
			set(body, field, v)
			if a := create(t, ts, body, "bound-"+field); a.status != http.StatusOK {
				t.Errorf("HTTP %d %s", a.status, a.raw)
			}
		})
	}
}

func TestCreateHeaders(t *testing.T) {
	_, ts := newSim(t)
	raw, _ := json.Marshal(exampleBody(t))
	a := do(t, ts, http.MethodPost, "/v2/payouts", raw, nil)
	wantRefusal(t, a, "API_VALIDATION_ERROR", "Idempotency-key")
	if want := `Should have required property "Idempotency-key"`; a.body.Message != want {
		t.Errorf("message %q, want %q", a.body.Message, want)
	}
	a = do(t, ts, http.MethodPost, "/v2/payouts", raw, map[string]string{"Idempotency-key": strings.Repeat("k", 101)})
	wantRefusal(t, a, "API_VALIDATION_ERROR", "Idempotency-key")
	a = do(t, ts, http.MethodPost, "/v2/payouts", raw, map[string]string{"Idempotency-key": "k", "Content-Type": "text/plain"})
	wantRefusal(t, a, "INVALID_JSON_FORMAT", "")
	if a := do(t, ts, http.MethodPost, "/v2/payouts", raw, map[string]string{"Idempotency-key": "no-type", "Content-Type": ""}); a.status != http.StatusOK {
		t.Errorf("no Content-Type (the guide's example sets none): HTTP %d %s", a.status, a.raw)
	}
	a = do(t, ts, http.MethodPost, "/v2/payouts", []byte(`{"reference_id":`), map[string]string{"Idempotency-key": "k"})
	wantRefusal(t, a, "INVALID_JSON_FORMAT", "")
	a = do(t, ts, http.MethodPost, "/v2/payouts", bytes.Repeat([]byte(" "), 65<<10), map[string]string{"Idempotency-key": "k"})
	wantRefusal(t, a, "INVALID_JSON_FORMAT", "")
	if a := do(t, ts, http.MethodPost, "/v2/payouts", raw, map[string]string{"Idempotency-key": strings.Repeat("k", 100)}); a.status != http.StatusOK {
		t.Errorf("a key of 100 characters: HTTP %d %s", a.status, a.raw)
	}
}

// The reads are held to the schema too; what it does not describe is 404.
func TestReadsAreValidated(t *testing.T) {
	_, ts := newSim(t)
	wantRefusal(t, do(t, ts, http.MethodGet, "/v2/payouts", nil, nil), "API_VALIDATION_ERROR", "reference_id")
	wantRefusal(t, do(t, ts, http.MethodGet, "/v2/payouts?reference_id=", nil, nil), "API_VALIDATION_ERROR", "reference_id")
	wantRefusal(t, do(t, ts, http.MethodGet, "/v2/payouts?reference_id="+strings.Repeat("r", 256), nil, nil), "API_VALIDATION_ERROR", "reference_id")
	wantRefusal(t, do(t, ts, http.MethodGet, "/payouts_channels?channel_category=CARD", nil, nil), "API_VALIDATION_ERROR", "channel_category")
	for _, path := range []string{"/payouts_channels?channel_category=BANK", "/payouts_channels?channel_category=BANK&channel_category=EWALLET&currency=IDR", "/v2/payouts?reference_id=r"} {
		if a := do(t, ts, http.MethodGet, path, nil, nil); a.status != http.StatusOK {
			t.Errorf("GET %s: HTTP %d %s", path, a.status, a.raw)
		}
	}
	if a := do(t, ts, http.MethodGet, "/v2/payouts/disb-000000000000000000000000", nil, nil); a.status != http.StatusNotFound || a.body.ErrorCode != "DATA_NOT_FOUND" {
		t.Errorf("unknown payout: HTTP %d %s, want 404 DATA_NOT_FOUND", a.status, a.raw)
	}
	for _, r := range [][2]string{{http.MethodGet, "/v2/payout"}, {http.MethodDelete, "/v2/payouts"}, {http.MethodPut, "/v2/payouts/disb-000000000000000000000000"}} {
		if a := do(t, ts, r[0], r[1], nil, nil); a.status != http.StatusNotFound || a.body.ErrorCode != "NOT_FOUND" {
			t.Errorf("%s %s: HTTP %d %s, want 404 NOT_FOUND", r[0], r[1], a.status, a.raw)
		}
	}
}

// Auth comes first: a request without the key is 401 whatever it breaks.
func TestAuthBeforeSchema(t *testing.T) {
	_, ts := newSim(t)
	resp, err := http.Post(ts.URL+"/v2/payouts", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("HTTP %d, want 401", resp.StatusCode)
	}
}
