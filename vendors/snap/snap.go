package snap

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"crypto/rsa"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/payoutd/payoutd/internal/safeurl"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
)

// Options configure a Vendor. Everything but HTTPClient, Now, Store,
// Notifications, BankPublicKey, NotifyWindow and Timeout is required.
type Options struct {
	Bank         string // our bank, lowercase slug ("bca"): Name is "snap:<Bank>"
	BaseURL      string // e.g. https://sandbox.bank.example (paths are appended)
	PartnerID    string // X-PARTNER-ID
	ClientKey    string // X-CLIENT-KEY
	ClientSecret string // HMAC-SHA512 key of service signatures
	ChannelID    string // CHANNEL-ID
	// PrivateKey is the platform's key; the bank holds its public key and
	// checks the access token request with it.
	PrivateKey *rsa.PrivateKey
	// Notifications says the bank sends transfer result notifications to
	// the service (ParseCallback), returns included. SNAP leaves them to
	// the bank: without them every notification is refused, the status
	// inquiry alone moves payouts, and the vendor does not notify
	// (vendors.Notifies), so that its paid payouts are asked about returns.
	Notifications bool
	// BankPublicKey verifies what the bank signs: its transfer result
	// notifications ([PM-SIG] "Asynchronous Notification" SHA256withRSA,
	// [BNC-NOTIFY]). Required with Notifications.
	BankPublicKey *rsa.PublicKey
	// NotifyWindow is how far a notification's X-TIMESTAMP may be from
	// now (default DefaultNotifyWindow).
	NotifyWindow    time.Duration
	SourceAccountNo string       // the platform's account the transfers debit
	HTTPClient      *http.Client // nil: vendors.NewHTTPClient(); never follows redirects (vendors.NoRedirects)
	Now             func() time.Time
	Store           Store
	// Timeout bounds each HTTP call (default 15 s).
	Timeout time.Duration
}

// Vendor is a SNAP bank as a vendors.Vendor. Safe for concurrent use.
type Vendor struct {
	o      Options
	banks  []vendors.Bank
	random func() uint64

	mu      sync.Mutex
	token   string
	expires time.Time
	flight  singleflight.Group
}

var (
	_ vendors.Vendor         = (*Vendor)(nil)
	_ vendors.CallbackParser = (*Vendor)(nil)
	_ vendors.Notifying      = (*Vendor)(nil)
)

// New returns the vendor of o.
func New(o Options) (*Vendor, error) {
	switch {
	case o.Bank == "", o.BaseURL == "", o.PartnerID == "", o.ClientKey == "", o.ClientSecret == "", o.ChannelID == "", o.SourceAccountNo == "":
		return nil, errors.New("snap: Bank, BaseURL, PartnerID, ClientKey, ClientSecret, ChannelID and SourceAccountNo are required")
	case o.PrivateKey == nil:
		return nil, errors.New("snap: the platform's PrivateKey is required")
	case o.Notifications && o.BankPublicKey == nil:
		return nil, errors.New("snap: Notifications need the BankPublicKey that verifies them")
	}
	o.Bank = strings.ToLower(o.Bank)
	o.BaseURL = strings.TrimRight(o.BaseURL, "/")
	if o.HTTPClient == nil {
		o.HTTPClient = vendors.NewHTTPClient()
	}
	// A 3xx is then the answer: DecodeResponse takes it for an unknown
	// outcome (no SNAP responseCode is a 3xx's).
	o.HTTPClient = vendors.NoRedirects(o.HTTPClient)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Store == nil {
		o.Store = NewMemoryStore()
	}
	if o.Timeout <= 0 {
		o.Timeout = 15 * time.Second
	}
	if o.NotifyWindow <= 0 {
		o.NotifyWindow = DefaultNotifyWindow
	}
	var banks []vendors.Bank
	for _, b := range vendors.Directory() {
		if b.EWallet || BICode(b.Code) == "" {
			continue // e-wallets are SNAP's emoney top-up service, not interbank transfer
		}
		b.TransferTypes = []models.TransferType{models.BIFAST, models.RTOL}
		banks = append(banks, b)
	}
	return &Vendor{o: o, banks: banks, random: cryptoUint64}, nil
}

