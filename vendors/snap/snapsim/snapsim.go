// Package snapsim simulates one SNAP BI bank (Bank Indonesia's Standar
// Nasional Open API Pembayaran) for the adapter of vendors/snap: the B2B
// access token, external account inquiry, interbank transfer and transfer
// status inquiry, from the same documents (see the package doc of
// vendors/snap for the [..] citations). It is strict: every rule it knows
// is enforced with the documented responseCode.
//
// What it enforces:
//
//   - every request, first: the SNAP document of schema/snap-bi.yaml,
//     written from the SNAP service specifications rather than from the
//     adapter (see ValidateRequest): each mandatory header and body member
//     present (400xx02 "Invalid Mandatory Field {field}"), each of its
//     documented type, length and pattern (400xx01 "Invalid Field Format
//     {field}"), no body member the document does not name (400xx00), a
//     Bearer token on service calls (401xx03 "Token Not Found (B2B)").
//   - access token (service 73): X-TIMESTAMP within TimestampWindow of its
//     clock (4007301); X-CLIENT-KEY known (4017300); X-SIGNATURE a valid
//     SHA256withRSA of clientKey|timestamp under the partner's public key
//     (4017300 "Unauthorized. Signature"). Tokens expire after TokenTTL.
//   - every service call: X-TIMESTAMP within the window (400xx01), the
//     Bearer token known and unexpired (401xx01), X-PARTNER-ID the
//     partner's (401xx00), the HMAC-SHA512 X-SIGNATURE (401xx00
//     "Unauthorized. Signature"), and an X-EXTERNAL-ID not used before on
//     the same Asia/Jakarta day (409xx00 "Conflict").
//   - the sandbox magic accounts (vendors/sandbox): 1000000001 inactive
//     (4031618), 1000000002 not found (4041611), 1000000006 inquiry timeout
//     (5041600), 1000000003 rejected at transfer (4031818), 1000000004
//     accepted then 06 Failed, 1000000005 stays 03 Pending, 1000000007
//     accepted but the connection is dropped before the first answer,
//     1000000008 paid (00) then 04 Refunded after CompleteAfter more
//     ([BI-SNAP] documents 04 Refunded among latestTransactionStatus), any
//     other digits "SANDBOX <last 4>" and 00 Success after CompleteAfter.
//   - transfers: a positive amount (4001801), a real transactionDate,
//     a known beneficiaryBankCode, caps by network
//     (additionalInfo.transferType BIFAST, the default, or RTOL; 4031802),
//     a duplicate partnerReferenceNo (4091801), the source account and its
//     balance when set (4031814 Insufficient Funds).
//   - status inquiry: serviceCode 18, originalPartnerReferenceNo or
//     originalReferenceNo (4003602), a known transfer whose
//     originalExternalId, when sent, matches (else 4043601).
//   - notifications (Flush, Run): a transfer turning 00, 06 or 04 is
//     POSTed to CallbackURL, signed with BankPrivateKey as [BNC-NOTIFY]
//     signs it, and sent again on the next Flush until answered 2xx.
//
// State is in memory and safe for concurrent use; the clock is injectable.
package snapsim

import (
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/snap"
)

// Options configure a Bank.
type Options struct {
	PartnerPublicKey *rsa.PublicKey // verifies the access token request
	ClientKey        string
	ClientSecret     string
	PartnerID        string
	// SourceAccountNo, when set, is the only sourceAccountNo accepted.
	SourceAccountNo string
	// Now is the clock (default time.Now).
	Now func() time.Time
	// TokenTTL is the life of an access token (default 15 minutes, sent as
	// expiresIn "900").
	TokenTTL time.Duration
	// CompleteAfter is how long a transfer stays 03 Pending (default 2 s).
	CompleteAfter time.Duration
	// TimestampWindow is how far X-TIMESTAMP may be from the clock
	// (default 5 minutes; [BI-SNAP] does not fix one, banks do).
	TimestampWindow time.Duration
	// BankPrivateKey signs the transfer result notifications; CallbackURL
	// is where they are POSTed (none without it). See Flush.
	BankPrivateKey *rsa.PrivateKey
	CallbackURL    string
	// HTTPClient sends the notifications (default: 10 s timeout).
	HTTPClient *http.Client
	// Logger reports failed deliveries (default: discarded).
	Logger *slog.Logger
}

