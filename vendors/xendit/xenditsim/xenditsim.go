// Package xenditsim is an in-memory simulator of the Xendit Payouts v2 API,
// written from Xendit's documents (cited on each handler) independently of
// the adapter in vendors/xendit, so that the contract tests can hold the
// two to the documents rather than to each other.
//
// It enforces: basic auth with the secret key as username and an empty
// password (401 INVALID_API_KEY otherwise); every request held to an
// OpenAPI document written from Xendit's API reference
// (schema/xendit-payouts-v2.yaml: required fields such as
// channel_properties.account_holder_name, types, lengths, enums, the
// Idempotency-key header), a breach answered 400 API_VALIDATION_ERROR
// naming the field, a request the document does not describe 404; same
// key + same body → the first payout object again, same key + different
// body → 409 DUPLICATE_ERROR; the documented rules the document cannot
// express, with Xendit's error codes (INVALID_JSON_FORMAT for a body that
// is not JSON or has an unknown field, CHANNEL_CODE_NOT_SUPPORTED_ERROR,
// RECIPIENT_ACCOUNT_NUMBER_ERROR, RECIPIENT_AMOUNT_ERROR,
// MAXIMUM_TRANSFER_LIMIT_ERROR); IDR amounts as integers; reference_id is
// not required to be unique (as documented) and get by reference_id
// answers every match; cancellation only while ACCEPTED
// (CANCELLATION_NOT_ALLOWED). Payouts move by themselves on an injectable
// clock, decided by the account number (the sandbox magic numbers of
// vendors/sandbox, see outcome), and a payout.succeeded / payout.failed /
// payout.reversed webhook with x-callback-token is POSTed to the callback
// URL when a payout turns final (Flush, or Run in the background).
//
// Safe for concurrent use.
package xenditsim

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/payoutd/payoutd/vendors/sandbox"
)

// Options configure a Server.
type Options struct {
	// SecretKey clients must send as the basic auth username. Required.
	SecretKey string
	// CallbackToken is sent as x-callback-token with every webhook.
	CallbackToken string
	// CallbackURL receives the webhooks; empty: none are sent.
	CallbackURL string
	// CompleteAfter is when an ordinary payout is final (default 2 s):
	// ACCEPTED for the first half, REQUESTED for the second.
	CompleteAfter time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// BusinessID of the simulated account.
	BusinessID string
	// HTTPClient delivers webhooks (default: 10 s timeout).
	HTTPClient *http.Client
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// Account numbers of Xendit's documented test scenarios besides the
// sandbox magic numbers.
const (
	// AccountStaysAccepted: "Successful Cancel Payout ... account_number =
	// 131313: Payout status will remain ACCEPTED" ("Payouts" test
	// scenarios, https://docs.xendit.co/docs/test-scenarios-payouts).
	AccountStaysAccepted = "131313"
)

// Failure codes the simulator gives.
const (
	FailureInvalidDestination = "INVALID_DESTINATION"
	FailureRejectedByChannel  = "REJECTED_BY_CHANNEL"
)

// Server is the simulator, an http.Handler.
type Server struct {
	secret, token, callbackURL, businessID string
	completeAfter                          time.Duration
	now                                    func() time.Time
	client                                 *http.Client
	log                                    *slog.Logger
	mux                                    *http.ServeMux
	schema                                 *schema

	mu      sync.Mutex
	payouts map[string]*payout // by id
	order   []string           // ids in creation order
	keys    map[string]*keyUse // by Idempotency-key
	reads   map[string]int     // gets by reference_id, by reference
}

type keyUse struct {
	body []byte // canonical request
	id   string
}

type payout struct {
	obj       payoutJSON // as first answered
	account   string
	createdAt time.Time
	calls     int // creates counted (the first and its replays)
	cancelled bool
	manual    string // status completed by hand
	manualFC  string
	notified  string // status last sent as a webhook
}

// New returns a simulator.
func New(o Options) (*Server, error) {
	if o.SecretKey == "" {
		return nil, errors.New("xenditsim: a secret key is required")
	}
	if o.CallbackToken != "" && o.CallbackToken == o.SecretKey {
		return nil, errors.New("xenditsim: the callback token must not be the secret key")
	}
	if o.CompleteAfter <= 0 {
		o.CompleteAfter = 2 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.BusinessID == "" {
		o.BusinessID = "5f27a14a9bf05c73dd040bc8"
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	sc, err := loadSchema()
	if err != nil {
		return nil, err
	}
	s := &Server{
		secret: o.SecretKey, token: o.CallbackToken, callbackURL: o.CallbackURL, businessID: o.BusinessID,
		completeAfter: o.CompleteAfter, now: o.Now, client: o.HTTPClient, log: o.Logger,
		mux: http.NewServeMux(), schema: sc, payouts: map[string]*payout{}, keys: map[string]*keyUse{},
		reads: map[string]int{},
	}
	s.mux.HandleFunc("POST /v2/payouts", s.create)
	s.mux.HandleFunc("GET /v2/payouts", s.byReference)
	s.mux.HandleFunc("GET /v2/payouts/{id}", s.byID)
	s.mux.HandleFunc("POST /v2/payouts/{id}/cancels", s.cancel)
	s.mux.HandleFunc("POST /v2/payouts/{id}/cancel", s.cancel)
	s.mux.HandleFunc("GET /payouts_channels", s.channels)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "The requested resource was not found")
	})
	return s, nil
}

