package testenv

import (
	"encoding/json"
	"strings"
	"testing"
)

// WithoutField returns the JSON object body without the member at the
// dotted path ("channel_properties.account_holder_name"): a request with
// one required field removed. The test fails if body has no such member.
func WithoutField(t testing.TB, body []byte, path string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(path, ".")
	obj := m
	for _, p := range parts[:len(parts)-1] {
		next, ok := obj[p].(map[string]any)
		if !ok {
			t.Fatalf("%s: %s is not an object in %s", path, p, body)
		}
		obj = next
	}
	if _, ok := obj[parts[len(parts)-1]]; !ok {
		t.Fatalf("%s has no %s", body, path)
	}
	delete(obj, parts[len(parts)-1])
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
