package payouts

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"gorm.io/gorm"

	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
)

// CreateRequest is a create's input: the compared parameters and the rest.
type CreateRequest struct {
	Params
	IdempotencyKey string
	Memo           *string
	ReferenceID    *string
	// Signature is the lowercase hex signature the request was signed
	// with ("" when none): stored on the row, unique per client, so that a
	// signature creates at most one disbursement whatever Redis remembers.
	Signature string
	// WaitsForSubmit says the caller waits for the submit's first answer
	// (dispatch's SubmitAndWait, the API with DISBURSEMENT_SUBMIT_WAIT):
	// with Options.SubmitInline this process then submits the payout
	// itself.
	WaitsForSubmit bool
}

// Created is the outcome of Create: the disbursement as stored, and
// whether it is a replay of an earlier create with the same key.
type Created struct {
	Disbursement *models.Disbursement
	Replayed     bool
	// Inline is what Handoff.Claimed returned for the submit it started
	// for this create (WaitsForSubmit with Options.SubmitInline), nil
	// otherwise: the create's waiter (dispatch) waits for it.
	Inline any
}

// errKeyVanished would be a disbursement that lookup saw and replay did not
// find: rows are never deleted, so it is a defect, never an answer.
var errKeyVanished = errors.New("payouts: the Idempotency-Key's disbursement was seen, then not found")

// firstSweepAfter is how long a new VERIFIED row waits before the sweep
// considers its submit task lost and enqueues another.
const firstSweepAfter = 15 * time.Second

// Create stores a disbursement and locks its gross amount, or answers a
// replay of the client's earlier create with the same Idempotency-Key.
//
// The key is looked up first, with the wallet in the same query (lookup),
// so replays answer before any other check and even while withdrawals are
// suspended (idempotency rule 6); a key reused with other parameters is
// ErrIdempotencyMismatch. A fresh create runs the checks of Quote, then one
// write (ledger.OpenDisbursements, possibly shared with concurrent creates)
// inserts the row (whose unique (client, key) index is the
// idempotency record) and locks the gross with a conditional update that
// cannot oversell; ErrInsufficientBalance when available does not cover
// it, unless a twin with the same key is what took the funds: that answers
// the twin's replay. A request that stores nothing does not consume its key.
//
// With an InquiryBudget, a fresh create asks it before the account inquiry
// (its error is the answer) and spends one unit when refused after it.
func (s *Service) Create(ctx context.Context, client *models.Client, req CreateRequest) (*Created, error) {
	req.Params = req.Params.Normalize()
	for attempt := 1; ; attempt++ {
		created, err := s.create(ctx, client, req)
		// PostgreSQL may end a create as a deadlock victim (a twin with the
		// same key locking the wallet while the winner's payout moves);
		// nothing was written, so it runs again, replay lookup first.
		if attempt < 3 && errors.Is(err, ledger.ErrWriteConflict) {
			continue
		}
		if s.inquiries != nil && refusedAfterInquiry(err) {
			s.inquiries.Spend(ctx, client.ID)
		}
		return created, err
	}
}

