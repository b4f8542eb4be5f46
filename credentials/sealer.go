package credentials

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// sealedVersion prefixes every ciphertext so a later key rotation can tell
// which key sealed a value.
const sealedVersion = "v1:"

// Sealer encrypts secrets at rest with AES-256-GCM. The key comes from
// SECRETS_KEY: 64 hex characters (32 bytes).
type Sealer struct {
	aead cipher.AEAD
}

// ParseSecretsKey decodes SECRETS_KEY: exactly 64 hex characters.
func ParseSecretsKey(s string) ([]byte, error) {
	key, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil || len(key) != 32 {
		return nil, errors.New("SECRETS_KEY must be 64 hex characters (32 random bytes), e.g. from `openssl rand -hex 32`")
	}
	return key, nil
}

// NewSealer returns a Sealer for a 32-byte key.
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) != 32 {
		return nil, errors.New("secrets key must be 32 bytes")
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

// Seal encrypts plaintext; the result is text safe to store.
func (s *Sealer) Seal(plaintext string) string {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	sealed := s.aead.Seal(nonce, nonce, []byte(plaintext), nil)
	return sealedVersion + base64.RawStdEncoding.EncodeToString(sealed)
}

// Open decrypts a value made by Seal.
func (s *Sealer) Open(stored string) (string, error) {
	if !strings.HasPrefix(stored, sealedVersion) {
		return "", errors.New("sealed secret: unknown version")
	}
	raw, err := base64.RawStdEncoding.DecodeString(strings.TrimPrefix(stored, sealedVersion))
	if err != nil || len(raw) < s.aead.NonceSize() {
		return "", errors.New("sealed secret: malformed")
	}
	nonce, ciphertext := raw[:s.aead.NonceSize()], raw[s.aead.NonceSize():]
	plain, err := s.aead.Open(nil, nonce, ciphertext, nil)
	if err != nil {
		return "", fmt.Errorf("sealed secret: cannot decrypt (wrong SECRETS_KEY?): %w", err)
	}
	return string(plain), nil
}
