package client

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mathrand "math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Defaults of the options.
const (
	DefaultRetries     = 3
	DefaultBackoffBase = 200 * time.Millisecond
	DefaultBackoffMax  = 5 * time.Second
	// DefaultTimeout bounds each attempt of the default HTTP client. A
	// fresh create may wait a few seconds for the vendor's first answer.
	DefaultTimeout = 30 * time.Second
	// MaxRetryAfter is the longest Retry-After a retry waits for; a 429
	// asking for longer is returned to the caller with its RetryAfter.
	MaxRetryAfter = time.Minute
	// MaxIdempotencyKeyLength is the service's limit.
	MaxIdempotencyKeyLength = 64
)

// maxResponseBytes bounds how much of an answer is read.
const maxResponseBytes = 8 << 20

// userAgent identifies the SDK in the service's logs.
const userAgent = "payoutd-go-client/1"

// Client calls the payoutd API with one set of credentials. It is safe for
// concurrent use.
type Client struct {
	base          *url.URL
	apiKey        string
	signingSecret string
	http          *http.Client
	retries       int
	backoffBase   time.Duration
	backoffMax    time.Duration
	now           func() time.Time
	// signV1 signs with the specification's v1 (t and body only) instead
	// of v2 (WithSignatureV1).
	signV1 bool
	// sleep waits between attempts; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sends requests through hc (default: an http.Client with
// DefaultTimeout). Its timeout applies to each attempt.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithRetries sets how many times a call is retried after its first
// attempt (default DefaultRetries); 0 disables retries.
func WithRetries(max int) Option { return func(c *Client) { c.retries = max } }

// WithBackoff sets the exponential backoff between retries: base before
// the first retry, doubling up to max, each wait jittered to between half
// and all of it (defaults DefaultBackoffBase and DefaultBackoffMax).
func WithBackoff(base, max time.Duration) Option {
	return func(c *Client) { c.backoffBase, c.backoffMax = base, max }
}

// WithClock sets the clock the signatures' t is taken from (default
// time.Now). For tests.
func WithClock(now func() time.Time) Option { return func(c *Client) { c.now = now } }

// WithSignatureV1 signs requests with the specification's scheme v1
// (t and the body only) instead of v2, for a service that predates v2.
// v1 does not cover the method, path or Idempotency-Key: someone who sees
// a signed create can send its copy first under another key; the Client
// then reports [IsSignatureUsed] and never resends a create by itself.
func WithSignatureV1() Option { return func(c *Client) { c.signV1 = true } }

// New returns a Client for the service at baseURL (for example
// "https://api.payoutd.example" or "http://localhost:8080") with the API
// key and the Signing Secret issued together.
func New(baseURL, apiKey, signingSecret string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(strings.TrimSpace(baseURL), "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("payoutd: base URL %q must be an absolute http or https URL", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("payoutd: base URL %q must not carry a query or fragment", baseURL)
	}
	if apiKey == "" {
		return nil, errors.New("payoutd: the API key is empty")
	}
	if signingSecret == "" {
		return nil, errors.New("payoutd: the signing secret is empty")
	}
	c := &Client{
		base: u, apiKey: apiKey, signingSecret: signingSecret,
		http:    &http.Client{Timeout: DefaultTimeout},
		retries: DefaultRetries, backoffBase: DefaultBackoffBase, backoffMax: DefaultBackoffMax,
		now: time.Now, sleep: sleepContext,
	}
	for _, o := range opts {
		o(c)
	}
	if c.http != nil {
		// A redirect would send x-api-key and the signature to wherever
		// the answer points; the service never redirects an API call.
		hc := *c.http
		hc.CheckRedirect = refuseRedirect
		c.http = &hc
	}
	switch {
	case c.http == nil:
		return nil, errors.New("payoutd: WithHTTPClient(nil)")
	case c.now == nil:
		return nil, errors.New("payoutd: WithClock(nil)")
	case c.retries < 0:
		return nil, fmt.Errorf("payoutd: WithRetries(%d): must be 0 or more", c.retries)
	case c.backoffBase < 0 || c.backoffMax < c.backoffBase:
		return nil, fmt.Errorf("payoutd: WithBackoff(%v, %v): want 0 <= base <= max", c.backoffBase, c.backoffMax)
	}
	return c, nil
}

// refuseRedirect makes a 3xx answer the call's answer instead of a request
// to another address.
func refuseRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Sign returns the value of a v1 x-signature (or x-callback-signature)
// header for body at now: "t=<unix ms>,v1=<lowercase hex HMAC-SHA256 of
// t + "." + body>", keyed by secret's text as issued. The Client signs
// every request itself (with [SignV2] unless [WithSignatureV1]); Sign is
// for other HTTP stacks, tests and webhook checks.
func Sign(secret string, body []byte, now time.Time) string {
	t := strconv.FormatInt(now.UnixMilli(), 10)
	return "t=" + t + ",v1=" + computeSignature(secret, t, body)
}

// v2Label is the first line of every v2 canonical string.
const v2Label = "PAYOUTD-HMAC-SHA256-V2"

// SignV2 returns the value of a v2 x-signature header: "t=<unix ms>,v2=<hex>",
// the lowercase hex HMAC-SHA256, keyed by secret's text as issued, of
//
//	"PAYOUTD-HMAC-SHA256-V2\n" + t + "\n" + method + "\n" + pathWithQuery + "\n" +
//	idempotencyKey + "\n" + lowercase hex SHA-256 of body
//
// pathWithQuery is the path exactly as sent and, when there is a query,
// "?" and the query exactly as sent; idempotencyKey is "" without one.
// v2 covers everything that decides what a request does, so its signature
// cannot be used for another route, key or body.
func SignV2(secret, method, pathWithQuery, idempotencyKey string, body []byte, now time.Time) string {
	t := strconv.FormatInt(now.UnixMilli(), 10)
	sum := sha256.Sum256(body)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(v2Label + "\n" + t + "\n" + method + "\n" + pathWithQuery + "\n" +
		strings.TrimSpace(idempotencyKey) + "\n" + hex.EncodeToString(sum[:])))
	return "t=" + t + ",v2=" + hex.EncodeToString(mac.Sum(nil))
}

