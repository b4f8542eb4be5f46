// Package credentials issues and checks a client's credentials: API keys
// (shown once, stored only as a SHA-256 hash), and signing and callback
// secrets (64-character hex, stored encrypted with AES-256-GCM under
// SECRETS_KEY, bound to their client, credential and field; see Sealer,
// which also seals the clients' webhook URLs).
//
// A V3 API key carries its environment in its prefix: "v3_live_" for
// production, "v3_test_" for staging. A key without the "v3_" prefix is of
// the legacy generation. Both are visible without a database lookup; whether
// a key with the other environment's prefix is one of that environment or
// an unknown one only the lookup tells.
package credentials

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"

	"github.com/payoutd/payoutd/models"
)

const (
	v3Prefix         = "v3_"
	productionPrefix = "v3_live_"
	stagingPrefix    = "v3_test_"
	keyRandomBytes   = 24 // 192 bits
	secretBytes      = 32 // 64 hex characters, as the spec issues them
)

// Issued is a freshly generated set of credentials in clear text. It exists
// only to be shown once to the operator; the store keeps hashes and
// ciphertexts.
type Issued struct {
	APIKey         string
	SigningSecret  string // empty when the client has no signing secret
	CallbackSecret string
}

// Generate returns a new API key for env and, when withSigningSecret is set,
// a new signing secret, plus a new callback secret.
func Generate(env models.Environment, withSigningSecret bool) Issued {
	prefix := productionPrefix
	if env == models.Staging {
		prefix = stagingPrefix
	}
	issued := Issued{
		APIKey:         prefix + randomHex(keyRandomBytes),
		CallbackSecret: randomHex(secretBytes),
	}
	if withSigningSecret {
		issued.SigningSecret = randomHex(secretBytes)
	}
	return issued
}

// HashAPIKey is the only form of an API key the store keeps. Keys carry 192
// random bits, so a plain SHA-256 is as strong as a slow hash here and keeps
// the lookup on every request cheap.
func HashAPIKey(apiKey string) string {
	sum := sha256.Sum256([]byte(apiKey))
	return hex.EncodeToString(sum[:])
}

// DisplayPrefix is the part of a key safe to show to operators and in logs.
func DisplayPrefix(apiKey string) string {
	const shown = len(productionPrefix) + 4
	if len(apiKey) <= shown {
		return apiKey
	}
	return apiKey[:shown]
}

// KeyPrefix is how every V3 API key of env begins.
func KeyPrefix(env models.Environment) string {
	if env == models.Staging {
		return stagingPrefix
	}
	return productionPrefix
}

// CheckKeyGeneration tells, from the key's text alone, whether it can belong
// to env: models.ErrLegacyAPIKey for a key of the legacy generation,
// models.ErrWrongEnvironmentKey for a V3 key with the other environment's
// prefix (a key of that environment, or a bogus one: the caller looks it up).
func CheckKeyGeneration(apiKey string, env models.Environment) error {
	if !strings.HasPrefix(apiKey, v3Prefix) {
		return models.ErrLegacyAPIKey
	}
	want := productionPrefix
	if env == models.Staging {
		want = stagingPrefix
	}
	if !strings.HasPrefix(apiKey, want) {
		if strings.HasPrefix(apiKey, productionPrefix) || strings.HasPrefix(apiKey, stagingPrefix) {
			return models.ErrWrongEnvironmentKey
		}
		return models.ErrInvalidAPIKey
	}
	return nil
}

// EqualHashes compares two hex hashes in constant time.
func EqualHashes(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error()) // never happens on supported platforms
	}
	return hex.EncodeToString(b)
}
