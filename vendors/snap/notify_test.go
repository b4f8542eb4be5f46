package snap

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/payoutd/payoutd/vendors"
)

// The third signature type: the bank's notification, SHA256withRSA over
// POST:<relative path>:<body hash>:<X-TIMESTAMP>, no access token. The
// TEST-ONLY key stands for the bank's.
const (
	katNotifyPath = "/vendor-callbacks/snap:bca"
	katNotifyBody = `{"originalReferenceNo":"SIM000000000007","originalPartnerReferenceNo":"pd-kat","latestTransactionStatus":"00","transactionStatusDesc":"Success"}`

	// printf '%s' "$katNotifyBody" | openssl dgst -sha256 -hex
	katNotifyBodyHash = "b6ef1387fd22c94d3e0ec74261f4f1aa645a0fb6d59b0fb39e524abe6866defd"

	// S="POST:/vendor-callbacks/snap:bca:$katNotifyBodyHash:2026-11-22T17:00:00+07:00"
	// printf '%s' "$S" | openssl dgst -sha256 -sign testdata/TEST_ONLY_partner_private_key.pem -binary | base64 -w0
	katNotifySignature = "gs98xwAQM5MXTGlZ3JuPQ9YmscmVxJbf9t0aeTJGttyYo3nv1LRLXkI/8WQGWHOrMfw0WZyIatRFGw8g9SaxDPma+stSNKhcQKLXWToMQMLGIWBEGtJfeMfaxX40cBOY+qTLxQpGoPGECef4M6RDO5/VfQl0Is0z2pYO8fRvkvouW8iKmYLi/CxGTxsCczosloRCBzT4MvRh3Q9J9RD6L+UOzrBk5m0jlDkWxvGh8FE7UjvIQh3c6qW+LPFqBP+5iKhbHEMsSa1pkVZXEqQafwTb3M/ME2zgUlMJHf3w7hkZjpVLQ1ZpD39w8cuLPjFbb5MWkEFRdpO333MurJXroA=="
)

func TestKATNotifySignature(t *testing.T) {
	key := loadTestKey(t)
	if h, err := BodyHash([]byte(katNotifyBody)); err != nil || h != katNotifyBodyHash {
		t.Fatalf("BodyHash = %s, %v; want (openssl) %s", h, err, katNotifyBodyHash)
	}
	if s := NotifyStringToSign("post", katNotifyPath, katNotifyBodyHash, katTimestamp); s != "POST:/vendor-callbacks/snap:bca:"+katNotifyBodyHash+":"+katTimestamp {
		t.Fatalf("stringToSign = %q", s)
	}
	sig, err := SignNotify(key, "POST", katNotifyPath, []byte(katNotifyBody), katTimestamp)
	if err != nil || sig != katNotifySignature {
		t.Errorf("SignNotify = %s, %v\nwant (openssl) %s", sig, err, katNotifySignature)
	}
	if !VerifyNotify(&key.PublicKey, "POST", katNotifyPath, []byte(katNotifyBody), katTimestamp, katNotifySignature) {
		t.Error("VerifyNotify refuses the openssl signature")
	}
	if VerifyNotify(&key.PublicKey, "POST", "/vendor-callbacks/snap:bri", []byte(katNotifyBody), katTimestamp, katNotifySignature) {
		t.Error("VerifyNotify accepts the signature over another path")
	}
}

// ParseCallback accepts the bank's signed notification within the window,
// whitespace and all, and refuses anything else with ErrInvalidCallback
// (a signature problem, 401) or another error (a verified body that is no
// final result, 400).
func TestParseCallback(t *testing.T) {
	key := loadTestKey(t)
	v, err := New(Options{Bank: "bca", BaseURL: "https://bank.example", PartnerID: "P", ClientKey: "K", ClientSecret: "S",
		ChannelID: "1", SourceAccountNo: "8880001111", PrivateKey: key, BankPublicKey: &key.PublicKey, Notifications: true})
	if err != nil {
		t.Fatal(err)
	}
	at, _ := ParseTimestamp(katTimestamp)
	hdr := func(sig, ts string) http.Header {
		h := http.Header{}
		h.Set("X-SIGNATURE", sig)
		h.Set("X-TIMESTAMP", ts)
		return h
	}
	res, err := v.ParseCallback(katNotifyPath, hdr(katNotifySignature, katTimestamp), []byte(katNotifyBody), at.Add(time.Minute))
	if err != nil || res.Reference != "pd-kat" || res.Status != vendors.PayoutSuccess {
		t.Fatalf("ParseCallback = %+v, %v", res, err)
	}
	pretty := []byte("{\n  \"originalReferenceNo\": \"SIM000000000007\",\n  \"originalPartnerReferenceNo\": \"pd-kat\",\n  \"latestTransactionStatus\": \"00\",\n  \"transactionStatusDesc\": \"Success\"\n}")
	if _, err := v.ParseCallback(katNotifyPath, hdr(katNotifySignature, katTimestamp), pretty, at); err != nil {
		t.Errorf("the same body pretty-printed: %v", err)
	}
	sign := func(body string) string {
		s, _ := SignNotify(key, "POST", katNotifyPath, []byte(body), katTimestamp)
		return s
	}
	for _, tt := range []struct {
		name      string
		h         http.Header
		body      string
		now       time.Time
		signature bool // ErrInvalidCallback
	}{
		{"stale", hdr(katNotifySignature, katTimestamp), katNotifyBody, at.Add(DefaultNotifyWindow + time.Second), true},
		{"from the future", hdr(katNotifySignature, katTimestamp), katNotifyBody, at.Add(-DefaultNotifyWindow - time.Second), true},
		{"no timestamp", hdr(katNotifySignature, ""), katNotifyBody, at, true},
		{"timestamp changed", hdr(katNotifySignature, "2026-11-22T17:00:01+07:00"), katNotifyBody, at, true},
		{"no signature", hdr("", katTimestamp), katNotifyBody, at, true},
		{"forged", hdr("Zm9yZ2Vk", katTimestamp), katNotifyBody, at, true},
		{"body changed", hdr(katNotifySignature, katTimestamp), `{"originalPartnerReferenceNo":"pd-kat","latestTransactionStatus":"06"}`, at, true},
		{"pending", hdr(sign(`{"originalPartnerReferenceNo":"pd-kat","latestTransactionStatus":"03"}`), katTimestamp), `{"originalPartnerReferenceNo":"pd-kat","latestTransactionStatus":"03"}`, at, false},
		{"no reference", hdr(sign(`{"latestTransactionStatus":"00"}`), katTimestamp), `{"latestTransactionStatus":"00"}`, at, false},
		{"not JSON", hdr(sign(`[`), katTimestamp), `[`, at, true}, // BodyHash fails: no signature verifies
	} {
		_, err := v.ParseCallback(katNotifyPath, tt.h, []byte(tt.body), tt.now)
		if err == nil || errors.Is(err, vendors.ErrInvalidCallback) != tt.signature {
			t.Errorf("%s: %v (ErrInvalidCallback wanted: %v)", tt.name, err, tt.signature)
		}
	}
	// Refunded and failed carry a reason.
	for latest, want := range map[string]vendors.PayoutStatus{"04": vendors.PayoutReturned, "06": vendors.PayoutFailed} {
		body := `{"originalPartnerReferenceNo":"pd-kat","latestTransactionStatus":"` + latest + `"}`
		res, err := v.ParseCallback(katNotifyPath, hdr(sign(body), katTimestamp), []byte(body), at)
		if err != nil || res.Status != want || res.FailureReason == "" {
			t.Errorf("%s: %+v, %v", latest, res, err)
		}
	}
	// Without the bank's key nothing verifies.
	v.o.BankPublicKey = nil
	if _, err := v.ParseCallback(katNotifyPath, hdr(katNotifySignature, katTimestamp), []byte(katNotifyBody), at); !errors.Is(err, vendors.ErrInvalidCallback) {
		t.Errorf("no bank key: %v", err)
	}
}