func cryptoUint64() uint64 {
	var b [8]byte
	_, _ = crand.Read(b[:])
	return binary.BigEndian.Uint64(b[:])
}

// biCodes are the 3-digit BI bank codes of vendors/banks.tsv (column
// bi_code), which beneficiaryBankCode carries ([MT-INQ]).
var biCodes = map[string]string{
	"bca": "014", "bri": "002", "bni": "009", "mandiri": "008", "cimb": "022",
	"permata": "013", "bsi": "451", "danamon": "011", "btn": "200", "jago": "542",
	"seabank": "535", "neo": "490", "ocbc": "028", "maybank": "016",
}

// BICode is the BI bank code of a bank slug, "" when unknown.
func BICode(slug string) string { return biCodes[strings.ToLower(strings.TrimSpace(slug))] }

// Name implements vendors.Vendor: "snap:<bank>".
func (v *Vendor) Name() string { return "snap:" + v.o.Bank }

// Banks implements vendors.Vendor: the banks of the directory with a BI
// code, BIFAST and RTOL. SNAP has no bank-list service; e-wallets are not
// reached by interbank transfer.
func (v *Vendor) Banks(context.Context) ([]vendors.Bank, error) {
	return append([]vendors.Bank(nil), v.banks...), nil
}

// Inquire implements vendors.Vendor with the external account inquiry.
func (v *Vendor) Inquire(ctx context.Context, req vendors.InquiryRequest) (vendors.Account, error) {
	bank, ok := vendors.FindBank(v.banks, req.BankCode)
	if !ok {
		return vendors.Account{}, models.ErrUnsupportedBank
	}
	account := strings.TrimSpace(req.AccountNo)
	if !validAccount(account) {
		return vendors.Account{}, models.ErrAccountNotResolved
	}
	body := InquiryRequest{BeneficiaryBankCode: BICode(bank.Code), BeneficiaryAccountNo: account}
	var resp InquiryResponse
	c, err := v.call(ctx, PathInquiry, v.newExternalID(), body, &resp)
	if err != nil {
		return vendors.Account{}, err
	}
	if c.Kind() != KindSuccess {
		return vendors.Account{}, inquiryError(c)
	}
	if strings.TrimSpace(resp.BeneficiaryAccountName) == "" {
		return vendors.Account{}, fmt.Errorf("%w: SNAP %s without beneficiaryAccountName", vendors.ErrUnavailable, c)
	}
	return vendors.Account{HolderName: resp.BeneficiaryAccountName}, nil
}

// validAccount: ASCII digits, 4 to 34 of them (beneficiaryAccountNo
// String(34), [MT-XFER]).
func validAccount(s string) bool { return len(s) >= 4 && len(s) <= 34 && allDigits(s) }

