// Package sandboxacquirer is the sandbox QRIS acquirer, "sandboxpay": the
// acquirer behind payments in development and staging. It issues dynamic
// QRIS payloads in the real format (package qris, with a valid CRC) under a
// sandbox acquirer domain and NMID that no real banking app pays, and it
// builds and verifies the payment notifications the sandbox sends, so the
// "simulate payment" paths go through the same callback handling as a real
// acquirer's.
//
// What goes into a dynamic QRIS (DynamicQR):
//
//	01 point of initiation  12 (dynamic)
//	26 merchant account     00 AcquirerDomain, 01 MerchantPAN, 02 MerchantID, 03 Criteria
//	51 QRIS national        00 ID.CO.QRIS.WWW, 02 NMID, 03 Criteria
//	52 MCC, 53 360, 54 the amount in whole rupiah, 58 ID
//	59 / 60                 merchant name / city, sanitised (Sanitize): upper-case
//	                        printable ASCII, at most 25 / 15 characters
//	61 PostalCode           when set
//	62 additional data      01 bill number = vendors.BillNumber(payment id), the
//	                        first 8 hex digits of the UUID in upper case;
//	                        07 TerminalLabel when set
//
// QRIS has no expiry data object: ExpiresAt is enforced by the service (and
// by a real acquirer on its side), not written in the payload.
//
// Notifications are POSTed as JSON
//
//	{"payment_id":"<uuid>","status":"SUCCESS"|"FAILED",
//	 "retrieval_reference_no":"<12 digits>"|"","paid_at":"<RFC 3339>"|null,
//	 "failure_reason":"..."}
//
// signed in the header x-acquirer-signature: t=<unix ms>,v1=<hex
// HMAC-SHA256(t + "." + body, secret)>, the scheme of package signature,
// valid for 5 minutes either side of the receiver's clock.
package sandboxacquirer

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/qris"
	"github.com/payoutd/payoutd/signature"
	"github.com/payoutd/payoutd/vendors"
)

// Name is the acquirer's identifier.
const Name = "sandboxpay"

// SignatureHeader carries the signature of a notification.
const SignatureHeader = "x-acquirer-signature"

// Defaults of Options: the merchant of the sandbox (as in the QRIS test vectors).
const (
	DefaultAcquirerDomain = "ID.CO.SANDBOXPAY.WWW"
	DefaultMerchantPAN    = "936000000000000001"
	DefaultMerchantID     = "MCH0000001"
	DefaultNMID           = "ID1020000000001"
	DefaultCriteria       = "UMI"  // usaha mikro
	DefaultMCC            = "5812" // eating places, restaurants
	DefaultCity           = "JAKARTA"
	DefaultName           = "MERCHANT"
)

// Largest amount a QRIS carries: tag 54 holds at most 13 characters.
var maxQRAmount = models.Rupiah(9_999_999_999_999)

// Options configure the sandbox acquirer. Only Secret is required.
type Options struct {
	// Secret is the HMAC key of the notifications, used as the ASCII bytes
	// of its text.
	Secret string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// AcquirerDomain is tag 26 subtag 00 (DefaultAcquirerDomain).
	AcquirerDomain string
	// MerchantPAN is tag 26 subtag 01, digits (DefaultMerchantPAN).
	MerchantPAN string
	// MerchantID is tag 26 subtag 02 (DefaultMerchantID).
	MerchantID string
	// NMID is the national merchant id, tag 51 subtag 02 (DefaultNMID).
	NMID string
	// Criteria is the merchant criteria, subtag 03 of 26 and 51 (DefaultCriteria).
	Criteria string
	// MCC is the merchant category code, tag 52 (DefaultMCC).
	MCC string
	// PostalCode is tag 61; empty leaves it out.
	PostalCode string
	// TerminalLabel is tag 62 subtag 07; empty leaves it out.
	TerminalLabel string
	// DefaultCity is written when a request's city has nothing QRIS can
	// carry (DefaultCity).
	DefaultCity string
	// DefaultName is written when a merchant's name has nothing QRIS can
	// carry, e.g. a name in another script (DefaultName): a merchant's
	// name must never stop it from taking payments.
	DefaultName string
}

// Acquirer is the sandbox acquirer. It keeps no state: the same request
// always gives the same payload.
type Acquirer struct {
	o Options
}

var _ vendors.Acquirer = (*Acquirer)(nil)

