package vendorsim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/signature"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// ErrUnauthorized: the server refused the bearer token.
var ErrUnauthorized = errors.New("vendorsim refused the bearer token")

// Secrets are the two secrets shared with a vendorsim server: Token is the
// bearer token of every request (VENDORSIM_TOKEN), CallbackSecret the key
// of the HMAC its callbacks carry (VENDORSIM_CALLBACK_SECRET). They must
// differ: with one secret for both, anyone allowed to call the vendor could
// sign a callback that pays out.
type Secrets struct {
	Token          string
	CallbackSecret string
}

func (s Secrets) check() error {
	switch {
	case s.Token == "":
		return errors.New("vendorsim: a bearer token is required")
	case s.CallbackSecret == "":
		return errors.New("vendorsim: a callback secret is required")
	case s.Token == s.CallbackSecret:
		return errors.New("vendorsim: the bearer token and the callback secret must differ")
	}
	return nil
}

// ClientOptions configure a Client.
type ClientOptions struct {
	// Timeout bounds each HTTP call (default 5 s).
	Timeout time.Duration
	// RetryBackoff is the wait before the second attempt of a retried call,
	// doubled before the third (default 100 ms).
	RetryBackoff time.Duration
	// HTTPClient sends the requests; nil means a keep-alive client of the
	// package (NewRegistry shares one between its clients). Whichever it
	// is, redirects are not followed (vendors.NoRedirects).
	HTTPClient *http.Client
}

// attempts is how often Banks, Inquire, Status and Complete are tried on
// network errors and 5xx. Submit is tried once.
const attempts = 3

// Client is one vendor of a vendorsim server, as a vendors.Vendor. It is
// safe for concurrent use.
type Client struct {
	name    string
	base    string // .../v1/<vendor>
	secrets Secrets
	http    *http.Client
	timeout time.Duration
	backoff time.Duration
}

var (
	_ vendors.Vendor         = (*Client)(nil)
	_ vendors.Completer      = (*Client)(nil)
	_ vendors.CallbackParser = (*Client)(nil)
)

// NewClient returns the client of vendor (simbank or simwallet) on the
// vendorsim server at baseURL (e.g. http://127.0.0.1:8090). It refuses
// secrets that are missing or equal.
func NewClient(baseURL, vendor string, secrets Secrets, o ClientOptions) (*Client, error) {
	if err := secrets.check(); err != nil {
		return nil, err
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = 100 * time.Millisecond
	}
	if o.HTTPClient == nil {
		o.HTTPClient = vendors.NewHTTPClient()
	}
	o.HTTPClient = vendors.NoRedirects(o.HTTPClient)
	return &Client{
		name: vendor, base: strings.TrimRight(baseURL, "/") + "/v1/" + url.PathEscape(vendor),
		secrets: secrets, http: o.HTTPClient, timeout: o.Timeout, backoff: o.RetryBackoff,
	}, nil
}

// NewRegistry returns simbank and simwallet of the vendorsim server at
// baseURL, sharing one keep-alive HTTP client.
func NewRegistry(baseURL string, secrets Secrets, o ClientOptions) (vendors.Registry, error) {
	if o.HTTPClient == nil {
		o.HTTPClient = vendors.NewHTTPClient()
	}
	bank, err := NewClient(baseURL, sandbox.SimBank, secrets, o)
	if err != nil {
		return nil, err
	}
	wallet, err := NewClient(baseURL, sandbox.SimWallet, secrets, o)
	if err != nil {
		return nil, err
	}
	return vendors.NewRegistry(bank, wallet), nil
}

// Name implements vendors.Vendor.
func (c *Client) Name() string { return c.name }

// Banks implements vendors.Vendor.
func (c *Client) Banks(ctx context.Context) ([]vendors.Bank, error) {
	var resp banksResponse
	if err := c.call(ctx, http.MethodGet, "/banks", nil, &resp, attempts); err != nil {
		return nil, err
	}
	banks := make([]vendors.Bank, len(resp.Banks))
	for i, b := range resp.Banks {
		tts := make([]models.TransferType, len(b.TransferTypes))
		for j, tt := range b.TransferTypes {
			tts[j] = models.TransferType(tt)
		}
		banks[i] = vendors.Bank{Code: b.Code, Name: b.Name, SWIFT: b.SWIFT, EWallet: b.EWallet, TransferTypes: tts}
	}
	return banks, nil
}

