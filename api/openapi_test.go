package api

import (
	"bytes"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/payoutd/payoutd/models"
)

// The OpenAPI document is the merchants' reference. These tests keep it in
// step with the code: every route, every error message of the status table
// and the messages of the common 400 and 401 answers must be in it, and the
// operations it marks as planned or as answering 501 must really be so.

// openAPIDoc parses the embedded document; duplicate keys are an error.
func openAPIDoc(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatalf("api/openapi.yaml does not parse: %v", err)
	}
	return doc
}

// node returns the map under key, failing the test when it is not one.
func node(t *testing.T, m map[string]any, key string) map[string]any {
	t.Helper()
	v, ok := m[key].(map[string]any)
	if !ok {
		t.Fatalf("openapi.yaml: %q is %T, want a mapping", key, m[key])
	}
	return v
}

// resolve follows a local "$ref" (a JSON pointer into the document).
func resolve(doc map[string]any, v any) (any, error) {
	for range 10 {
		m, ok := v.(map[string]any)
		if !ok {
			return v, nil
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return v, nil
		}
		target, err := pointer(doc, ref)
		if err != nil {
			return nil, err
		}
		v = target
	}
	return nil, fmt.Errorf("$ref chain too long")
}

func pointer(doc map[string]any, ref string) (any, error) {
	if !strings.HasPrefix(ref, "#/") {
		return nil, fmt.Errorf("%s: only local references are used in this document", ref)
	}
	var cur any = doc
	for _, part := range strings.Split(ref[2:], "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: %q is not inside a mapping", ref, part)
		}
		if cur, ok = m[part]; !ok {
			return nil, fmt.Errorf("%s: no %q", ref, part)
		}
	}
	return cur, nil
}

// walk calls fn on every mapping in v, depth first.
func walk(v any, fn func(map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		fn(x)
		for _, c := range x {
			walk(c, fn)
		}
	case []any:
		for _, c := range x {
			walk(c, fn)
		}
	}
}

// errorValues collects the "error" strings of every {error: ...} in v.
func errorValues(v any) []string {
	var out []string
	walk(v, func(m map[string]any) {
		if s, ok := m["error"].(string); ok && len(m) == 1 {
			out = append(out, s)
		}
	})
	return out
}

var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// operation is one method of one path of the document.
type operation struct {
	method, path string // "GET", "/api/v3/wallets/{wallet_id}/balance"
	op           map[string]any
}

func operations(t *testing.T, doc map[string]any) []operation {
	t.Helper()
	var ops []operation
	for path, item := range node(t, doc, "paths") {
		m, ok := item.(map[string]any)
		if !ok {
			t.Fatalf("paths[%q] is %T", path, item)
		}
		for _, method := range httpMethods {
			if op, ok := m[method].(map[string]any); ok {
				ops = append(ops, operation{strings.ToUpper(method), path, op})
			}
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].path+ops[i].method < ops[j].path+ops[j].method })
	return ops
}

// servedRoutes lists the engine's routes as "METHOD /openapi/{style}",
// leaving out the operators' dashboard, which is not part of the API.
func servedRoutes(b *bundle) map[string]bool {
	param := regexp.MustCompile(`:([A-Za-z0-9_]+)`)
	routes := map[string]bool{}
	for _, r := range b.server.engine.Routes() {
		// The dashboard and the Go profiler are operators' tools with
		// their own documentation (README), not part of the merchant API.
		if r.Path == dashboardPath || strings.HasPrefix(r.Path, dashboardPath+"/") || strings.HasPrefix(r.Path, profilerPath+"/") {
			continue
		}
		routes[r.Method+" "+param.ReplaceAllString(r.Path, "{$1}")] = true
	}
	return routes
}