// New returns the sandbox acquirer. It refuses an empty Secret and options
// that would not make a valid QRIS (a MerchantPAN with letters, an MCC that
// is not 4 digits, ...).
func New(o Options) (*Acquirer, error) {
	if o.Secret == "" {
		return nil, errors.New("sandboxacquirer: a callback secret is required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	setDefault(&o.AcquirerDomain, DefaultAcquirerDomain)
	setDefault(&o.MerchantPAN, DefaultMerchantPAN)
	setDefault(&o.MerchantID, DefaultMerchantID)
	setDefault(&o.NMID, DefaultNMID)
	setDefault(&o.Criteria, DefaultCriteria)
	setDefault(&o.MCC, DefaultMCC)
	o.DefaultCity = Sanitize(o.DefaultCity, 15)
	setDefault(&o.DefaultCity, DefaultCity)
	o.DefaultName = Sanitize(o.DefaultName, 25)
	setDefault(&o.DefaultName, DefaultName)
	a := &Acquirer{o: o}
	if _, err := qris.Encode(a.payload("1", "SANDBOX", o.DefaultCity, "00000000")); err != nil {
		return nil, fmt.Errorf("sandboxacquirer: options do not make a valid QRIS: %w", err)
	}
	return a, nil
}

func setDefault(v *string, def string) {
	if *v == "" {
		*v = def
	}
}

// Name implements vendors.Acquirer.
func (a *Acquirer) Name() string { return Name }

// DynamicQR implements vendors.Acquirer. It refuses, with
// vendors.ErrInvalidQRRequest, a nil payment id, an amount that is not
// positive, has a fraction of a rupiah or exceeds the 13 characters of
// tag 54, and a merchant name with no character QRIS can carry.
func (a *Acquirer) DynamicQR(ctx context.Context, r vendors.QRRequest) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if r.PaymentID == uuid.Nil {
		return "", invalid("payment id is missing")
	}
	switch {
	case r.Amount <= 0:
		return "", invalid(fmt.Sprintf("amount %s is not greater than zero", r.Amount))
	case r.Amount%models.Rupiah(1) != 0:
		return "", invalid(fmt.Sprintf("amount %s has a fraction of a rupiah; QRIS carries whole rupiah", r.Amount))
	case r.Amount > maxQRAmount:
		return "", invalid(fmt.Sprintf("amount %s is above the %s a QRIS can carry", r.Amount, maxQRAmount))
	}
	name := Sanitize(r.MerchantName, 25)
	if name == "" {
		name = a.o.DefaultName
	}
	city := Sanitize(r.MerchantCity, 15)
	if city == "" {
		city = a.o.DefaultCity
	}
	amount := strconv.FormatInt(int64(r.Amount/models.Rupiah(1)), 10)
	s, err := qris.Encode(a.payload(amount, name, city, vendors.BillNumber(r.PaymentID)))
	if err != nil {
		return "", fmt.Errorf("%w: %w", vendors.ErrInvalidQRRequest, err)
	}
	return s, nil
}

func invalid(msg string) error { return fmt.Errorf("%w: %s", vendors.ErrInvalidQRRequest, msg) }

func (a *Acquirer) payload(amount, name, city, bill string) qris.Payload {
	return qris.Payload{
		PayloadFormat:     qris.PayloadFormatV1,
		PointOfInitiation: qris.Dynamic,
		MerchantAccount: qris.MerchantAccount{
			GUID: a.o.AcquirerDomain, PAN: a.o.MerchantPAN, MerchantID: a.o.MerchantID, Criteria: a.o.Criteria,
		},
		National:       qris.MerchantAccount{GUID: qris.NationalGUID, MerchantID: a.o.NMID, Criteria: a.o.Criteria},
		MCC:            a.o.MCC,
		Currency:       qris.CurrencyIDR,
		Amount:         amount,
		Country:        qris.CountryID,
		MerchantName:   name,
		MerchantCity:   city,
		PostalCode:     a.o.PostalCode,
		AdditionalData: qris.AdditionalData{BillNumber: bill, TerminalLabel: a.o.TerminalLabel},
	}
}

// callbackBody is the JSON of a notification.
type callbackBody struct {
	PaymentID            string     `json:"payment_id"`
	Status               string     `json:"status"`
	RetrievalReferenceNo string     `json:"retrieval_reference_no"`
	PaidAt               *time.Time `json:"paid_at"`
	// Amount paid, a decimal string ("150000"); optional: without it the
	// amount is not checked against the price.
	Amount        string `json:"amount,omitempty"`
	FailureReason string `json:"failure_reason"`
}

// SignCallback builds the notification the sandbox sends for r: the
// headers (Content-Type and SignatureHeader, signed now) and the body. A
// SUCCESS without a retrieval reference number gets a new one (NewRRN),
// and without PaidAt the current time.
func (a *Acquirer) SignCallback(r vendors.AcquirerResult) (http.Header, []byte) {
	now := a.o.Now()
	cb := callbackBody{PaymentID: r.PaymentID.String(), Status: r.Status,
		RetrievalReferenceNo: r.RetrievalReferenceNo, FailureReason: r.FailureReason}
	if r.Amount > 0 {
		cb.Amount = r.Amount.String()
	}
	if r.Status == vendors.PaymentSuccess {
		if cb.RetrievalReferenceNo == "" {
			cb.RetrievalReferenceNo = NewRRN()
		}
		if r.PaidAt.IsZero() {
			r.PaidAt = now.Truncate(time.Microsecond)
		}
	}
	if !r.PaidAt.IsZero() {
		t := r.PaidAt.UTC()
		cb.PaidAt = &t
	}
	body, err := json.Marshal(cb)
	if err != nil {
		panic(err) // strings and a time: cannot fail
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set(SignatureHeader, signature.Sign(a.o.Secret, body, now))
	return h, body
}

// ParseCallback implements vendors.Acquirer: SignatureHeader must sign body
// with the secret at a time within 5 minutes of now, else the error wraps
// vendors.ErrInvalidCallback. A signed body that is not a notification
// (bad JSON, unknown fields, a status other than SUCCESS or FAILED, a
// SUCCESS without a 12-digit retrieval reference number or paid_at, a NUL
// character in a text) is a plain error.
func (a *Acquirer) ParseCallback(header http.Header, body []byte, now time.Time) (vendors.AcquirerResult, error) {
	v := signature.Verify(a.o.Secret, header.Get(SignatureHeader), body, now)
	if v.Diagnosis != signature.OK {
		return vendors.AcquirerResult{}, fmt.Errorf("%w: %s", vendors.ErrInvalidCallback, v.Diagnosis)
	}
	var cb callbackBody
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cb); err != nil {
		return vendors.AcquirerResult{}, fmt.Errorf("%s callback: invalid JSON: %w", Name, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return vendors.AcquirerResult{}, fmt.Errorf("%s callback: data after the JSON object", Name)
	}
	return cb.result()
}

func (cb callbackBody) result() (vendors.AcquirerResult, error) {
	id, err := uuid.Parse(cb.PaymentID)
	if err != nil {
		return vendors.AcquirerResult{}, fmt.Errorf("%s callback: payment_id %q: %w", Name, cb.PaymentID, err)
	}
	r := vendors.AcquirerResult{PaymentID: id, Status: cb.Status,
		RetrievalReferenceNo: cb.RetrievalReferenceNo, FailureReason: cb.FailureReason}
	if cb.PaidAt != nil {
		r.PaidAt = cb.PaidAt.UTC()
	}
	if cb.Amount != "" {
		if r.Amount, err = models.ParsePositiveAmount(cb.Amount); err != nil {
			return vendors.AcquirerResult{}, fmt.Errorf("%s callback: amount %w", Name, err)
		}
	}
	// Both texts may be stored; PostgreSQL refuses U+0000 in text.
	if strings.ContainsRune(cb.FailureReason, 0) || strings.ContainsRune(cb.RetrievalReferenceNo, 0) {
		return vendors.AcquirerResult{}, fmt.Errorf("%s callback: failure_reason and retrieval_reference_no must not contain NUL", Name)
	}
	switch cb.Status {
	case vendors.PaymentSuccess:
		if !validRRN(cb.RetrievalReferenceNo) || cb.PaidAt == nil {
			return vendors.AcquirerResult{}, fmt.Errorf("%s callback: SUCCESS needs a 12-digit retrieval_reference_no and paid_at, got %q and %v",
				Name, cb.RetrievalReferenceNo, cb.PaidAt)
		}
	case vendors.PaymentFailed:
	default:
		return vendors.AcquirerResult{}, fmt.Errorf("%s callback: status %q is not SUCCESS or FAILED", Name, cb.Status)
	}
	return r, nil
}

var rrnSpace = big.NewInt(1_000_000_000_000)

// NewRRN returns a new retrieval reference number: 12 decimal digits, as
// ISO 8583 field 37 has, drawn at random (so about one in a trillion pairs
// collide; treat it as a reference for people, not a key).
func NewRRN() string {
	n, err := rand.Int(rand.Reader, rrnSpace)
	if err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return fmt.Sprintf("%012d", n)
}

func validRRN(s string) bool {
	return len(s) == 12 && strings.Trim(s, "0123456789") == ""
}