func computeSignature(secret, t string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(t))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// NewIdempotencyKey returns a random key in UUID form (version 4), 36
// characters. Store it with your record of the payout before calling
// CreateDisbursement, so that a retry after a crash reuses it.
func NewIdempotencyKey() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("payoutd: crypto/rand failed: " + err.Error())
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// ListWallets returns the caller's provisioned wallets, oldest first.
func (c *Client) ListWallets(ctx context.Context) (*WalletList, error) {
	var out WalletList
	if _, err := c.call(ctx, http.MethodGet, "/api/v3/wallets", nil, "", &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// WalletBalance returns a wallet's balance, available amount and lock. A
// wallet that is not the caller's (or not provisioned yet) is a 404.
func (c *Client) WalletBalance(ctx context.Context, walletID string) (*WalletBalance, error) {
	var out WalletBalance
	if _, err := c.call(ctx, http.MethodGet, "/api/v3/wallets/"+url.PathEscape(walletID)+"/balance", nil, "", &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// WalletBanks returns the banks (and e-wallets) the wallet's vendor pays
// out to; use their Code as BankCode.
func (c *Client) WalletBanks(ctx context.Context, walletID string) (*BankList, error) {
	var out BankList
	if _, err := c.call(ctx, http.MethodGet, "/api/v3/wallets/"+url.PathEscape(walletID)+"/banks", nil, "", &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// QuoteDisbursement previews the fee and net amount of a payout and
// resolves the account holder by a real-time inquiry. Nothing is locked or
// stored, so it is retried like a read.
func (c *Client) QuoteDisbursement(ctx context.Context, req QuoteRequest) (*Quote, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("payoutd: encode quote request: %w", err)
	}
	var out Quote
	if _, err := c.call(ctx, http.MethodPost, "/api/v3/disbursements/quote", body, "", &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CreateDisbursement creates a payout under idempotencyKey (required, at
// most 64 characters; see NewIdempotencyKey). The request is serialised
// once; every retry sends the same bytes with the same key, re-signed.
//
// A fresh create answers 201, usually with status REQUESTED (the vendor
// accepted it) or VERIFIED (still on its way); the final SUCCESS or FAILED
// comes by webhook and by GetDisbursement. When the key was used before
// with the same parameters the answer is a replay: Replayed is set and the
// disbursement is as stored now. Final refusals are *APIError: 402
// Insufficient balance, 422 (bank, account, minimum, key reused with other
// parameters), 503 Vendor payout request failed (the payout is FAILED),
// 410 Withdrawal lock has expired, 409 disbursement was cancelled.
func (c *Client) CreateDisbursement(ctx context.Context, req CreateDisbursementRequest, idempotencyKey string) (*Disbursement, error) {
	if idempotencyKey == "" {
		return nil, ErrIdempotencyKeyRequired
	}
	if len(idempotencyKey) > MaxIdempotencyKeyLength {
		return nil, fmt.Errorf("payoutd: the Idempotency-Key has %d characters, at most %d are allowed", len(idempotencyKey), MaxIdempotencyKeyLength)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("payoutd: encode disbursement request: %w", err)
	}
	var out Disbursement
	resp, err := c.call(ctx, http.MethodPost, "/api/v3/disbursements", body, idempotencyKey, &out)
	if err != nil {
		return nil, err
	}
	out.Replayed = resp.replayed
	return &out, nil
}

// GetDisbursement returns a disbursement of the caller as stored now; one
// of another client, or none, is a 404.
func (c *Client) GetDisbursement(ctx context.Context, id string) (*Disbursement, error) {
	var out Disbursement
	if _, err := c.call(ctx, http.MethodGet, "/api/v3/disbursements/"+url.PathEscape(id), nil, "", &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SignatureCheck sends body (any JSON object), signed as every request is,
// to the diagnostic endpoint and returns its verdict: a quick way to check
// the credentials and the clock. The body is sent byte for byte as given.
// The service allows 20 calls per minute per client.
func (c *Client) SignatureCheck(ctx context.Context, body []byte) (*SignatureCheck, error) {
	if body == nil {
		body = []byte{}
	}
	var out SignatureCheck
	if _, err := c.call(ctx, http.MethodPost, "/api/v3/debug/signature-check", body, "", &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// answer is what call learnt beyond the decoded body.
type answer struct {
	status   int
	replayed bool
}

// call sends one API request, retrying as the package documents, and
// decodes a 2xx answer into out. body nil means no body (a GET); the same
// body bytes are sent, and signed, on every attempt.
func (c *Client) call(ctx context.Context, method, path string, body []byte, idempotencyKey string, out any) (answer, error) {
	return c.send(ctx, method, path, body, idempotencyKey, out, true)
}

// callOnce is call for a request that cannot be resent safely (a create
// without an Idempotency-Key): only an answer that says nothing was done
// (429) is retried.
func (c *Client) callOnce(ctx context.Context, method, path string, body []byte, out any) (answer, error) {
	return c.send(ctx, method, path, body, "", out, false)
}

// send is call; resendable says whether an attempt whose outcome is
// unknown (a network error, a 5xx) may be sent again.
func (c *Client) send(ctx context.Context, method, path string, body []byte, idempotencyKey string, out any, resendable bool) (answer, error) {
	target := c.base.String() + path
	resigned := false
	at := c.now()
	for attempt := 0; ; attempt++ {
		ans, raw, err := c.attempt(ctx, method, target, body, idempotencyKey, at)
		if err == nil {
			if err := json.Unmarshal(raw, out); err != nil {
				return ans, fmt.Errorf("payoutd: decode %s %s answer (%d): %w", method, path, ans.status, err)
			}
			return ans, nil
		}
		if !resigned && IsSignatureUsed(err) && !movesMoney(method, path) {
			// A v1 signature covers t and the body only: another read
			// signed in the same millisecond (an empty body) was sent
			// first. Sign again with a later t, once, besides the
			// retries. Never for a create: the signature may have been
			// used by a copy of this very request sent by someone else,
			// and a create sent again under a new signature would then
			// run twice.
			resigned, attempt = true, attempt-1
			if serr := c.sleep(ctx, time.Millisecond); serr != nil {
				return ans, joinContext(serr, err)
			}
			at = laterMillisecond(c.now(), at)
			continue
		}
		wait, retry := c.retryable(err, attempt)
		if apiErr, ok := AsAPIError(err); !resendable && (!ok || apiErr.StatusCode != http.StatusTooManyRequests) {
			retry = false
		}
		if !retry {
			return ans, err
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ans, joinContext(ctxErr, err)
		}
		if serr := c.sleep(ctx, wait); serr != nil {
			return ans, joinContext(serr, err)
		}
		at = c.now()
	}
}

// movesMoney reports whether a request creates a disbursement or a
// payment: the requests that are never re-signed by the Client.
func movesMoney(method, path string) bool {
	path, _, _ = strings.Cut(path, "?")
	return method == http.MethodPost && (path == "/api/v3/disbursements" || path == "/api/v1/payments")
}

// laterMillisecond is now, or one millisecond after prev when the clock has
// not moved past prev's millisecond, so that a signature made at it has a t
// of its own.
func laterMillisecond(now, prev time.Time) time.Time {
	if now.UnixMilli() > prev.UnixMilli() {
		return now
	}
	return time.UnixMilli(prev.UnixMilli() + 1)
}

// joinContext reports that the context ended, keeping the last attempt's
// error reachable with errors.As / errors.Is.
func joinContext(ctxErr, last error) error {
	if errors.Is(last, ctxErr) {
		return last
	}
	return fmt.Errorf("payoutd: %w (last attempt: %w)", ctxErr, last)
}

// retryable decides whether the outcome of attempt (0 for the first) is
// worth another attempt, and after how long.
func (c *Client) retryable(err error, attempt int) (time.Duration, bool) {
	if attempt >= c.retries {
		return 0, false
	}
	apiErr, isAPI := AsAPIError(err)
	if !isAPI {
		var nerr *networkError
		if errors.As(err, &nerr) {
			return c.backoff(attempt), true
		}
		return 0, false
	}
	switch {
	case apiErr.StatusCode == http.StatusTooManyRequests:
		if apiErr.RetryAfter > MaxRetryAfter {
			return 0, false
		}
		if apiErr.RetryAfter > 0 {
			return apiErr.RetryAfter, true
		}
		return c.backoff(attempt), true
	case isConcurrent(apiErr):
		return c.backoff(attempt), true
	case apiErr.StatusCode >= 500:
		// A FAILED payout's stored answer is final; so is a route the
		// service does not implement.
		if isVendorFailed(apiErr) || apiErr.StatusCode == http.StatusNotImplemented {
			return 0, false
		}
		return c.backoff(attempt), true
	}
	return 0, false
}

// backoff is base*2^attempt capped at max, jittered to [d/2, d].
func (c *Client) backoff(attempt int) time.Duration {
	d := c.backoffBase
	for i := 0; i < attempt && d < c.backoffMax; i++ {
		d *= 2
	}
	d = min(d, c.backoffMax)
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + mathrand.N(d-half+1)
}

func sleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// networkError is a failure to get an answer: the outcome is unknown.
type networkError struct{ err error }

func (e *networkError) Error() string { return "payoutd: " + e.err.Error() }
func (e *networkError) Unwrap() error { return e.err }

// attempt sends the request once, signed at at, and returns a 2xx answer's
// body, or an *APIError, or a *networkError.
func (c *Client) attempt(ctx context.Context, method, target string, body []byte, idempotencyKey string, at time.Time) (answer, []byte, error) {
	resp, err := c.do(ctx, method, target, body, idempotencyKey, at)
	if err != nil {
		return answer{}, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return answer{status: resp.StatusCode}, nil, &networkError{fmt.Errorf("read answer: %w", err)}
	}
	ans := answer{status: resp.StatusCode, replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return ans, raw, nil
	}
	return ans, nil, c.apiError(resp, raw)
}

// do sends one signed request.
func (c *Client) do(ctx context.Context, method, target string, body []byte, idempotencyKey string, at time.Time) (*http.Response, error) {
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, reader)
	if err != nil {
		return nil, fmt.Errorf("payoutd: build request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("x-api-key", c.apiKey)
	if c.signV1 {
		req.Header.Set("x-signature", Sign(c.signingSecret, body, at))
	} else {
		target := req.URL.EscapedPath()
		if req.URL.RawQuery != "" {
			target += "?" + req.URL.RawQuery
		}
		req.Header.Set("x-signature", SignV2(c.signingSecret, method, target, idempotencyKey, body, at))
	}
	if idempotencyKey != "" {
		req.Header.Set("Idempotency-Key", idempotencyKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, &networkError{err}
	}
	return resp, nil
}

// apiError is the *APIError of a refused answer whose body is raw.
func (c *Client) apiError(resp *http.Response, raw []byte) error {
	ans := answer{status: resp.StatusCode, replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
	apiErr := &APIError{
		StatusCode: resp.StatusCode,
		RequestID:  resp.Header.Get("X-Request-Id"),
		Replayed:   ans.replayed,
		RetryAfter: c.parseRetryAfter(resp.Header.Get("Retry-After")),
	}
	var e struct {
		Error *string `json:"error"`
		Hint  string  `json:"hint"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Error != nil {
		apiErr.Message, apiErr.Hint = *e.Error, e.Hint
	} else {
		apiErr.Message = http.StatusText(resp.StatusCode)
	}
	return apiErr
}

// parseRetryAfter reads seconds or an HTTP date; 0 when absent or invalid.
func (c *Client) parseRetryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		if secs > int64(24*time.Hour/time.Second) {
			return 24 * time.Hour
		}
		return time.Duration(secs) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil {
		if d := at.Sub(c.now()); d > 0 {
			return d
		}
	}
	return 0
}
