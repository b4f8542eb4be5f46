package credentials

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/google/uuid"
)

// Sealed values are text: "v2.<key id>.<base64(nonce|ciphertext)>". The key
// id names the SECRETS_KEY that sealed the value (a short hash of it, never
// the key), so that during a rotation a process holding the current and the
// previous key opens either. The associated data binds the value to the
// client and the field it was sealed for (Binding): a value copied into
// another client's row, or into another field, does not open.
//
// Values of earlier versions ("v1:<base64>", no key id, no associated data)
// are still opened, with whichever configured key fits, so that a
// deployment keeps working until `payoutd admin secrets rotate-key` reseals
// them under a new key; once the previous key is dropped, no process can
// open them any more, whatever a database writer puts back.
const (
	sealedPrefix = "v2."
	legacyPrefix = "v1:"
)

// Errors of Open, declared once; wrapped with where the value came from by
// callers.
var (
	// ErrSealedMalformed: the stored text is not a sealed value.
	ErrSealedMalformed = errors.New("sealed value is malformed")
	// ErrSealedUnknownKey: sealed under a key this process does not have
	// (neither SECRETS_KEY nor SECRETS_KEY_PREVIOUS).
	ErrSealedUnknownKey = errors.New("sealed value is under a key neither SECRETS_KEY nor SECRETS_KEY_PREVIOUS is")
	// ErrSealedMismatch: the value does not open for this client and field:
	// it was moved from another row or field, or altered.
	ErrSealedMismatch = errors.New("sealed value cannot be opened for this client and field: moved from another client or field, or altered")
	// ErrSealedLegacyUnreadable: a value of an earlier version that no
	// configured key opens.
	ErrSealedLegacyUnreadable = errors.New("sealed value of an earlier version (no key id) cannot be opened with SECRETS_KEY or SECRETS_KEY_PREVIOUS")
)

// Field names what a sealed value is, as part of its Binding.
type Field string

// The sealed fields.
const (
	FieldSigningSecret     Field = "signing_secret"
	FieldCallbackSecret    Field = "callback_secret"
	FieldPayoutWebhookURL  Field = "payout_webhook_url"
	FieldPaymentWebhookURL Field = "payment_webhook_url"
)

// Binding is the associated data a value is sealed with: the place it
// belongs to. It is not secret.
type Binding string

// ClientBinding binds a value to a client's field (its webhook URLs).
func ClientBinding(clientID uuid.UUID, f Field) Binding {
	return Binding("client:" + clientID.String() + ":" + string(f))
}

// CredentialBinding binds a secret to one credential of a client, so that a
// revoked credential's secret cannot be put back into the active one.
func CredentialBinding(clientID, credentialID uuid.UUID, f Field) Binding {
	return Binding("client:" + clientID.String() + ":credential:" + credentialID.String() + ":" + string(f))
}

// sealingKey is one AES-256-GCM key with its id.
type sealingKey struct {
	id   string
	aead cipher.AEAD
}

// Sealer encrypts secrets at rest with AES-256-GCM under SECRETS_KEY (64
// hex characters, 32 bytes) and opens values sealed under it or, during a
// rotation, under SECRETS_KEY_PREVIOUS.
type Sealer struct {
	current  sealingKey
	previous *sealingKey
	// legacyWarned is set once a value of an earlier version was opened:
	// the warning is logged once per process, not on every request.
	legacyWarned atomic.Bool
}

// ParseSecretsKey decodes SECRETS_KEY: exactly 64 hex characters.
func ParseSecretsKey(s string) ([]byte, error) {
	key, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil || len(key) != 32 {
		return nil, errors.New("SECRETS_KEY must be 64 hex characters (32 random bytes), e.g. from `openssl rand -hex 32`")
	}
	return key, nil
}

// KeyID is the id under which values sealed with key are stored: the first
// 8 hex characters of a domain-separated SHA-256 of the key. It tells keys
// apart; it does not help anyone find the key.
func KeyID(key []byte) string {
	sum := sha256.Sum256(append([]byte("payoutd secrets key id\x00"), key...))
	return hex.EncodeToString(sum[:4])
}

func newSealingKey(key []byte) (sealingKey, error) {
	if len(key) != 32 {
		return sealingKey{}, errors.New("secrets key must be 32 bytes")
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return sealingKey{}, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return sealingKey{}, err
	}
	return sealingKey{id: KeyID(key), aead: aead}, nil
}

