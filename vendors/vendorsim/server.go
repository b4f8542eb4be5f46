package vendorsim

import (
	"bytes"
	"context"
	"crypto/subtle"
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
	"github.com/payoutd/payoutd/signature"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// ServerOptions configure a Server.
type ServerOptions struct {
	// Token is the bearer token clients must send. Required.
	Token string
	// CallbackSecret is the key callbacks are signed with. Required, and
	// never the Token: whoever may call the simulator must not be able to
	// forge its callbacks.
	CallbackSecret string
	// Sandbox configures simbank and simwallet (CompleteAfter, Now, Store;
	// a nil Store gives each vendor a MemoryStore).
	Sandbox sandbox.Options
	// CallbackURL is where final payouts are reported, as
	// <CallbackURL>/<vendor>. Empty: no callbacks.
	CallbackURL string
	// PollInterval is how often the callback loop looks for payouts that
	// turned final and for callbacks due (default 250 ms).
	PollInterval time.Duration
	// RetryBackoff is the wait after a failed callback delivery, doubled
	// after each further failure up to 5 minutes (default 1 s).
	RetryBackoff time.Duration
	// MaxAttempts bounds the deliveries of one callback (default 10).
	MaxAttempts int
	// CallbackTimeout bounds one delivery (default 10 s).
	CallbackTimeout time.Duration
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// Server serves simbank and simwallet over HTTP and, with a CallbackURL,
// reports final payouts to it once Run is running.
type Server struct {
	token          string
	callbackSecret string
	vendors        map[string]*sandbox.Vendor
	mux            *http.ServeMux
	log            *slog.Logger

	callbackURL     string
	pollInterval    time.Duration
	retryBackoff    time.Duration
	maxAttempts     int
	callbackTimeout time.Duration
	httpClient      *http.Client

	mu         sync.Mutex
	pending    map[payoutKey]*watched  // accepted, not yet settled
	deliveries map[payoutKey]*delivery // callbacks not yet accepted
}

// watched is a payout the callback loop asks about until it is settled
// (final, and not to be returned later), with the last status reported.
type watched struct {
	vendor   *sandbox.Vendor
	reported vendors.PayoutStatus
}

type payoutKey struct{ vendor, reference string }

type delivery struct {
	body     []byte
	attempts int
	due      time.Time
}

// NewServer returns a Server for both sandbox vendors.
func NewServer(o ServerOptions) (*Server, error) {
	if err := (Secrets{Token: o.Token, CallbackSecret: o.CallbackSecret}).check(); err != nil {
		return nil, err
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 250 * time.Millisecond
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = time.Second
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 10
	}
	if o.CallbackTimeout <= 0 {
		o.CallbackTimeout = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &Server{
		token:          o.Token,
		callbackSecret: o.CallbackSecret,
		vendors: map[string]*sandbox.Vendor{
			sandbox.SimBank:   sandbox.NewSimBank(o.Sandbox),
			sandbox.SimWallet: sandbox.NewSimWallet(o.Sandbox),
		},
		mux:             http.NewServeMux(),
		log:             o.Logger,
		callbackURL:     strings.TrimRight(o.CallbackURL, "/"),
		pollInterval:    o.PollInterval,
		retryBackoff:    o.RetryBackoff,
		maxAttempts:     o.MaxAttempts,
		callbackTimeout: o.CallbackTimeout,
		httpClient:      &http.Client{Timeout: o.CallbackTimeout},
		pending:         map[payoutKey]*watched{},
		deliveries:      map[payoutKey]*delivery{},
	}
	s.mux.HandleFunc("GET /v1/{vendor}/banks", s.withVendor(s.banks))
	s.mux.HandleFunc("POST /v1/{vendor}/inquiries", s.withVendor(s.inquire))
	s.mux.HandleFunc("POST /v1/{vendor}/payouts", s.withVendor(s.submit))
	s.mux.HandleFunc("GET /v1/{vendor}/payouts/{reference}", s.withVendor(s.status))
	s.mux.HandleFunc("POST /v1/{vendor}/payouts/{reference}/complete", s.withVendor(s.complete))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, CodeNotFound, "no such route: "+r.Method+" "+r.URL.Path, "")
	})
	return s, nil
}

