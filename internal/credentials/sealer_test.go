package credentials

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
)

var (
	clientA = uuid.MustParse("6f1c2a9e-8d4b-4c3e-9a7f-1b2c3d4e5f60")
	clientB = uuid.MustParse("0b8f3c1d-2e4a-4b6c-8d0e-1f2a3b4c5d6e")
	credA   = uuid.MustParse("9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d")
)

const otherKeyHex = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"

func TestSealerRoundTrip(t *testing.T) {
	t.Parallel()
	s := newTestSealer(t, testKeyHex)
	b := CredentialBinding(clientA, credA, FieldSigningSecret)
	for _, plain := range []string{
		"",
		Generate(models.Production, true).SigningSecret,
		strings.Repeat("x", 10_000),
		"caf\u00e9 \x00 bytes",
	} {
		sealed := s.Seal(plain, b)
		if plain != "" && strings.Contains(sealed, plain) {
			t.Errorf("Seal(%q) contains the plaintext", plain)
		}
		if !strings.HasPrefix(sealed, "v2."+s.CurrentKeyID()+".") || !s.IsCurrent(sealed) {
			t.Errorf("Seal(%q) = %q: not v2.<key id>.…", plain, sealed)
		}
		got, err := s.Open(sealed, b)
		if err != nil || got != plain {
			t.Errorf("Open(Seal(%q)) = %q, %v", plain, got, err)
		}
	}
}

func TestSealerCiphertextDiffersEachTime(t *testing.T) {
	t.Parallel()
	s := newTestSealer(t, testKeyHex)
	const plain = "3f9a1c0b7d2e4f5a6b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c"
	seen := map[string]bool{}
	for i := 0; i < 50; i++ {
		c := s.Seal(plain, ClientBinding(clientA, FieldPayoutWebhookURL))
		if seen[c] {
			t.Fatalf("Seal produced the same ciphertext twice: %q", c)
		}
		seen[c] = true
	}
}

// A value moved to another client, another credential or another field
// does not open: the swap a database writer could make before.
func TestSealerValueIsBoundToItsClientAndField(t *testing.T) {
	t.Parallel()
	s := newTestSealer(t, testKeyHex)
	sealed := s.Seal("secret", CredentialBinding(clientA, credA, FieldSigningSecret))
	for _, elsewhere := range []Binding{
		CredentialBinding(clientB, credA, FieldSigningSecret),
		CredentialBinding(clientA, uuid.New(), FieldSigningSecret),
		CredentialBinding(clientA, credA, FieldCallbackSecret),
		ClientBinding(clientA, FieldSigningSecret),
		"",
	} {
		if got, err := s.Open(sealed, elsewhere); !errors.Is(err, ErrSealedMismatch) {
			t.Errorf("Open for %q = %q, %v; want ErrSealedMismatch", elsewhere, got, err)
		}
	}
}

func TestSealerKeyIDsAndRotation(t *testing.T) {
	t.Parallel()
	old := newTestSealer(t, testKeyHex)
	current := newTestSealer(t, otherKeyHex)
	if old.CurrentKeyID() == current.CurrentKeyID() || len(old.CurrentKeyID()) != 8 {
		t.Fatalf("key ids %q, %q", old.CurrentKeyID(), current.CurrentKeyID())
	}
	if strings.Contains(testKeyHex, old.CurrentKeyID()) {
		t.Fatal("the key id is part of the key")
	}
	b := ClientBinding(clientA, FieldPaymentWebhookURL)
	sealedOld := old.Seal("https://merchant.example/hook", b)
	if _, err := current.Open(sealedOld, b); !errors.Is(err, ErrSealedUnknownKey) {
		t.Fatalf("a value under a key the sealer lacks: %v", err)
	}
	oldKey, _ := ParseSecretsKey(testKeyHex)
	rotating, err := current.WithPrevious(oldKey)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := rotating.Open(sealedOld, b); err != nil || got != "https://merchant.example/hook" {
		t.Fatalf("the previous key's value during a rotation: %q, %v", got, err)
	}
	if rotating.IsCurrent(sealedOld) || SealedKeyID(sealedOld) != old.CurrentKeyID() {
		t.Fatal("a value under the previous key counts as current")
	}
	resealed := rotating.Seal("x", b)
	if SealedKeyID(resealed) != current.CurrentKeyID() {
		t.Fatal("a rotating sealer must seal under the current key")
	}
	if _, err := current.WithPrevious(mustKey(t, otherKeyHex)); err == nil {
		t.Fatal("the previous key equal to the current one must be refused")
	}
}

func mustKey(t *testing.T, h string) []byte {
	t.Helper()
	k, err := ParseSecretsKey(h)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Values of the earlier version ("v1:", no associated data) open with the
// key that sealed them, current or previous, and with no other.
func TestSealerOpensLegacyValuesOnlyWithTheirKey(t *testing.T) {
	t.Parallel()
	key := mustKey(t, testKeyHex)
	block, _ := aes.NewCipher(key)
	aead, _ := cipher.NewGCM(block)
	nonce := make([]byte, aead.NonceSize())
	legacy := "v1:" + base64.RawStdEncoding.EncodeToString(aead.Seal(nonce, nonce, []byte("old secret"), nil))
	if !IsLegacy(legacy) {
		t.Fatal("IsLegacy")
	}
	b := CredentialBinding(clientA, credA, FieldCallbackSecret)
	for name, s := range map[string]*Sealer{
		"same key as current":  newTestSealer(t, testKeyHex),
		"same key as previous": mustRotating(t, otherKeyHex, testKeyHex),
	} {
		if got, err := s.Open(legacy, b); err != nil || got != "old secret" {
			t.Errorf("%s: %q, %v", name, got, err)
		}
	}
	if _, err := newTestSealer(t, otherKeyHex).Open(legacy, b); !errors.Is(err, ErrSealedLegacyUnreadable) {
		t.Errorf("a legacy value under a dropped key: %v", err)
	}
}

func mustRotating(t *testing.T, currentHex, previousHex string) *Sealer {
	t.Helper()
	s, err := newTestSealer(t, currentHex).WithPrevious(mustKey(t, previousHex))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSealerOpenTampered(t *testing.T) {
	t.Parallel()
	s := newTestSealer(t, testKeyHex)
	b := CredentialBinding(clientA, credA, FieldSigningSecret)
	sealed := s.Seal("a signing secret", b)
	prefix := "v2." + s.CurrentKeyID() + "."
	body := strings.TrimPrefix(sealed, prefix)
	flip := func(str string, i int) string {
		b := []byte(str)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	for _, tt := range []struct{ name, value string }{
		{"first char flipped", prefix + flip(body, 0)},
		{"middle char flipped", prefix + flip(body, len(body)/2)},
		{"last char flipped", prefix + flip(body, len(body)-2)},
		{"truncated", sealed[:len(sealed)-4]},
		{"extended", sealed + "AAAA"},
		{"nonce only", prefix + body[:16]},
		{"empty body", prefix},
		{"no version", body},
		{"no key id", "v2.." + body},
		{"other key id", "v2." + hex.EncodeToString([]byte("abcd")) + "." + body},
		{"legacy prefix", "v1:" + body},
		{"not base64", prefix + "!!!!" + body},
		{"empty", ""},
	} {
		if got, err := s.Open(tt.value, b); err == nil {
			t.Errorf("%s: Open(%q) = %q, want an error", tt.name, tt.value, got)
		}
	}
	if got, err := s.Open(sealed, b); err != nil || got != "a signing secret" {
		t.Errorf("untampered Open = %q, %v", got, err)
	}
}
