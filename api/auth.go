package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/payoutd/payoutd/internal/credentials"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/signature"
)

// maxBodyBytes caps every request body (spec: 1 MiB).
const maxBodyBytes = 1 << 20

// Keys of values the middleware leaves in the gin context.
const (
	principalKey = "payoutd.principal"
	bodyKey      = "payoutd.body"
	// signatureKey holds the accepted signature (lowercase hex, v1 or v2)
	// of a signed request, which creates store with what they create.
	signatureKey = "payoutd.signature"
)

// principal is the authenticated caller.
type principal = models.Principal

// signaturePolicy says what an endpoint demands of x-signature.
type signaturePolicy int

const (
	// signatureOptional: verified when present, else x-timestamp is required.
	signatureOptional signaturePolicy = iota
	// signatureRequired: the disbursement quote and create routes.
	signatureRequired
	// signatureDiagnostic: the signature-check endpoint; the handler
	// diagnoses the signature itself and always answers 200.
	signatureDiagnostic
)

// authenticate is the one authentication middleware. In order:
//
//  1. x-api-key: present, a V3 key of this environment, known (hash lookup);
//     else 401 with a message that says which.
//  2. holding client: 403.
//  3. source IP on the client's allow-list: else 403. X-Forwarded-For
//     counts only from TRUSTED_PROXIES.
//  4. the body, read once: Content-Encoding 415, over 1 MiB 413.
//  5. x-signature when present (an empty header counts as absent): always
//     verified, v2 over the method, path, Idempotency-Key and body, v1
//     over t and the exact bytes received; 401 when wrong or when
//     required and missing, when v1 is sent by a client that requires v2,
//     and when it was used before for another request
//     (rememberSignature); otherwise x-timestamp within ±5 minutes, 400.
//
// A source address that failed authentication too often is answered 429
// before step 1, and a failure beyond its budget gets 429 instead of its
// 401 (failedauth.go).
//
// In diagnostic mode it stops after step 3: the handler reads the body and
// reports every signature problem as a 200 diagnosis. It never reads or
// records used signatures, so it neither uses one up nor lets one be used
// again.
func (s *Server) authenticate(policy signaturePolicy) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := s.authFailures.blocked(c); err != nil {
			fail(c, err)
			return
		}
		p, err := s.identify(c)
		if err != nil {
			fail(c, s.authFailures.failed(c, err))
			return
		}
		c.Set(principalKey, p)
		if policy == signatureDiagnostic {
			c.Next()
			return
		}
		body, err := readBody(c.Request)
		if err != nil {
			fail(c, err)
			return
		}
		c.Set(bodyKey, body)
		if err := s.verifyRequest(c, p, body, policy); err != nil {
			fail(c, s.authFailures.failed(c, err))
			return
		}
		c.Next()
	}
}

// identify runs steps 1 to 3: key, holding client, IP allow-list.
func (s *Server) identify(c *gin.Context) (*principal, error) {
	key := strings.TrimSpace(c.GetHeader("x-api-key"))
	if key == "" {
		return nil, errMissingAPIKey
	}
	// A key whose prefix names the other environment is looked up all the
	// same: only a key known there "belongs to another environment"; any
	// other is an invalid key, with its prefix as the hint.
	otherPrefix := false
	if err := credentials.CheckKeyGeneration(key, s.cfg.Env); errors.Is(err, models.ErrWrongEnvironmentKey) {
		otherPrefix = true
	} else if err != nil {
		return nil, err
	}
	hash := credentials.HashAPIKey(key)
	p, err := s.principals.Principal(hash, func() (*principal, error) {
		return s.store.FindPrincipalByKeyHash(c.Request.Context(), hash)
	})
	if err != nil {
		if otherPrefix && errors.Is(err, models.ErrInvalidAPIKey) {
			return nil, models.WithHint(err, otherPrefixHint(s.cfg.Env))
		}
		return nil, err
	}
	// The lookup matched on the hash already; comparing again in constant
	// time keeps the check itself free of timing differences.
	if !credentials.EqualHashes(p.Credential.APIKeyHash, hash) {
		return nil, models.ErrInvalidAPIKey
	}
	if p.Client.Environment != s.cfg.Env || otherPrefix {
		return nil, models.ErrWrongEnvironmentKey
	}
	if p.Client.Kind == models.KindHolding {
		return nil, errHoldingClient
	}
	ip, err := netip.ParseAddr(c.ClientIP())
	if err != nil || !p.Client.IPAllowed(ip) {
		return nil, errIPNotAllowed
	}
	return p, nil
}

// readBody reads the whole body once, refusing compression and anything
// over 1 MiB. The bytes returned are exactly what the client sent.
func readBody(r *http.Request) ([]byte, error) {
	if hasContentEncoding(r) {
		return nil, errContentEncoding
	}
	if r.ContentLength > maxBodyBytes {
		return nil, errBodyTooLarge
	}
	if r.Body == nil {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		return nil, models.Invalid("could not read the request body")
	}
	if len(body) > maxBodyBytes {
		return nil, errBodyTooLarge
	}
	return body, nil
}