// Submit implements vendors.Vendor with the interbank transfer. The
// beneficiaryAccountName the transfer requires ([MT-XFER]) is the payout's
// holder name, which the service took from this bank's inquiry at the
// create; a payout without one (made before payouts carried it) gets it
// from an account inquiry made first. An answer that does not settle the outcome
// (network error, timeout, 5xx, unknown code) is ErrUnavailable; a
// duplicate (409xx00, 409xx01) is answered by a status inquiry.
func (v *Vendor) Submit(ctx context.Context, p vendors.Payout) (vendors.PayoutResult, error) {
	bank, ok := vendors.FindBank(v.banks, p.BankCode)
	if !ok || !bank.SupportsTransfer(p.TransferType) {
		return vendors.PayoutResult{}, fmt.Errorf("%w: %s does not support %s to %s", vendors.ErrRejected, v.Name(), p.TransferType, p.BankCode)
	}
	if p.Reference == "" || len(p.Reference) > 64 {
		return vendors.PayoutResult{}, fmt.Errorf("%w: partnerReferenceNo must be 1 to 64 characters", vendors.ErrRejected)
	}
	amount, err := FormatAmount(p.Amount)
	if err != nil {
		return vendors.PayoutResult{}, fmt.Errorf("%w: %w", vendors.ErrRejected, err)
	}
	account := strings.TrimSpace(p.AccountNo)
	if !validAccount(account) {
		return vendors.PayoutResult{}, fmt.Errorf("%w: %w", vendors.ErrRejected, models.ErrAccountNotResolved)
	}
	holder := vendors.Account{HolderName: p.HolderName}
	if holder.HolderName == "" {
		var err error
		holder, err = v.Inquire(ctx, vendors.InquiryRequest{BankCode: bank.Code, AccountNo: account, TransferType: p.TransferType})
		switch {
		case errors.Is(err, models.ErrAccountInactive), errors.Is(err, models.ErrAccountNotResolved):
			return vendors.PayoutResult{}, fmt.Errorf("%w: %w", vendors.ErrRejected, err)
		case err != nil:
			return vendors.PayoutResult{}, err // unavailable: nothing was sent
		}
	}
	t := Transfer{Reference: p.Reference, ExternalID: TransferExternalID(p.Reference), Date: Timestamp(v.o.Now())}
	if old, ok, err := v.o.Store.Get(ctx, p.Reference); err == nil && ok {
		t = old // a resubmit sends what the first submit sent
	}
	if err := v.o.Store.Put(ctx, t); err != nil {
		return vendors.PayoutResult{}, fmt.Errorf("%w: %w", vendors.ErrUnavailable, err)
	}
	if stored, ok, err := v.o.Store.Get(ctx, p.Reference); err == nil && ok {
		t = stored // a twin in another process stored first: send what it sent
	}
	body := TransferRequest{
		PartnerReferenceNo:     p.Reference,
		Amount:                 amount,
		BeneficiaryAccountName: holder.HolderName,
		BeneficiaryAccountNo:   account,
		BeneficiaryBankCode:    BICode(bank.Code),
		SourceAccountNo:        v.o.SourceAccountNo,
		TransactionDate:        t.Date,
		AdditionalInfo:         map[string]any{"transferType": string(p.TransferType)},
	}
	var resp TransferResponse
	c, err := v.call(ctx, PathTransfer, t.ExternalID, body, &resp)
	if err != nil {
		return vendors.PayoutResult{}, err
	}
	switch c.Kind() {
	case KindSuccess, KindInProgress:
		if resp.ReferenceNo != "" {
			t.ReferenceNo = resp.ReferenceNo
			_ = v.o.Store.Put(ctx, t)
		}
		status := vendors.PayoutPending
		if s, ok := transactionStatuses[resp.LatestTransactionStatus]; ok && c.Kind() == KindSuccess {
			status = s
		}
		return vendors.PayoutResult{Reference: p.Reference, Status: status}, nil
	case KindDuplicateExternal, KindDuplicateRef:
		res, err := v.Status(ctx, p.Reference)
		if errors.Is(err, vendors.ErrUnknownPayout) {
			return vendors.PayoutResult{}, fmt.Errorf("%w: SNAP %s but the status inquiry does not know the transfer", vendors.ErrUnavailable, c)
		}
		return res, err
	}
	return vendors.PayoutResult{}, submitError(c)
}

