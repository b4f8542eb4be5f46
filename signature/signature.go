// Package signature signs and verifies requests and callbacks.
//
// Scheme v1 is the interface specification's, kept exact for the clients
// built against it:
//
//	payload = t + "." + body
//	v1      = lowercase hex of HMAC-SHA256(payload, secret)
//	header  = "t=<unix ms>,v1=<v1>"
//
// v1 does not cover the method, the path or the Idempotency-Key, so one
// signed body can be sent to another route or under another key. Scheme v2
// (v2.go) covers the whole request and is what the Go SDK sends.
//
// The secret is used as the ASCII bytes of its 64-character hex text, as
// issued (not hex-decoded). Verify and VerifyRequest return a Diagnosis,
// the same values the signature-check endpoint reports, so enforcing
// endpoints and the diagnostic endpoint can never disagree.
package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Window is how far t may be from the server's clock, either side.
const Window = 5 * time.Minute

// Diagnosis is the verdict on a signed request; the values are the spec's.
type Diagnosis string

const (
	OK                          Diagnosis = "ok"
	SignatureMismatch           Diagnosis = "signature_mismatch"
	HexCaseMismatch             Diagnosis = "hex_case_mismatch"
	TimestampOutOfWindow        Diagnosis = "timestamp_out_of_window"
	MalformedTimestamp          Diagnosis = "malformed_timestamp"
	MissingSignatureHeader      Diagnosis = "missing_signature_header"
	MalformedSignatureHeader    Diagnosis = "malformed_signature_header"
	NoSecretProvisioned         Diagnosis = "no_secret_provisioned"
	ContentEncodingNotSupported Diagnosis = "content_encoding_not_supported"
	BodyTooLarge                Diagnosis = "body_too_large"
	// V2Required: a valid v1 signature from a client that accepts only
	// v2 (an addition to the specification's list).
	V2Required Diagnosis = "signature_v2_required"
)

// Header is a parsed x-signature header. T is kept as text: whether it is a
// valid integer is a separate diagnosis (malformed_timestamp). V1 and V2
// are the signatures of either scheme; at least one is set.
type Header struct {
	T  string
	V1 string
	V2 string
}

// Signature is the signature the header is verified by: V2 when the
// header carries one (a V1 beside it is then ignored), else V1.
func (h Header) Signature() string {
	if h.V2 != "" {
		return h.V2
	}
	return h.V1
}

