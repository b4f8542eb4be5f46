package snapsim

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/payoutd/payoutd/vendors/snap"
)

// document is the OpenAPI description of the four SNAP requests the
// simulator serves, written from the SNAP service specifications (its
// header names the documents and where they disagree).
//
//go:embed schema/snap-bi.yaml
var document []byte

// spec is document loaded once; a document that does not load is a defect
// of this package, caught by its first test.
var spec = mustLoad(document)

type loaded struct {
	router routers.Router
	// byService is the operation of each SNAP service code
	// (x-service-code).
	byService map[string]*openapi3.Operation
}

func mustLoad(data []byte) *loaded {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(data)
	if err == nil {
		err = doc.Validate(loader.Context)
	}
	if err != nil {
		panic(fmt.Sprintf("snapsim: the embedded SNAP document is invalid: %v", err))
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		panic(fmt.Sprintf("snapsim: the embedded SNAP document has no router: %v", err))
	}
	l := &loaded{router: router, byService: map[string]*openapi3.Operation{}}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			sc, _ := op.Extensions["x-service-code"].(string)
			if sc == "" {
				panic(fmt.Sprintf("snapsim: operation %s has no x-service-code", op.OperationID))
			}
			l.byService[sc] = op
		}
	}
	return l
}

// RequestError is a request the SNAP document refuses, with the answer a
// SNAP bank gives it: HTTP 400 and "400" + service code + "02" "Invalid
// Mandatory Field {field}" for a mandatory field missing, "01" "Invalid
// Field Format {field}" for a malformed one, "00" "Bad Request" for a body
// that is not the documented JSON object; 401xx03 "Token Not Found (B2B)"
// for a missing or malformed Authorization.
type RequestError struct {
	Code    snap.Code
	Message string // the responseMessage
}

func (e *RequestError) Error() string {
	return fmt.Sprintf("snapsim: %s %s", e.Code, e.Message)
}

// errNoService: ValidateRequest was given a path the document does not
// serve.
var errNoService = errors.New("snapsim: no SNAP service at that path")

// ValidateRequest checks a POST to path (one of the four services) with
// header and body against the SNAP document: headers present and well
// formed, body a JSON object with every mandatory member, each member of
// its documented type, length and pattern, and no member the document does
// not name. A refusal is a *RequestError. What a schema cannot say (the
// clock window, credentials, signatures, known banks) is left to the
// simulator.
func ValidateRequest(path string, header http.Header, body []byte) error {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	route, params, err := spec.router.FindRoute(req)
	if err != nil {
		return errNoService
	}
	sc, _ := route.Operation.Extensions["x-service-code"].(string)
	input := &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{MultiError: true, AuthenticationFunc: bearerPresent},
	}
	err = openapi3filter.ValidateRequest(context.Background(), input)
	if err == nil {
		return nil
	}
	return refusal(sc, route.Operation, header, err)
}

// bearerPresent is the shape of "Authorization: Bearer <AccessToken>";
// whether the token is one the bank issued is the simulator's check.
func bearerPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	tok, ok := strings.CutPrefix(in.RequestValidationInput.Request.Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(tok) == "" {
		return errors.New("no bearer token")
	}
	return nil
}

// finding is one refusal kin-openapi reported, ranked so that the answer
// does not depend on map order: headers in the document's order first,
// then the token, then the body's missing members in the document's
// order, its malformed members, and last a body that is not the
// documented object.
type finding struct {
	rank, order int
	code        snap.Code
	message     string
}

