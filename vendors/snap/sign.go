package snap

import (
	"bytes"
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// Jakarta is Asia/Jakarta (WIB, UTC+7, no daylight saving) as a fixed zone,
// so that timestamps do not depend on the host's tz database.
var Jakarta = time.FixedZone("WIB", 7*60*60)

// TimestampLayout is X-TIMESTAMP: ISO 8601 with the +07:00 offset,
// "yyyy-MM-ddTHH:mm:ssTZD" ([MT-XFER] header table, [BI-SNAP]).
const TimestampLayout = "2006-01-02T15:04:05-07:00"

// Timestamp formats t as an X-TIMESTAMP in Asia/Jakarta.
func Timestamp(t time.Time) string { return t.In(Jakarta).Format(TimestampLayout) }

// ParseTimestamp parses an X-TIMESTAMP; any explicit offset is accepted
// (some banks send UTC "Z", [DOKU-B2B]), a missing offset is not.
func ParseTimestamp(s string) (time.Time, error) {
	return time.Parse(time.RFC3339, s)
}

// TokenStringToSign is the string the B2B access token request signs:
// X-CLIENT-KEY + "|" + X-TIMESTAMP ([BI-SNAP] access token B2B, service 73;
// [MT-SIG] "Client ID + | + Timestamp"; [DOKU-B2B]).
func TokenStringToSign(clientKey, timestamp string) string {
	return clientKey + "|" + timestamp
}

// SignToken is the asymmetric X-SIGNATURE of the B2B access token request:
// base64(SHA256withRSA(privateKey, clientKey|timestamp)), PKCS #1 v1.5
// ([BI-SNAP]; [MT-SIG] "Asymmetric Signature SHA256withRSA").
func SignToken(key *rsa.PrivateKey, clientKey, timestamp string) (string, error) {
	if key == nil {
		return "", errors.New("snap: no private key")
	}
	h := sha256.Sum256([]byte(TokenStringToSign(clientKey, timestamp)))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, h[:])
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(sig), nil
}

// VerifyToken checks a B2B access token X-SIGNATURE with the partner's
// public key.
func VerifyToken(pub *rsa.PublicKey, clientKey, timestamp, signature string) bool {
	sig, err := base64.StdEncoding.DecodeString(signature)
	if err != nil || pub == nil {
		return false
	}
	h := sha256.Sum256([]byte(TokenStringToSign(clientKey, timestamp)))
	return rsa.VerifyPKCS1v15(pub, crypto.SHA256, h[:], sig) == nil
}

// Minify removes the insignificant whitespace of a JSON body and nothing
// else: member order, escapes and values are kept byte for byte ([PM-SIG]
// 2.3: "remove spaces, newlines and tabs outside values, keep the field
// order, never sort"; [BI-SNAP] "minify(RequestBody)"). An empty body
// minifies to the empty string. A body that is not JSON is an error.
func Minify(body []byte) ([]byte, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil
	}
	var out bytes.Buffer
	if err := json.Compact(&out, body); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// BodyHash is Lowercase(HexEncode(SHA-256(minify(body)))) ([BI-SNAP]
// symmetric signature; [MT-SIG]).
func BodyHash(body []byte) (string, error) {
	m, err := Minify(body)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(m)
	return hex.EncodeToString(h[:]), nil
}

// ServiceStringToSign is the string a service call signs:
// HTTPMethod:RelativeURL:AccessToken:BodyHash:TimeStamp ([BI-SNAP]
// symmetric signature with access token; [MT-SIG]; [PM-SIG] 1). The
// relative URL is the path (and query, if any) without scheme and host.
func ServiceStringToSign(method, relativeURL, accessToken, bodyHash, timestamp string) string {
	return strings.ToUpper(method) + ":" + relativeURL + ":" + accessToken + ":" + bodyHash + ":" + timestamp
}

// SignService is the symmetric X-SIGNATURE of a service call:
// base64(HMAC-SHA512(clientSecret, stringToSign)) ([BI-SNAP]; [MT-SIG]).
func SignService(clientSecret, method, relativeURL, accessToken string, body []byte, timestamp string) (string, error) {
	bh, err := BodyHash(body)
	if err != nil {
		return "", err
	}
	return hmacSHA512(clientSecret, ServiceStringToSign(method, relativeURL, accessToken, bh, timestamp)), nil
}

func hmacSHA512(secret, msg string) string {
	m := hmac.New(sha512.New, []byte(secret))
	m.Write([]byte(msg))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// VerifyService checks a service call's X-SIGNATURE in constant time.
func VerifyService(clientSecret, method, relativeURL, accessToken string, body []byte, timestamp, signature string) bool {
	want, err := SignService(clientSecret, method, relativeURL, accessToken, body, timestamp)
	if err != nil {
		return false
	}
	return hmac.Equal([]byte(want), []byte(signature))
}
