package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/payouts"
	"github.com/payoutd/payoutd/vendors"
)

// Field limits of the spec.
const (
	maxIdempotencyKey = 64
	maxMemo           = 255
	maxReferenceID    = 64
	maxAccountNo      = 34 // the longest account numbers in use (IBAN length)
	maxHolderName     = vendors.MaxHolderNameLength
)

// disbursementRequest is the body of create and (without memo and
// reference_id) of quote. Pointers tell a missing field from an empty one.
type disbursementRequest struct {
	ClientWalletID *string `json:"client_wallet_id"`
	Amount         *string `json:"amount"`
	BankCode       *string `json:"bank_code"`
	AccountNo      *string `json:"account_no"`
	TransferType   *string `json:"transfer_type"`
	// AccountHolderName is optional: sent when the account inquiry
	// returns no name (see payouts.Params.HolderName).
	AccountHolderName *string `json:"account_holder_name"`
	Memo              *string `json:"memo"`
	ReferenceID       *string `json:"reference_id"`
}

// quoteRequest is disbursementRequest without memo and reference_id, so an
// unknown field there is refused like anywhere else.
type quoteRequest struct {
	ClientWalletID *string `json:"client_wallet_id"`
	Amount         *string `json:"amount"`
	BankCode       *string `json:"bank_code"`
	AccountNo      *string `json:"account_no"`
	TransferType   *string `json:"transfer_type"`
	// AccountHolderName: as on create.
	AccountHolderName *string `json:"account_holder_name"`
}

type quoteResponse struct {
	Amount            string `json:"amount"`
	PlatformFee       string `json:"platform_fee"`
	NetAmount         string `json:"net_amount"`
	Currency          string `json:"currency"`
	TransferType      string `json:"transfer_type"`
	BankCode          string `json:"bank_code"`
	BankName          string `json:"bank_name"`
	AccountNo         string `json:"account_no"`
	AccountHolderName string `json:"account_holder_name"`
}

// POST /api/v3/disbursements/quote: a non-binding price and a verified
// recipient; nothing is stored or locked.
func (s *Server) handleDisbursementQuote(c *gin.Context) {
	var req quoteRequest
	if err := decodeJSON(bodyOf(c), &req); err != nil {
		fail(c, err)
		return
	}
	params, err := parseParams(disbursementRequest{ClientWalletID: req.ClientWalletID, Amount: req.Amount,
		BankCode: req.BankCode, AccountNo: req.AccountNo, TransferType: req.TransferType, AccountHolderName: req.AccountHolderName})
	if err != nil {
		fail(c, err)
		return
	}
	q, err := s.payouts.Quote(c.Request.Context(), &principalOf(c).Client, params)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, quoteResponse{
		Amount: q.Params.Amount.String(), PlatformFee: q.Fee.String(), NetAmount: q.Net.String(), Currency: "IDR",
		TransferType: string(q.Params.TransferType), BankCode: q.Bank.Code, BankName: q.Bank.Name,
		AccountNo: q.Params.AccountNo, AccountHolderName: q.HolderName,
	})
}

// POST /api/v3/disbursements: create with an Idempotency-Key. A fresh
// create answers 201 after waiting up to DISBURSEMENT_SUBMIT_WAIT for the
// vendor's first answer; a replay answers by the stored status with
// Idempotent-Replayed: true.
func (s *Server) handleDisbursementCreate(c *gin.Context) {
	key, err := idempotencyKey(c.GetHeader("Idempotency-Key"))
	if err != nil {
		fail(c, err)
		return
	}
	var req disbursementRequest
	if err := decodeJSON(bodyOf(c), &req); err != nil {
		fail(c, err)
		return
	}
	create, err := parseCreate(req, key)
	if err != nil {
		fail(c, err)
		return
	}
	create.WaitsForSubmit = s.cfg.DisbursementSubmitWait > 0
	create.Signature = signatureOf(c)
	ctx := c.Request.Context()
	result, err := s.payouts.Create(ctx, &principalOf(c).Client, create)
	if err != nil {
		fail(c, err)
		return
	}
	if result.Replayed {
		c.Header("Idempotent-Replayed", "true")
		answerCreation(c, result.Disbursement, http.StatusOK)
		return
	}
	d, err := s.dispatch.SubmitAndWait(ctx, result, s.cfg.DisbursementSubmitWait)
	if err != nil {
		fail(c, err)
		return
	}
	answerCreation(c, d, http.StatusCreated)
}

