package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/payoutd/payoutd/models"
)

// decodeJSON decodes body, which must hold exactly one JSON object, into
// dst (a pointer to a struct). Unknown fields are refused so that a typo in
// a field name is a clear 400, not a silently ignored value. Every error is
// a models.EINVALID error whose message names what is wrong.
func decodeJSON(body []byte, dst any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return models.Invalid("request body is empty; send a JSON object")
	}
	if err := checkObjectKeys(body, dst); err != nil {
		return err
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

// checkObjectKeys walks the top level of body and refuses what
// encoding/json would let through silently: a body that is not an object
// (null included), a key given twice (the last would win), a key that
// matches a field only case-insensitively ("AMOUNT" for "amount"), and a
// value holding a NUL character anywhere in its strings.
func checkObjectKeys(body []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil {
		return models.Invalid(describeJSONError(err))
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return models.Invalid("request body must be a JSON object")
	}
	known := jsonFieldNames(dst)
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return models.Invalid(describeJSONError(err))
		}
		key, _ := tok.(string)
		if seen[key] {
			return models.Invalid(fmt.Sprintf("field %q is given more than once", key))
		}
		seen[key] = true
		if !known[key] {
			return models.Invalid(fmt.Sprintf("unknown field %q", key))
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return models.Invalid(describeJSONError(err))
		}
		// PostgreSQL refuses U+0000 in text (SQLSTATE 22021): a 400 here,
		// not a 500 from whichever store the value reaches.
		if containsNUL(value) {
			return models.Invalid(fmt.Sprintf(`field %q must not contain the NUL character (\u0000)`, key))
		}
	}
	return nil
}

// containsNUL reports whether any string in value (a valid JSON value),
// nested ones and object keys included, holds U+0000. JSON can carry it
// only as the escape \u0000, so a value without that text has none; the
// decode tells "\u0000" from an escaped backslash followed by "u0000".
func containsNUL(value json.RawMessage) bool {
	if !bytes.Contains(value, []byte(`\u0000`)) {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return false // io.EOF: value was valid JSON already
		}
		if s, ok := tok.(string); ok && strings.ContainsRune(s, 0) {
			return true
		}
	}
}

// jsonFieldNames lists the exact JSON names of a struct's fields.
func jsonFieldNames(dst any) map[string]bool {
	names := map[string]bool{}
	t := reflect.TypeOf(dst)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return names
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names[name] = true
	}
	return names
}
