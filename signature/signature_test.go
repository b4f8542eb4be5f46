package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testSecret looks like an issued Signing Secret: 64 hex characters.
const testSecret = "3f9a1c0b7d2e4f5a6b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c"

// otherSecret is a different, equally well-formed secret.
const otherSecret = "0000000000000000000000000000000000000000000000000000000000000001"

// testNow is the server clock, on a whole millisecond.
var testNow = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// refHMAC is an independent implementation of the spec's procedure: the
// secret's ASCII text is the key, payload = t + "." + body.
func refHMAC(secret, t, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(t + "." + body))
	return hex.EncodeToString(mac.Sum(nil))
}

func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

var hex64 = strings.Repeat("ab", 32)

func TestParseHeader(t *testing.T) {
	t.Parallel()
	upper := strings.ToUpper(hex64)
	tests := []struct {
		name   string
		in     string
		wantOK bool
		wantT  string
		wantV1 string
	}{
		{"canonical", "t=1700000000000,v1=" + hex64, true, "1700000000000", hex64},
		{"reversed order", "v1=" + hex64 + ",t=1700000000000", true, "1700000000000", hex64},
		{"spaces around parts", "  t=1700000000000 ,  v1=" + hex64 + "  ", true, "1700000000000", hex64},
		{"uppercase v1 still parses", "t=1,v1=" + upper, true, "1", upper},
		{"unknown part ignored", "t=1,v1=" + hex64 + ",v3=xyz", true, "1", hex64},
		{"v2 beside v1", "t=1,v1=" + hex64 + ",v2=" + hex64, true, "1", hex64},
		{"v2 not hex beside v1", "t=1,v1=" + hex64 + ",v2=xyz", false, "", ""},
		{"non-integer t parses (diagnosed later)", "t=abc,v1=" + hex64, true, "abc", hex64},
		{"empty", "", false, "", ""},
		{"missing t", "v1=" + hex64, false, "", ""},
		{"missing v1", "t=1700000000000", false, "", ""},
		{"empty t parses (diagnosed later as malformed_timestamp)", "t=,v1=" + hex64, true, "", hex64},
		{"empty v1", "t=1,v1=", false, "", ""},
		{"duplicate t", "t=1,t=2,v1=" + hex64, false, "", ""},
		{"duplicate v1", "t=1,v1=" + hex64 + ",v1=" + hex64, false, "", ""},
		{"v1 63 hex", "t=1,v1=" + hex64[:63], false, "", ""},
		{"v1 65 hex", "t=1,v1=" + hex64 + "a", false, "", ""},
		{"v1 not hex", "t=1,v1=" + strings.Repeat("zz", 32), false, "", ""},
		{"v1 with space inside", "t=1,v1=" + hex64[:32] + " " + hex64[33:], false, "", ""},
		{"part without =", "t=1,v1=" + hex64 + ",garbage", false, "", ""},
		{"semicolon separator", "t=1;v1=" + hex64, false, "", ""},
		{"bare signature", hex64, false, "", ""},
		{"uppercase keys", "T=1,V1=" + hex64, false, "", ""},
	}
	for _, tt := range tests {
		h, ok := ParseHeader(tt.in)
		if ok != tt.wantOK {
			t.Errorf("%s: ParseHeader(%q) ok = %v, want %v", tt.name, tt.in, ok, tt.wantOK)
			continue
		}
		if ok && (h.T != tt.wantT || h.V1 != tt.wantV1) {
			t.Errorf("%s: ParseHeader(%q) = %+v, want T=%q V1=%q", tt.name, tt.in, h, tt.wantT, tt.wantV1)
		}
	}
}