// answerCreation answers a create by the disbursement's status: the body
// with okStatus while it is alive or paid, the spec's error otherwise.
func answerCreation(c *gin.Context, d *models.Disbursement, okStatus int) {
	switch d.Status {
	case models.StatusFailed:
		fail(c, models.ErrVendorPayoutFailed)
	case models.StatusExpired:
		fail(c, models.ErrLockExpired)
	case models.StatusCancelled:
		fail(c, models.ErrDisbursementCancelled)
	default:
		c.JSON(okStatus, payouts.CreationView(d))
	}
}

// GET /api/v3/disbursements/{id}
func (s *Server) handleDisbursementGet(c *gin.Context) {
	id, err := parseUUIDParam(c.Param("id"), "id")
	if err != nil {
		fail(c, err)
		return
	}
	d, err := s.payouts.Find(c.Request.Context(), principalOf(c).Client.ID, id)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, payouts.RecordView(d))
}

// idempotencyKey validates the Idempotency-Key header: required, at most 64
// characters, printable ASCII (it is echoed and logged).
func idempotencyKey(raw string) (string, error) {
	key := strings.TrimSpace(raw)
	switch {
	case key == "":
		return "", models.Invalid("missing Idempotency-Key header")
	case len(key) > maxIdempotencyKey:
		return "", models.Invalid(fmt.Sprintf("Idempotency-Key must be at most %d characters", maxIdempotencyKey))
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return "", models.Invalid("Idempotency-Key must be printable ASCII")
		}
	}
	return key, nil
}

// parseCreate validates a create body into a payouts.CreateRequest.
func parseCreate(req disbursementRequest, key string) (payouts.CreateRequest, error) {
	params, err := parseParams(req)
	if err != nil {
		return payouts.CreateRequest{}, err
	}
	if req.Memo != nil && utf8.RuneCountInString(*req.Memo) > maxMemo {
		return payouts.CreateRequest{}, models.Invalid(fmt.Sprintf("memo must be at most %d characters", maxMemo))
	}
	if req.ReferenceID != nil && utf8.RuneCountInString(*req.ReferenceID) > maxReferenceID {
		return payouts.CreateRequest{}, models.Invalid(fmt.Sprintf("reference_id must be at most %d characters", maxReferenceID))
	}
	if req.ReferenceID != nil && *req.ReferenceID == "" {
		req.ReferenceID = nil // nothing supplied: omitted from answers
	}
	return payouts.CreateRequest{Params: params, IdempotencyKey: key, Memo: req.Memo, ReferenceID: req.ReferenceID}, nil
}

// amountNotWhole is the 400 for a disbursement amount with a fraction.
const amountNotWhole = "amount must be a whole number of rupiah"

// parseParams validates the compared fields; each error names its field.
func parseParams(req disbursementRequest) (payouts.Params, error) {
	var p payouts.Params
	walletID, err := requiredString(req.ClientWalletID, "client_wallet_id")
	if err != nil {
		return p, err
	}
	if p.WalletID, err = parseUUIDParam(walletID, "client_wallet_id"); err != nil {
		return p, err
	}
	amount, err := requiredString(req.Amount, "amount")
	if err != nil {
		return p, err
	}
	if p.Amount, err = models.ParsePositiveAmount(amount); err != nil {
		return p, models.Invalid("amount " + err.Error())
	}
	// No Indonesian rail (BI-FAST, RTOL, e-wallets) moves a fraction of a
	// rupiah: refused rather than rounded, so what the merchant asked is
	// exactly what is locked and sent ("100000.00" is whole).
	if !p.Amount.IsWholeRupiah() {
		return p, models.Invalid(amountNotWhole)
	}
	if p.BankCode, err = requiredString(req.BankCode, "bank_code"); err != nil {
		return p, err
	}
	account, err := requiredString(req.AccountNo, "account_no")
	if err != nil {
		return p, err
	}
	if p.AccountNo, err = parseAccountNo(account); err != nil {
		return p, err
	}
	tt, err := requiredString(req.TransferType, "transfer_type")
	if err != nil {
		return p, err
	}
	if p.TransferType, err = models.ParseTransferType(tt); err != nil {
		return p, models.Invalid(err.Error())
	}
	if req.AccountHolderName != nil {
		if p.HolderName, err = parseHolderName(*req.AccountHolderName); err != nil {
			return p, err
		}
	}
	return p.Normalize(), nil
}

