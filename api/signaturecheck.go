package api

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/payoutd/payoutd/signature"
)

// drainLimit bounds how much of an oversized body the diagnostic endpoint
// reads to report its true length and hash.
const drainLimit = 16 << 20

type signatureCheckResponse struct {
	Valid       bool                 `json:"valid"`
	Diagnostics signatureDiagnostics `json:"diagnostics"`
}

type signatureDiagnostics struct {
	ReceivedBody            string `json:"received_body"`
	ReceivedBodyLength      int64  `json:"received_body_length"`
	ReceivedBodySHA256      string `json:"received_body_sha256"`
	ReceivedTimestamp       string `json:"received_timestamp"`
	ServerTimeMS            int64  `json:"server_time_ms"`
	WindowDeltaMS           int64  `json:"window_delta_ms"`
	WindowOK                bool   `json:"window_ok"`
	SignedPayloadString     string `json:"signed_payload_string"`
	ClientProvidedSignature string `json:"client_provided_signature"`
	// SignatureVersion is the scheme the header was checked by: "v2"
	// when it carries v2=, else "v1".
	SignatureVersion string `json:"signature_version"`
	Diagnosis        string `json:"diagnosis"`
	// Hint says how to fix what the diagnosis names, when the server can
	// tell (a timestamp sent in seconds).
	Hint string `json:"hint,omitempty"`
}

// POST /api/v3/debug/signature-check: runs the same verification as the
// enforcing endpoints over the exact bytes received and explains the
// outcome. It never reveals the server's signature and takes no business
// action; every diagnosable problem is a 200.
func (s *Server) handleSignatureCheck(c *gin.Context) {
	now := s.now()
	header := strings.TrimSpace(c.GetHeader("x-signature"))
	body, length, sum, tooLarge := readBodyForDiagnosis(c.Request)

	req := signature.RequestOf(c.Request, body)
	var result signature.Result
	switch {
	case hasContentEncoding(c.Request):
		result.Diagnosis = signature.ContentEncodingNotSupported
	case tooLarge:
		result.Diagnosis = signature.BodyTooLarge
	default:
		secret, err := s.signingSecret(c.Request.Context(), principalOf(c))
		if err != nil {
			fail(c, err)
			return
		}
		result = signature.VerifyRequest(secret, header, req, now)
		if result.Diagnosis == signature.OK && principalOf(c).Client.RequireSignatureV2 && result.Header.V2 == "" {
			result.Diagnosis = signature.V2Required
		}
	}

	t, version := receivedTimestamp(header), receivedVersion(header)
	d := signatureDiagnostics{
		ReceivedBody:            string(body),
		ReceivedBodyLength:      length,
		ReceivedBodySHA256:      sum,
		ReceivedTimestamp:       t,
		ServerTimeMS:            now.UnixMilli(),
		ClientProvidedSignature: c.GetHeader("x-signature"),
		SignatureVersion:        version,
		Diagnosis:               string(result.Diagnosis),
	}
	if t != "" {
		d.SignedPayloadString = signature.SignedString(version, t, req)
	}
	if result.Diagnosis == signature.V2Required {
		d.Hint = "this client accepts only v2 signatures: send x-signature: t=<ms>,v2=<hex>"
	}
	if ts, ok := signature.ParseMillis(t); ok {
		d.WindowDeltaMS, d.WindowOK = signature.WindowDelta(ts, now)
		if !d.WindowOK {
			d.Hint = signature.SecondsHint(ts, now)
		}
	}
	c.JSON(http.StatusOK, signatureCheckResponse{Valid: result.Diagnosis == signature.OK, Diagnostics: d})
}

// readBodyForDiagnosis reads the body, keeping at most 1 MiB of it, and
// returns its length and SHA-256 over everything read. An oversized body is
// not echoed back.
func readBodyForDiagnosis(r *http.Request) (body []byte, length int64, sum string, tooLarge bool) {
	h := sha256.New()
	if r.Body == nil {
		return nil, 0, hashHex(h), false
	}
	kept, _ := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	h.Write(kept)
	length = int64(len(kept))
	if length <= maxBodyBytes {
		return kept, length, hashHex(h), false
	}
	rest, _ := io.Copy(h, io.LimitReader(r.Body, drainLimit-length))
	return nil, length + rest, hashHex(h), true
}

func hashHex(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }

// receivedVersion is the scheme a header asks to be checked by, even when
// it is malformed otherwise: "v2" when it has a v2= part.
func receivedVersion(header string) string {
	for _, part := range strings.Split(header, ",") {
		if strings.HasPrefix(strings.TrimSpace(part), "v2=") {
			return "v2"
		}
	}
	return "v1"
}

// receivedTimestamp extracts the t= value from a signature header even when
// the header as a whole is malformed, so the diagnosis can show it.
func receivedTimestamp(header string) string {
	for _, part := range strings.Split(header, ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(part), "t="); ok {
			return v
		}
	}
	return ""
}