// Bank is one simulated SNAP bank, an http.Handler.
type Bank struct {
	o Options

	xfer        sync.Mutex // serialises transfer requests
	mu          sync.Mutex
	tokens      map[string]time.Time       // token → expiry
	externalIDs map[string]map[string]bool // Jakarta day → ids used
	transfers   map[string]*transfer       // partnerReferenceNo →
	inquiries   map[string]int             // status inquiries by originalPartnerReferenceNo
	balance     *models.Amount
	tokenCalls  int
	seq         int
}

type transfer struct {
	ref, externalID, referenceNo string
	account, bankCode            string
	amount                       models.Amount
	date                         string
	acceptedAt                   time.Time
	submitCalls                  int
	final                        vendors.PayoutStatus
	reason                       string
	notified                     string // the last latestTransactionStatus notified
}

// New returns a Bank.
func New(o Options) *Bank {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.TokenTTL <= 0 {
		o.TokenTTL = 15 * time.Minute
	}
	if o.CompleteAfter <= 0 {
		o.CompleteAfter = 2 * time.Second
	}
	if o.TimestampWindow <= 0 {
		o.TimestampWindow = 5 * time.Minute
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Bank{o: o, tokens: map[string]time.Time{}, externalIDs: map[string]map[string]bool{}, transfers: map[string]*transfer{},
		inquiries: map[string]int{}}
}

// TokenCalls counts the access tokens issued.
func (b *Bank) TokenCalls() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tokenCalls
}

// RevokeTokens forgets every token, as a bank does on a key rotation: the
// next service call with an old token gets 401xx01.
func (b *Bank) RevokeTokens() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tokens = map[string]time.Time{}
}

// SetSourceBalance limits what the source account can still pay; transfers
// beyond it get 4031814 Insufficient Funds.
func (b *Bank) SetSourceBalance(a models.Amount) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.balance = &a
}

// SubmitCalls counts the transfer requests for reference that passed
// authentication: the one that created it and every duplicate since.
func (b *Bank) SubmitCalls(reference string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.transfers[reference]; t != nil {
		return t.submitCalls
	}
	return 0
}

// StatusCalls counts the transfer status inquiries about reference that
// passed authentication, whether they found the transfer or not.
func (b *Bank) StatusCalls(reference string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inquiries[reference]
}

// ErrAlreadyFinal: Complete asked for another status than the final one.
var ErrAlreadyFinal = errors.New("snapsim: transfer is already final with another status")