func TestComputeKnownVector(t *testing.T) {
	t.Parallel()
	tests := []struct{ secret, ts, body string }{
		{testSecret, "1700000000000", `{"amount":"100000","bank_code":"bca"}`},
		{testSecret, "1700000000000", ""},
		{otherSecret, "1", `{"a":1}`},
		{testSecret, "1700000000000", "{\"memo\":\"caf\u00e9 \u2603\"}\n"},
	}
	for _, tt := range tests {
		want := refHMAC(tt.secret, tt.ts, tt.body)
		got := Compute(tt.secret, tt.ts, []byte(tt.body))
		if got != want {
			t.Errorf("Compute(%q, %q, %q) = %s, want %s", tt.secret, tt.ts, tt.body, got, want)
		}
		if got != strings.ToLower(got) || len(got) != 64 {
			t.Errorf("Compute = %q, want 64 lowercase hex characters", got)
		}
	}
}

// The secret is the ASCII text of the hex string, not the 32 bytes it
// encodes.
func TestComputeUsesSecretTextNotDecodedBytes(t *testing.T) {
	t.Parallel()
	decoded, err := hex.DecodeString(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, decoded)
	mac.Write([]byte("1700000000000.{}"))
	wrong := hex.EncodeToString(mac.Sum(nil))
	if got := Compute(testSecret, "1700000000000", []byte("{}")); got == wrong {
		t.Errorf("Compute used the hex-decoded secret as the key")
	}
}

func TestPayloadString(t *testing.T) {
	t.Parallel()
	if got, want := PayloadString("1700000000000", []byte(`{"a":1}`)), `1700000000000.{"a":1}`; got != want {
		t.Errorf("PayloadString = %q, want %q", got, want)
	}
	if got, want := PayloadString("5", nil), "5."; got != want {
		t.Errorf("PayloadString with empty body = %q, want %q", got, want)
	}
}

func TestSignFormat(t *testing.T) {
	t.Parallel()
	body := []byte(`{"amount":"100000"}`)
	got := Sign(testSecret, body, testNow)
	want := "t=" + ms(testNow) + ",v1=" + refHMAC(testSecret, ms(testNow), string(body))
	if got != want {
		t.Errorf("Sign = %q, want %q", got, want)
	}
}

func TestSignVerifyRoundTrip(t *testing.T) {
	t.Parallel()
	bodies := []string{"", "{}", `{"amount":"100000","memo":"x"}`, strings.Repeat("x", 1<<16), "\x00\xff"}
	nows := []time.Time{testNow, time.UnixMilli(0), time.UnixMilli(1), testNow.Add(123456789 * time.Nanosecond)}
	for _, body := range bodies {
		for _, now := range nows {
			h := Sign(testSecret, []byte(body), now)
			r := Verify(testSecret, h, []byte(body), now)
			if r.Diagnosis != OK {
				t.Errorf("Verify(Sign(body len %d, %v)) = %s, want ok", len(body), now, r.Diagnosis)
			}
			if !r.WindowOK || !r.HasTimestamp || r.Timestamp != now.UnixMilli() || r.DeltaMS != 0 {
				t.Errorf("Verify result %+v: want WindowOK, HasTimestamp, Timestamp %d, DeltaMS 0", r, now.UnixMilli())
			}
		}
	}
}