// ServeHTTP implements http.Handler: basic auth with the secret key as
// username and an empty password ("Xendit's API Gateway uses basic access
// authentication ... insert your API key as the username and leave the
// password blank", https://docs.xendit.co/api-payouts-beta/activation).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	user, pass, ok := r.BasicAuth()
	if !ok || pass != "" || subtle.ConstantTimeCompare([]byte(user), []byte(s.secret)) != 1 {
		// Body of the 401 example of "Get payout channels"
		// (https://docs.xendit.co/apidocs/get-payout-channels): error_code
		// and error_message. Other errors carry message, as the SDK's
		// Error model (error_code, message).
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error_code": "INVALID_API_KEY", "error_message": "API key format is invalid"})
		return
	}
	// Always on: a request the document refuses never reaches a handler.
	if e := s.validateRequest(w, r); e != nil {
		writeError(w, e.status, e.code, e.message)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// createRequest is the body of POST /v2/payouts ("Create Payout",
// https://docs.xendit.co/apidocs/create-payout; integration guide
// https://docs.xendit.co/docs/integration-payouts).
type createRequest struct {
	ReferenceID         string          `json:"reference_id"`
	ChannelCode         string          `json:"channel_code"`
	ChannelProperties   *chanProps      `json:"channel_properties"`
	Amount              json.RawMessage `json:"amount"` // a JSON number; a quoted number is refused
	Description         string          `json:"description,omitempty"`
	Currency            string          `json:"currency"`
	ReceiptNotification json.RawMessage `json:"receipt_notification,omitempty"`
	Metadata            json.RawMessage `json:"metadata,omitempty"`
}

type chanProps struct {
	AccountNumber     string `json:"account_number"`
	AccountHolderName string `json:"account_holder_name"` // required by the schema
	AccountType       string `json:"account_type,omitempty"`
}

// payoutJSON is the Payout object ("Get payout by ID",
// https://docs.xendit.co/apidocs/get-payout).
type payoutJSON struct {
	ID                   string          `json:"id"`
	Amount               json.Number     `json:"amount"`
	ChannelCode          string          `json:"channel_code"`
	Currency             string          `json:"currency"`
	Description          string          `json:"description,omitempty"`
	ReferenceID          string          `json:"reference_id"`
	Status               string          `json:"status"`
	Created              string          `json:"created"`
	Updated              string          `json:"updated"`
	EstimatedArrivalTime string          `json:"estimated_arrival_time"`
	BusinessID           string          `json:"business_id"`
	FailureCode          string          `json:"failure_code,omitempty"`
	ChannelProperties    chanProps       `json:"channel_properties"`
	ReceiptNotification  json.RawMessage `json:"receipt_notification,omitempty"`
	Metadata             json.RawMessage `json:"metadata,omitempty"`
}

// errorJSON is an error answer. The API reference's examples name the text
// error_message (https://docs.xendit.co/apidocs/create-payout); Xendit's
// SDK Error model names it message
// (https://github.com/xendit/xendit-go/blob/master/docs/payout/Error.md).
// Both carry it, so a client reading either finds it.
type errorJSON struct {
	ErrorCode    string `json:"error_code"`
	Message      string `json:"message"`
	ErrorMessage string `json:"error_message"`
}

const maxBody = 64 << 10

var integer = regexp.MustCompile(`^[1-9][0-9]{0,14}$`)

// create serves POST /v2/payouts; the schema has checked the
// Idempotency-key and the body's fields.
func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-key")
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusBadRequest, "INVALID_JSON_FORMAT", msgTooLarge)
		return
	}
	req, e := decodeCreate(raw)
	if e != nil {
		writeError(w, e.status, e.code, e.message)
		return
	}
	if code, msg := s.validate(req); code != "" {
		writeError(w, http.StatusBadRequest, code, msg)
		return
	}
	canonical, _ := json.Marshal(req)

	s.mu.Lock()
	if use, ok := s.keys[key]; ok {
		p := s.payouts[use.id]
		if !bytes.Equal(use.body, canonical) {
			s.mu.Unlock()
			// "Same Idempotency Key + different request body → DUPLICATE_ERROR"
			// (https://docs.xendit.co/apidocs/create-payout-v3).
			writeError(w, http.StatusConflict, "DUPLICATE_ERROR", "Idempotency key has been used before with a different request")
			return
		}
		p.calls++
		obj := p.obj
		s.mu.Unlock()
		// "Same Idempotency Key + same request body → returns the initial Payout Object".
		writeJSON(w, http.StatusOK, obj)
		return
	}
	now := s.now().UTC()
	p := &payout{account: req.ChannelProperties.AccountNumber, createdAt: now, calls: 1}
	p.obj = payoutJSON{
		ID: newID(), Amount: json.Number(req.Amount), ChannelCode: req.ChannelCode, Currency: req.Currency,
		Description: req.Description, ReferenceID: req.ReferenceID, Status: "ACCEPTED",
		Created: stamp(now), Updated: stamp(now), EstimatedArrivalTime: stamp(now.Add(15 * time.Minute)),
		BusinessID: s.businessID, ChannelProperties: *req.ChannelProperties,
		ReceiptNotification: req.ReceiptNotification, Metadata: req.Metadata,
	}
	s.payouts[p.obj.ID] = p
	s.order = append(s.order, p.obj.ID)
	s.keys[key] = &keyUse{body: canonical, id: p.obj.ID}
	obj := p.obj
	s.mu.Unlock()

	s.log.InfoContext(r.Context(), "xenditsim payout created", slog.String("id", obj.ID),
		slog.String("reference_id", obj.ReferenceID), slog.String("channel_code", obj.ChannelCode),
		slog.String("account", mask(p.account)))
	if p.account == sandbox.AccountFirstSubmitLost {
		// Created, but the caller hears a server error: "If you used an
		// idempotency key in the original request, you may retry this
		// safely using the same idempotency key" ("Error Handling",
		// https://docs.xendit.co/api-payouts-beta/payouts-errors/).
		writeError(w, http.StatusInternalServerError, "SERVER_ERROR", "An unexpected error occurred, our team has been notified and will troubleshoot the issue")
		return
	}
	writeJSON(w, http.StatusOK, obj)
}

