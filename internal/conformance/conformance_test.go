package conformance

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

const testDocument = `
openapi: 3.1.0
info: {title: test, version: "1"}
servers:
  - url: https://api.example
paths:
  /things/{id}:
    get:
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
      responses:
        "200":
          description: A thing.
          headers:
            X-Request-Id:
              required: true
              schema: {type: string, pattern: "^[a-z0-9]{8}$"}
          content:
            application/json:
              schema:
                allOf:
                  - $ref: "#/components/schemas/Base"
                  - type: object
                    properties:
                      tags:
                        type: array
                        items:
                          type: object
                          properties:
                            name: {type: string}
                      meta:
                        type: object
                        description: Free-form.
        "204":
          description: Nothing.
        "404":
          description: No such thing.
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Error"}
components:
  schemas:
    Base:
      type: object
      required: [id, note]
      properties:
        id: {type: string}
        note: {type: [string, "null"]}
    Error:
      type: object
      required: [error]
      additionalProperties: false
      properties:
        error: {type: string}
`

func checker(t *testing.T, undocumented func(*http.Request) bool) *Checker {
	t.Helper()
	doc, err := Load([]byte(testDocument))
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(doc, undocumented)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func jsonHeader(requestID string) http.Header {
	h := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
	if requestID != "" {
		h.Set("X-Request-Id", requestID)
	}
	return h
}

// Each way an answer can leave the document is caught; the answers it
// describes pass.
func TestCheck(t *testing.T) {
	c := checker(t, nil)
	get := func(path string) *http.Request { return httptest.NewRequest(http.MethodGet, path, nil) }
	cases := []struct {
		name   string
		req    *http.Request
		status int
		header http.Header
		body   string
		want   string // "" conforms; else a part of the error
	}{
		{"as documented", get("/things/1"), 200, jsonHeader("abcd1234"), `{"id":"1","note":null}`, ""},
		{"a documented error", get("/things/1"), 404, jsonHeader(""), `{"error":"not found"}`, ""},
		{"no body where none is documented", get("/things/1"), 204, http.Header{}, ``, ""},
		{"an undocumented status", get("/things/1"), 500, jsonHeader(""), `{"error":"boom"}`, "status is not supported"},
		{"every field named", get("/things/1"), 200, jsonHeader("abcd1234"), `{"id":"1","note":"n","tags":[{"name":"a"}],"meta":{"any":1}}`, ""},
		{"a field the schema does not name", get("/things/1"), 200, jsonHeader("abcd1234"), `{"id":"1","note":null,"extra":1}`, "does not name: .extra"},
		{"a nested field the schema does not name", get("/things/1"), 200, jsonHeader("abcd1234"), `{"id":"1","note":null,"tags":[{"name":"a"},{"color":"red"}]}`, "does not name: .tags[1].color"},
		{"a field outside additionalProperties: false", get("/things/1"), 404, jsonHeader(""), `{"error":"x","detail":"y"}`, "doesn't match schema"},
		{"a field of another type", get("/things/1"), 200, jsonHeader("abcd1234"), `{"id":1,"note":null}`, "doesn't match schema"},
		{"a required field missing", get("/things/1"), 200, jsonHeader("abcd1234"), `{"id":"1"}`, "doesn't match schema"},
		{"a required header missing", get("/things/1"), 200, jsonHeader(""), `{"id":"1","note":null}`, "X-Request-Id"},
		{"a header outside its schema", get("/things/1"), 200, jsonHeader("NOT-OURS"), `{"id":"1","note":null}`, "X-Request-Id"},
		{"another content type", get("/things/1"), 200, http.Header{"Content-Type": {"text/html"}, "X-Request-Id": {"abcd1234"}}, `<p>1</p>`, "Content-Type"},
		{"a body where none is documented", get("/things/1"), 204, jsonHeader(""), `{}`, "describes no body"},
		{"an unknown path answered as an error", get("/nothing"), 404, jsonHeader(""), `{"error":"not found"}`, ""},
		{"an unknown path answered otherwise", get("/nothing"), 200, jsonHeader(""), `{}`, "no operation"},
		{"another method answered as an error", httptest.NewRequest(http.MethodPost, "/things/1", nil), 405, jsonHeader(""), `{"error":"method not allowed"}`, ""},
		{"an unknown path with a body outside Error", get("/nothing"), 404, jsonHeader(""), `{"message":"not found"}`, "Error schema"},
	}
	for _, tc := range cases {
		err := c.Check(tc.req, tc.status, tc.header, []byte(tc.body))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want no error", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error about %q", tc.name, err, tc.want)
		}
	}
}