// NewSealer returns a Sealer that seals and opens with a 32-byte key.
func NewSealer(key []byte) (*Sealer, error) {
	k, err := newSealingKey(key)
	if err != nil {
		return nil, err
	}
	return &Sealer{current: k}, nil
}

// WithPrevious returns a Sealer that still seals under the current key and
// also opens values sealed under previous (SECRETS_KEY_PREVIOUS), for the
// time of a key rotation.
func (s *Sealer) WithPrevious(previous []byte) (*Sealer, error) {
	k, err := newSealingKey(previous)
	if err != nil {
		return nil, err
	}
	if k.id == s.current.id {
		return nil, errors.New("SECRETS_KEY_PREVIOUS is the same key as SECRETS_KEY")
	}
	return &Sealer{current: s.current, previous: &k}, nil
}

// CurrentKeyID is the id of the key new values are sealed under.
func (s *Sealer) CurrentKeyID() string { return s.current.id }

// HasPrevious reports whether a previous key is configured.
func (s *Sealer) HasPrevious() bool { return s.previous != nil }

// Seal encrypts plaintext for the place b names; the result is text safe to
// store.
func (s *Sealer) Seal(plaintext string, b Binding) string {
	nonce := make([]byte, s.current.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	sealed := s.current.aead.Seal(nonce, nonce, []byte(plaintext), []byte(b))
	return sealedPrefix + s.current.id + "." + base64.RawStdEncoding.EncodeToString(sealed)
}

// Open decrypts a value sealed for the place b names, with the key its id
// names. A value of an earlier version is opened without its binding
// (it has none); see IsLegacy.
func (s *Sealer) Open(stored string, b Binding) (string, error) {
	if IsLegacy(stored) {
		return s.openLegacy(stored)
	}
	id, raw, ok := parseSealed(stored)
	if !ok {
		return "", ErrSealedMalformed
	}
	var k *sealingKey
	switch {
	case id == s.current.id:
		k = &s.current
	case s.previous != nil && id == s.previous.id:
		k = s.previous
	default:
		return "", fmt.Errorf("%w (key id %s)", ErrSealedUnknownKey, id)
	}
	if len(raw) < k.aead.NonceSize() {
		return "", ErrSealedMalformed
	}
	plain, err := k.aead.Open(nil, raw[:k.aead.NonceSize()], raw[k.aead.NonceSize():], []byte(b))
	if err != nil {
		return "", ErrSealedMismatch
	}
	return string(plain), nil
}

// openLegacy opens a "v1:" value with whichever configured key fits.
func (s *Sealer) openLegacy(stored string) (string, error) {
	raw, err := base64.RawStdEncoding.DecodeString(strings.TrimPrefix(stored, legacyPrefix))
	if err != nil || len(raw) < s.current.aead.NonceSize() {
		return "", ErrSealedMalformed
	}
	for _, k := range []*sealingKey{&s.current, s.previous} {
		if k == nil {
			continue
		}
		n := k.aead.NonceSize()
		if plain, err := k.aead.Open(nil, raw[:n], raw[n:], nil); err == nil {
			if s.legacyWarned.CompareAndSwap(false, true) {
				slog.Warn("opened a sealed value of an earlier version (not bound to its client and field); run `payoutd admin secrets rotate-key` to reseal every value under a new SECRETS_KEY")
			}
			return string(plain), nil
		}
	}
	return "", ErrSealedLegacyUnreadable
}

// IsLegacy reports whether stored is a value of an earlier version: no key
// id, not bound to its client and field.
func IsLegacy(stored string) bool { return strings.HasPrefix(stored, legacyPrefix) }

// IsCurrent reports whether stored is sealed in the current format under
// the current key: nothing for a rotation to do.
func (s *Sealer) IsCurrent(stored string) bool {
	id, _, ok := parseSealed(stored)
	return ok && id == s.current.id
}

func parseSealed(stored string) (id string, raw []byte, ok bool) {
	rest, found := strings.CutPrefix(stored, sealedPrefix)
	if !found {
		return "", nil, false
	}
	id, enc, found := strings.Cut(rest, ".")
	if !found || id == "" {
		return "", nil, false
	}
	raw, err := base64.RawStdEncoding.DecodeString(enc)
	if err != nil {
		return "", nil, false
	}
	return id, raw, true
}