// decodeCreate reads a create body the schema has passed, refusing what
// the schema leaves open or cannot say: a field it does not name, trailing
// data (INVALID_JSON_FORMAT, as before the schema) and a metadata key
// longer than the documented 40 characters ("key names up to 40
// characters", https://docs.xendit.co/apidocs/create-payout).
func decodeCreate(raw []byte) (createRequest, *apiError) {
	var req createRequest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&req); err != nil || dec.More() {
		return req, &apiError{status: http.StatusBadRequest, code: "INVALID_JSON_FORMAT", message: msgNotJSON}
	}
	if req.ChannelProperties == nil {
		// Refused by the schema first; checked so no body can panic here.
		return req, validationError(`Should have required property "channel_properties"`)
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(req.Metadata, &meta) == nil {
		for k := range meta {
			if utf8.RuneCountInString(k) > 40 {
				return req, validationError(`"metadata" keys should be at most 40 characters long`)
			}
		}
	}
	return req, nil
}

// validate checks what a valid create can still break at Xendit: the
// channel, the amount's form and limits, the account number; it returns an
// error code and message, or "".
func (s *Server) validate(req createRequest) (string, string) {
	ch, ok := channelByCode(req.ChannelCode)
	if !ok || ch.Currency != req.Currency {
		return "CHANNEL_CODE_NOT_SUPPORTED_ERROR", "Channel code is not supported for this currency"
	}
	// "For IDR currency, number should be integer."
	if !integer.Match(req.Amount) {
		return "API_VALIDATION_ERROR", "amount must be a positive integer for IDR"
	}
	acc := req.ChannelProperties.AccountNumber
	if !validAccount(ch.ChannelCategory == "EWALLET", acc) ||
		acc == sandbox.AccountUnresolved || acc == sandbox.AccountSubmitRejected {
		return "RECIPIENT_ACCOUNT_NUMBER_ERROR", "The account number is invalid for the selected channel"
	}
	amount := amountOf(json.Number(req.Amount))
	switch {
	case amount < ch.AmountLimits.Minimum:
		return "RECIPIENT_AMOUNT_ERROR", fmt.Sprintf("amount is below the minimum of %d for %s", ch.AmountLimits.Minimum, ch.ChannelCode)
	case amount > ch.AmountLimits.Maximum:
		return "MAXIMUM_TRANSFER_LIMIT_ERROR", fmt.Sprintf("amount is above the maximum of %d for %s", ch.AmountLimits.Maximum, ch.ChannelCode)
	}
	return "", ""
}

