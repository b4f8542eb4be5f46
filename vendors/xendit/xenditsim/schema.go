package xenditsim

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// document is the OpenAPI description of the requests the simulator
// serves, written from Xendit's API reference (the file names its pages
// and the date they were read).
//
//go:embed schema/xendit-payouts-v2.yaml
var document []byte

// schema is document loaded: the router that finds a request's operation
// and the create's body, which RequiredFields and ValidateCreateBody read.
type schema struct {
	router routers.Router
	create *openapi3.RequestBody
}

// loadSchema loads document once per process: it never changes.
var loadSchema = sync.OnceValues(func() (*schema, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(document)
	if err != nil {
		return nil, fmt.Errorf("xenditsim: load the schema: %w", err)
	}
	if err := doc.Validate(loader.Context, openapi3.EnableExamplesValidation()); err != nil {
		return nil, fmt.Errorf("xenditsim: the schema is not valid OpenAPI: %w", err)
	}
	// Routes match the path alone: the servers are Xendit's addresses,
	// not the simulator's. The simulator checks the API key itself before
	// the schema (kin-openapi cannot compare it with the secret, and would
	// read the body for it first).
	doc.Servers = nil
	doc.Security = nil
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("xenditsim: route the schema: %w", err)
	}
	op := doc.Paths.Value("/v2/payouts").Post
	if op == nil || op.RequestBody == nil || op.RequestBody.Value == nil {
		return nil, errors.New("xenditsim: the schema has no body for POST /v2/payouts")
	}
	return &schema{router: router, create: op.RequestBody.Value}, nil
})

// filterOptions: a request is validated as sent, never completed with the
// document's defaults.
var filterOptions = openapi3filter.Options{SkipSettingDefaults: true}

// RequiredFields returns the dotted JSON paths of the fields a create
// (POST /v2/payouts) body must have, read from the schema: a field is
// listed when it and every object it is in are required, e.g.
// "channel_properties.account_holder_name".
func RequiredFields() []string {
	sc, err := loadSchema()
	if err != nil {
		panic(err) // the embedded document is tested to load
	}
	media := sc.create.Content.Get("application/json")
	var out []string
	var walk func(prefix string, s *openapi3.Schema)
	walk = func(prefix string, s *openapi3.Schema) {
		for _, name := range s.Required {
			path := prefix + name
			out = append(out, path)
			if p := s.Properties[name]; p != nil && p.Value != nil && p.Value.Type.Is(openapi3.TypeObject) {
				walk(path+".", p.Value)
			}
		}
	}
	walk("", media.Schema.Value)
	return out
}

// ValidateCreateBody returns the refusal the simulator would answer for
// body as a create (POST /v2/payouts) request, judged on the body alone:
// the schema, then the documented rules the schema cannot express and an
// unknown field. The error reads "<error_code>: <message>", e.g.
// `API_VALIDATION_ERROR: Should have required property
// "channel_properties.account_holder_name"`. It does not judge what depends
// on the simulator's channels (channel code, amount limits, account
// numbers); nil means the body's form is valid.
func ValidateCreateBody(body []byte) error {
	sc, err := loadSchema()
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPost, "/v2/payouts", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	in := &openapi3filter.RequestValidationInput{Request: req, Options: &filterOptions}
	if err := openapi3filter.ValidateRequestBody(context.Background(), in, sc.create); err != nil {
		return refusal(err)
	}
	if _, e := decodeCreate(body); e != nil {
		return e
	}
	return nil
}

// validateRequest holds r to the schema. It answers nil, or the refusal
// to write: 404 for a request no operation describes, else 400.
func (s *Server) validateRequest(w http.ResponseWriter, r *http.Request) *apiError {
	route, params, err := s.schema.router.FindRoute(r)
	if err != nil {
		return &apiError{status: http.StatusNotFound, code: "NOT_FOUND", message: "The requested resource was not found"}
	}
	if route.Operation.RequestBody != nil {
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		if r.Header.Get("Content-Type") == "" {
			// Read as JSON: the integration guide's own example sets no
			// Content-Type. Another type is refused.
			r.Header.Set("Content-Type", "application/json")
		}
	}
	in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route, Options: &filterOptions}
	if err := openapi3filter.ValidateRequest(r.Context(), in); err != nil {
		return refusal(err)
	}
	return nil
}