func refusal(sc string, op *openapi3.Operation, header http.Header, err error) *RequestError {
	mandatory := mandatoryPaths(op)
	var found []finding
	add := func(rank, order, status int, c, msg string) {
		found = append(found, finding{rank, order, snap.NewCode(status, sc, c), msg})
	}
	missing := func(field string) string { return "Invalid Mandatory Field {" + field + "}" }
	malformed := func(field string) string { return "Invalid Field Format {" + field + "}" }
	for _, e := range flatten(err, nil) {
		var re *openapi3filter.RequestError
		var se *openapi3.SchemaError
		var sec *openapi3filter.SecurityRequirementsError
		switch {
		case errors.As(e, &sec):
			add(1, 0, 401, "03", "Token Not Found (B2B)")
		case errors.As(e, &re) && re.Parameter != nil:
			name := re.Parameter.Name
			order := slices.IndexFunc(op.Parameters, func(p *openapi3.ParameterRef) bool { return p.Value == re.Parameter })
			if header.Get(name) == "" || errors.Is(re.Err, openapi3filter.ErrInvalidRequired) || errors.Is(re.Err, openapi3filter.ErrInvalidEmptyValue) {
				add(0, order, 400, "02", missing(name))
			} else {
				add(0, order, 400, "01", malformed(name))
			}
		case errors.As(e, &re) && re.Err == nil && strings.Contains(re.Reason, "Content-Type"):
			// Content-Type is the first header of every request table.
			if header.Get("Content-Type") == "" {
				add(0, -1, 400, "02", missing("Content-Type"))
			} else {
				add(0, -1, 400, "01", malformed("Content-Type"))
			}
		case errors.As(e, &se):
			path := strings.Join(se.JSONPointer(), ".")
			switch {
			case path == "" || se.SchemaField == "properties":
				// not an object, or a member the document does not name
				add(4, 0, 400, "00", "Bad Request")
			case se.SchemaField == "required" || (slices.Contains(mandatory, path) && empty(se.Value)):
				add(2, slices.Index(mandatory, path), 400, "02", missing(path))
			default:
				add(3, 0, 400, "01", malformed(path))
			}
		default:
			// an empty body or one that is not JSON
			add(4, 0, 400, "00", "Bad Request")
		}
	}
	if len(found) == 0 { // kin-openapi refused without saying what: the request is bad
		return &RequestError{Code: snap.NewCode(400, sc, "00"), Message: "Bad Request"}
	}
	f := slices.MinFunc(found, func(a, b finding) int {
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		if a.order != b.order {
			return a.order - b.order
		}
		return strings.Compare(a.message, b.message)
	})
	return &RequestError{Code: f.code, Message: f.message}
}

// flatten lists the single errors of kin-openapi's multi-errors: the
// request's (one per header, the token, the body) and the body's (one per
// member); a header's stays whole, its name is what the answer needs.
func flatten(err error, into []error) []error {
	switch e := err.(type) {
	case openapi3.MultiError:
		for _, x := range e {
			into = flatten(x, into)
		}
	case *openapi3filter.RequestError:
		var me openapi3.MultiError
		if e.RequestBody != nil && errors.As(e.Err, &me) {
			return flatten(me, into)
		}
		into = append(into, e)
	default:
		into = append(into, err)
	}
	return into
}

func empty(v any) bool { return v == nil || v == "" }

// MandatoryFields lists the mandatory members of the request body of the
// SNAP service serviceCode ("73", "16", "18", "36") as the document has
// them: JSON paths in the document's order, a nested member after its
// parent (amount, amount.value, amount.currency). Nil for an unknown
// service.
func MandatoryFields(serviceCode string) []string {
	op := spec.byService[serviceCode]
	if op == nil {
		return nil
	}
	return mandatoryPaths(op)
}

func mandatoryPaths(op *openapi3.Operation) []string {
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		return nil
	}
	media := op.RequestBody.Value.Content.Get("application/json")
	if media == nil || media.Schema == nil {
		return nil
	}
	var out []string
	var walk func(s *openapi3.Schema, prefix string)
	walk = func(s *openapi3.Schema, prefix string) {
		for _, name := range s.Required {
			out = append(out, prefix+name)
			if p := s.Properties[name]; p != nil && p.Value != nil {
				walk(p.Value, prefix+name+".")
			}
		}
	}
	walk(media.Schema.Value, "")
	return out
}