func TestLoadRejectsAnInvalidDocument(t *testing.T) {
	for name, doc := range map[string]string{
		"a dangling $ref": strings.Replace(testDocument, `#/components/schemas/Error"}`, `#/components/schemas/Eror"}`, 1),
		"a duplicate key": strings.Replace(testDocument, "        \"204\":", "        \"200\":\n          description: again\n        \"204\":", 1),
		"an example outside its schema": strings.Replace(testDocument, "              schema: {$ref: \"#/components/schemas/Error\"}",
			"              schema: {$ref: \"#/components/schemas/Error\"}\n              example: {error: 7}", 1),
	} {
		if _, err := Load([]byte(doc)); err == nil {
			t.Errorf("%s: loaded without error", name)
		}
	}
}

// recordingT is a test that records what fails it.
type recordingT struct {
	testing.TB
	mu       sync.Mutex
	errors   []string
	cleanups []func()
}

func (r *recordingT) Helper() {}
func (r *recordingT) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recordingT) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

// finish runs the cleanups as the testing package does, last first.
func (r *recordingT) finish() {
	for {
		r.mu.Lock()
		if len(r.cleanups) == 0 {
			r.mu.Unlock()
			return
		}
		f := r.cleanups[len(r.cleanups)-1]
		r.cleanups = r.cleanups[:len(r.cleanups)-1]
		r.mu.Unlock()
		f()
	}
}

// Wrap fails the test a request names (or its own) by the time that test
// ends, passes every answer through unchanged, and leaves the undocumented
// routes alone.
func TestWrap(t *testing.T) {
	c := checker(t, func(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/ops/") })
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "abcd1234")
		switch r.URL.Path {
		case "/things/good":
			json.NewEncoder(w).Encode(map[string]any{"id": "good", "note": nil})
		default: // /things/bad, /ops/anything
			w.WriteHeader(http.StatusTeapot)
			w.Write([]byte(`{"error":"short and stout"}`))
		}
	})
	owner, named := &recordingT{}, &recordingT{}
	h := c.Wrap(owner, handler)
	serve := func(path string, test testing.TB) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		if test != nil {
			req = req.WithContext(WithTest(req.Context(), test))
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	if rec := serve("/things/good", nil); rec.Code != 200 || !strings.Contains(rec.Body.String(), `"id":"good"`) {
		t.Errorf("the answer passed through as %d %q", rec.Code, rec.Body)
	}
	if rec := serve("/things/bad", named); rec.Code != http.StatusTeapot || rec.Body.String() != `{"error":"short and stout"}` {
		t.Errorf("the answer passed through as %d %q", rec.Code, rec.Body)
	}
	serve("/ops/anything", nil)
	named.finish()
	if len(named.errors) != 1 || !strings.Contains(named.errors[0], "GET /things/bad answered 418") {
		t.Errorf("the named test's failures: %q, want one for GET /things/bad", named.errors)
	}
	serve("/things/bad", nil)
	owner.finish()
	if len(owner.errors) != 1 || !strings.Contains(owner.errors[0], "GET /things/bad answered 418") {
		t.Errorf("Wrap's test's failures: %q, want one for GET /things/bad (and none for /ops/)", owner.errors)
	}
	// After its test, answers are no longer checked (nor fail it).
	serve("/things/bad", nil)
	if len(owner.errors) > 1 {
		t.Errorf("an answer after the test failed it: %q", owner.errors[1:])
	}
}