// ServeHTTP implements http.Handler: every request must carry the bearer
// token.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	want := "Bearer " + s.token
	if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte(want)) != 1 {
		writeError(w, http.StatusUnauthorized, CodeUnauthorized, "missing or wrong bearer token", "")
		return
	}
	s.mux.ServeHTTP(w, r)
}

// Vendor returns the named sandbox vendor, or nil.
func (s *Server) Vendor(name string) *sandbox.Vendor { return s.vendors[name] }

type vendorHandler func(w http.ResponseWriter, r *http.Request, v *sandbox.Vendor)

func (s *Server) withVendor(h vendorHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, ok := s.vendors[r.PathValue("vendor")]
		if !ok {
			writeError(w, http.StatusNotFound, CodeUnknownVendor, fmt.Sprintf("no vendor %q", r.PathValue("vendor")), "")
			return
		}
		h(w, r, v)
	}
}

func (s *Server) banks(w http.ResponseWriter, r *http.Request, v *sandbox.Vendor) {
	banks, err := v.Banks(r.Context())
	if err != nil {
		s.writeVendorError(w, r, err)
		return
	}
	resp := banksResponse{Banks: make([]bankJSON, len(banks))}
	for i, b := range banks {
		tts := make([]string, len(b.TransferTypes))
		for j, tt := range b.TransferTypes {
			tts[j] = string(tt)
		}
		resp.Banks[i] = bankJSON{Code: b.Code, Name: b.Name, SWIFT: b.SWIFT, EWallet: b.EWallet, TransferTypes: tts}
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) inquire(w http.ResponseWriter, r *http.Request, v *sandbox.Vendor) {
	var req inquiryRequest
	if !decode(w, r, &req) {
		return
	}
	acc, err := v.Inquire(r.Context(), vendors.InquiryRequest{
		BankCode: req.BankCode, AccountNo: req.AccountNo, TransferType: models.TransferType(req.TransferType),
	})
	if err != nil {
		s.writeVendorError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, inquiryResponse{HolderName: acc.HolderName})
}

func (s *Server) submit(w http.ResponseWriter, r *http.Request, v *sandbox.Vendor) {
	var req payoutRequest
	if !decode(w, r, &req) {
		return
	}
	if req.Reference == "" {
		writeError(w, http.StatusBadRequest, CodeBadRequest, "reference is required", "")
		return
	}
	amount, err := models.ParsePositiveAmount(req.Amount)
	if err != nil {
		writeError(w, http.StatusBadRequest, CodeBadRequest, "amount "+err.Error(), "")
		return
	}
	res, err := v.Submit(r.Context(), vendors.Payout{
		Reference: req.Reference, BankCode: req.BankCode, AccountNo: req.AccountNo,
		TransferType: models.TransferType(req.TransferType), Amount: amount, HolderName: req.HolderName,
	})
	if errors.Is(err, sandbox.ErrAnswerLost) {
		// Accepted and recorded, but the caller never hears so.
		s.track(r.Context(), v, req.Reference, "")
		s.log.InfoContext(r.Context(), "vendorsim dropped the answer to a first submit",
			slog.String("vendor", v.Name()), slog.String("reference", req.Reference))
		dropConnection(w)
		return
	}
	if err != nil {
		s.writeVendorError(w, r, err)
		return
	}
	// The caller hears this answer; what changes later is called back.
	s.track(r.Context(), v, res.Reference, res.Status)
	s.writePayout(w, r, v, res)
}

func (s *Server) status(w http.ResponseWriter, r *http.Request, v *sandbox.Vendor) {
	res, err := v.Status(r.Context(), r.PathValue("reference"))
	if err != nil {
		s.writeVendorError(w, r, err)
		return
	}
	s.writePayout(w, r, v, res)
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request, v *sandbox.Vendor) {
	var req completeRequest
	if !decode(w, r, &req) {
		return
	}
	status := vendors.PayoutStatus(req.Status)
	if status != vendors.PayoutSuccess && status != vendors.PayoutFailed {
		writeError(w, http.StatusBadRequest, CodeBadRequest, "status must be SUCCESS or FAILED", "")
		return
	}
	ref := r.PathValue("reference")
	if err := v.Complete(r.Context(), ref, status, req.Reason); err != nil {
		s.writeVendorError(w, r, err)
		return
	}
	res, err := v.Status(r.Context(), ref)
	if err != nil {
		s.writeVendorError(w, r, err)
		return
	}
	// Reported now, whether or not this server saw it accepted.
	s.finished(r.Context(), v, res)
	s.writePayout(w, r, v, res)
}

func (s *Server) writePayout(w http.ResponseWriter, r *http.Request, v *sandbox.Vendor, res vendors.PayoutResult) {
	calls, err := v.SubmitCalls(r.Context(), res.Reference)
	if err != nil {
		s.writeVendorError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, payoutResponse{
		Reference: res.Reference, Status: string(res.Status), FailureReason: res.FailureReason, SubmitCalls: calls,
	})
}

// writeVendorError answers a vendor error with its status and code.
func (s *Server) writeVendorError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, models.ErrAccountInactive):
		writeError(w, http.StatusUnprocessableEntity, CodeAccountInactive, models.ErrAccountInactive.Error(), "")
	case errors.Is(err, models.ErrAccountNotResolved):
		writeError(w, http.StatusUnprocessableEntity, CodeAccountNotResolved, models.ErrAccountNotResolved.Error(), "")
	case errors.Is(err, models.ErrUnsupportedBank):
		writeError(w, http.StatusUnprocessableEntity, CodeUnsupportedBank, models.ErrUnsupportedBank.Error(), "")
	case errors.Is(err, vendors.ErrRejected):
		reason := strings.TrimPrefix(err.Error(), vendors.ErrRejected.Error()+": ")
		writeError(w, http.StatusUnprocessableEntity, CodeRejected, err.Error(), reason)
	case errors.Is(err, vendors.ErrUnknownPayout):
		writeError(w, http.StatusNotFound, CodeUnknownPayout, vendors.ErrUnknownPayout.Error(), "")
	case errors.Is(err, sandbox.ErrAlreadyFinal):
		writeError(w, http.StatusConflict, CodeAlreadyFinal, err.Error(), "")
	case errors.Is(err, vendors.ErrUnavailable):
		writeError(w, http.StatusServiceUnavailable, CodeUnavailable, vendors.ErrUnavailable.Error(), "")
	default:
		s.log.ErrorContext(r.Context(), "vendorsim request failed", slog.String("path", r.URL.Path), slog.Any("error", err))
		writeError(w, http.StatusInternalServerError, CodeInternal, "internal error", "")
	}
}

