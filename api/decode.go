package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/payoutd/payoutd/models"
)

// decodeJSON decodes body, which must hold exactly one JSON object, into
// dst (a pointer to a struct). Unknown fields are refused so that a typo in
// a field name is a clear 400, not a silently ignored value. Every error is
// a *models.ValidationError whose message names what is wrong.
func decodeJSON(body []byte, dst any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return models.Invalid("request body is empty; send a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(dst); err != nil {
		return models.Invalid(describeJSONError(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return models.Invalid("request body must hold a single JSON object")
	}
	return nil
}

func describeJSONError(err error) string {
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("request body is not valid JSON (at byte %d)", syntax.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "request body is not valid JSON (it ends too early)"
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return "request body must be a JSON object"
		}
		return fmt.Sprintf("field %q must be %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	default:
		return "request body is not valid JSON"
	}
}

// jsonKind names a Go kind as the JSON type a client should send.
func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	default:
		return "of another type"
	}
}