func TestVerifyDiagnoses(t *testing.T) {
	t.Parallel()
	body := []byte(`{"amount":"100000","bank_code":"bca"}`)
	signAt := func(secret string, b []byte, at time.Time) string {
		return "t=" + ms(at) + ",v1=" + refHMAC(secret, ms(at), string(b))
	}
	good := signAt(testSecret, body, testNow)
	upperSig := "t=" + ms(testNow) + ",v1=" + strings.ToUpper(refHMAC(testSecret, ms(testNow), string(body)))
	goodHex := refHMAC(testSecret, ms(testNow), string(body))
	// mixedSig uppercases only the first letter of the correct HMAC.
	mixedSig := upperSig
	if i := strings.IndexAny(goodHex, "abcdef"); i >= 0 {
		mixedSig = "t=" + ms(testNow) + ",v1=" + goodHex[:i] + strings.ToUpper(goodHex[i:i+1]) + goodHex[i+1:]
	}
	window := 5 * time.Minute
	tests := []struct {
		name   string
		secret string
		header string
		body   []byte
		want   Diagnosis
	}{
		// no_secret_provisioned wins over everything else.
		{"no secret", "", good, body, NoSecretProvisioned},
		{"no secret, no header", "", "", body, NoSecretProvisioned},
		{"no secret, garbage header", "", "garbage", body, NoSecretProvisioned},

		{"empty header", testSecret, "", body, MissingSignatureHeader},
		{"whitespace header", testSecret, "   \t ", body, MissingSignatureHeader},

		{"garbage header", testSecret, "garbage", body, MalformedSignatureHeader},
		{"no t", testSecret, "v1=" + goodHex, body, MalformedSignatureHeader},
		{"no v1", testSecret, "t=" + ms(testNow), body, MalformedSignatureHeader},
		{"short v1", testSecret, "t=" + ms(testNow) + ",v1=" + goodHex[:62], body, MalformedSignatureHeader},
		{"non-hex v1", testSecret, "t=" + ms(testNow) + ",v1=" + strings.Repeat("g", 64), body, MalformedSignatureHeader},
		// A malformed header is reported before a malformed timestamp.
		{"bad t and short v1", testSecret, "t=abc,v1=abc", body, MalformedSignatureHeader},

		{"t not a number", testSecret, "t=abc,v1=" + goodHex, body, MalformedTimestamp},
		{"t with fraction", testSecret, "t=1.5,v1=" + goodHex, body, MalformedTimestamp},
		{"t beyond int64", testSecret, "t=99999999999999999999,v1=" + goodHex, body, MalformedTimestamp},
		{"t with space inside value", testSecret, "t= " + ms(testNow) + ",v1=" + goodHex, body, MalformedTimestamp},
		{"t empty", testSecret, "t=,v1=" + goodHex, body, MalformedTimestamp},
		{"t with a plus sign", testSecret, "t=+" + ms(testNow) + ",v1=" + goodHex, body, MalformedTimestamp},

		{"t 5min+1ms in the past", testSecret, signAt(testSecret, body, testNow.Add(-window-time.Millisecond)), body, TimestampOutOfWindow},
		{"t 5min+1ms in the future", testSecret, signAt(testSecret, body, testNow.Add(window+time.Millisecond)), body, TimestampOutOfWindow},
		{"t far past", testSecret, signAt(testSecret, body, testNow.Add(-24*time.Hour)), body, TimestampOutOfWindow},
		{"t in seconds, not ms", testSecret, "t=" + strconv.FormatInt(testNow.Unix(), 10) + ",v1=" + refHMAC(testSecret, strconv.FormatInt(testNow.Unix(), 10), string(body)), body, TimestampOutOfWindow},
		{"t min int64", testSecret, "t=" + strconv.FormatInt(math.MinInt64, 10) + ",v1=" + goodHex, body, TimestampOutOfWindow},
		{"t max int64", testSecret, "t=" + strconv.FormatInt(math.MaxInt64, 10) + ",v1=" + goodHex, body, TimestampOutOfWindow},
		// Out of window is reported before a wrong signature.
		{"stale and wrong secret", testSecret, signAt(otherSecret, body, testNow.Add(-time.Hour)), body, TimestampOutOfWindow},

		{"exactly 5 min past", testSecret, signAt(testSecret, body, testNow.Add(-window)), body, OK},
		{"exactly 5 min future", testSecret, signAt(testSecret, body, testNow.Add(window)), body, OK},

		{"uppercase v1 of correct HMAC", testSecret, upperSig, body, HexCaseMismatch},
		{"partly uppercase v1 of correct HMAC", testSecret, mixedSig, body, HexCaseMismatch},

		{"wrong secret", testSecret, signAt(otherSecret, body, testNow), body, SignatureMismatch},
		{"secret hex-decoded by client", testSecret, "t=" + ms(testNow) + ",v1=" + func() string {
			k, _ := hex.DecodeString(testSecret)
			m := hmac.New(sha256.New, k)
			m.Write([]byte(ms(testNow) + "." + string(body)))
			return hex.EncodeToString(m.Sum(nil))
		}(), body, SignatureMismatch},
		{"body with one extra space", testSecret, good, []byte(`{"amount": "100000","bank_code":"bca"}`), SignatureMismatch},
		{"body with trailing newline", testSecret, good, append(append([]byte{}, body...), '\n'), SignatureMismatch},
		{"empty body", testSecret, good, nil, SignatureMismatch},
		{"signed with other t", testSecret, "t=" + ms(testNow.Add(time.Millisecond)) + ",v1=" + goodHex, body, SignatureMismatch},
		{"uppercase v1 of wrong HMAC", testSecret, "t=" + ms(testNow) + ",v1=" + strings.ToUpper(refHMAC(otherSecret, ms(testNow), string(body))), body, SignatureMismatch},
		{"payload without dot", testSecret, "t=" + ms(testNow) + ",v1=" + func() string {
			m := hmac.New(sha256.New, []byte(testSecret))
			m.Write([]byte(ms(testNow) + string(body)))
			return hex.EncodeToString(m.Sum(nil))
		}(), body, SignatureMismatch},

		{"ok", testSecret, good, body, OK},
		{"ok with reversed parts and spaces", testSecret, " v1=" + goodHex + " , t=" + ms(testNow), body, OK},
		{"ok with an unknown v3 part", testSecret, good + ",v3=whatever", body, OK},
	}
	for _, tt := range tests {
		r := Verify(tt.secret, tt.header, tt.body, testNow)
		if r.Diagnosis != tt.want {
			t.Errorf("%s: Verify(header %q) = %s, want %s", tt.name, tt.header, r.Diagnosis, tt.want)
		}
	}
}