// Status implements vendors.Vendor with the transfer status inquiry.
func (v *Vendor) Status(ctx context.Context, reference string) (vendors.PayoutResult, error) {
	t, ok, err := v.o.Store.Get(ctx, reference)
	if err != nil {
		return vendors.PayoutResult{}, fmt.Errorf("%w: %w", vendors.ErrUnavailable, err)
	}
	body := StatusRequest{
		OriginalPartnerReferenceNo: reference,
		OriginalExternalID:         TransferExternalID(reference),
		ServiceCode:                ServiceTransfer,
	}
	if ok {
		body.OriginalReferenceNo, body.OriginalExternalID, body.TransactionDate = t.ReferenceNo, t.ExternalID, t.Date
	}
	var resp StatusResponse
	c, err := v.call(ctx, PathStatus, v.newExternalID(), body, &resp)
	if err != nil {
		return vendors.PayoutResult{}, err
	}
	if c.Kind() != KindSuccess {
		return vendors.PayoutResult{}, statusError(c)
	}
	if resp.LatestTransactionStatus == "07" {
		return vendors.PayoutResult{}, fmt.Errorf("%w: latestTransactionStatus 07", vendors.ErrUnknownPayout)
	}
	if _, known := transactionStatuses[resp.LatestTransactionStatus]; !known {
		return vendors.PayoutResult{}, fmt.Errorf("%w: latestTransactionStatus %q", vendors.ErrUnavailable, resp.LatestTransactionStatus)
	}
	return result(reference, resp.LatestTransactionStatus, resp.TransactionStatusDesc), nil
}

func (v *Vendor) newExternalID() string { return requestExternalID(v.o.Now(), v.random) }

// call makes one signed service call and decodes its answer into out. A
// token the bank calls invalid or unknown (401xx01, 401xx03) is dropped,
// a new one fetched (once for all concurrent callers) and the call made
// again, once. Network errors, timeouts and undecodable answers are
// ErrUnavailable. The returned Code is the bank's answer, to be mapped by
// the caller.
func (v *Vendor) call(ctx context.Context, path, externalID string, body, out any) (Code, error) {
	raw, err := marshal(body)
	if err != nil {
		return Code{}, err
	}
	for attempt := 0; ; attempt++ {
		token, err := v.accessToken(ctx)
		if err != nil {
			return Code{}, err
		}
		status, respBody, err := v.post(ctx, path, raw, func(h http.Header, ts string) error {
			sig, err := SignService(v.o.ClientSecret, http.MethodPost, path, token, raw, ts)
			if err != nil {
				return err
			}
			h.Set("Authorization", "Bearer "+token)
			h.Set("X-SIGNATURE", sig)
			h.Set("X-PARTNER-ID", v.o.PartnerID)
			h.Set("X-EXTERNAL-ID", externalID)
			h.Set("CHANNEL-ID", v.o.ChannelID)
			return nil
		})
		if err != nil {
			return Code{}, err
		}
		c, err := DecodeResponse(status, respBody, out)
		if err != nil {
			return Code{}, fmt.Errorf("%w: %w", vendors.ErrUnavailable, err)
		}
		if c.Kind() == KindTokenInvalid && attempt == 0 {
			v.dropToken(token)
			continue
		}
		return c, nil
	}
}

// marshal renders body as minified JSON without HTML escaping, so that
// what is sent is exactly what is hashed.
func marshal(body any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(body); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// post sends raw to path with the common headers and those sign sets.
func (v *Vendor) post(ctx context.Context, path string, raw []byte, sign func(http.Header, string) error) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, v.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, v.o.BaseURL+path, bytes.NewReader(raw))
	if err != nil {
		return 0, nil, err
	}
	ts := Timestamp(v.o.Now())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-TIMESTAMP", ts)
	if err := sign(req.Header, ts); err != nil {
		return 0, nil, err
	}
	resp, err := v.o.HTTPClient.Do(req)
	if err != nil {
		return 0, nil, vendors.Down(fmt.Errorf("%w: %s: %w", vendors.ErrUnavailable, path, stripURL(err)))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, nil, vendors.Down(fmt.Errorf("%w: %s: reading the answer: %w", vendors.ErrUnavailable, path, err))
	}
	return resp.StatusCode, b, nil
}

// stripURL keeps a transport error's cause without its URL (which holds
// nothing secret here, but is long).
func stripURL(err error) error {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) && ue.Unwrap() != nil {
		return ue.Unwrap()
	}
	return err
}