// parseHolderName trims an account_holder_name ("" when blank: none
// supplied), which may then hold at most maxHolderName characters and no
// control characters: it is sent to the rail as the recipient's name.
func parseHolderName(raw string) (string, error) {
	name := strings.TrimSpace(raw)
	if utf8.RuneCountInString(name) > maxHolderName {
		return "", models.Invalid(fmt.Sprintf("account_holder_name must be at most %d characters", maxHolderName))
	}
	if !utf8.ValidString(name) || strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return "", models.Invalid("account_holder_name must not contain control characters")
	}
	return name, nil
}

// parseAccountNo trims the account number, which must then be digits only.
func parseAccountNo(raw string) (string, error) {
	account := strings.TrimSpace(raw)
	if account == "" || strings.Trim(account, "0123456789") != "" {
		return "", models.Invalid("account_no must be digits only (for e-wallets the phone number in local format, e.g. 081234567890)")
	}
	if len(account) > maxAccountNo {
		return "", models.Invalid(fmt.Sprintf("account_no must be at most %d digits", maxAccountNo))
	}
	return account, nil
}

func requiredString(v *string, field string) (string, error) {
	if v == nil || strings.TrimSpace(*v) == "" {
		return "", models.Invalid(field + " is required")
	}
	return *v, nil
}

// bodyOf returns the body the authentication middleware read.
func bodyOf(c *gin.Context) []byte {
	b, _ := c.Get(bodyKey)
	body, _ := b.([]byte)
	return body
}

// POST /vendor-callbacks/{vendor}, and POST /vendor-callbacks/snap/{bank}
// for the vendor snap:{bank}: a vendor pushes a payout's result. The
// request is verified by the vendor's own scheme, over the path it came on
// where the scheme signs it; the result is applied like a poll's.
func (s *Server) handleVendorCallback(c *gin.Context) {
	name := c.Param("vendor")
	if bank := c.Param("bank"); bank != "" {
		name = "snap:" + bank
	}
	vendor, err := s.vendors.Get(name)
	if err != nil {
		fail(c, models.ErrNotFound)
		return
	}
	parser, ok := vendor.(vendors.CallbackParser)
	if !ok {
		fail(c, models.ErrNotFound)
		return
	}
	relativeURL := c.Request.URL.RequestURI()
	result, ok := readSignedCallback(s, c, func(h http.Header, body []byte, now time.Time) (vendors.PayoutResult, error) {
		return parser.ParseCallback(relativeURL, h, body, now)
	})
	if !ok {
		return
	}
	err = s.payouts.ApplyVendorResult(c.Request.Context(), vendor.Name(), result)
	if err != nil && !errors.Is(err, models.ErrTransitionRefused) {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "accepted"})
}

// readSignedCallback reads a partner's callback (a vendor's, the
// acquirer's) and verifies it with the partner's parse: a signature that
// does not verify is a 401 (vendors.ErrInvalidCallback), a verified body
// that is not a result the partner sends a 400. It answers errors itself.
func readSignedCallback[T any](s *Server, c *gin.Context, parse func(http.Header, []byte, time.Time) (T, error)) (T, bool) {
	var result T
	body, err := readBody(c.Request)
	if err == nil {
		if result, err = parse(c.Request.Header, body, s.now()); err == nil {
			return result, true
		}
		if !errors.Is(err, vendors.ErrInvalidCallback) {
			err = models.Invalid(err.Error())
		} else {
			// What the partner's check found goes to the hint.
			detail, _ := strings.CutPrefix(err.Error(), vendors.ErrInvalidCallback.Error())
			err = models.WithHint(err, strings.TrimPrefix(detail, ": "))
		}
	}
	fail(c, err)
	return result, false
}