func TestOpenAPIDocumentParses(t *testing.T) {
	doc := openAPIDoc(t)
	if doc["openapi"] != "3.1.0" {
		t.Errorf("openapi = %v, want 3.1.0", doc["openapi"])
	}
	if v := node(t, doc, "info")["version"]; v != "1.0" {
		t.Errorf("info.version = %v, want 1.0 (the interface's version)", v)
	}
	if len(node(t, doc, "paths")) == 0 {
		t.Error("no paths")
	}
	if len(node(t, doc, "webhooks")) == 0 {
		t.Error("no webhooks")
	}
	scheme := node(t, node(t, node(t, doc, "components"), "securitySchemes"), "apiKey")
	if scheme["type"] != "apiKey" || scheme["in"] != "header" || scheme["name"] != "x-api-key" {
		t.Errorf("securitySchemes.apiKey = %v, want an apiKey in the x-api-key header", scheme)
	}
	// Every reference must point at something: a typo in a $ref leaves a
	// hole that only a reader would find.
	walk(doc, func(m map[string]any) {
		if ref, ok := m["$ref"].(string); ok {
			if _, err := pointer(doc, ref); err != nil {
				t.Errorf("dangling reference: %v", err)
			}
		}
	})
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
	for _, o := range operations(t, doc) {
		documented[o.method+" "+o.path] = o
	}
	for route := range served {
		if _, ok := documented[route]; !ok {
			t.Errorf("%s is served but not in api/openapi.yaml", route)
		}
	}
	for key, o := range documented {
		planned := o.op["x-status"] == "planned"
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
	for _, o := range operations(t, doc) {
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
		description, _ := o.op["description"].(string)
		marked := strings.Contains(description, notImplementedMarker)
		_, has501 := node(t, o.op, "responses")["501"]
		switch {
		case resp.status == http.StatusNotImplemented && (!marked || !has501):
			t.Errorf("%s %s answers 501: its description must say %q and it must list a 501 response", o.method, o.path, notImplementedMarker)
		case resp.status != http.StatusNotImplemented && (marked || has501):
			t.Errorf("%s %s answers %d now: drop %q and its 501 response from api/openapi.yaml", o.method, o.path, resp.status, notImplementedMarker)
		}
	}
}

// matchesMessage reports whether an example error value shows msg: exactly,
// or with the detail the code appends ("invalid x-signature (...)", "not
// ready: ...").
func matchesMessage(value, msg string) bool {
	return value == msg || strings.HasPrefix(value, msg+" ") || strings.HasPrefix(value, msg+":")
}

// TestOpenAPIShowsEveryErrorMessage: every message of the error→status
// table appears in the document as the value of an error example, and no
// example shows one of them under a status the table does not give it.
func TestOpenAPIShowsEveryErrorMessage(t *testing.T) {
	doc := openAPIDoc(t)
	examples := errorValues(doc)

	statuses := map[string][]int{} // message → statuses the table gives it
	for _, e := range errorStatuses {
		msg := e.err.Error()
		if msg == "" {
			continue // no fixed message to document
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

	// Each example under paths.<path>.<method>.responses.<status> that shows
	// a table message must sit under one of the table's statuses for it.
	for _, o := range operations(t, doc) {
		for code, r := range node(t, o.op, "responses") {
			status, err := strconv.Atoi(code)
			if err != nil {
				continue // "2XX", "default"
			}
			resp, err := resolve(doc, r)
			if err != nil {
				t.Fatalf("%s %s %s: %v", o.method, o.path, code, err)
			}
			for _, v := range errorValues(resp) {
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
		if !models.IsValidation(err) {
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
	for _, o := range operations(t, doc) {
		for code, r := range node(t, o.op, "responses") {
			where := o.method + " " + o.path + " " + code
			v, err := resolve(doc, r)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			resp, _ := v.(map[string]any)
			headers, _ := resp["headers"].(map[string]any)
			if _, ok := headers["X-Request-Id"]; !ok {
				t.Errorf("%s: no X-Request-Id header", where)
			}
			if code < "400" {
				continue
			}
			content, _ := resp["content"].(map[string]any)
			media, _ := content["application/json"].(map[string]any)
			schema, _ := media["schema"].(map[string]any)
			if schema["$ref"] != "#/components/schemas/Error" {
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
	var doc map[string]any
	if err := yaml.Unmarshal(resp.body, &doc); err != nil || doc["openapi"] != "3.1.0" {
		t.Errorf("served document: openapi %v, error %v", doc["openapi"], err)
	}
}