// validAccount: digits; e-wallets a local mobile number ("Indonesia",
// https://docs.xendit.co/docs/payouts-indonesia, "Account length limit").
func validAccount(ewallet bool, a string) bool {
	if a == "" || strings.Trim(a, "0123456789") != "" {
		return false
	}
	if ewallet {
		return a[0] == '0' && len(a) >= 10 && len(a) <= 13
	}
	return len(a) >= 5 && len(a) <= 20
}

func amountOf(n json.Number) int64 {
	var v int64
	for _, c := range string(n) {
		v = v*10 + int64(c-'0')
	}
	return v
}

// status is what the payout is at now, with its failure code.
//
// Outcomes by account number (the sandbox magic numbers, as Xendit would
// show them; Xendit has no inquiry, so the inquiry outcomes appear at
// payout time):
//
//	1000000001 inactive        → FAILED INVALID_DESTINATION at CompleteAfter
//	1000000002 not resolved    → create refused RECIPIENT_ACCOUNT_NUMBER_ERROR
//	1000000003 rejected        → create refused RECIPIENT_ACCOUNT_NUMBER_ERROR
//	1000000004 fails later     → FAILED REJECTED_BY_CHANNEL at CompleteAfter
//	1000000005 stays pending   → REQUESTED until completed by hand
//	1000000006 gateway down    → destination offline: ACCEPTED (cancellable) until 2×CompleteAfter, then SUCCEEDED
//	1000000007 answer lost     → created, first answer 500 SERVER_ERROR, SUCCEEDED at CompleteAfter
//	1000000008 returned        → SUCCEEDED at CompleteAfter, REVERSED at 2×CompleteAfter
//	131313                     → stays ACCEPTED (Xendit's documented cancel scenario)
//	anything else              → ACCEPTED, REQUESTED at CompleteAfter/2, SUCCEEDED at CompleteAfter
func (s *Server) status(p *payout, now time.Time) (string, string) {
	age := now.Sub(p.createdAt)
	ca := s.completeAfter
	switch {
	case p.manual != "":
		return p.manual, p.manualFC
	case p.cancelled:
		return "CANCELLED", ""
	case p.account == AccountStaysAccepted:
		return "ACCEPTED", ""
	case p.account == sandbox.AccountInquiryDown:
		if age < 2*ca {
			return "ACCEPTED", ""
		}
		return "SUCCEEDED", ""
	case age < ca/2:
		return "ACCEPTED", ""
	case age < ca || p.account == sandbox.AccountStaysRequested:
		return "REQUESTED", ""
	case p.account == sandbox.AccountInactive:
		return "FAILED", FailureInvalidDestination
	case p.account == sandbox.AccountFailsLater:
		return "FAILED", FailureRejectedByChannel
	case p.account == sandbox.AccountReturnedLater && age >= 2*ca:
		return "REVERSED", ""
	}
	return "SUCCEEDED", ""
}

