package credentials

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/payoutd/payoutd/models"
)

func isLowerHex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func TestGenerate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env         models.Environment
		withSigning bool
		wantPrefix  string
	}{
		{models.Production, true, "v3_live_"},
		{models.Production, false, "v3_live_"},
		{models.Staging, true, "v3_test_"},
		{models.Staging, false, "v3_test_"},
	}
	for _, tt := range tests {
		got := Generate(tt.env, tt.withSigning)
		if !strings.HasPrefix(got.APIKey, tt.wantPrefix) {
			t.Errorf("Generate(%s) key %q, want prefix %q", tt.env, got.APIKey, tt.wantPrefix)
		}
		if rest := strings.TrimPrefix(got.APIKey, tt.wantPrefix); !isLowerHex(rest) || len(rest) < 32 {
			t.Errorf("Generate(%s) key %q: want at least 128 random bits of hex after the prefix", tt.env, got.APIKey)
		}
		if err := CheckKeyGeneration(got.APIKey, tt.env); err != nil {
			t.Errorf("CheckKeyGeneration of a fresh %s key %q = %v", tt.env, got.APIKey, err)
		}
		if len(got.CallbackSecret) != 64 || !isLowerHex(got.CallbackSecret) {
			t.Errorf("CallbackSecret %q, want 64 hex characters", got.CallbackSecret)
		}
		if tt.withSigning {
			if len(got.SigningSecret) != 64 || !isLowerHex(got.SigningSecret) {
				t.Errorf("SigningSecret %q, want 64 hex characters", got.SigningSecret)
			}
			if got.SigningSecret == got.CallbackSecret {
				t.Error("signing and callback secrets are equal")
			}
		} else if got.SigningSecret != "" {
			t.Errorf("Generate(%s, false) SigningSecret = %q, want none", tt.env, got.SigningSecret)
		}
	}
}

func TestGenerateUnique(t *testing.T) {
	t.Parallel()
	const n = 200
	seen := map[string]bool{}
	for i := 0; i < n; i++ {
		g := Generate(models.Production, true)
		for _, v := range []string{g.APIKey, g.SigningSecret, g.CallbackSecret} {
			if seen[v] {
				t.Fatalf("value %q generated twice", v)
			}
			seen[v] = true
		}
	}
}

func TestHashAPIKey(t *testing.T) {
	t.Parallel()
	key := "v3_live_0123456789abcdef0123456789abcdef0123456789abcdef"
	sum := sha256.Sum256([]byte(key))
	want := hex.EncodeToString(sum[:])
	if got := HashAPIKey(key); got != want {
		t.Errorf("HashAPIKey = %s, want %s", got, want)
	}
	if HashAPIKey(key) == HashAPIKey(key+"0") {
		t.Error("different keys hash equal")
	}
	// sha256("") is a well-known constant.
	if got := HashAPIKey(""); got != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("HashAPIKey(\"\") = %s", got)
	}
	if h := HashAPIKey(key); strings.Contains(h, key) || len(h) != 64 || !isLowerHex(h) {
		t.Errorf("HashAPIKey = %q, want 64 lowercase hex", h)
	}
}

func TestEqualHashes(t *testing.T) {
	t.Parallel()
	h := HashAPIKey("a")
	if !EqualHashes(h, HashAPIKey("a")) {
		t.Error("equal hashes compare unequal")
	}
	if EqualHashes(h, HashAPIKey("b")) || EqualHashes(h, h[:63]) || EqualHashes(h, "") {
		t.Error("different hashes compare equal")
	}
}

