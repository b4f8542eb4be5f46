package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Scheme v2 signs everything that decides what a request does, so that a
// signature can be used for nothing but the request it was made for:
//
//	canonical = "PAYOUTD-HMAC-SHA256-V2" "\n"
//	            t                          "\n"
//	            method                     "\n"
//	            path with query            "\n"
//	            Idempotency-Key            "\n"
//	            lowercase hex SHA-256 of the body
//	v2        = lowercase hex of HMAC-SHA256(canonical, secret)
//	header    = "t=<unix ms>,v2=<v2>"
//
// Each part is unambiguous: none of them can hold a newline (HTTP forbids
// one in a method, a request target and a header value), t is digits and
// the body enters as a fixed-length hash. The first line names the scheme,
// so a v2 string can never be read as a v1 payload (which starts with t's
// digits). The same shape as AWS Signature Version 4's canonical request.

// v2Label is the first line of every v2 canonical string.
const v2Label = "PAYOUTD-HMAC-SHA256-V2"

// Request is what a v2 signature covers besides t.
type Request struct {
	// Method is the HTTP method in capitals ("POST").
	Method string
	// Target is the path exactly as sent (percent-encoding untouched)
	// and, when there is one, "?" and the query exactly as sent:
	// "/api/v3/wallets/…/balance", "/api/v3/disbursements?limit=10".
	Target string
	// IdempotencyKey is the Idempotency-Key header without surrounding
	// spaces; "" when the request has none.
	IdempotencyKey string
	// Body is the exact bytes of the body; nil or empty for a GET.
	Body []byte
}

// RequestOf is the Request a server received: method, path and query as
// they came, the Idempotency-Key trimmed as the create trims it, and body
// (read by the caller, which owns the reading).
func RequestOf(r *http.Request, body []byte) Request {
	target := r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	return Request{Method: r.Method, Target: target,
		IdempotencyKey: strings.TrimSpace(r.Header.Get("Idempotency-Key")), Body: body}
}

// CanonicalV2 is the string a v2 signature is the HMAC of. The
// signature-check endpoint shows it as signed_payload_string.
func CanonicalV2(t string, r Request) string {
	sum := sha256.Sum256(r.Body)
	return v2Label + "\n" + t + "\n" + r.Method + "\n" + r.Target + "\n" + r.IdempotencyKey + "\n" + hex.EncodeToString(sum[:])
}

// ComputeV2 returns the lowercase hex HMAC-SHA256 of CanonicalV2.
func ComputeV2(secret, t string, r Request) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(CanonicalV2(t, r)))
	return hex.EncodeToString(mac.Sum(nil))
}

// SignV2 returns the x-signature value for r signed at now.
func SignV2(secret string, r Request, now time.Time) string {
	t := strconv.FormatInt(now.UnixMilli(), 10)
	return "t=" + t + ",v2=" + ComputeV2(secret, t, r)
}

// SignedString is what a signature of version ("v1" or "v2") made at t is
// computed over, as the server builds it for r: the v2 canonical string or
// the v1 payload.
func SignedString(version, t string, r Request) string {
	if version == "v2" {
		return CanonicalV2(t, r)
	}
	return PayloadString(t, r.Body)
}