// current is p's object as of now.
func (s *Server) current(p *payout, now time.Time) payoutJSON {
	obj := p.obj
	st, fc := s.status(p, now)
	if st != obj.Status {
		obj.Status, obj.FailureCode, obj.Updated = st, fc, stamp(now.UTC())
	}
	return obj
}

// byReference serves GET /v2/payouts?reference_id=: "Returns an array of
// matching Payout Object if a valid reference_id was provided. Returns an
// empty array if there is no payout corresponding to the reference_id"
// ("Get all payouts by reference id", https://docs.xendit.co/apidocs/get-all-payouts).
// The schema has checked reference_id (1 to 255 characters).
func (s *Server) byReference(w http.ResponseWriter, r *http.Request) {
	ref := r.URL.Query().Get("reference_id")
	now := s.now()
	out := []payoutJSON{}
	s.mu.Lock()
	s.reads[ref]++
	for _, id := range s.order {
		if p := s.payouts[id]; p.obj.ReferenceID == ref {
			out = append(out, s.current(p, now))
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// byID serves GET /v2/payouts/{id} ("Get payout by ID",
// https://docs.xendit.co/apidocs/get-payout).
func (s *Server) byID(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	p, ok := s.payouts[r.PathValue("id")]
	var obj payoutJSON
	if ok {
		obj = s.current(p, s.now())
	}
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "DATA_NOT_FOUND", "Payout not found")
		return
	}
	writeJSON(w, http.StatusOK, obj)
}

// cancel serves POST /v2/payouts/{id}/cancel (the path of the xendit-go,
// -node, -php and -python SDKs) and /cancels (the path the brief named,
// not found in a Xendit document): "Cancellation is possible if the payout has not been sent out via
// our partner and when payout status is ACCEPTED" (xendit-go PayoutApi).
func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	now := s.now()
	s.mu.Lock()
	p, ok := s.payouts[r.PathValue("id")]
	if !ok {
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, "DATA_NOT_FOUND", "Payout not found")
		return
	}
	if st, _ := s.status(p, now); st != "ACCEPTED" {
		s.mu.Unlock()
		writeError(w, http.StatusBadRequest, "CANCELLATION_NOT_ALLOWED", "Payout cannot be cancelled because it is "+st)
		return
	}
	p.cancelled = true
	obj := s.current(p, now)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, obj)
}

// channelJSON is a Payout Channel ("Get payout channels",
// https://docs.xendit.co/apidocs/get-payout-channels).
type channelJSON struct {
	ChannelCode     string     `json:"channel_code"`
	ChannelCategory string     `json:"channel_category"`
	Currency        string     `json:"currency"`
	ChannelName     string     `json:"channel_name"`
	AmountLimits    limitsJSON `json:"amount_limits"`
}

type limitsJSON struct {
	Minimum          int64 `json:"minimum"`
	Maximum          int64 `json:"maximum"`
	MinimumIncrement int64 `json:"minimum_increment"`
}