func TestCheckKeyGeneration(t *testing.T) {
	t.Parallel()
	live := "v3_live_" + strings.Repeat("a", 48)
	test := "v3_test_" + strings.Repeat("b", 48)
	tests := []struct {
		name string
		key  string
		env  models.Environment
		want error
	}{
		{"live key on production", live, models.Production, nil},
		{"test key on staging", test, models.Staging, nil},
		{"test key on production", test, models.Production, models.ErrWrongEnvironmentKey},
		{"live key on staging", live, models.Staging, models.ErrWrongEnvironmentKey},
		{"legacy key on production", "sk_live_" + strings.Repeat("c", 32), models.Production, models.ErrLegacyAPIKey},
		{"legacy key on staging", "pk_test_abc", models.Staging, models.ErrLegacyAPIKey},
		{"legacy bare hex", strings.Repeat("d", 40), models.Production, models.ErrLegacyAPIKey},
		{"v2 key", "v2_live_abc", models.Production, models.ErrLegacyAPIKey},
		{"uppercase V3 is not v3", "V3_live_abc", models.Production, models.ErrLegacyAPIKey},
		{"v3 garbage", "v3_xyz", models.Production, models.ErrInvalidAPIKey},
		{"v3 garbage on staging", "v3_xyz", models.Staging, models.ErrInvalidAPIKey},
		{"v3 only", "v3_", models.Production, models.ErrInvalidAPIKey},
		{"v3 uppercase env", "v3_LIVE_abc", models.Production, models.ErrInvalidAPIKey},
	}
	for _, tt := range tests {
		err := CheckKeyGeneration(tt.key, tt.env)
		if tt.want == nil {
			if err != nil {
				t.Errorf("%s: CheckKeyGeneration(%q, %s) = %v, want nil", tt.name, tt.key, tt.env, err)
			}
			continue
		}
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: CheckKeyGeneration(%q, %s) = %v, want %v", tt.name, tt.key, tt.env, err, tt.want)
		}
	}
}

func TestDisplayPrefix(t *testing.T) {
	t.Parallel()
	key := "v3_live_abcdef0123456789"
	got := DisplayPrefix(key)
	if got != "v3_live_abcd" {
		t.Errorf("DisplayPrefix(%q) = %q, want %q", key, got, "v3_live_abcd")
	}
	if DisplayPrefix("short") != "short" {
		t.Errorf("DisplayPrefix(short) = %q", DisplayPrefix("short"))
	}
	g := Generate(models.Production, false)
	if p := DisplayPrefix(g.APIKey); len(p) >= len(g.APIKey)/2 {
		t.Errorf("DisplayPrefix shows %d of %d characters", len(p), len(g.APIKey))
	}
}

const testKeyHex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

func newTestSealer(t *testing.T, keyHex string) *Sealer {
	t.Helper()
	key, err := ParseSecretsKey(keyHex)
	if err != nil {
		t.Fatalf("ParseSecretsKey: %v", err)
	}
	s, err := NewSealer(key)
	if err != nil {
		t.Fatalf("NewSealer: %v", err)
	}
	return s
}

func TestParseSecretsKey(t *testing.T) {
	t.Parallel()
	accepted := []string{
		testKeyHex,
		strings.ToUpper(testKeyHex),
		" " + testKeyHex + "\n", // as read from a file or an env var with a newline
	}
	for _, in := range accepted {
		key, err := ParseSecretsKey(in)
		if err != nil {
			t.Errorf("ParseSecretsKey(%q) error %v", in, err)
			continue
		}
		if len(key) != 32 || key[0] != 0x00 || key[31] != 0x1f {
			t.Errorf("ParseSecretsKey(%q) = %x", in, key)
		}
	}
	refused := []string{
		"",
		testKeyHex[:62],
		testKeyHex[:63],
		testKeyHex + "2",
		testKeyHex + "20",
		strings.Repeat("g", 64),
		testKeyHex[:32], // 16 bytes: AES-128 is not what SECRETS_KEY promises
		"0x" + testKeyHex[:62],
		testKeyHex[:32] + " " + testKeyHex[33:],
	}
	for _, in := range refused {
		if key, err := ParseSecretsKey(in); err == nil {
			t.Errorf("ParseSecretsKey(%q) = %x, want an error", in, key)
		} else if strings.Contains(err.Error(), testKeyHex[:16]) {
			t.Errorf("ParseSecretsKey error %q echoes the key", err)
		}
	}
}

func TestNewSealerKeyLength(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 16, 24, 31, 33, 64} {
		if _, err := NewSealer(make([]byte, n)); err == nil {
			t.Errorf("NewSealer(%d bytes) accepted", n)
		}
	}
}
