package main

// The disbursement creates of create-many, create-hot, overload and the
// concurrent phase: signed POST /api/v3/disbursements, a fresh
// Idempotency-Key each, every wallet's body serialised once.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/admin"
	"github.com/payoutd/payoutd/signature"
)

// What every create asks for: an ordinary account of a bank the simbank
// sandbox vendor serves, which it resolves and pays (no magic number).
const (
	createBankCode     = "bca"
	createAccountNo    = "1234567890"
	createTransferType = "BIFAST"
	// createFunding is added to each wallet a create scenario uses, so
	// that no run comes near an insufficient balance (IDR).
	createFunding = "100000000000"
)

// createScenario creates disbursements: signed POST /api/v3/disbursements
// with a fresh Idempotency-Key per request, round-robin over its targets
// (every client's wallet, or one wallet of one client).
type createScenario struct {
	hot     bool
	amount  string
	keyBase string // unique per scenario run: "lt-<random>-"
	targets []signedTarget
}

func newCreateScenario(hot bool, amount string) *createScenario {
	return &createScenario{hot: hot, amount: amount, keyBase: idempotencyKeyBase()}
}

// idempotencyKeyBase is a prefix unique to one scenario run, so that keys
// never repeat across the phases of a run or across runs.
func idempotencyKeyBase() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "lt-" + hex.EncodeToString(b) + "-"
}

func (s *createScenario) Prepare(ctx context.Context, f *Fixture) error {
	if len(f.Clients) == 0 {
		return errors.New("create: no clients provisioned")
	}
	clients := f.Clients
	if s.hot {
		clients = clients[:1]
	}
	s.targets = make([]signedTarget, len(clients))
	for i, c := range clients {
		walletID, err := uuid.Parse(c.WalletID)
		if err != nil {
			return err
		}
		if _, err := admin.AdjustWallet(ctx, f.Admin, walletID, createFunding, "load test create funding"); err != nil {
			return fmt.Errorf("fund wallet for creates: %w", err)
		}
		body, err := createBody(c.WalletID, s.amount)
		if err != nil {
			return err
		}
		s.targets[i] = signedTarget{body: body, apiKey: c.APIKey, secret: c.SigningSecret}
	}
	return nil
}

// createRequestBody is the disbursement creation request, in the spec's
// field order.
type createRequestBody struct {
	ClientWalletID string `json:"client_wallet_id"`
	Amount         string `json:"amount"`
	BankCode       string `json:"bank_code"`
	AccountNo      string `json:"account_no"`
	TransferType   string `json:"transfer_type"`
	// AccountHolderName is sent as a Xendit merchant must (Xendit has no
	// name inquiry); rails that inquire use their own.
	AccountHolderName string `json:"account_holder_name"`
	Memo              string `json:"memo"`
}

// createBody serialises the body of a create on walletID.
func createBody(walletID, amount string) ([]byte, error) {
	return json.Marshal(createRequestBody{
		ClientWalletID: walletID, Amount: amount, BankCode: createBankCode,
		AccountNo: createAccountNo, TransferType: createTransferType, AccountHolderName: "Budi Santoso", Memo: "load test",
	})
}

func (s *createScenario) NewRequest(ctx context.Context, base string, n uint64, now time.Time) (*http.Request, error) {
	t := s.targets[n%uint64(len(s.targets))]
	return newCreateRequest(ctx, base, t, s.keyBase+strconv.FormatUint(n, 10), now)
}

// newCreateRequest builds one create: the target's body with the given
// Idempotency-Key as its reference_id, signed over those exact bytes at
// now, with that key.
func newCreateRequest(ctx context.Context, base string, t signedTarget, key string, now time.Time) (*http.Request, error) {
	body := withReferenceID(t.body, key)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v3/disbursements", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", t.apiKey)
	req.Header.Set("x-signature", signature.Sign(t.secret, body, now))
	req.Header.Set("Idempotency-Key", key)
	return req, nil
}

// withReferenceID appends "reference_id": ref to a serialised JSON object
// (ref needs no escaping: the scenario's keys are plain ASCII). The service
// accepts a signature once, so every create of the same target in the same
// millisecond needs a body, and so a signature, of its own, as a merchant
// giving each payout its own reference would.
func withReferenceID(object []byte, ref string) []byte {
	body := make([]byte, 0, len(object)+len(ref)+18)
	body = append(body, object[:len(object)-1]...)
	body = append(body, `,"reference_id":"`...)
	body = append(body, ref...)
	return append(body, `"}`...)
}

// WantStatus: a fresh create answers 201.
func (s *createScenario) WantStatus() int { return http.StatusCreated }

func (s *createScenario) wallets() int { return len(s.targets) }