// The bank signs the path it posts to: a notification verifies on the
// path it was signed for, the colon-free one or the first one, and on no
// other.
func TestParseCallbackOverThePathItCameOn(t *testing.T) {
	key := loadTestKey(t)
	v, err := New(Options{Bank: "bca", BaseURL: "https://bank.example", PartnerID: "P", ClientKey: "K", ClientSecret: "S",
		ChannelID: "1", SourceAccountNo: "8880001111", PrivateKey: key, BankPublicKey: &key.PublicKey, Notifications: true})
	if err != nil {
		t.Fatal(err)
	}
	if CallbackPath("BCA") != "/vendor-callbacks/snap/bca" {
		t.Fatalf("CallbackPath = %s", CallbackPath("BCA"))
	}
	at, _ := ParseTimestamp(katTimestamp)
	paths := []string{CallbackPath("bca"), katNotifyPath}
	for _, signedFor := range paths {
		sig, err := SignNotify(key, "POST", signedFor, []byte(katNotifyBody), katTimestamp)
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		h.Set("X-SIGNATURE", sig)
		h.Set("X-TIMESTAMP", katTimestamp)
		for _, cameOn := range paths {
			res, err := v.ParseCallback(cameOn, h, []byte(katNotifyBody), at)
			switch {
			case cameOn == signedFor && (err != nil || res.Reference != "pd-kat"):
				t.Errorf("signed for and posted to %s: %+v, %v", cameOn, res, err)
			case cameOn != signedFor && !errors.Is(err, vendors.ErrInvalidCallback):
				t.Errorf("signed for %s, posted to %s: %v, want ErrInvalidCallback", signedFor, cameOn, err)
			}
		}
	}
}

// A bank configured without notifications needs no public key to start,
// does not notify (its paid payouts are watched for returns), and refuses
// every notification, a well signed one too. With notifications the key
// is required.
func TestNotificationsOff(t *testing.T) {
	key := loadTestKey(t)
	o := Options{Bank: "bca", BaseURL: "https://bank.example", PartnerID: "P", ClientKey: "K", ClientSecret: "S",
		ChannelID: "1", SourceAccountNo: "8880001111", PrivateKey: key}
	v, err := New(o)
	if err != nil {
		t.Fatalf("no notifications, no bank key: %v", err)
	}
	if v.Notifies() || vendors.Notifies(v) {
		t.Error("a bank without notifications notifies")
	}
	o.BankPublicKey = &key.PublicKey
	if v, err = New(o); err != nil {
		t.Fatal(err)
	}
	at, _ := ParseTimestamp(katTimestamp)
	h := http.Header{}
	h.Set("X-SIGNATURE", katNotifySignature)
	h.Set("X-TIMESTAMP", katTimestamp)
	if _, err := v.ParseCallback(katNotifyPath, h, []byte(katNotifyBody), at); !errors.Is(err, vendors.ErrInvalidCallback) {
		t.Errorf("notifications off, a well signed notification: %v, want ErrInvalidCallback", err)
	}
	o.Notifications, o.BankPublicKey = true, nil
	if _, err := New(o); err == nil || !strings.Contains(err.Error(), "BankPublicKey") {
		t.Errorf("notifications without the bank key: %v", err)
	}
	o.BankPublicKey = &key.PublicKey
	if v, err = New(o); err != nil || !vendors.Notifies(v) {
		t.Errorf("notifications with the bank key: notifies %v, %v", err == nil && vendors.Notifies(v), err)
	}
}