// apiError is a refusal: an HTTP status and Xendit's error code and text.
type apiError struct {
	status        int
	code, message string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func validationError(msg string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "API_VALIDATION_ERROR", message: msg}
}

// Texts of the refusals of a body that is not JSON; the simulator gave
// them before the schema.
const (
	msgNotJSON  = "Request body is not valid JSON or has unknown fields"
	msgTooLarge = "Request body is too large or unreadable"
)

// refusal turns kin-openapi's validation error into Xendit's answer. The
// texts follow the API reference's examples (400RequiredPropertyMissingError
// "Should have required property “xxx”", 400InvalidAmountError
// "\"amount\" should have 2 decimal places or less",
// https://docs.xendit.co/apidocs/create-payout): the field is named by its
// dotted path, in straight quotes.
func refusal(err error) *apiError {
	var re *openapi3filter.RequestError
	if !errors.As(err, &re) {
		return validationError("Request is invalid")
	}
	var se *openapi3.SchemaError
	isSchema := errors.As(re.Err, &se)
	switch {
	case re.Parameter != nil:
		name := re.Parameter.Name
		switch {
		case errors.Is(re.Err, openapi3filter.ErrInvalidRequired), errors.Is(re.Err, openapi3filter.ErrInvalidEmptyValue):
			return validationError(fmt.Sprintf("Should have required property %q", name))
		case isSchema:
			return validationError(schemaText(name, se))
		}
		return validationError(fmt.Sprintf("%q is invalid", name))
	case re.RequestBody != nil:
		var tooLarge *http.MaxBytesError
		switch {
		case isSchema:
			return validationError(schemaText(strings.Join(se.JSONPointer(), "."), se))
		case errors.As(re.Err, &tooLarge):
			return &apiError{status: http.StatusBadRequest, code: "INVALID_JSON_FORMAT", message: msgTooLarge}
		case re.Err == nil:
			// kin-openapi names no cause only for the Content-Type.
			return &apiError{status: http.StatusBadRequest, code: "INVALID_JSON_FORMAT", message: "Content-Type should be application/json"}
		}
		return &apiError{status: http.StatusBadRequest, code: "INVALID_JSON_FORMAT", message: msgNotJSON}
	}
	return validationError("Request is invalid")
}

// schemaText says what is wrong with the field at path.
func schemaText(path string, se *openapi3.SchemaError) string {
	if path == "" {
		path = "body"
	}
	s := se.Schema
	if s == nil {
		s = &openapi3.Schema{}
	}
	switch se.SchemaField {
	case "required":
		return fmt.Sprintf("Should have required property %q", path)
	case "type", "nullable":
		if s.Type != nil && len(s.Type.Slice()) > 0 {
			return fmt.Sprintf("%q should be %s", path, strings.Join(s.Type.Slice(), " or "))
		}
	case "minLength":
		return fmt.Sprintf("%q should be at least %d characters long", path, s.MinLength)
	case "maxLength":
		if s.MaxLength != nil {
			return fmt.Sprintf("%q should be at most %d characters long", path, *s.MaxLength)
		}
	case "enum":
		vals := make([]string, 0, len(s.Enum))
		for _, v := range s.Enum {
			vals = append(vals, fmt.Sprint(v))
		}
		return fmt.Sprintf("%q should be one of %s", path, strings.Join(vals, ", "))
	case "minimum":
		if s.Min != nil {
			return fmt.Sprintf("%q should be at least %s", path, strconv.FormatFloat(*s.Min, 'f', -1, 64))
		}
	case "maxItems":
		if s.MaxItems != nil {
			return fmt.Sprintf("%q should have at most %d items", path, *s.MaxItems)
		}
	case "maxProperties":
		if s.MaxProps != nil {
			return fmt.Sprintf("%q should have at most %d keys", path, *s.MaxProps)
		}
	case "pattern":
		return fmt.Sprintf("%q should match the pattern %q", path, s.Pattern)
	}
	return fmt.Sprintf("%q is invalid", path)
}