// Every diagnosis Verify can produce is produced, and the ones it cannot
// (content encoding, body size: decided before Verify) are distinct values.
func TestVerifyProducesEveryDiagnosis(t *testing.T) {
	t.Parallel()
	body := []byte("{}")
	good := Sign(testSecret, body, testNow)
	stale := Sign(testSecret, body, testNow.Add(-time.Hour))
	v1 := Compute(testSecret, ms(testNow), body)
	cases := map[Diagnosis]Result{
		NoSecretProvisioned:      Verify("", good, body, testNow),
		MissingSignatureHeader:   Verify(testSecret, "", body, testNow),
		MalformedSignatureHeader: Verify(testSecret, "t=1", body, testNow),
		MalformedTimestamp:       Verify(testSecret, "t=x,v1="+v1, body, testNow),
		TimestampOutOfWindow:     Verify(testSecret, stale, body, testNow),
		HexCaseMismatch:          Verify(testSecret, "t="+ms(testNow)+",v1="+strings.ToUpper(v1), body, testNow),
		SignatureMismatch:        Verify(otherSecret, good, body, testNow),
		OK:                       Verify(testSecret, good, body, testNow),
	}
	for want, r := range cases {
		if r.Diagnosis != want {
			t.Errorf("got %s, want %s", r.Diagnosis, want)
		}
	}
	spec := map[Diagnosis]string{
		OK: "ok", SignatureMismatch: "signature_mismatch", HexCaseMismatch: "hex_case_mismatch",
		TimestampOutOfWindow: "timestamp_out_of_window", MalformedTimestamp: "malformed_timestamp",
		MissingSignatureHeader: "missing_signature_header", MalformedSignatureHeader: "malformed_signature_header",
		NoSecretProvisioned: "no_secret_provisioned", ContentEncodingNotSupported: "content_encoding_not_supported",
		BodyTooLarge: "body_too_large",
	}
	for d, text := range spec {
		if string(d) != text {
			t.Errorf("diagnosis constant %q, spec value %q", d, text)
		}
	}
}