// Limits: minimum 10000 and increment 1 as the ID_BSI example of "Get
// payout channels"; maximum 250,000,000, the "Local Rails" transaction
// limit of https://docs.xendit.co/docs/payouts-indonesia. PH_AUB is the
// documented PHP example, ID_PANIN a documented Indonesian bank
// (https://docs.xendit.co/remittances/corridors) payoutd has no code for.
var channelList = func() []channelJSON {
	idr := limitsJSON{Minimum: 10_000, Maximum: 250_000_000, MinimumIncrement: 1}
	banks := [][2]string{
		{"ID_BCA", "Bank Central Asia"}, {"ID_BRI", "Bank Rakyat Indonesia"}, {"ID_BNI", "Bank Negara Indonesia"},
		{"ID_MANDIRI", "Bank Mandiri"}, {"ID_CIMB", "CIMB Niaga"}, {"ID_PERMATA", "Bank Permata"},
		{"ID_BSI", "Bank Syariah Indonesia"}, {"ID_DANAMON", "Bank Danamon"}, {"ID_BTN", "Bank Tabungan Negara"},
		{"ID_JAGO", "Bank Jago"}, {"ID_SEABANK", "SeaBank Indonesia"}, {"ID_BNC", "Bank Neo Commerce"},
		{"ID_OCBC", "OCBC NISP"}, {"ID_MAYBANK", "Maybank Indonesia"}, {"ID_PANIN", "Bank Panin"},
	}
	wallets := [][2]string{
		{"ID_DANA", "DANA"}, {"ID_GOPAY", "GoPay"}, {"ID_OVO", "OVO"}, {"ID_LINKAJA", "LinkAja"}, {"ID_SHOPEEPAY", "ShopeePay"},
	}
	var out []channelJSON
	for _, b := range banks {
		out = append(out, channelJSON{b[0], "BANK", "IDR", b[1], idr})
	}
	for _, e := range wallets {
		out = append(out, channelJSON{e[0], "EWALLET", "IDR", e[1], idr})
	}
	out = append(out, channelJSON{"PH_AUB", "BANK", "PHP", "Asia United Bank", limitsJSON{1, 100_000_000, 1}})
	sort.Slice(out, func(i, j int) bool { return out[i].ChannelCode < out[j].ChannelCode })
	return out
}()

func channelByCode(code string) (channelJSON, bool) {
	for _, c := range channelList {
		if c.ChannelCode == code {
			return c, true
		}
	}
	return channelJSON{}, false
}

