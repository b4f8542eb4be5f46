// Package conformance holds a server's answers to its OpenAPI document in
// tests: a handler wrapped by Checker.Wrap fails the test whose request got
// an answer the document does not describe (an undocumented status, another
// content type, a missing or malformed header, a body outside its schema or
// with a field the schema does not name). The document is loaded and the
// answers validated by kin-openapi, a maintained validator, rather than by
// hand.
//
// Only answers are checked, never requests: tests send bad requests on
// purpose, and how they are refused is itself an answer the document must
// describe.
package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	yaml "go.yaml.in/yaml/v4"
)

// Load parses document and validates it as an OpenAPI document, its
// examples against their schemas included; every error is reported.
func Load(document []byte) (*openapi3.T, error) {
	// kin-openapi's loader keeps one of two equal keys of a mapping
	// silently; the other is a mistake in the document, refused here.
	var plain any
	if err := yaml.Unmarshal(document, &plain); err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(document)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	if err := doc.Validate(loader.Context, openapi3.EnableMultiError(), openapi3.EnableExamplesValidation()); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	return doc, nil
}

// registerDecoders lets kin-openapi read the bodies of the pages and images
// a document may describe; it knows JSON, YAML and plain text itself. The
// registry is global, hence once.
var registerDecoders = sync.OnceFunc(func() {
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("image/png", openapi3filter.FileBodyDecoder)
})

// Checker checks answers against one document.
type Checker struct {
	router routers.Router
	// errorSchema is what an answer to a request no operation matches
	// must be (components.schemas.Error).
	errorSchema *openapi3.SchemaRef
	// undocumented reports the requests of the routes the document leaves
	// out on purpose; their answers are not checked.
	undocumented func(*http.Request) bool
}

// New returns a Checker of doc (from Load). undocumented (nil: none) names
// the served routes the document leaves out on purpose. doc must have an
// Error schema in components: an answer to a request that matches no
// operation (an unknown path, another method) must be such an error.
func New(doc *openapi3.T, undocumented func(*http.Request) bool) (*Checker, error) {
	registerDecoders()
	errSchema := doc.Components.Schemas["Error"]
	if errSchema == nil {
		return nil, errors.New("conformance: the document has no components.schemas.Error")
	}
	// Routes are matched on the path alone: the servers are the deployed
	// addresses, not the test server's.
	routed := *doc
	routed.Servers = nil
	router, err := gorillamux.NewRouter(&routed)
	if err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	if undocumented == nil {
		undocumented = func(*http.Request) bool { return false }
	}
	return &Checker{router: router, errorSchema: errSchema, undocumented: undocumented}, nil
}

// Check returns why the answer (status, header, body) to req does not
// conform to the document, or nil.
func (c *Checker) Check(req *http.Request, status int, header http.Header, body []byte) error {
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		return c.checkUnrouted(status, header, body)
	}
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	input.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(req.Context(), input); err != nil {
		return err
	}
	ref := route.Operation.Responses.Status(status)
	if ref == nil {
		ref = route.Operation.Responses.Default()
	}
	if ref == nil || ref.Value == nil {
		return nil // the operation lists no responses: nothing to hold it to
	}
	resp := ref.Value
	// kin-openapi reads no body where the document describes none: a body
	// there is drift too.
	if len(resp.Content) == 0 {
		if len(body) > 0 {
			return fmt.Errorf("the document describes no body for %d, the answer has %d bytes (%s)", status, len(body), header.Get("Content-Type"))
		}
		return nil
	}
	// JSON Schema lets an object carry members its schema does not list
	// (unless it says additionalProperties: false); a field the code
	// added without documenting it is drift too.
	media := resp.Content.Get(header.Get("Content-Type"))
	if media == nil || media.Schema == nil || !strings.Contains(header.Get("Content-Type"), "json") {
		return nil
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("the body is not JSON: %w", err)
	}
	var extra []string
	undocumentedFields([]*openapi3.Schema{media.Schema.Value}, v, "", &extra)
	if len(extra) > 0 {
		return fmt.Errorf("the body has fields the schema does not name: %s", strings.Join(extra, ", "))
	}
	return nil
}

// undocumentedFields appends to out the paths of the object members in v
// that none of schemas (with their allOf, anyOf and oneOf) names, unless
// one of them admits any (additionalProperties or patternProperties set,
// or no properties listed at all).
func undocumentedFields(schemas []*openapi3.Schema, v any, at string, out *[]string) {
	var all []*openapi3.Schema
	for _, s := range schemas {
		all = flatten(s, all)
	}
	switch v := v.(type) {
	case map[string]any:
		open := true
		for _, s := range all {
			if ap := s.AdditionalProperties; (ap.Has != nil && *ap.Has) || ap.Schema != nil || len(s.PatternProperties) > 0 {
				open = true
				break
			}
			if len(s.Properties) > 0 {
				open = false
			}
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			var subs []*openapi3.Schema
			for _, s := range all {
				if p := s.Properties[k]; p != nil && p.Value != nil {
					subs = append(subs, p.Value)
				}
			}
			switch {
			case len(subs) > 0:
				undocumentedFields(subs, v[k], at+"."+k, out)
			case !open:
				*out = append(*out, at+"."+k)
			}
		}
	case []any:
		var items []*openapi3.Schema
		for _, s := range all {
			if s.Items != nil && s.Items.Value != nil {
				items = append(items, s.Items.Value)
			}
		}
		if len(items) > 0 {
			for i, e := range v {
				undocumentedFields(items, e, fmt.Sprintf("%s[%d]", at, i), out)
			}
		}
	}
}