// Complete finishes a transfer by hand (SUCCESS or FAILED), as the sandbox
// vendors' Complete does.
func (b *Bank) Complete(reference string, status vendors.PayoutStatus, reason string) error {
	if status != vendors.PayoutSuccess && status != vendors.PayoutFailed {
		return fmt.Errorf("snapsim: cannot complete as %q", status)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.transfers[reference]
	if t == nil {
		return vendors.ErrUnknownPayout
	}
	cur, _ := b.stateLocked(t)
	if cur == "00" || cur == "06" || cur == "04" {
		if (cur == "00" && status == vendors.PayoutSuccess) || (cur == "06" && status == vendors.PayoutFailed) {
			return nil
		}
		return ErrAlreadyFinal
	}
	if status == vendors.PayoutSuccess {
		reason = ""
	} else if reason == "" {
		reason = "completed as failed by hand"
	}
	t.final, t.reason = status, reason
	return nil
}

// answer writes a SNAP answer: HTTP status from the code, X-TIMESTAMP.
func (b *Bank) answer(w http.ResponseWriter, c snap.Code, msg string, body map[string]any) {
	if body == nil {
		body = map[string]any{}
	}
	body["responseCode"] = c.String()
	body["responseMessage"] = msg
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-TIMESTAMP", snap.Timestamp(b.o.Now()))
	w.WriteHeader(c.HTTP)
	_ = json.NewEncoder(w).Encode(body)
}

// ServeHTTP implements http.Handler.
func (b *Bank) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return
	}
	if sc, ok := services[r.URL.Path]; ok {
		if err := ValidateRequest(r.URL.Path, r.Header, body); err != nil {
			var re *RequestError
			if !errors.As(err, &re) { // unreachable: the path is one of the document's
				re = &RequestError{Code: snap.NewCode(500, sc, "00"), Message: "General Error"}
			}
			b.answer(w, re.Code, re.Message, nil)
			return
		}
	}
	switch r.URL.Path {
	case snap.PathAccessToken:
		b.token(w, r)
	case snap.PathInquiry:
		b.service(w, r, body, snap.ServiceInquiry, b.inquiry)
	case snap.PathTransfer:
		// One transfer at a time, from the X-EXTERNAL-ID check to the
		// transfer's creation: a duplicate never sees an id taken by a
		// transfer that does not exist yet.
		b.xfer.Lock()
		defer b.xfer.Unlock()
		b.service(w, r, body, snap.ServiceTransfer, b.transfer)
	case snap.PathStatus:
		b.service(w, r, body, snap.ServiceStatus, b.status)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

// services are the service codes of the paths served.
var services = map[string]string{
	snap.PathAccessToken: snap.ServiceAccessToken,
	snap.PathInquiry:     snap.ServiceInquiry,
	snap.PathTransfer:    snap.ServiceTransfer,
	snap.PathStatus:      snap.ServiceStatus,
}

// checkTimestamp: a real time within the window (its shape is the
// document's).
func (b *Bank) checkTimestamp(ts string) (code, msg string) {
	t, err := snap.ParseTimestamp(ts)
	if err != nil {
		return "01", "Invalid Field Format {X-TIMESTAMP}"
	}
	if d := b.o.Now().Sub(t); d > b.o.TimestampWindow || d < -b.o.TimestampWindow {
		return "01", "Invalid Field Format {X-TIMESTAMP}"
	}
	return "", ""
}

func (b *Bank) token(w http.ResponseWriter, r *http.Request) {
	sc := snap.ServiceAccessToken
	ts := r.Header.Get("X-TIMESTAMP")
	if c, msg := b.checkTimestamp(ts); c != "" {
		b.answer(w, snap.NewCode(400, sc, c), msg, nil)
		return
	}
	key := r.Header.Get("X-CLIENT-KEY")
	if key != b.o.ClientKey {
		b.answer(w, snap.NewCode(401, sc, "00"), "Unauthorized. Unknown Client", nil)
		return
	}
	if !snap.VerifyToken(b.o.PartnerPublicKey, key, ts, r.Header.Get("X-SIGNATURE")) {
		b.answer(w, snap.NewCode(401, sc, "00"), "Unauthorized. Signature", nil)
		return
	}
	// grantType client_credentials is the document's.
	b.mu.Lock()
	b.seq++
	b.tokenCalls++
	tok := fmt.Sprintf("simtoken-%d-%d", b.seq, b.o.Now().UnixNano())
	b.tokens[tok] = b.o.Now().Add(b.o.TokenTTL)
	b.mu.Unlock()
	b.answer(w, snap.NewCode(200, sc, "00"), "Successful", map[string]any{
		"accessToken": tok, "tokenType": "Bearer",
		"expiresIn": fmt.Sprint(int64(b.o.TokenTTL / time.Second)),
	})
}

type handler func(w http.ResponseWriter, r *http.Request, body []byte, externalID string)

// service authenticates a service call, then hands it to h.
func (b *Bank) service(w http.ResponseWriter, r *http.Request, body []byte, sc string, h handler) {
	ts := r.Header.Get("X-TIMESTAMP")
	if c, msg := b.checkTimestamp(ts); c != "" {
		b.answer(w, snap.NewCode(400, sc, c), msg, nil)
		return
	}
	// The document has checked the Bearer shape.
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	b.mu.Lock()
	exp, known := b.tokens[tok]
	b.mu.Unlock()
	if !known || !b.o.Now().Before(exp) {
		b.answer(w, snap.NewCode(401, sc, "01"), "Invalid Token (B2B)", nil)
		return
	}
	if r.Header.Get("X-PARTNER-ID") != b.o.PartnerID {
		b.answer(w, snap.NewCode(401, sc, "00"), "Unauthorized. Unknown Client", nil)
		return
	}
	ext := r.Header.Get("X-EXTERNAL-ID")
	if !snap.VerifyService(b.o.ClientSecret, r.Method, r.URL.RequestURI(), tok, body, ts, r.Header.Get("X-SIGNATURE")) {
		b.answer(w, snap.NewCode(401, sc, "00"), "Unauthorized. Signature", nil)
		return
	}
	day := b.o.Now().In(snap.Jakarta).Format("2006-01-02")
	b.mu.Lock()
	used := b.externalIDs[day]
	if used == nil {
		used = map[string]bool{}
		b.externalIDs[day] = used
	}
	dup := used[ext]
	used[ext] = true
	if dup && sc == snap.ServiceTransfer {
		var req transferRequest
		if json.Unmarshal(body, &req) == nil {
			if t := b.transfers[req.PartnerReferenceNo]; t != nil {
				t.submitCalls++
			}
		}
	}
	b.mu.Unlock()
	if dup {
		b.answer(w, snap.NewCode(409, sc, "00"), "Conflict", nil)
		return
	}
	h(w, r, body, ext)
}

// biBanks maps BI codes back to slugs.
var biBanks = func() map[string]string {
	m := map[string]string{}
	for _, b := range vendors.Directory() {
		if c := snap.BICode(b.Code); c != "" {
			m[c] = b.Code
		}
	}
	return m
}()

func validAccount(s string) bool {
	return len(s) >= 4 && len(s) <= 34 && strings.Trim(s, "0123456789") == ""
}

func (b *Bank) inquiry(w http.ResponseWriter, _ *http.Request, body []byte, _ string) {
	sc := snap.ServiceInquiry
	var req inquiryRequest
	if err := json.Unmarshal(body, &req); err != nil { // the document has checked it
		b.answer(w, snap.NewCode(400, sc, "00"), "Bad Request", nil)
		return
	}
	if _, ok := biBanks[bankPrefix(req.BeneficiaryBankCode)]; !ok {
		b.answer(w, snap.NewCode(400, sc, "01"), "Invalid Field Format {beneficiaryBankCode}", nil)
		return
	}
	acct := req.BeneficiaryAccountNo
	if !validAccount(acct) {
		b.answer(w, snap.NewCode(400, sc, "01"), "Invalid Field Format {beneficiaryAccountNo}", nil)
		return
	}
	switch acct {
	case sandbox.AccountInactive:
		b.answer(w, snap.NewCode(403, sc, "18"), "Inactive Card/Account/Customer", nil)
		return
	case sandbox.AccountUnresolved:
		b.answer(w, snap.NewCode(404, sc, "11"), "Invalid Card/Account/Customer", nil)
		return
	case sandbox.AccountInquiryDown:
		b.answer(w, snap.NewCode(504, sc, "00"), "Timeout", nil)
		return
	}
	b.answer(w, snap.NewCode(200, sc, "00"), "Successful", map[string]any{
		"referenceNo":            b.nextRef(),
		"beneficiaryAccountName": "SANDBOX " + acct[len(acct)-4:],
		"beneficiaryAccountNo":   acct,
		"beneficiaryBankCode":    req.BeneficiaryBankCode,
		"currency":               "IDR",
	})
}

// bankPrefix: the 3-digit BI code of a beneficiaryBankCode that may carry
// a 4-digit branch ([MT-INQ]).
func bankPrefix(code string) string {
	if len(code) == 7 {
		return code[:3]
	}
	return code
}

func (b *Bank) nextRef() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	return fmt.Sprintf("SIM%012d", b.seq)
}