func hasContentEncoding(r *http.Request) bool {
	for _, v := range r.Header.Values("Content-Encoding") {
		if v = strings.TrimSpace(v); v != "" && !strings.EqualFold(v, "identity") {
			return true
		}
	}
	return false
}

// verifyRequest runs step 5.
func (s *Server) verifyRequest(c *gin.Context, p *principal, body []byte, policy signaturePolicy) error {
	header := strings.TrimSpace(c.GetHeader("x-signature"))
	if header == "" {
		if policy == signatureRequired {
			return errMissingSignature
		}
		return s.checkTimestamp(c.GetHeader("x-timestamp"))
	}
	secret, err := s.signingSecret(c.Request.Context(), p)
	if err != nil {
		return err
	}
	result := signature.VerifyRequest(secret, header, signature.RequestOf(c.Request, body), s.now())
	switch result.Diagnosis {
	case signature.OK:
		if p.Client.RequireSignatureV2 && result.Header.V2 == "" {
			return models.WithHint(errInvalidSignature, "signature_v2_required: this client accepts only v2 signatures (x-signature: t=<ms>,v2=<hex>)")
		}
		used := strings.ToLower(result.Header.Signature())
		if err := s.rememberSignature(c, p, used); err != nil {
			return err
		}
		c.Set(signatureKey, used)
		return nil
	case signature.NoSecretProvisioned:
		return errNoSigningSecret
	case signature.TimestampOutOfWindow:
		return models.WithHint(errSignatureOutsideWindow, windowHint("the t of x-signature", result.Timestamp, s.now()))
	default:
		return models.WithHint(errInvalidSignature,
			fmt.Sprintf("%s; POST /api/v3/debug/signature-check shows what the server received", result.Diagnosis))
	}
}

// checkTimestamp validates x-timestamp: Unix milliseconds within the window.
func (s *Server) checkTimestamp(raw string) error {
	t, ok := signature.ParseMillis(strings.TrimSpace(raw))
	if !ok {
		if strings.TrimSpace(raw) == "" {
			return models.WithHint(errTimestampWindow, "the x-timestamp header is missing: send the current Unix time in milliseconds, or sign the request (x-signature)")
		}
		return models.WithHint(errTimestampWindow, "x-timestamp is not a Unix time in milliseconds (digits only)")
	}
	if _, ok := signature.WindowDelta(t, s.now()); !ok {
		return models.WithHint(errTimestampWindow, windowHint("x-timestamp", t, s.now()))
	}
	return nil
}

// windowHint says why a timestamp t (Unix ms) of what is outside the
// window: sent in seconds, or how far it is from the server's clock.
func windowHint(what string, t int64, now time.Time) string {
	if hint := signature.SecondsHint(t, now); hint != "" {
		return hint
	}
	delta, _ := signature.WindowDelta(t, now)
	side := "behind"
	if delta > 0 {
		side = "ahead of"
	}
	const year = int64(365 * 24 * time.Hour / time.Millisecond)
	if delta > year || delta < -year {
		return fmt.Sprintf("%s is more than a year %s the server's clock: send the current Unix time in milliseconds", what, side)
	}
	return fmt.Sprintf("%s is %s %s the server's clock; the window is 5 minutes either side", what,
		(time.Duration(max(delta, -delta)) * time.Millisecond).Round(time.Second), side)
}

// otherPrefixHint explains an unknown key with the other environment's
// prefix: likely a key of the other environment, or a mistyped one.
func otherPrefixHint(env models.Environment) string {
	other := models.Staging
	if env == models.Staging {
		other = models.Production
	}
	return fmt.Sprintf("the key begins %q, the prefix of %s keys; this is the %s environment, whose keys begin %q",
		credentials.KeyPrefix(other), other, env, credentials.KeyPrefix(env))
}

// signingSecret decrypts the client's signing secret; "" when it has none.
func (s *Server) signingSecret(ctx context.Context, p *principal) (string, error) {
	if p.Credential.SigningSecretEnc == nil {
		return "", nil
	}
	secret, err := s.sealer.Open(*p.Credential.SigningSecretEnc,
		credentials.CredentialBinding(p.Client.ID, p.Credential.ID, credentials.FieldSigningSecret))
	if err != nil {
		// Not a 500: nothing the merchant sends can succeed, and the
		// request must not pass. The operator learns why from the log.
		slog.ErrorContext(ctx, "signing secret cannot be opened; refusing the signed request",
			slog.String("client_id", p.Client.ID.String()), slog.String("credential_id", p.Credential.ID.String()),
			slog.Any("error", err))
		return "", errSigningSecretUnusable
	}
	return secret, nil
}

// signatureOf returns the accepted signature of the request, "" when it
// was not signed.
func signatureOf(c *gin.Context) string { return c.GetString(signatureKey) }

// principalOf returns the authenticated caller of a request that passed
// authenticate.
func principalOf(c *gin.Context) *principal {
	p, ok := c.Get(principalKey)
	if !ok {
		panic(errors.New("principalOf called on a route without authenticate"))
	}
	return p.(*principal)
}