func TestVerifyResultFields(t *testing.T) {
	t.Parallel()
	body := []byte("{}")
	at := testNow.Add(-90 * time.Second)
	h := Sign(testSecret, body, at)
	r := Verify(testSecret, h, body, testNow)
	if r.Diagnosis != OK || !r.HasTimestamp || !r.WindowOK || r.Timestamp != at.UnixMilli() || r.DeltaMS != -90_000 {
		t.Errorf("Verify 90s old = %+v, want ok with Timestamp %d, DeltaMS -90000", r, at.UnixMilli())
	}
	if r.Header.T != ms(at) || len(r.Header.V1) != 64 {
		t.Errorf("Verify Header = %+v", r.Header)
	}
	r = Verify(testSecret, Sign(testSecret, body, testNow.Add(6*time.Minute)), body, testNow)
	if r.Diagnosis != TimestampOutOfWindow || r.WindowOK || !r.HasTimestamp || r.DeltaMS != 360_000 {
		t.Errorf("Verify 6min ahead = %+v, want out of window with DeltaMS 360000", r)
	}
	r = Verify(testSecret, "t=abc,v1="+hex64, body, testNow)
	if r.HasTimestamp || r.WindowOK {
		t.Errorf("malformed timestamp result = %+v, want no timestamp, window not ok", r)
	}
}

func TestWindowDelta(t *testing.T) {
	t.Parallel()
	now := testNow
	nowMS := now.UnixMilli()
	limit := int64(5 * 60 * 1000)
	tests := []struct {
		name      string
		t         int64
		now       time.Time
		wantDelta int64
		wantOK    bool
	}{
		{"same", nowMS, now, 0, true},
		{"limit past", nowMS - limit, now, -limit, true},
		{"limit future", nowMS + limit, now, limit, true},
		{"limit+1 past", nowMS - limit - 1, now, -limit - 1, false},
		{"limit+1 future", nowMS + limit + 1, now, limit + 1, false},
		{"min int64", math.MinInt64, now, math.MinInt64, false},
		{"max int64", math.MaxInt64, now, math.MaxInt64 - nowMS, false},
		{"zero", 0, now, -nowMS, false},
		{"negative t", -1, now, -nowMS - 1, false},
		// Clock before 1970: the difference must saturate, not wrap.
		{"max int64, negative now", math.MaxInt64, time.UnixMilli(-1000), math.MaxInt64, false},
		{"min int64, negative now", math.MinInt64, time.UnixMilli(-1000), math.MinInt64 + 1000, false},
		{"max int64, now at max", math.MaxInt64, time.UnixMilli(math.MaxInt64), 0, true},
		{"min int64, now at min", math.MinInt64, time.UnixMilli(math.MinInt64), 0, true},
		{"min int64, now at max", math.MinInt64, time.UnixMilli(math.MaxInt64), math.MinInt64, false},
		{"max int64, now at min", math.MaxInt64, time.UnixMilli(math.MinInt64), math.MaxInt64, false},
		{"min+1, now at max", math.MinInt64 + 1, time.UnixMilli(math.MaxInt64), math.MinInt64, false},
		{"near wrap to ok", math.MinInt64 + nowMS - 1, now, math.MinInt64, false},
	}
	for _, tt := range tests {
		delta, ok := WindowDelta(tt.t, tt.now)
		if ok != tt.wantOK || delta != tt.wantDelta {
			t.Errorf("%s: WindowDelta(%d, %d ms) = %d, %v; want %d, %v",
				tt.name, tt.t, tt.now.UnixMilli(), delta, ok, tt.wantDelta, tt.wantOK)
		}
	}
}

