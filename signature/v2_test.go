package signature

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// v2Vector is one known answer of scheme v2. The vectors in
// testdata/v2_vectors.json were computed from the scheme's written
// definition with Python's hashlib and hmac by someone who had not read
// this package, and checked again with sha256sum and openssl; docs/api.md
// (Signing v2) shows the first of them.
type v2Vector struct {
	Name           string `json:"name"`
	T              string `json:"t"`
	Method         string `json:"method"`
	PathWithQuery  string `json:"path_with_query"`
	IdempotencyKey string `json:"idempotency_key"`
	Body           string `json:"body"`
	BodySHA256     string `json:"body_sha256"`
	Canonical      string `json:"canonical"`
	V2             string `json:"v2"`
	Header         string `json:"header"`
}

// vectorSecret is the Signing Secret the vectors were computed with.
const vectorSecret = "3f9a1c0b7d2e4f5a6b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c"

func loadV2Vectors(t *testing.T) []v2Vector {
	t.Helper()
	raw, err := os.ReadFile("testdata/v2_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vs []v2Vector
	if err := json.Unmarshal(raw, &vs); err != nil {
		t.Fatal(err)
	}
	if len(vs) < 6 {
		t.Fatalf("%d vectors, want 6", len(vs))
	}
	return vs
}

func TestV2KnownAnswers(t *testing.T) {
	t.Parallel()
	for _, v := range loadV2Vectors(t) {
		r := Request{Method: v.Method, Target: v.PathWithQuery, IdempotencyKey: v.IdempotencyKey, Body: []byte(v.Body)}
		if got := CanonicalV2(v.T, r); got != v.Canonical {
			t.Errorf("%s: canonical string\n got %q\nwant %q", v.Name, got, v.Canonical)
		}
		if got := ComputeV2(vectorSecret, v.T, r); got != v.V2 {
			t.Errorf("%s: v2 = %s, want %s", v.Name, got, v.V2)
		}
		at := time.UnixMilli(mustMillis(t, v.T))
		if got := SignV2(vectorSecret, r, at); got != v.Header {
			t.Errorf("%s: header = %s, want %s", v.Name, got, v.Header)
		}
		if res := VerifyRequest(vectorSecret, v.Header, r, at); res.Diagnosis != OK {
			t.Errorf("%s: the vector's own header verifies as %s", v.Name, res.Diagnosis)
		}
	}
}

// TestV2KnownAnswersFromHTTP builds each vector's request as a server
// receives it (RequestOf), including a key sent with surrounding spaces.
func TestV2KnownAnswersFromHTTP(t *testing.T) {
	t.Parallel()
	for _, v := range loadV2Vectors(t) {
		req := httptest.NewRequest(v.Method, v.PathWithQuery, strings.NewReader(v.Body))
		if v.IdempotencyKey != "" {
			req.Header.Set("Idempotency-Key", "  "+v.IdempotencyKey+" ")
		}
		got := RequestOf(req, []byte(v.Body))
		if sig := ComputeV2(vectorSecret, v.T, got); sig != v.V2 {
			t.Errorf("%s: from the HTTP request v2 = %s, want %s (request %+v)", v.Name, sig, v.V2, got)
		}
	}
}

func mustMillis(t *testing.T, s string) int64 {
	t.Helper()
	ms, ok := ParseMillis(s)
	if !ok {
		t.Fatalf("bad t %q", s)
	}
	return ms
}

// TestV2CoversEveryPart: changing any one part of a signed request makes
// its signature fail, so a signature cannot be moved to another method,
// route, query, key or body.
func TestV2CoversEveryPart(t *testing.T) {
	t.Parallel()
	base := Request{Method: "POST", Target: "/api/v3/disbursements", IdempotencyKey: "k-1", Body: []byte(`{"amount":"100000"}`)}
	header := SignV2(testSecret, base, testNow)
	changed := map[string]Request{
		"method":          {Method: "PUT", Target: base.Target, IdempotencyKey: base.IdempotencyKey, Body: base.Body},
		"path":            {Method: base.Method, Target: "/api/v3/disbursements/quote", IdempotencyKey: base.IdempotencyKey, Body: base.Body},
		"query":           {Method: base.Method, Target: base.Target + "?x=1", IdempotencyKey: base.IdempotencyKey, Body: base.Body},
		"idempotency key": {Method: base.Method, Target: base.Target, IdempotencyKey: "k-2", Body: base.Body},
		"no key":          {Method: base.Method, Target: base.Target, Body: base.Body},
		"body":            {Method: base.Method, Target: base.Target, IdempotencyKey: base.IdempotencyKey, Body: []byte(`{"amount":"100001"}`)},
		// The parts are separated so that moving text from one to the
		// next does not keep the string the same.
		"key into path": {Method: base.Method, Target: base.Target + "\nk-1", Body: base.Body},
	}
	if r := VerifyRequest(testSecret, header, base, testNow); r.Diagnosis != OK {
		t.Fatalf("the signed request itself: %s", r.Diagnosis)
	}
	for name, r := range changed {
		if got := VerifyRequest(testSecret, header, r, testNow).Diagnosis; got != SignatureMismatch {
			t.Errorf("%s changed: %s, want %s", name, got, SignatureMismatch)
		}
	}
}

// TestV2NeverVerifiesAsV1: a v2 signature sent as v1 (or the reverse) is a
// mismatch, and Verify (callbacks, v1 only) calls a v2-only header
// malformed rather than checking it by another scheme.
func TestV2NeverVerifiesAsV1(t *testing.T) {
	t.Parallel()
	r := Request{Method: "POST", Target: "/api/v3/disbursements", IdempotencyKey: "k", Body: []byte(`{}`)}
	t2 := ms(testNow)
	v2 := ComputeV2(testSecret, t2, r)
	v1 := Compute(testSecret, t2, r.Body)
	cases := []struct {
		name, header string
		want         Diagnosis
	}{
		{"v2 value as v1", "t=" + t2 + ",v1=" + v2, SignatureMismatch},
		{"v1 value as v2", "t=" + t2 + ",v2=" + v1, SignatureMismatch},
		{"v2 uppercase", "t=" + t2 + ",v2=" + strings.ToUpper(v2), HexCaseMismatch},
		{"both, v2 right", "t=" + t2 + ",v1=" + strings.Repeat("0", 64) + ",v2=" + v2, OK},
		{"both, v2 wrong: v1 does not rescue it", "t=" + t2 + ",v1=" + v1 + ",v2=" + strings.Repeat("0", 64), SignatureMismatch},
		{"v2 out of window", "t=" + ms(testNow.Add(-6*time.Minute)) + ",v2=" + v2, TimestampOutOfWindow},
	}
	for _, tc := range cases {
		if got := VerifyRequest(testSecret, tc.header, r, testNow).Diagnosis; got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	if got := Verify(testSecret, "t="+t2+",v2="+v2, r.Body, testNow).Diagnosis; got != MalformedSignatureHeader {
		t.Errorf("Verify of a v2-only header: %s, want %s", got, MalformedSignatureHeader)
	}
}

func FuzzParseHeaderV2(f *testing.F) {
	f.Add("t=1,v2=" + hex64)
	f.Add("t=1,v1=" + hex64 + ",v2=" + hex64)
	f.Add("v2=,t=")
	f.Fuzz(func(t *testing.T, s string) {
		h, ok := ParseHeader(s)
		if !ok {
			return
		}
		if h.V1 == "" && h.V2 == "" {
			t.Fatalf("ParseHeader(%q) accepted a header with no signature", s)
		}
		if h.V2 != "" && (h.Version() != "v2" || h.Signature() != h.V2) {
			t.Fatalf("ParseHeader(%q): a v2 header is checked as %s", s, h.Version())
		}
	})
}