// channels serves GET /payouts_channels with the documented filters
// currency, channel_category and channel_code: "Returns array of Payout
// Channel objects sorted by alphabetical order by channel_code ... Return
// empty array when not found."
func (s *Server) channels(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	in := func(vals []string, v string) bool {
		if len(vals) == 0 {
			return true
		}
		for _, x := range vals {
			for _, y := range strings.Split(x, ",") {
				if strings.TrimSpace(y) == v {
					return true
				}
			}
		}
		return false
	}
	out := []channelJSON{}
	for _, c := range channelList {
		if in(q["currency"], c.Currency) && in(q["channel_category"], c.ChannelCategory) && in(q["channel_code"], c.ChannelCode) {
			out = append(out, c)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// Complete moves the payout of reference to status by hand (any documented
// status: SUCCEEDED, FAILED, CANCELLED, COMPLIANCE_REJECTED,
// PENDING_COMPLIANCE_ASSESSMENT, REQUESTED, REVERSED, ...), with a
// failure code. A payout already final may only be REVERSED after
// SUCCEEDED.
func (s *Server) Complete(reference, status, failureCode string) error {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.byRef(reference)
	if p == nil {
		return fmt.Errorf("xenditsim: no payout with reference_id %q", reference)
	}
	cur, _ := s.status(p, now)
	if final(cur) && !(cur == "SUCCEEDED" && status == "REVERSED") && cur != status {
		return fmt.Errorf("xenditsim: payout %s is already %s", reference, cur)
	}
	p.manual, p.manualFC = status, failureCode
	return nil
}

func final(st string) bool {
	switch st {
	case "SUCCEEDED", "FAILED", "CANCELLED", "COMPLIANCE_REJECTED", "REVERSED":
		return true
	}
	return false
}

func (s *Server) byRef(reference string) *payout {
	for _, id := range s.order {
		if p := s.payouts[id]; p.obj.ReferenceID == reference {
			return p
		}
	}
	return nil
}

// SubmitCalls is how many creates the payout of reference counted (the
// first and every idempotent replay); 0 if none.
func (s *Server) SubmitCalls(reference string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, p := range s.payouts {
		if p.obj.ReferenceID == reference {
			n += p.calls
		}
	}
	return n
}

// ReferenceReads is how many gets by reference_id (GET
// /v2/payouts?reference_id=) asked for reference, whatever they found.
func (s *Server) ReferenceReads(reference string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads[reference]
}

// Payouts is how many payouts were created for reference.
func (s *Server) Payouts(reference string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, p := range s.payouts {
		if p.obj.ReferenceID == reference {
			n++
		}
	}
	return n
}

// webhookJSON is the body of a payout webhook ("Payout Webhook",
// https://docs.xendit.co/apidocs/payout-webhook-notification).
type webhookJSON struct {
	Event      string     `json:"event"`
	BusinessID string     `json:"business_id"`
	Created    string     `json:"created"`
	Data       payoutJSON `json:"data"`
}

var events = map[string]string{"SUCCEEDED": "payout.succeeded", "FAILED": "payout.failed", "REVERSED": "payout.reversed"}

// Flush POSTs the webhooks due: one per payout whose status turned
// SUCCEEDED, FAILED or REVERSED since its last delivered webhook. A
// delivery that fails is tried again on the next Flush ("automatic retry
// will kick-off for the next 24h"). It returns how many were delivered.
func (s *Server) Flush(ctx context.Context) (int, error) {
	if s.callbackURL == "" {
		return 0, nil
	}
	now := s.now()
	type due struct {
		id     string
		status string
		body   []byte
	}
	var batch []due
	s.mu.Lock()
	for _, id := range s.order {
		p := s.payouts[id]
		obj := s.current(p, now)
		ev, ok := events[obj.Status]
		if !ok || p.notified == obj.Status {
			continue
		}
		body, _ := json.Marshal(webhookJSON{Event: ev, BusinessID: s.businessID, Created: stamp(now.UTC()), Data: obj})
		batch = append(batch, due{id, obj.Status, body})
	}
	s.mu.Unlock()
	sent := 0
	var errs []error
	for _, d := range batch {
		if ctx.Err() != nil {
			break // stopping: what is left waits for the next Flush
		}
		if err := s.deliver(ctx, d.body); err != nil {
			errs = append(errs, err)
			continue
		}
		s.mu.Lock()
		s.payouts[d.id].notified = d.status
		s.mu.Unlock()
		sent++
	}
	return sent, errors.Join(errs...)
}

func (s *Server) deliver(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.callbackURL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-callback-token", s.token)
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("xenditsim webhook: receiver answered %s", resp.Status)
	}
	return nil
}

// Run calls Flush every interval until ctx is done.
func (s *Server) Run(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if _, err := s.Flush(ctx); err != nil && ctx.Err() == nil {
				s.log.WarnContext(ctx, "xenditsim webhook delivery failed; will retry", slog.Any("error", err))
			}
		}
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, errorJSON{ErrorCode: code, Message: msg, ErrorMessage: msg})
}

// newID is "disb-" and 24 hex digits: 29 characters, as the documented ids.
func newID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return "disb-" + hex.EncodeToString(b)
}

func stamp(t time.Time) string { return t.Format("2006-01-02T15:04:05.000Z") }

// mask shows the last 4 digits of an account number only.
func mask(a string) string {
	if len(a) <= 4 {
		return "****"
	}
	return strings.Repeat("*", len(a)-4) + a[len(a)-4:]
}