func (s *Service) create(ctx context.Context, client *models.Client, req CreateRequest) (*Created, error) {
	if client.Withdrawals != models.WithdrawalsActive {
		return s.replayOr(ctx, client, req, models.ErrWithdrawalsSuspended)
	}
	wallet, keyTaken, settings, err := s.lookup(ctx, client, req)
	switch {
	case keyTaken:
		return s.replayOr(ctx, client, req, errKeyVanished)
	case errors.Is(err, models.ErrWalletNotFound):
		// The key may name a disbursement of another wallet (a mismatch)
		// or of this wallet before it became unusable (a replay).
		return s.replayOr(ctx, client, req, err)
	case err != nil:
		return nil, err
	}
	// The operator's settings as stored now count as well as those this
	// instance cached with the caller, the stricter of the two: a
	// suspension or a review threshold holds from the next create on,
	// whenever the cache learns of it, and a setting relaxed meanwhile
	// waits for the cache to drop the client (the Redis announcement, or
	// AUTH_CACHE_TTL when that is lost).
	if settings.Withdrawals != models.WithdrawalsActive {
		return s.replayOr(ctx, client, req, models.ErrWithdrawalsSuspended)
	}
	if stricter := lowerThreshold(client.ReviewThreshold, settings.ReviewThreshold); stricter != client.ReviewThreshold {
		fresh := *client
		fresh.ReviewThreshold = stricter
		client = &fresh
	}
	if s.inquiries != nil {
		if err := s.inquiries.Check(ctx, client.ID); err != nil {
			return nil, err
		}
	}
	q, err := s.check(ctx, client, wallet, req.Params)
	if errors.Is(err, models.ErrInsufficientBalance) {
		return s.replayOr(ctx, client, req, err)
	}
	if err != nil {
		return nil, err
	}
	d := s.newDisbursement(client, req, q)
	err = s.insert(d)
	switch {
	case errors.Is(err, gorm.ErrDuplicatedKey):
		// A twin with the same key committed first: answer its result.
		// Without one, what was taken is the signature: it created
		// another disbursement, under another key.
		return s.replayOr(ctx, client, req, s.duplicateOf(ctx, client, req))
	case errors.Is(err, models.ErrInsufficientBalance):
		return s.replayOr(ctx, client, req, afterInquiry(err))
	case err != nil:
		return nil, err
	}
	s.metrics.DisbursementTransition("", string(d.Status))
	created := &Created{Disbursement: d}
	switch {
	case d.Status != models.StatusVerified || s.handoff == nil:
	case d.SubmitAttempts > 0: // claimed with the row: submitInline
		created.Inline = s.handoff.Claimed(d)
	default:
		s.handoff.Due(ctx, d)
	}
	return created, nil
}

// lookup reads in one round trip what a fresh create starts from: the
// client's active wallet of the request (ErrWalletNotFound otherwise),
// whether the client has used the Idempotency-Key already, and the
// client's money settings as stored (withdrawals, review threshold). Every
// create needs all three, and a round trip costs the API and PostgreSQL
// more than the index lookups themselves.
func (s *Service) lookup(ctx context.Context, client *models.Client, req CreateRequest) (*models.Wallet, bool, clientSettings, error) {
	var w models.Wallet
	var keyTaken bool
	var c clientSettings
	err := s.db.WithContext(ctx).Raw(`SELECT w.id, w.client_id, w.name, w.vendor, w.state, w.is_default, w.balance, w.locked, w.created_at, w.updated_at,
	        EXISTS (SELECT 1 FROM disbursements WHERE client_id = ? AND idempotency_key = ?),
	        c.withdrawals, c.review_threshold
	    FROM wallets w JOIN clients c ON c.id = w.client_id
	    WHERE w.id = ? AND w.client_id = ? AND w.state = ?`,
		client.ID, req.IdempotencyKey, req.WalletID, client.ID, models.WalletActive).Row().
		Scan(&w.ID, &w.ClientID, &w.Name, &w.Vendor, &w.State, &w.IsDefault, &w.Balance, &w.Locked, &w.CreatedAt, &w.UpdatedAt, &keyTaken,
			&c.Withdrawals, &c.ReviewThreshold)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, c, models.ErrWalletNotFound
	}
	if err != nil {
		return nil, false, c, models.TranslateDBError(s.db, err)
	}
	return &w, keyTaken, c, nil
}

// duplicateOf says which unique record a create that found no twin with
// its key ran into: its signature, used by another create already
// (ErrSignatureReused), or else a twin that is not visible yet
// (ErrIdempotencyInFlight: retry).
func (s *Service) duplicateOf(ctx context.Context, client *models.Client, req CreateRequest) error {
	if req.Signature == "" {
		return models.ErrIdempotencyInFlight
	}
	var used bool
	err := s.db.WithContext(ctx).Raw(`SELECT EXISTS (SELECT 1 FROM disbursements WHERE client_id = ? AND request_signature = ?)`,
		client.ID, req.Signature).Row().Scan(&used)
	if err != nil {
		return models.TranslateDBError(s.db, err)
	}
	if used {
		return models.ErrSignatureReused
	}
	return models.ErrIdempotencyInFlight
}

