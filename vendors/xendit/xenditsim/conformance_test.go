package xenditsim

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/payoutd/payoutd/vendors/sandbox"
)

// loadDoc loads the embedded document afresh (its schemas, answers
// included) with a router on the path alone.
func loadDoc(t *testing.T) (*openapi3.T, routers.Router) {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(document)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(loader.Context, openapi3.EnableExamplesValidation()); err != nil {
		t.Fatal(err)
	}
	doc.Servers = nil
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return doc, router
}

// strict decodes raw into v, refusing a field v does not have.
func strict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	return dec.Decode(v)
}

func visit(t *testing.T, s *openapi3.SchemaRef, raw []byte) error {
	t.Helper()
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return err
	}
	return s.Value.VisitJSON(v)
}

// Every fixture of ../testdata (examples from Xendit's documentation) is
// what the schema and the simulator's own types say: a request passes the
// create's schema, an answer its response schema and the simulator's type
// with no field left over. A fixture this test does not know fails it.
func TestFixturesMatchTheSchemaAndTypes(t *testing.T) {
	doc, _ := loadDoc(t)
	schemas := doc.Components.Schemas
	arrayOf := func(name string) *openapi3.SchemaRef {
		return openapi3.NewSchemaRef("", openapi3.NewArraySchema().WithItems(schemas[name].Value))
	}
	unauthorized := doc.Components.Responses["Unauthorized"].Value.Content.Get("application/json").Schema
	checks := map[string]func(t *testing.T, body []byte) error{
		"create_payout_request.json": func(t *testing.T, body []byte) error {
			return ValidateCreateBody(body)
		},
		"payout_object.json": func(t *testing.T, body []byte) error {
			var p payoutJSON
			if err := strict(body, &p); err != nil {
				return err
			}
			return visit(t, schemas["Payout"], body)
		},
		"get_payouts_by_reference_response.json": func(t *testing.T, body []byte) error {
			var ps []payoutJSON
			if err := strict(body, &ps); err != nil {
				return err
			}
			return visit(t, arrayOf("Payout"), body)
		},
		"payouts_channels_response.json": func(t *testing.T, body []byte) error {
			var cs []channelJSON
			if err := strict(body, &cs); err != nil {
				return err
			}
			return visit(t, arrayOf("Channel"), body)
		},
		"webhook_payout_succeeded.json": func(t *testing.T, body []byte) error {
			var w webhookJSON
			if err := strict(body, &w); err != nil {
				return err
			}
			data, _ := json.Marshal(w.Data)
			return visit(t, schemas["Payout"], data)
		},
		"error_401_invalid_api_key.json": func(t *testing.T, body []byte) error {
			return visit(t, unauthorized, body)
		},
	}
	files, err := filepath.Glob("../testdata/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			check, ok := checks[name]
			if !ok {
				t.Fatalf("a fixture this test does not check: say whether it is a request or an answer")
			}
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var fx struct {
				Body json.RawMessage `json:"body"`
			}
			if err := json.Unmarshal(raw, &fx); err != nil || len(fx.Body) == 0 {
				t.Fatalf("no body: %v", err)
			}
			if err := check(t, fx.Body); err != nil {
				t.Error(err)
			}
		})
	}
}

// Every answer the simulator gives in a payout's life is one the document
// describes: status, content type and body.
func TestAnswersConformToTheSchema(t *testing.T) {
	_, router := loadDoc(t)
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	sim, err := New(Options{SecretKey: "sk", Now: func() time.Time { return now }, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	call := func(method, path, key, body string) (int, []byte) {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.SetBasicAuth("sk", "")
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-key", key)
		}
		rec := httptest.NewRecorder()
		sim.ServeHTTP(rec, req)
		route, params, err := router.FindRoute(req)
		if err != nil {
			t.Fatalf("%s %s: no operation: %v", method, path, err)
		}
		in := &openapi3filter.ResponseValidationInput{
			RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
			Status:                 rec.Code,
			Header:                 rec.Header(),
			Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
		}
		in.SetBodyBytes(rec.Body.Bytes())
		if err := openapi3filter.ValidateResponse(req.Context(), in); err != nil {
			t.Errorf("%s %s answered %d %s, outside the document: %v", method, path, rec.Code, rec.Body.Bytes(), err)
		}
		return rec.Code, rec.Body.Bytes()
	}
	body := func(ref, account string) string {
		return `{"reference_id":"` + ref + `","channel_code":"ID_BCA","channel_properties":{"account_number":"` + account +
			`","account_holder_name":"Budi"},"amount":10000,"currency":"IDR","description":"d","metadata":{"n":1}}`
	}
	id := func(raw []byte) string {
		var p payoutJSON
		json.Unmarshal(raw, &p)
		return p.ID
	}
	_, first := call(http.MethodPost, "/v2/payouts", "k1", body("r1", sandbox.AccountFailsLater))
	call(http.MethodPost, "/v2/payouts", "k1", body("r1", sandbox.AccountFailsLater)) // replay
	if code, _ := call(http.MethodPost, "/v2/payouts", "k1", body("r2", "9876543210")); code != http.StatusConflict {
		t.Errorf("a key reused with another body: %d, want 409", code)
	}
	_, stays := call(http.MethodPost, "/v2/payouts", "k2", body("r2", AccountStaysAccepted))
	if code, _ := call(http.MethodPost, "/v2/payouts", "k3", `{"reference_id":"r3"}`); code != http.StatusBadRequest {
		t.Errorf("an incomplete create: %d, want 400", code)
	}
	call(http.MethodPost, "/v2/payouts", "k4", body("r4", sandbox.AccountUnresolved))
	call(http.MethodGet, "/v2/payouts/"+id(first), "", "")
	call(http.MethodGet, "/v2/payouts?reference_id=r1", "", "")
	call(http.MethodGet, "/v2/payouts?reference_id=none", "", "")
	call(http.MethodGet, "/v2/payouts/disb-000000000000000000000000", "", "")
	call(http.MethodPost, "/v2/payouts/"+id(stays)+"/cancel", "", "")
	call(http.MethodPost, "/v2/payouts/"+id(stays)+"/cancels", "", "")
	call(http.MethodGet, "/payouts_channels?currency=IDR", "", "")
	now = now.Add(time.Hour)
	if code, raw := call(http.MethodGet, "/v2/payouts/"+id(first), "", ""); code != http.StatusOK || !bytes.Contains(raw, []byte(FailureRejectedByChannel)) {
		t.Errorf("the failed payout: %d %s", code, raw)
	}
	call(http.MethodPost, "/v2/payouts/"+id(first)+"/cancel", "", "") // no longer ACCEPTED: 400

	// 401: the document's own answer.
	req := httptest.NewRequest(http.MethodGet, "/payouts_channels", nil)
	rec := httptest.NewRecorder()
	sim.ServeHTTP(rec, req)
	raw, _ := os.ReadFile("../testdata/error_401_invalid_api_key.json")
	var fx struct{ Body json.RawMessage }
	json.Unmarshal(raw, &fx)
	var got, want any
	json.Unmarshal(rec.Body.Bytes(), &got)
	json.Unmarshal(fx.Body, &want)
	if rec.Code != http.StatusUnauthorized || !jsonEqual(got, want) {
		t.Errorf("no key: %d %s, want 401 %s", rec.Code, rec.Body.Bytes(), fx.Body)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