// tokenMargin: a token is renewed this long before it expires, so that a
// call signed with it does not arrive after its expiry.
const tokenMargin = 30 * time.Second

// accessToken returns a valid B2B token, fetching one when there is none
// or it is about to expire. Concurrent callers share one fetch.
func (v *Vendor) accessToken(ctx context.Context) (string, error) {
	v.mu.Lock()
	tok, exp := v.token, v.expires
	v.mu.Unlock()
	if tok != "" && v.o.Now().Before(exp) {
		return tok, nil
	}
	ch := v.flight.DoChan("token", func() (any, error) {
		// Another caller may have refreshed it while this one waited.
		v.mu.Lock()
		tok, exp := v.token, v.expires
		v.mu.Unlock()
		if tok != "" && v.o.Now().Before(exp) {
			return tok, nil
		}
		return v.fetchToken(context.WithoutCancel(ctx))
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return "", r.Err
		}
		return r.Val.(string), nil
	case <-ctx.Done():
		return "", fmt.Errorf("%w: waiting for an access token: %w", vendors.ErrUnavailable, ctx.Err())
	}
}

// dropToken forgets token if it is still the cached one (a refresh by
// another caller is kept).
func (v *Vendor) dropToken(token string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.token == token {
		v.token, v.expires = "", time.Time{}
	}
}

// fetchToken asks for a B2B access token ([BI-SNAP] service 73; [MT-SIG];
// [DOKU-B2B]) and caches it until tokenMargin (or a tenth of its life, if
// shorter) before expiresIn.
func (v *Vendor) fetchToken(ctx context.Context) (string, error) {
	raw, _ := marshal(TokenRequest{GrantType: "client_credentials"})
	now := v.o.Now()
	status, body, err := v.post(ctx, PathAccessToken, raw, func(h http.Header, ts string) error {
		sig, err := SignToken(v.o.PrivateKey, v.o.ClientKey, ts)
		if err != nil {
			return err
		}
		h.Set("X-CLIENT-KEY", v.o.ClientKey)
		h.Set("X-SIGNATURE", sig)
		return nil
	})
	if err != nil {
		return "", err
	}
	var resp TokenResponse
	c, err := DecodeResponse(status, body, &resp)
	if err != nil {
		return "", fmt.Errorf("%w: access token: %w", vendors.ErrUnavailable, err)
	}
	if c.Kind() != KindSuccess || resp.AccessToken == "" {
		return "", fmt.Errorf("%w: access token: %w", vendors.ErrUnavailable, codeError(ErrAuth, c))
	}
	secs, err := resp.ExpiresInSeconds()
	if err != nil {
		return "", fmt.Errorf("%w: %w", vendors.ErrUnavailable, err)
	}
	life := time.Duration(secs) * time.Second
	margin := min(tokenMargin, life/10)
	v.mu.Lock()
	v.token, v.expires = resp.AccessToken, now.Add(life-margin)
	v.mu.Unlock()
	return resp.AccessToken, nil
}

// String keeps secrets out of logs: printing Options with %v or %+v shows
// the bank, URL (as safeurl shows it) and ids, never the client secret or the private key, and
// only the last four digits of the source account.
func (o Options) String() string {
	return fmt.Sprintf("snap.Options{Bank:%s BaseURL:%s PartnerID:%s ClientKey:%s ChannelID:%s SourceAccountNo:%s ClientSecret:[redacted] PrivateKey:[redacted]}",
		o.Bank, safeurl.Display(o.BaseURL), o.PartnerID, o.ClientKey, o.ChannelID, maskAccount(o.SourceAccountNo))
}

// String is the vendor's name: printing a Vendor shows no token or secret.
func (v *Vendor) String() string { return v.Name() }

// maskAccount keeps the last four digits of an account number.
func maskAccount(s string) string {
	if len(s) <= 4 {
		return "****"
	}
	return strings.Repeat("*", len(s)-4) + s[len(s)-4:]
}