// The members of the request bodies the simulator reads; the document
// has already refused any other and checked these.
type (
	inquiryRequest struct {
		BeneficiaryBankCode  string `json:"beneficiaryBankCode"`
		BeneficiaryAccountNo string `json:"beneficiaryAccountNo"`
	}
	transferRequest struct {
		PartnerReferenceNo     string         `json:"partnerReferenceNo"`
		Amount                 snap.Money     `json:"amount"`
		BeneficiaryAccountName string         `json:"beneficiaryAccountName"`
		BeneficiaryAccountNo   string         `json:"beneficiaryAccountNo"`
		BeneficiaryBankCode    string         `json:"beneficiaryBankCode"`
		SourceAccountNo        string         `json:"sourceAccountNo"`
		TransactionDate        string         `json:"transactionDate"`
		AdditionalInfo         map[string]any `json:"additionalInfo"`
	}
	statusRequest struct {
		OriginalPartnerReferenceNo string `json:"originalPartnerReferenceNo"`
		OriginalReferenceNo        string `json:"originalReferenceNo"`
		OriginalExternalID         string `json:"originalExternalId"`
		ServiceCode                string `json:"serviceCode"`
	}
)

func (b *Bank) transfer(w http.ResponseWriter, r *http.Request, body []byte, ext string) {
	sc := snap.ServiceTransfer
	var req transferRequest
	if err := json.Unmarshal(body, &req); err != nil { // the document has checked it
		b.answer(w, snap.NewCode(400, sc, "00"), "Bad Request", nil)
		return
	}
	if b.o.SourceAccountNo != "" && req.SourceAccountNo != b.o.SourceAccountNo {
		b.answer(w, snap.NewCode(400, sc, "01"), "Invalid Field Format {sourceAccountNo}", nil)
		return
	}
	// The document checks the shape; a 31 February is the simulator's.
	if _, err := snap.ParseTimestamp(req.TransactionDate); err != nil {
		b.answer(w, snap.NewCode(400, sc, "01"), "Invalid Field Format {transactionDate}", nil)
		return
	}
	amount, err := snap.ParseAmount(req.Amount)
	if err != nil || amount <= 0 {
		b.answer(w, snap.NewCode(400, sc, "01"), "Invalid Field Format {amount.value}", nil)
		return
	}
	slug, ok := biBanks[bankPrefix(req.BeneficiaryBankCode)]
	if !ok {
		b.answer(w, snap.NewCode(400, sc, "01"), "Invalid Field Format {beneficiaryBankCode}", nil)
		return
	}
	acct := req.BeneficiaryAccountNo
	if !validAccount(acct) {
		b.answer(w, snap.NewCode(400, sc, "01"), "Invalid Field Format {beneficiaryAccountNo}", nil)
		return
	}
	tt := models.BIFAST
	if v, ok := req.AdditionalInfo["transferType"]; ok {
		s, _ := v.(string)
		switch models.TransferType(s) {
		case models.BIFAST, models.RTOL:
			tt = models.TransferType(s)
		default:
			b.answer(w, snap.NewCode(400, sc, "01"), "Invalid Field Format {additionalInfo.transferType}", nil)
			return
		}
	}
	b.mu.Lock()
	if t := b.transfers[req.PartnerReferenceNo]; t != nil {
		t.submitCalls++
		b.mu.Unlock()
		b.answer(w, snap.NewCode(409, sc, "01"), "Duplicate partnerReferenceNo", nil)
		return
	}
	b.mu.Unlock()
	if acct == sandbox.AccountSubmitRejected {
		b.answer(w, snap.NewCode(403, sc, "18"), "Inactive Card/Account/Customer", nil)
		return
	}
	if amount > capFor(tt, slug) {
		b.answer(w, snap.NewCode(403, sc, "02"), "Exceeds Transaction Amount Limit", nil)
		return
	}
	b.mu.Lock()
	if t := b.transfers[req.PartnerReferenceNo]; t != nil { // raced with a twin
		t.submitCalls++
		b.mu.Unlock()
		b.answer(w, snap.NewCode(409, sc, "01"), "Duplicate partnerReferenceNo", nil)
		return
	}
	if b.balance != nil {
		if *b.balance < amount {
			b.mu.Unlock()
			b.answer(w, snap.NewCode(403, sc, "14"), "Insufficient Funds", nil)
			return
		}
		*b.balance -= amount
	}
	b.seq++
	t := &transfer{
		ref: req.PartnerReferenceNo, externalID: ext, referenceNo: fmt.Sprintf("SIM%012d", b.seq),
		account: acct, bankCode: req.BeneficiaryBankCode, amount: amount, date: req.TransactionDate,
		acceptedAt: b.o.Now(), submitCalls: 1,
	}
	b.transfers[t.ref] = t
	b.mu.Unlock()
	if acct == sandbox.AccountFirstSubmitLost {
		dropConnection(w)
		return
	}
	b.answer(w, snap.NewCode(200, sc, "00"), "Successful", map[string]any{
		"referenceNo": t.referenceNo, "partnerReferenceNo": t.ref,
		"amount": req.Amount, "beneficiaryAccountNo": acct, "beneficiaryBankCode": req.BeneficiaryBankCode,
		"sourceAccountNo": req.SourceAccountNo,
	})
}