// Whatever t and now are, "ok" means |t - now| <= 5 min in exact arithmetic.
func TestWindowDeltaNeverWrapsToOK(t *testing.T) {
	t.Parallel()
	extremes := []int64{
		math.MinInt64, math.MinInt64 + 1, math.MinInt64 + 300_000, -1 << 62, -300_001, -300_000, -1, 0, 1,
		300_000, 300_001, 1 << 62, math.MaxInt64 - 300_000, math.MaxInt64 - 1, math.MaxInt64,
	}
	for _, tm := range extremes {
		for _, nm := range extremes {
			now := time.UnixMilli(nm)
			if now.UnixMilli() != nm {
				t.Fatalf("time.UnixMilli(%d) does not round trip", nm)
			}
			_, ok := WindowDelta(tm, now)
			d := new(big.Int).Sub(big.NewInt(tm), big.NewInt(nm))
			exact := d.CmpAbs(big.NewInt(300_000)) <= 0
			if ok != exact {
				t.Errorf("WindowDelta(%d, %d ms) ok = %v, want %v (exact delta %s)", tm, nm, ok, exact, d)
			}
		}
	}
}

func FuzzParseHeader(f *testing.F) {
	for _, s := range []string{
		"", "t=1,v1=" + hex64, "v1=" + hex64 + ",t=1", " t=1 , v1=" + strings.ToUpper(hex64),
		"t=1,t=2,v1=" + hex64, "t=,v1=", "t=1,v1=" + hex64 + ",", ",,,", "=", "t==,v1==",
		"t=,v2=" + hex64, "t=1,v1=" + hex64 + ",v2=" + hex64,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, ok := ParseHeader(s)
		if !ok {
			if h != (Header{}) {
				t.Fatalf("ParseHeader(%q) not ok but returned %+v", s, h)
			}
			return
		}
		// A header is v1, v2 or both; each signature present is 64 hex
		// digits. t is only split off here: ParseMillis judges it.
		if h.V1 == "" && h.V2 == "" {
			t.Fatalf("ParseHeader(%q) = %+v ok without a signature", s, h)
		}
		for _, sig := range []string{h.V1, h.V2} {
			if _, err := hex.DecodeString(sig); sig != "" && (len(sig) != 64 || err != nil) {
				t.Fatalf("ParseHeader(%q) accepted signature %q", s, sig)
			}
		}
		// Re-serialising the parsed header parses to the same thing.
		if !strings.Contains(h.T, ",") {
			again := "t=" + h.T
			if h.V1 != "" {
				again += ",v1=" + h.V1
			}
			if h.V2 != "" {
				again += ",v2=" + h.V2
			}
			h2, ok2 := ParseHeader(again)
			if !ok2 || h2 != h {
				t.Fatalf("re-parse of %+v = %+v, %v", h, h2, ok2)
			}
		}
	})
}

func FuzzVerify(f *testing.F) {
	f.Add("t=1700000000000,v1="+hex64, []byte(`{"a":1}`), int64(1700000000000), testSecret)
	f.Add("", []byte(""), int64(0), "")
	f.Add("t=-9223372036854775808,v1="+hex64, []byte("x"), int64(9223372036854775807), otherSecret)
	f.Add("garbage", []byte{0xff, 0x00}, int64(-1), "s")
	f.Fuzz(func(t *testing.T, header string, body []byte, nowMS int64, secret string) {
		now := time.UnixMilli(nowMS)
		r := Verify(secret, header, body, now)
		if secret == "" && r.Diagnosis != NoSecretProvisioned {
			t.Fatalf("empty secret gave %s", r.Diagnosis)
		}
		if r.Diagnosis == OK {
			// ok must mean a correct, lowercase HMAC within the window.
			if !r.WindowOK || r.Header.V1 != Compute(secret, r.Header.T, body) {
				t.Fatalf("ok for header %q but %+v", header, r)
			}
		}
		if secret == "" {
			secret = testSecret
		}
		signed := Sign(secret, body, now)
		if got := Verify(secret, signed, body, now).Diagnosis; got != OK {
			t.Fatalf("Verify(Sign(...)) at the same instant = %s, want ok (header %q)", got, signed)
		}
	})
}