// flatten appends s and the schemas it combines to into.
func flatten(s *openapi3.Schema, into []*openapi3.Schema) []*openapi3.Schema {
	if s == nil {
		return into
	}
	into = append(into, s)
	for _, refs := range []openapi3.SchemaRefs{s.AllOf, s.AnyOf, s.OneOf} {
		for _, r := range refs {
			into = flatten(r.Value, into)
		}
	}
	return into
}

// checkUnrouted checks the answer to a request no operation of the
// document matches: an error, as the Error schema has it, in JSON.
func (c *Checker) checkUnrouted(status int, header http.Header, body []byte) error {
	if status < 400 {
		return fmt.Errorf("no operation of the document matches, yet the answer is %d", status)
	}
	if ct := header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("no operation matches: the answer must be the JSON Error, its Content-Type is %q", ct)
	}
	v, err := openapi3filter.JSONBodyDecoder(bytes.NewReader(body), header, c.errorSchema, nil)
	if err != nil {
		return fmt.Errorf("no operation matches: the body is not JSON: %w", err)
	}
	if err := c.errorSchema.Value.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.VisitAsResponse()); err != nil {
		return fmt.Errorf("no operation matches: the body is not the Error schema: %w", err)
	}
	return nil
}

// Wrap returns next with each answer checked: one that does not conform
// fails the test (t, or the one WithTest put in the request's context) with
// the request, the status and the validator's message. Answers given after
// t has finished are not checked.
//
// A check takes milliseconds (kin-openapi compiles the schemas it applies
// anew each time), so it runs beside the test rather than delaying the
// answer, which would upset the tests of rates and deadlines; the test
// waits for its checks when it ends.
func (c *Checker) Wrap(t testing.TB, next http.Handler) http.Handler {
	p := &pending{byTest: map[testing.TB]*sync.WaitGroup{}}
	t.Cleanup(p.end)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.undocumented(r) {
			next.ServeHTTP(w, r)
			return
		}
		// The route is found on the request as it came: handlers may
		// rewrite its URL. The check may outlive the request's context.
		req := r.Clone(context.Background())
		rec := &recorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.header == nil {
			rec.header = w.Header().Clone()
		}
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		tt := t
		if ct, ok := r.Context().Value(testKey{}).(testing.TB); ok {
			tt = ct
		}
		check := func() {
			if err := c.Check(req, rec.status, rec.header, rec.body.Bytes()); err != nil {
				tt.Errorf("OpenAPI conformance: %s %s answered %d, which the OpenAPI document does not describe: %v\nbody: %.300q",
					req.Method, req.URL.RequestURI(), rec.status, err, rec.body.Bytes())
			}
		}
		switch wg, state := p.add(tt); state {
		case later:
			go func() { defer wg.Done(); check() }()
		case now:
			check()
		}
	})
}

// pending tracks the checks under way, per test.
type pending struct {
	mu     sync.Mutex
	byTest map[testing.TB]*sync.WaitGroup // nil: the test is ending
	ended  bool                           // Wrap's test has finished
}

type when int

const (
	never when = iota // the test has finished
	now               // the test is ending: check before answering
	later             // in the background; the test waits for it
)

// add counts a check of an answer to t's request. The first of t makes t
// wait for its checks when it ends.
func (p *pending) add(t testing.TB) (*sync.WaitGroup, when) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return nil, never
	}
	wg, seen := p.byTest[t]
	switch {
	case seen && wg == nil:
		return nil, now
	case !seen:
		wg = &sync.WaitGroup{}
		p.byTest[t] = wg
		t.Cleanup(func() {
			p.mu.Lock()
			p.byTest[t] = nil
			p.mu.Unlock()
			wg.Wait()
		})
	}
	wg.Add(1)
	return wg, later
}

func (p *pending) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended = true
}

type testKey struct{}

// WithTest names the test that a non-conforming answer to a request with
// this context fails, instead of Wrap's (a subtest, say).
func WithTest(ctx context.Context, t testing.TB) context.Context {
	return context.WithValue(ctx, testKey{}, t)
}

// recorder passes an answer through and keeps a copy of it.
type recorder struct {
	http.ResponseWriter
	status int
	header http.Header
	body   bytes.Buffer
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 && code >= 200 {
		r.status = code
		r.header = r.ResponseWriter.Header().Clone()
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	r.body.Write(p)
	return r.ResponseWriter.Write(p)
}

// Flush and Unwrap keep streaming and http.ResponseController working
// through the recorder.
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