// dropConnection closes the connection without an answer: the transfer
// was accepted, the caller never hears of it.
func dropConnection(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// capFor: the network caps on the net amount, the sandbox package's values.
func capFor(tt models.TransferType, slug string) models.Amount {
	if tt == models.RTOL {
		if slug == "mandiri" {
			return models.Rupiah(50_000_000)
		}
		return sandbox.RTOLDefaultCap
	}
	return sandbox.BIFASTCap
}

// stateLocked is t's latestTransactionStatus now, and the reason.
func (b *Bank) stateLocked(t *transfer) (string, string) {
	switch t.final {
	case vendors.PayoutSuccess:
		return "00", ""
	case vendors.PayoutFailed:
		return "06", t.reason
	}
	age := b.o.Now().Sub(t.acceptedAt)
	switch {
	case t.account == sandbox.AccountStaysRequested, age < b.o.CompleteAfter:
		return "03", ""
	case t.account == sandbox.AccountFailsLater:
		return "06", "recipient bank rejected the credit"
	case t.account == sandbox.AccountReturnedLater && age >= 2*b.o.CompleteAfter:
		return "04", sandbox.ReturnReason
	}
	return "00", ""
}

// findLocked is the transfer of partnerReferenceNo, else of the bank's
// referenceNo; nil if they name none or different ones.
func (b *Bank) findLocked(partnerRef, ref string) *transfer {
	if partnerRef != "" {
		t := b.transfers[partnerRef]
		if t == nil || (ref != "" && t.referenceNo != ref) {
			return nil
		}
		return t
	}
	for _, t := range b.transfers {
		if t.referenceNo == ref {
			return t
		}
	}
	return nil
}

// observeLocked is stateLocked for an answer or a notification: the
// outcome it reports is kept, so that Complete cannot contradict it.
func (b *Bank) observeLocked(t *transfer) (string, string) {
	st, reason := b.stateLocked(t)
	switch {
	case st == "00" && t.account == sandbox.AccountReturnedLater:
		// A paid 1000000008 still turns 04 later: left to the clock.
	case st == "00":
		t.final = vendors.PayoutSuccess
	case st == "06":
		t.final, t.reason = vendors.PayoutFailed, reason
	}
	return st, reason
}

func (b *Bank) status(w http.ResponseWriter, _ *http.Request, body []byte, _ string) {
	sc := snap.ServiceStatus
	var req statusRequest
	if err := json.Unmarshal(body, &req); err != nil { // the document has checked it
		b.answer(w, snap.NewCode(400, sc, "00"), "Bad Request", nil)
		return
	}
	// Both references are optional in the standard, but one of them must
	// name the transfer.
	if req.OriginalPartnerReferenceNo == "" && req.OriginalReferenceNo == "" {
		b.answer(w, snap.NewCode(400, sc, "02"), "Invalid Mandatory Field {originalPartnerReferenceNo}", nil)
		return
	}
	if req.ServiceCode != snap.ServiceTransfer {
		b.answer(w, snap.NewCode(400, sc, "01"), "Invalid Field Format {serviceCode}", nil)
		return
	}
	b.mu.Lock()
	b.inquiries[req.OriginalPartnerReferenceNo]++
	t := b.findLocked(req.OriginalPartnerReferenceNo, req.OriginalReferenceNo)
	if t == nil || (req.OriginalExternalID != "" && req.OriginalExternalID != t.externalID) {
		b.mu.Unlock()
		b.answer(w, snap.NewCode(404, sc, "01"), "Transaction Not Found", nil)
		return
	}
	st, reason := b.observeLocked(t)
	amount, _ := snap.FormatAmount(t.amount)
	resp := map[string]any{
		"originalReferenceNo": t.referenceNo, "originalPartnerReferenceNo": t.ref,
		"originalExternalId": t.externalID, "serviceCode": snap.ServiceTransfer,
		"transactionDate": t.date, "amount": amount,
		"beneficiaryAccountNo": t.account, "beneficiaryBankCode": t.bankCode,
		"latestTransactionStatus": st, "transactionStatusDesc": snap.TransactionStatusDesc[st],
	}
	if reason != "" {
		resp["transactionStatusDesc"] = reason
	}
	b.mu.Unlock()
	b.answer(w, snap.NewCode(200, sc, "00"), "Successful", resp)
}