// Inquire implements vendors.Vendor.
func (c *Client) Inquire(ctx context.Context, req vendors.InquiryRequest) (vendors.Account, error) {
	var resp inquiryResponse
	body := inquiryRequest{BankCode: req.BankCode, AccountNo: req.AccountNo, TransferType: string(req.TransferType)}
	if err := c.call(ctx, http.MethodPost, "/inquiries", body, &resp, attempts); err != nil {
		return vendors.Account{}, err
	}
	return vendors.Account{HolderName: resp.HolderName}, nil
}

// Submit implements vendors.Vendor. It is never retried: a timeout, a
// broken connection or a 5xx is vendors.ErrUnavailable, and the caller asks
// Status for the reference before anything else.
func (c *Client) Submit(ctx context.Context, p vendors.Payout) (vendors.PayoutResult, error) {
	var resp payoutResponse
	body := payoutRequest{
		Reference: p.Reference, BankCode: p.BankCode, AccountNo: p.AccountNo,
		TransferType: string(p.TransferType), Amount: p.Amount.String(), HolderName: p.HolderName,
	}
	if err := c.call(ctx, http.MethodPost, "/payouts", body, &resp, 1); err != nil {
		return vendors.PayoutResult{}, err
	}
	return resp.result()
}

// Status implements vendors.Vendor.
func (c *Client) Status(ctx context.Context, reference string) (vendors.PayoutResult, error) {
	resp, err := c.payout(ctx, reference)
	if err != nil {
		return vendors.PayoutResult{}, err
	}
	return resp.result()
}

// SubmitCalls reports how many submits of reference the vendor counted: 0
// when it never accepted one.
func (c *Client) SubmitCalls(ctx context.Context, reference string) (int, error) {
	resp, err := c.payout(ctx, reference)
	if errors.Is(err, vendors.ErrUnknownPayout) {
		return 0, nil
	}
	return resp.SubmitCalls, err
}

func (c *Client) payout(ctx context.Context, reference string) (payoutResponse, error) {
	var resp payoutResponse
	err := c.call(ctx, http.MethodGet, "/payouts/"+url.PathEscape(reference), nil, &resp, attempts)
	return resp, err
}

// Complete implements vendors.Completer. Completing with the status the
// payout has is a no-op, so it is retried like a read.
func (c *Client) Complete(ctx context.Context, reference string, status vendors.PayoutStatus, reason string) error {
	var resp payoutResponse
	body := completeRequest{Status: string(status), Reason: reason}
	return c.call(ctx, http.MethodPost, "/payouts/"+url.PathEscape(reference)+"/complete", body, &resp, attempts)
}

// ParseCallback implements vendors.CallbackParser: the x-vendor-signature
// header must sign body (not the URL) with the callback secret at a time
// within 5 minutes of now.
func (c *Client) ParseCallback(_ string, header http.Header, body []byte, now time.Time) (vendors.PayoutResult, error) {
	v := signature.Verify(c.secrets.CallbackSecret, header.Get(SignatureHeader), body, now)
	if v.Diagnosis != signature.OK {
		return vendors.PayoutResult{}, fmt.Errorf("%w: %s", vendors.ErrInvalidCallback, v.Diagnosis)
	}
	var cb callbackBody
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cb); err != nil {
		return vendors.PayoutResult{}, fmt.Errorf("%s callback: invalid JSON: %w", c.name, err)
	}
	st := vendors.PayoutStatus(cb.Status)
	if cb.Reference == "" || strings.ContainsRune(cb.Reference, 0) || !st.Final() {
		return vendors.PayoutResult{}, fmt.Errorf("%s callback: want a reference and a status SUCCESS, FAILED or RETURNED, got %q %q", c.name, cb.Reference, cb.Status)
	}
	return vendors.PayoutResult{Reference: cb.Reference, Status: st, FailureReason: storableText(cb.FailureReason)}, nil
}

// storableText keeps a vendor's free text storable: PostgreSQL refuses a
// NUL in text, and a failure reason that cannot be stored would leave the
// payout's result unrecorded, retried for ever.
func storableText(s string) string { return strings.ReplaceAll(s, "\x00", "\uFFFD") }