// lowerThreshold is the stricter of two review thresholds (nil: review
// off).
func lowerThreshold(a, b *models.Amount) *models.Amount {
	if a == nil || (b != nil && *b < *a) {
		return b
	}
	return a
}

// clientSettings are the client's settings a create must see as stored.
type clientSettings struct {
	Withdrawals     models.WithdrawalState
	ReviewThreshold *models.Amount
}

// replayOr looks for the request's key once more, after a step that found
// the funds gone or the key taken, and answers that disbursement's replay,
// or err when there is none. The funds may be gone because a twin with the
// same key locked them after this create's first lookup (rule 5: never 402
// then). That twin's row is visible now: its lock and row commit in one
// transaction, and a read or conditional update that saw the lock ran
// after that commit (PostgreSQL only shows or waits for committed rows;
// SQLite runs one writer), so this later lookup cannot miss it.
func (s *Service) replayOr(ctx context.Context, client *models.Client, req CreateRequest, err error) (*Created, error) {
	existing, rerr := s.replay(ctx, client, req)
	if existing != nil || rerr != nil {
		return existing, rerr
	}
	return nil, err
}

// replay finds the client's disbursement with the request's key: nil when
// there is none, ErrIdempotencyMismatch when its parameters differ.
func (s *Service) replay(ctx context.Context, client *models.Client, req CreateRequest) (*Created, error) {
	var d models.Disbursement
	err := s.db.WithContext(ctx).Where("client_id = ? AND idempotency_key = ?", client.ID, req.IdempotencyKey).Take(&d).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !sameParams(&d, req.Params) {
		return nil, models.ErrIdempotencyMismatch
	}
	return &Created{Disbursement: &d, Replayed: true}, nil
}

func (s *Service) newDisbursement(client *models.Client, req CreateRequest, q *Quote) *models.Disbursement {
	now := s.clock()
	status := models.StatusVerified
	if client.ReviewThreshold != nil && q.Params.Amount >= *client.ReviewThreshold {
		status = models.StatusPendingVerification
	}
	id := models.NewID()
	next := now.Add(firstSweepAfter)
	attempts, attemptedAt := 0, (*time.Time)(nil)
	if s.submitInline && req.WaitsForSubmit && status == models.StatusVerified {
		// This process submits it right after the commit: the first
		// attempt is claimed with the row (as claim would), so no other
		// process submits it while the call may be on its way, and the
		// sweep resolves it after the lease should this process die.
		attempts, attemptedAt = 1, &now
		next = now.Add(s.submitLease + sweepGrace)
	}
	return &models.Disbursement{
		ID: id, ClientID: client.ID, WalletID: q.Wallet.ID, IdempotencyKey: req.IdempotencyKey,
		Status: status, Amount: q.Params.Amount, PlatformFee: q.Fee, NetAmount: q.Net, Currency: "IDR",
		TransferType: q.Params.TransferType, BankCode: q.Bank.Code, BankName: q.Bank.Name,
		AccountNo: q.Params.AccountNo, AccountHolderName: q.HolderName, SuppliedHolderName: q.Params.HolderName,
		Memo: req.Memo, ReferenceID: req.ReferenceID, RequestSignature: signatureOrNil(req.Signature),
		Vendor: q.Vendor, VendorReference: models.VendorReferenceFor(id),
		LockExpiresAt: now.Add(s.lockTTL), NextCheckAt: &next, SubmitAttempts: attempts, SubmitAttemptedAt: attemptedAt,
		CreatedAt: now, UpdatedAt: now,
	}
}

func signatureOrNil(sig string) *string {
	if sig == "" {
		return nil
	}
	return &sig
}

// insert writes the row, its lock and its first audit line atomically, as
// part of a group of concurrent creates (insertGrouped). The lock is a
// conditional update (available must cover the gross), never
// read-then-write, so concurrent creates cannot oversell.
func (s *Service) insert(d *models.Disbursement) error {
	if !models.CanCreateAs(d.Status) {
		return errors.New("a disbursement cannot be created as " + string(d.Status))
	}
	return s.insertGrouped(d)
}
