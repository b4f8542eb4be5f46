package api

import (
	"bytes"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/payoutd/payoutd/internal/conformance"
	"github.com/payoutd/payoutd/models"
)

// The OpenAPI document is the merchants' reference. These tests keep it in
// step with the code: every route, every message of a declared error the
// merchant API answers (declaredErrors) and the messages of the common 400 and 401 answers must be in it, and the
// operations it marks as planned or as answering 501 must really be so.

// openAPIDoc is the embedded document as kin-openapi loads it, validated
// (conformance.Load): a dangling $ref, a duplicate key, a schema or an
// example the specification rejects fails here.
func openAPIDoc(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openAPI()
	if err != nil {
		t.Fatalf("api/openapi.yaml: %v", err)
	}
	return doc
}

// errorValues collects the "error" strings of the {error: ...} examples of
// resp's content.
func errorValues(resp *openapi3.Response) []string {
	var out []string
	for _, media := range resp.Content {
		values := []any{media.Example}
		for _, ex := range media.Examples {
			if ex.Value != nil {
				values = append(values, ex.Value.Value)
			}
		}
		for _, v := range values {
			m, ok := v.(map[string]any)
			_, hinted := m["hint"]
			if ok && (len(m) == 1 || len(m) == 2 && hinted) {
				if s, ok := m["error"].(string); ok {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// operation is one method of one path of the document.
type operation struct {
	method, path string // "GET", "/api/v3/wallets/{wallet_id}/balance"
	op           *openapi3.Operation
}

func operations(doc *openapi3.T) []operation {
	var ops []operation
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			ops = append(ops, operation{method, path, op})
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].path+ops[i].method < ops[j].path+ops[j].method })
	return ops
}

// responses lists every response the document describes, $refs resolved:
// those of its operations, of its webhooks and of its components (where
// the answers of no operation, 404 and 405, are).
func responses(doc *openapi3.T) map[string]*openapi3.Response {
	out := map[string]*openapi3.Response{}
	for name, r := range doc.Components.Responses {
		out["components.responses."+name] = r.Value
	}
	add := func(where string, op *openapi3.Operation) {
		for code, r := range op.Responses.Map() {
			out[where+" "+code] = r.Value
		}
	}
	for _, o := range operations(doc) {
		add(o.method+" "+o.path, o.op)
	}
	for name, item := range doc.Webhooks {
		for method, op := range item.Operations() {
			add("webhook "+name+" "+method, op)
		}
	}
	return out
}

// servedRoutes lists the engine's routes as "METHOD /openapi/{style}",
// leaving out the operators' dashboard, which is not part of the API.
func servedRoutes(b *bundle) map[string]bool {
	param := regexp.MustCompile(`:([A-Za-z0-9_]+)`)
	routes := map[string]bool{}
	for _, r := range b.server.engine.Routes() {
		// The dashboard and the Go profiler are operators' tools with
		// their own documentation (docs/operations-reference.md), not part of
		// the merchant API.
		if r.Path == dashboardPath || strings.HasPrefix(r.Path, dashboardPath+"/") || strings.HasPrefix(r.Path, profilerPath+"/") {
			continue
		}
		routes[r.Method+" "+param.ReplaceAllString(r.Path, "{$1}")] = true
	}
	return routes
}

func TestOpenAPIDocumentValidates(t *testing.T) {
	doc := openAPIDoc(t)
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi = %v, want 3.1.0", doc.OpenAPI)
	}
	if doc.Info.Version != "1.0" {
		t.Errorf("info.version = %v, want 1.0 (the interface's version)", doc.Info.Version)
	}
	if doc.Paths.Len() == 0 {
		t.Error("no paths")
	}
	if len(doc.Webhooks) == 0 {
		t.Error("no webhooks")
	}
	scheme := doc.Components.SecuritySchemes["apiKey"]
	if scheme == nil || scheme.Value.Type != "apiKey" || scheme.Value.In != "header" || scheme.Value.Name != "x-api-key" {
		t.Errorf("securitySchemes.apiKey = %+v, want an apiKey in the x-api-key header", scheme)
	}
}

func TestOpenAPICoversEveryRoute(t *testing.T) {
	b := setup(t)
	doc := openAPIDoc(t)
	served := servedRoutes(b)
	// Staging serves the checkout's simulate route besides.
	maps.Copy(served, servedRoutes(setup(t, setupOptions{env: models.Staging})))
	if len(served) == 0 {
		t.Fatal("the engine lists no routes")
	}
	documented := map[string]operation{}
	for _, o := range operations(doc) {
		documented[o.method+" "+o.path] = o
	}
	for route := range served {
		if _, ok := documented[route]; !ok {
			t.Errorf("%s is served but not in api/openapi.yaml", route)
		}
	}
	for key, o := range documented {
		planned := o.op.Extensions["x-status"] == "planned"
		switch {
		case served[key] && planned:
			t.Errorf("%s is served now: remove its x-status: planned from api/openapi.yaml", key)
		case !served[key] && !planned:
			t.Errorf("%s is documented but not served: mark it x-status: planned or remove it", key)
		}
	}
}

// notImplementedMarker is what the description of a registered operation
// that answers 501 says.
const notImplementedMarker = "Not available yet in this version: answers 501."

// TestOpenAPINotImplementedMarkers calls every served operation with valid
// credentials and a signature: those answering 501 must say so in their
// description, and those saying so must answer 501.
func TestOpenAPINotImplementedMarkers(t *testing.T) {
	b := setup(t)
	m := b.newMerchant()
	doc := openAPIDoc(t)
	served := servedRoutes(b)
	pathParam := regexp.MustCompile(`\{[^}]+\}`)
	for _, o := range operations(doc) {
		if !served[o.method+" "+o.path] {
			continue
		}
		var body []byte
		if o.method != http.MethodGet {
			body = []byte(`{}`)
		}
		resp := b.do(request{
			method: o.method,
			path:   pathParam.ReplaceAllString(o.path, "6f1c2a9e-8d4b-4c3e-9a7f-1b2c3d4e5f60"),
			body:   body, apiKey: m.apiKey, sign: m.signingSecret,
		})
		marked := strings.Contains(o.op.Description, notImplementedMarker)
		has501 := o.op.Responses.Value("501") != nil
		switch {
		case resp.status == http.StatusNotImplemented && (!marked || !has501):
			t.Errorf("%s %s answers 501: its description must say %q and it must list a 501 response", o.method, o.path, notImplementedMarker)
		case resp.status != http.StatusNotImplemented && (marked || has501):
			t.Errorf("%s %s answers %d now: drop %q and its 501 response from api/openapi.yaml", o.method, o.path, resp.status, notImplementedMarker)
		}
	}
}

// matchesMessage reports whether an example error value shows msg. Only
// exactly: any detail rides in "hint", never in "error".
func matchesMessage(value, msg string) bool {
	return value == msg
}

// TestOpenAPIShowsEveryErrorMessage: every message of a declared error the
// merchant API answers appears in the document as the value of an error
// example, and no example shows one of them under a status it is not
// answered with.
func TestOpenAPIShowsEveryErrorMessage(t *testing.T) {
	doc := openAPIDoc(t)
	var examples []string
	for _, resp := range responses(doc) {
		examples = append(examples, errorValues(resp)...)
	}

	statuses := map[string][]int{} // message → statuses the table gives it
	for _, e := range declaredErrors {
		msg := e.err.Message
		if msg == "" || !e.merchant {
			continue // no fixed message to document, or not the merchant API's
		}
		statuses[msg] = append(statuses[msg], e.status)
	}
	for msg := range statuses {
		if !bytes.Contains(openAPIDocument, []byte(msg)) {
			t.Errorf("api/openapi.yaml does not contain the message %q", msg)
			continue
		}
		if !slices.ContainsFunc(examples, func(v string) bool { return matchesMessage(v, msg) }) {
			t.Errorf("api/openapi.yaml has no {error: %q} example", msg)
		}
	}

	// Each example under an operation's response that shows a table
	// message must sit under one of the table's statuses for it.
	for _, o := range operations(doc) {
		for code, r := range o.op.Responses.Map() {
			status, err := strconv.Atoi(code)
			if err != nil {
				continue // "2XX", "default"
			}
			for _, v := range errorValues(r.Value) {
				for msg, want := range statuses {
					if matchesMessage(v, msg) && !slices.Contains(want, status) {
						t.Errorf("%s %s shows %q under %d; the server answers it with %v", o.method, o.path, v, status, want)
					}
				}
			}
		}
	}
}

// TestOpenAPIShowsLiveErrorMessages provokes the common 400 and 401 answers
// whose text is built at run time and checks the document shows them word
// for word.
func TestOpenAPIShowsLiveErrorMessages(t *testing.T) {
	b := setup(t)
	m := b.newMerchant()
	wrongSecret := strings.Repeat("0", 64)
	probes := []struct {
		name   string
		req    request
		status int
	}{
		{"wallet_id not a UUID", request{path: "/api/v3/wallets/not-a-uuid/balance", apiKey: m.apiKey, timestamp: true}, http.StatusBadRequest},
		{"no x-timestamp", request{path: "/api/v3/wallets", apiKey: m.apiKey}, http.StatusBadRequest},
		{"signature of another secret", request{path: "/api/v3/wallets", apiKey: m.apiKey, sign: wrongSecret}, http.StatusUnauthorized},
		{"unknown route", request{path: "/api/v3/nothing-here"}, http.StatusNotFound},
		{"wrong method", request{method: http.MethodDelete, path: "/api/v3/wallets"}, http.StatusMethodNotAllowed},
	}
	for _, p := range probes {
		resp := b.do(p.req)
		resp.expect(t, p.status, "")
		if !bytes.Contains(openAPIDocument, []byte(resp.errBody)) {
			t.Errorf("%s: api/openapi.yaml does not show the message %q", p.name, resp.errBody)
		}
	}

	// The JSON decoder's messages shown as examples of a 400.
	var dst struct {
		Amount string `json:"amount"`
	}
	for _, body := range []string{``, `{"amout":"1"}`} {
		err := decodeJSON([]byte(body), &dst)
		if models.ErrorCode(err) != models.EINVALID {
			t.Fatalf("decodeJSON(%q) = %v, want a validation error", body, err)
		}
		if !bytes.Contains(openAPIDocument, []byte(err.Error())) {
			t.Errorf("api/openapi.yaml does not show the message %q", err.Error())
		}
	}
}

// TestOpenAPIResponsesAreComplete: every documented answer carries
// X-Request-Id, as the middleware sends it on every response, and every
// error answer of JSON is the {error} body.
func TestOpenAPIResponsesAreComplete(t *testing.T) {
	doc := openAPIDoc(t)
	for _, o := range operations(doc) {
		for code, r := range o.op.Responses.Map() {
			where := o.method + " " + o.path + " " + code
			resp := r.Value
			if _, ok := resp.Headers["X-Request-Id"]; !ok {
				t.Errorf("%s: no X-Request-Id header", where)
			}
			if code < "400" {
				continue
			}
			var schema *openapi3.SchemaRef
			if media := resp.Content.Get("application/json"); media != nil {
				schema = media.Schema
			}
			if schema == nil || schema.Ref != "#/components/schemas/Error" {
				t.Errorf("%s: the body must be #/components/schemas/Error, got %v", where, schema)
			}
		}
	}
}

func TestOpenAPIServed(t *testing.T) {
	b := setup(t)
	resp := b.do(request{path: "/openapi.yaml"})
	resp.expect(t, http.StatusOK, "")
	if !bytes.Equal(resp.body, openAPIDocument) {
		t.Error("GET /openapi.yaml does not answer the embedded document")
	}
	if ct := resp.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/yaml") {
		t.Errorf("Content-Type %q, want application/yaml", ct)
	}
	if doc, err := conformance.Load(resp.body); err != nil || doc.OpenAPI != "3.1.0" {
		t.Errorf("served document: %v", err)
	}
}