// ParseHeader parses "t=<ms>,v1=<64 hex>" and "t=<ms>,v2=<64 hex>" (both
// signatures may be sent together, for servers that know only v1). Parts
// are separated by commas and may be surrounded by spaces; their order does
// not matter. Unknown parts are ignored, so a later scheme can be sent
// alongside. It reports false when t is missing, when neither v1 nor v2 is
// there, when any of them is repeated, or when a signature present is not
// 64 hex characters (either case: uppercase is diagnosed later as
// hex_case_mismatch). T is not checked here: an empty or non-integer t is a
// malformed_timestamp.
func ParseHeader(value string) (Header, bool) {
	var h Header
	seen := map[string]bool{}
	for _, part := range strings.Split(value, ",") {
		key, val, found := strings.Cut(strings.TrimSpace(part), "=")
		if !found {
			return Header{}, false
		}
		switch key {
		case "t", "v1", "v2":
			if seen[key] {
				return Header{}, false
			}
			seen[key] = true
		}
		switch key {
		case "t":
			h.T = val
		case "v1":
			h.V1 = val
		case "v2":
			h.V2 = val
		}
	}
	if !seen["t"] || !seen["v1"] && !seen["v2"] ||
		seen["v1"] && !isHex64(h.V1) || seen["v2"] && !isHex64(h.V2) {
		return Header{}, false
	}
	return h, true
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// ParseMillis parses a Unix time in milliseconds: an integer in plain
// decimal digits, optionally negative (then simply outside the window); no
// plus sign, spaces or fraction.
func ParseMillis(s string) (int64, bool) {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil
}

// PayloadString is what gets signed: t + "." + body.
func PayloadString(t string, body []byte) string {
	return t + "." + string(body)
}

// Compute returns the lowercase hex HMAC-SHA256 of t + "." + body.
func Compute(secret, t string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(t))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// Sign returns the header value for body signed at now.
func Sign(secret string, body []byte, now time.Time) string {
	t := strconv.FormatInt(now.UnixMilli(), 10)
	return "t=" + t + ",v1=" + Compute(secret, t, body)
}

// Result is the outcome of Verify, with what the diagnostic endpoint shows.
type Result struct {
	Diagnosis Diagnosis
	Header    Header // parsed header, when it could be parsed
	// Timestamp is t as an integer and DeltaMS its distance from now in
	// milliseconds (t - now); both valid when HasTimestamp is set.
	Timestamp    int64
	DeltaMS      int64
	HasTimestamp bool
	WindowOK     bool
}

// Verify checks a v1 header against body with secret at now: the
// specification's scheme, which callbacks (x-callback-signature) use. A
// header without v1 is malformed here. An empty secret means the client has
// none (no_secret_provisioned). It checks in the order the design fixes, so
// the first problem found is the one reported.
func Verify(secret, header string, body []byte, now time.Time) Result {
	return verify(secret, header, now, func(h Header) (string, string, bool) {
		return Compute(secret, h.T, body), h.V1, h.V1 != ""
	})
}

// VerifyRequest checks an API request's x-signature: by v2 over the whole
// request when the header carries v2, else by v1 over t and the body.
func VerifyRequest(secret, header string, req Request, now time.Time) Result {
	return verify(secret, header, now, func(h Header) (string, string, bool) {
		if h.V2 != "" {
			return ComputeV2(secret, h.T, req), h.V2, true
		}
		return Compute(secret, h.T, req.Body), h.V1, true
	})
}

// verify runs the checks in the design's order; expect returns the
// signature the server computes for the parsed header, the one received,
// and false when the header lacks the scheme this check needs.
func verify(secret, header string, now time.Time, expect func(Header) (string, string, bool)) Result {
	var r Result
	if secret == "" {
		r.Diagnosis = NoSecretProvisioned
		return r
	}
	if strings.TrimSpace(header) == "" {
		r.Diagnosis = MissingSignatureHeader
		return r
	}
	h, ok := ParseHeader(header)
	if !ok {
		r.Diagnosis = MalformedSignatureHeader
		return r
	}
	expected, got, ok := expect(h)
	if !ok {
		r.Diagnosis = MalformedSignatureHeader
		return r
	}
	r.Header = h
	t, ok := ParseMillis(h.T)
	if !ok {
		r.Diagnosis = MalformedTimestamp
		return r
	}
	r.Timestamp, r.HasTimestamp = t, true
	r.DeltaMS, r.WindowOK = WindowDelta(t, now)
	if !r.WindowOK {
		r.Diagnosis = TimestampOutOfWindow
		return r
	}
	if !hmac.Equal([]byte(expected), []byte(strings.ToLower(got))) {
		r.Diagnosis = SignatureMismatch
		return r
	}
	if got != expected {
		r.Diagnosis = HexCaseMismatch
		return r
	}
	r.Diagnosis = OK
	return r
}

// WindowDelta returns t - now in milliseconds and whether that is within
// Window either side. A t so far in the past that the difference would
// overflow int64 saturates at math.MinInt64 (and likewise upwards).
func WindowDelta(tMillis int64, now time.Time) (int64, bool) {
	nowMS := now.UnixMilli()
	var delta int64
	switch {
	case nowMS > 0 && tMillis < math.MinInt64+nowMS:
		delta = math.MinInt64
	case nowMS < 0 && tMillis > math.MaxInt64+nowMS:
		delta = math.MaxInt64
	default:
		delta = tMillis - nowMS
	}
	limit := Window.Milliseconds()
	return delta, delta >= -limit && delta <= limit
}

// SecondsHint explains a timestamp t that is out of the window because it
// was sent in seconds: when t × 1000 falls within a day of now, it returns
// a hint naming the fix, otherwise "". Unix seconds of today are ten
// digits, milliseconds thirteen; the mistake is common and its symptom (a
// time in January 1970) is not self-explanatory.
func SecondsHint(t int64, now time.Time) string {
	if t <= 0 || t > math.MaxInt64/1000 {
		return ""
	}
	if d := time.Duration(t*1000-now.UnixMilli()) * time.Millisecond; d < -24*time.Hour || d > 24*time.Hour {
		return ""
	}
	return fmt.Sprintf("timestamps are Unix milliseconds; %d looks like seconds: send %d", t, t*1000)
}