func (r payoutResponse) result() (vendors.PayoutResult, error) {
	st := vendors.PayoutStatus(r.Status)
	switch st {
	case vendors.PayoutPending, vendors.PayoutSuccess, vendors.PayoutFailed, vendors.PayoutReturned:
	default:
		// Said something, but not what: the outcome stays unknown.
		return vendors.PayoutResult{}, fmt.Errorf("%w: vendor reported status %q", vendors.ErrUnavailable, r.Status)
	}
	return vendors.PayoutResult{Reference: r.Reference, Status: st, FailureReason: storableText(r.FailureReason)}, nil
}

// call sends one request, trying up to tries times on network errors and
// 5xx, and maps error answers to the vendors.Err* sentinels. What fails to
// arrive or to be understood is vendors.ErrUnavailable.
func (c *Client) call(ctx context.Context, method, path string, in, out any, tries int) error {
	var payload []byte
	if in != nil {
		var err error
		if payload, err = json.Marshal(in); err != nil {
			return err
		}
	}
	var last error
	for attempt := 0; attempt < tries; attempt++ {
		if attempt > 0 {
			t := time.NewTimer(c.backoff << (attempt - 1))
			select {
			case <-ctx.Done():
				t.Stop()
				return vendors.Down(fmt.Errorf("%w: %s %s %s: %w (after %v)", vendors.ErrUnavailable, c.name, method, path, ctx.Err(), last))
			case <-t.C:
			}
		}
		status, eb, err := c.do(ctx, method, path, payload, out)
		switch {
		case err != nil:
			last = err
		case status >= 500:
			last = fmt.Errorf("HTTP %d %s: %s", status, eb.Code, eb.Error)
		case status >= 200 && status <= 299:
			return nil
		case status >= 300 && status <= 399:
			// Not the vendor's answer, whatever its body says: a submit's
			// outcome stays unknown. Not retried: it would answer the same.
			return fmt.Errorf("%w: %s %s %s: HTTP %d, a redirect (not followed)", vendors.ErrUnavailable, c.name, method, path, status)
		default:
			return c.mapError(method, path, status, eb)
		}
		if ctx.Err() != nil {
			break
		}
	}
	// No answer, or a 5xx: the vendor is failing (vendors.ErrVendorDown).
	return vendors.Down(fmt.Errorf("%w: %s %s %s: %w", vendors.ErrUnavailable, c.name, method, path, last))
}

// do sends one request with the per-call timeout. err is a failure to get
// (or to read) an answer; otherwise status is the answer's, with eb filled
// for error answers and out for 2xx.
func (c *Client) do(ctx context.Context, method, path string, payload []byte, out any) (int, errorBody, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return 0, errorBody{}, err
	}
	// No Idempotency-Key header: with one, net/http would replay a POST
	// whose connection broke, and a submit must never be resent blindly.
	req.Header.Set("Authorization", "Bearer "+c.secrets.Token)
	req.Header.Set("Accept", "application/json")
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, errorBody{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, errorBody{}, err
	}
	var eb errorBody
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		if err := json.Unmarshal(raw, &eb); err != nil || eb.Code == "" {
			eb = errorBody{Error: strings.TrimSpace(string(raw))}
		}
		return resp.StatusCode, eb, nil
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return 0, errorBody{}, fmt.Errorf("unreadable answer: %w", err)
		}
	}
	return resp.StatusCode, eb, nil
}

func (c *Client) mapError(method, path string, status int, eb errorBody) error {
	switch eb.Code {
	case CodeAccountInactive:
		return models.ErrAccountInactive
	case CodeAccountNotResolved:
		return models.ErrAccountNotResolved
	case CodeUnsupportedBank:
		return models.ErrUnsupportedBank
	case CodeRejected:
		if eb.Reason == "" {
			return vendors.ErrRejected
		}
		return fmt.Errorf("%w: %s", vendors.ErrRejected, storableText(eb.Reason))
	case CodeUnknownPayout:
		return vendors.ErrUnknownPayout
	case CodeAlreadyFinal:
		return fmt.Errorf("%w: %s", sandbox.ErrAlreadyFinal, eb.Error)
	case CodeUnavailable:
		return vendors.Down(fmt.Errorf("%w: %s", vendors.ErrUnavailable, eb.Error))
	case CodeUnauthorized:
		return fmt.Errorf("%w (%s %s %s)", ErrUnauthorized, c.name, method, path)
	}
	return fmt.Errorf("vendorsim %s %s %s: HTTP %d %s: %s", c.name, method, path, status, eb.Code, eb.Error)
}
