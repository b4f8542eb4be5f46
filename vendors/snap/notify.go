package snap

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/payoutd/payoutd/vendors"
)

// ServiceTransferNotify is the service code of the bank's transfer result
// notification ([BNC-NOTIFY] "SNAP Service Code 52").
const ServiceTransferNotify = "52"

// CallbackPath is the path of the service's URL to register at the bank
// (a slug, "bca") for its notifications: /vendor-callbacks/snap/<bank>.
// The service also takes them at /vendor-callbacks/snap:<bank>, its first
// path, whose colon some bank portals refuse in a URL.
func CallbackPath(bank string) string { return "/vendor-callbacks/snap/" + strings.ToLower(bank) }

// DefaultNotifyWindow is how far a notification's X-TIMESTAMP may be from
// the receiver's clock, either way. [BI-SNAP] fixes no window; five
// minutes is what the simulator (and the banks' own checks of our
// requests) use, and a replay older than that is refused.
const DefaultNotifyWindow = 5 * time.Minute

// Notification is the body of a transfer result notification, which the
// bank POSTs when a transfer turns final or is refunded. Fields after
// [BNC-NOTIFY] (originalReferenceNo, originalPartnerReferenceNo,
// latestTransactionStatus 00 Success / 06 Failed, transactionStatusDesc)
// and [AYO-DISB] (the callback carries the same latestTransactionStatus
// codes as the status inquiry, 04 Refunded among them); the remaining
// fields are those of the status inquiry answer ([MT-STATUS]), which the
// notification mirrors.
type Notification struct {
	OriginalReferenceNo        string `json:"originalReferenceNo,omitempty"`
	OriginalPartnerReferenceNo string `json:"originalPartnerReferenceNo"`
	OriginalExternalID         string `json:"originalExternalId,omitempty"`
	ServiceCode                string `json:"serviceCode,omitempty"`
	TransactionDate            string `json:"transactionDate,omitempty"`
	Amount                     *Money `json:"amount,omitempty"`
	BeneficiaryAccountNo       string `json:"beneficiaryAccountNo,omitempty"`
	BeneficiaryBankCode        string `json:"beneficiaryBankCode,omitempty"`
	LatestTransactionStatus    string `json:"latestTransactionStatus"`
	TransactionStatusDesc      string `json:"transactionStatusDesc,omitempty"`
}

// NotifyStringToSign is the string the bank signs in a notification:
// HTTPMethod:RelativeURL:Lowercase(HexEncode(SHA-256(minify(body)))):X-TIMESTAMP
// ([BNC-NOTIFY] X-SIGNATURE; [FP-SIG] asymmetric signature; [BI-SNAP]).
// Unlike a service call's string, it has no access token.
func NotifyStringToSign(method, relativeURL, bodyHash, timestamp string) string {
	return strings.ToUpper(method) + ":" + relativeURL + ":" + bodyHash + ":" + timestamp
}

// SignNotify is a notification's X-SIGNATURE:
// base64(SHA256withRSA(bankKey, NotifyStringToSign)), PKCS #1 v1.5.
func SignNotify(key *rsa.PrivateKey, method, relativeURL string, body []byte, timestamp string) (string, error) {
	if key == nil {
		return "", errors.New("snap: no private key")
	}
	bh, err := BodyHash(body)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256([]byte(NotifyStringToSign(method, relativeURL, bh, timestamp)))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, h[:])
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(sig), nil
}

// VerifyNotify checks a notification's X-SIGNATURE with the bank's public
// key.
func VerifyNotify(pub *rsa.PublicKey, method, relativeURL string, body []byte, timestamp, signature string) bool {
	sig, err := base64.StdEncoding.DecodeString(signature)
	if err != nil || pub == nil {
		return false
	}
	bh, err := BodyHash(body)
	if err != nil {
		return false
	}
	h := sha256.Sum256([]byte(NotifyStringToSign(method, relativeURL, bh, timestamp)))
	return rsa.VerifyPKCS1v15(pub, crypto.SHA256, h[:], sig) == nil
}

// Notifies implements vendors.Notifying: Options.Notifications.
func (v *Vendor) Notifies() bool { return v.o.Notifications }

// ParseCallback implements vendors.CallbackParser for the bank's transfer
// result notifications. It verifies the X-SIGNATURE with
// Options.BankPublicKey over relativeURL, the path the notification came
// on (the bank signs the one it posts to, so one signed for another path
// fails), and refuses an X-TIMESTAMP missing or further than
// Options.NotifyWindow from now (a replay): both are
// vendors.ErrInvalidCallback, and so is every notification with
// Options.Notifications off. A verified body that is no final result is an
// error of its own. The result is a claim: the caller confirms it with
// Status before it changes anything.
func (v *Vendor) ParseCallback(relativeURL string, header http.Header, body []byte, now time.Time) (vendors.PayoutResult, error) {
	if !v.o.Notifications {
		return vendors.PayoutResult{}, fmt.Errorf("%w: %s is configured without notifications (its results come by status inquiry)", vendors.ErrInvalidCallback, v.Name())
	}
	ts := header.Get("X-TIMESTAMP")
	at, err := ParseTimestamp(ts)
	if err != nil {
		return vendors.PayoutResult{}, fmt.Errorf("%w: X-TIMESTAMP missing or not ISO 8601", vendors.ErrInvalidCallback)
	}
	if d := now.Sub(at); d > v.o.NotifyWindow || d < -v.o.NotifyWindow {
		return vendors.PayoutResult{}, fmt.Errorf("%w: X-TIMESTAMP %s is more than %s from now", vendors.ErrInvalidCallback, ts, v.o.NotifyWindow)
	}
	if !VerifyNotify(v.o.BankPublicKey, http.MethodPost, relativeURL, body, ts, header.Get("X-SIGNATURE")) {
		return vendors.PayoutResult{}, fmt.Errorf("%w: X-SIGNATURE missing or wrong", vendors.ErrInvalidCallback)
	}
	var n Notification
	if err := json.Unmarshal(body, &n); err != nil {
		return vendors.PayoutResult{}, errors.New("snap notification: invalid JSON")
	}
	if n.OriginalPartnerReferenceNo == "" {
		return vendors.PayoutResult{}, errors.New("snap notification: no originalPartnerReferenceNo")
	}
	status, known := transactionStatuses[n.LatestTransactionStatus]
	if !known || !status.Final() {
		return vendors.PayoutResult{}, fmt.Errorf("snap notification: latestTransactionStatus %q is not a final result", n.LatestTransactionStatus)
	}
	return result(n.OriginalPartnerReferenceNo, n.LatestTransactionStatus, n.TransactionStatusDesc), nil
}

// result is the PayoutResult of a known, trusted latestTransactionStatus;
// a failure or return carries the bank's own description when it says
// more than the status's name.
func result(reference, latest, desc string) vendors.PayoutResult {
	res := vendors.PayoutResult{Reference: reference, Status: transactionStatuses[latest]}
	switch res.Status {
	case vendors.PayoutFailed, vendors.PayoutReturned:
		res.FailureReason = strings.TrimSpace(desc)
		if res.FailureReason == "" || strings.EqualFold(res.FailureReason, TransactionStatusDesc[latest]) {
			res.FailureReason = "bank reports " + latest + " " + TransactionStatusDesc[latest]
		}
	}
	return res
}