// dropConnection closes the connection without an answer, as a vendor
// whose response never arrives.
func dropConnection(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler) // HTTP/2: resets the stream
}

const maxRequestBody = 64 << 10

// decode reads a JSON request body strictly; on failure it answers 400.
func decode(w http.ResponseWriter, r *http.Request, dst any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequestBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value")
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, CodeBadRequest, "invalid JSON body: "+err.Error(), "")
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg, reason string) {
	writeJSON(w, status, errorBody{Error: msg, Code: code, Reason: reason})
}

// track remembers an accepted payout, whose caller was told answered
// (PENDING, or a final status; "" when the answer was lost), until the
// callback loop sees it settled.
func (s *Server) track(ctx context.Context, v *sandbox.Vendor, reference string, answered vendors.PayoutStatus) {
	if s.callbackURL == "" {
		return
	}
	if answered.Final() {
		if settled, err := v.Settled(ctx, reference); err == nil && settled {
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := payoutKey{v.Name(), reference}
	if s.pending[key] == nil {
		s.pending[key] = &watched{vendor: v}
	}
	if answered.Final() {
		s.pending[key].reported = answered
	}
}

// finished queues the callback for a payout's new final status (replacing
// one not yet delivered). A payout is watched until it is settled: a paid
// 1000000008 is reported again when it is returned.
func (s *Server) finished(ctx context.Context, v *sandbox.Vendor, res vendors.PayoutResult) {
	if s.callbackURL == "" || !res.Status.Final() {
		return
	}
	settled, err := v.Settled(ctx, res.Reference)
	if err != nil {
		settled = false // asked again on the next round
	}
	body, _ := json.Marshal(callbackBody{Reference: res.Reference, Status: string(res.Status), FailureReason: res.FailureReason})
	key := payoutKey{v.Name(), res.Reference}
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.pending[key]
	if w == nil {
		w = &watched{vendor: v}
	}
	if w.reported != res.Status {
		w.reported = res.Status
		s.deliveries[key] = &delivery{body: body}
	}
	if settled {
		delete(s.pending, key)
	} else {
		s.pending[key] = w
	}
}

// Run delivers callbacks until ctx is done: every PollInterval it asks the
// vendors about payouts accepted and not yet final, queues a callback for
// each that turned final, and sends the callbacks due, each retried with
// backoff until a 2xx or MaxAttempts. Without a CallbackURL it only waits.
func (s *Server) Run(ctx context.Context) error {
	if s.callbackURL == "" {
		<-ctx.Done()
		return nil
	}
	ticker := time.NewTicker(s.pollInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
			s.pollPending(ctx)
			s.deliverDue(ctx)
		}
	}
}

func (s *Server) pollPending(ctx context.Context) {
	s.mu.Lock()
	watch := make(map[payoutKey]*sandbox.Vendor, len(s.pending))
	for k, w := range s.pending {
		watch[k] = w.vendor
	}
	s.mu.Unlock()
	for k, v := range watch {
		res, err := v.Status(ctx, k.reference)
		if err != nil {
			if ctx.Err() == nil {
				s.log.WarnContext(ctx, "vendorsim could not read a payout", slog.String("vendor", k.vendor),
					slog.String("reference", k.reference), slog.Any("error", err))
			}
			continue
		}
		s.finished(ctx, v, res)
	}
}

func (s *Server) deliverDue(ctx context.Context) {
	now := time.Now()
	type due struct {
		key  payoutKey
		body []byte
	}
	var batch []due
	s.mu.Lock()
	for k, d := range s.deliveries {
		if !d.due.After(now) {
			batch = append(batch, due{k, d.body})
		}
	}
	s.mu.Unlock()
	for _, d := range batch {
		if ctx.Err() != nil {
			return
		}
		err := s.deliver(ctx, d.key.vendor, d.body)
		s.mu.Lock()
		cur, ok := s.deliveries[d.key]
		if !ok || !bytes.Equal(cur.body, d.body) {
			// Replaced by a newer result meanwhile: that one is still due.
			s.mu.Unlock()
			continue
		}
		if err == nil {
			delete(s.deliveries, d.key)
			s.mu.Unlock()
			s.log.InfoContext(ctx, "vendorsim callback delivered", slog.String("vendor", d.key.vendor),
				slog.String("reference", d.key.reference), slog.Int("attempt", cur.attempts+1))
			continue
		}
		cur.attempts++
		if cur.attempts >= s.maxAttempts {
			delete(s.deliveries, d.key)
			s.mu.Unlock()
			s.log.ErrorContext(ctx, "vendorsim gave up delivering a callback", slog.String("vendor", d.key.vendor),
				slog.String("reference", d.key.reference), slog.Int("attempts", cur.attempts), slog.Any("error", err))
			continue
		}
		wait := s.retryBackoff << (cur.attempts - 1)
		if wait > 5*time.Minute || wait <= 0 {
			wait = 5 * time.Minute
		}
		cur.due = time.Now().Add(wait)
		s.mu.Unlock()
		s.log.WarnContext(ctx, "vendorsim callback failed, will retry", slog.String("vendor", d.key.vendor),
			slog.String("reference", d.key.reference), slog.Int("attempt", cur.attempts),
			slog.Duration("retry_in", wait), slog.Any("error", err))
	}
}

// deliver POSTs one signed callback; nil means the receiver answered 2xx.
func (s *Server) deliver(ctx context.Context, vendor string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, s.callbackTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.callbackURL+"/"+vendor, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(SignatureHeader, signature.Sign(s.callbackSecret, body, time.Now()))
	resp, err := s.httpClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("receiver answered %s", resp.Status)
	}
	return nil
}
