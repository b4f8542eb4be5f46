package snap

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"testing"
)

// loadTestKey reads the TEST-ONLY RSA key under testdata (generated with
// `openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048`); it
// signs nothing but tests.
func loadTestKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	b, err := os.ReadFile("testdata/TEST_ONLY_partner_private_key.pem")
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return k.(*rsa.PrivateKey)
}

// Known answers, computed with openssl (see each constant), not with this
// package.
const (
	katClientKey = "TEST-CLIENT-KEY"
	katSecret    = "TEST-CLIENT-SECRET"
	katTimestamp = "2026-11-22T17:00:00+07:00"
	katToken     = "test-access-token"

	// printf '%s' 'TEST-CLIENT-KEY|2026-11-22T17:00:00+07:00' |
	//   openssl dgst -sha256 -sign testdata/TEST_ONLY_partner_private_key.pem -binary | base64 -w0
	katTokenSignature = "M+6L4lMi+3BggXlVOQ/GK3fxm2RVbaPq6HBkk+8nGagYfa9b5wTz+6I7nZZ0RdM2BZs7Ek70qtXCI3sa3ngTJ832PSet7jkeb8TD+zug+J/iuB/y7CftpX7Ft6Hk1pG1ByLowu5+DvaE24kJv+E1ZoPD9DZo18CSD8gAaIhflPiCQlDBh1gapByK56zWK/6MrIPPsnd9DguvQf99k7nk944nqw1ppKEqPNatCjvJcuHuD+6ueldsD3Qh0PRrRn8BCluA4NfxzN2n47I0AyKhyYVnxA5oLMJhQw9IF898ZejPhv78byilbmpFsgvOBH6iXSPByY6qmE3YnYsoe/rN5g=="

	// katBody minified; printf '%s' "$katBody" | openssl dgst -sha256 -hex
	katBody     = `{"partnerReferenceNo":"disb-123","amount":{"value":"97500.00","currency":"IDR"},"beneficiaryAccountName":"SANDBOX 7890","beneficiaryAccountNo":"1234567890","beneficiaryBankCode":"014","sourceAccountNo":"8880001111","transactionDate":"2026-11-22T17:00:00+07:00","additionalInfo":{"transferType":"BIFAST"}}`
	katBodyHash = "013f5ee0407a953a41e52f655ba68e080978c0b75639352d277290083f3051ae"

	// S="POST:/v1.0/transfer-interbank:test-access-token:$katBodyHash:2026-11-22T17:00:00+07:00"
	// printf '%s' "$S" | openssl dgst -sha512 -hmac TEST-CLIENT-SECRET -binary | base64 -w0
	katServiceSignature = "U+9wKoeY9/6iaTP8RCWqI1NxXACeKhdGLx8b+nC70UWRy1NikKuKCY9kRtudqGWExm51E8lr/otUQUVm6rt9Fw=="

	// printf '' | openssl dgst -sha256 -hex
	katEmptyHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

func TestKATTokenSignature(t *testing.T) {
	key := loadTestKey(t)
	if got := TokenStringToSign(katClientKey, katTimestamp); got != "TEST-CLIENT-KEY|2026-11-22T17:00:00+07:00" {
		t.Fatalf("stringToSign = %q", got)
	}
	sig, err := SignToken(key, katClientKey, katTimestamp)
	if err != nil {
		t.Fatal(err)
	}
	if sig != katTokenSignature {
		t.Errorf("SignToken = %s\nwant (openssl) %s", sig, katTokenSignature)
	}
	if !VerifyToken(&key.PublicKey, katClientKey, katTimestamp, katTokenSignature) {
		t.Error("VerifyToken refuses the openssl signature")
	}
	if VerifyToken(&key.PublicKey, katClientKey, "2026-11-22T17:00:01+07:00", katTokenSignature) {
		t.Error("VerifyToken accepts the signature for another timestamp")
	}
}

func TestKATBodyHashAndMinify(t *testing.T) {
	pretty, err := os.ReadFile("testdata/kat_transfer_body_pretty.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Minify(pretty)
	if err != nil {
		t.Fatal(err)
	}
	if string(m) != katBody {
		t.Fatalf("Minify(pretty) =\n%s\nwant\n%s", m, katBody)
	}
	for _, b := range [][]byte{pretty, []byte(katBody)} {
		if h, err := BodyHash(b); err != nil || h != katBodyHash {
			t.Errorf("BodyHash = %s, %v; want (openssl) %s", h, err, katBodyHash)
		}
	}
	if h, _ := BodyHash(nil); h != katEmptyHash {
		t.Errorf("BodyHash(empty) = %s, want %s", h, katEmptyHash)
	}
	// Whitespace inside strings is data, not formatting.
	m, _ = Minify([]byte(`{ "a" : "x  y" ,"b":[1, 2] }`))
	if string(m) != `{"a":"x  y","b":[1,2]}` {
		t.Errorf("Minify kept or lost the wrong spaces: %s", m)
	}
	if _, err := Minify([]byte(`{"a":`)); err == nil {
		t.Error("Minify accepted broken JSON")
	}
}

func TestKATServiceSignature(t *testing.T) {
	sts := ServiceStringToSign("post", PathTransfer, katToken, katBodyHash, katTimestamp)
	if want := "POST:/v1.0/transfer-interbank:test-access-token:" + katBodyHash + ":" + katTimestamp; sts != want {
		t.Fatalf("stringToSign = %q\nwant %q", sts, want)
	}
	sig, err := SignService(katSecret, "POST", PathTransfer, katToken, []byte(katBody), katTimestamp)
	if err != nil || sig != katServiceSignature {
		t.Errorf("SignService = %s, %v\nwant (openssl) %s", sig, err, katServiceSignature)
	}
	if !VerifyService(katSecret, "POST", PathTransfer, katToken, []byte(katBody), katTimestamp, katServiceSignature) {
		t.Error("VerifyService refuses the openssl signature")
	}
	if VerifyService("other", "POST", PathTransfer, katToken, []byte(katBody), katTimestamp, katServiceSignature) {
		t.Error("VerifyService accepts another secret")
	}
}

func TestTimestampIsJakarta(t *testing.T) {
	ts, err := ParseTimestamp(katTimestamp)
	if err != nil {
		t.Fatal(err)
	}
	if got := Timestamp(ts.UTC()); got != katTimestamp {
		t.Errorf("Timestamp = %s, want %s", got, katTimestamp)
	}
}

func TestTransferExternalID(t *testing.T) {
	a, b := TransferExternalID("disb-1"), TransferExternalID("disb-2")
	if a == b || a != TransferExternalID("disb-1") {
		t.Fatalf("derivation not deterministic or collides: %s %s", a, b)
	}
	now, _ := ParseTimestamp(katTimestamp)
	for _, id := range []string{a, b, requestExternalID(now, func() uint64 { return 42 })} {
		if len(id) > 36 || !allDigits(id) {
			t.Errorf("external id %q is not numeric within 36", id)
		}
	}
	if id := requestExternalID(now, func() uint64 { return 42 }); id != "202611221700000000000000000042" {
		t.Errorf("requestExternalID = %s", id)
	}
}
