package payouts

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// The idempotency rules of the spec ("Idempotency rules:") and of
// docs/design.md (Idempotency and replays),
// where they live: in Service.Create. Rule 1 (a missing Idempotency-Key is
// a 400) is a check of the HTTP request before the service is called
// (api.idempotencyKey): it stays tested in api (TestDisbursementCreateValidation).
// Rule 3's statuses and messages per stored status (200, 503, 410, 409) are
// the HTTP mapping of the replayed disbursement's status: they stay tested
// in api too (TestDisbursementReplayByStoredStatus). Here: what the service
// answers and what it stores or moves.

// Rules 2, 4 and 6: the same key with the same parameters is a replay of
// the stored disbursement, in every status it can be stored in, also while
// withdrawals are suspended, after the wallet's available balance is gone
// and after the wallet became unusable; the same key with any compared
// parameter changed is ErrIdempotencyMismatch. Neither stores, locks or
// posts anything. Parameters are compared normalised (bank code
// case-insensitive, account number trimmed); memo and reference_id are
// not compared, and a replay answers the stored ones.
func TestCreateReplaysByKey(t *testing.T) {
	t.Parallel()
	for _, status := range models.DisbursementStatuses {
		t.Run(string(status), func(t *testing.T) {
			t.Parallel()
			e := newSvcEnv(t, models.Rupiah(1_000_000))
			otherWallet := e.addWallet(models.Rupiah(1_000_000), models.WalletActive)
			stranger := e.newClient(nil)
			theirWallet := e.newWallet(stranger, sandbox.SimBank, models.Rupiah(1_000_000))
			const key = "the-key"
			d, req := e.inStatus(status, key)

			with := func(change func(r *CreateRequest)) CreateRequest {
				r := req
				change(&r)
				return r
			}
			other := "another memo"
			replays := map[string]CreateRequest{
				"the same request":            req,
				"bank code in capitals":       with(func(r *CreateRequest) { r.BankCode = " BCA " }),
				"account number with spaces":  with(func(r *CreateRequest) { r.AccountNo = "  " + r.AccountNo + "\t" }),
				"another memo":                with(func(r *CreateRequest) { r.Memo = &other }),
				"no memo and no reference_id": with(func(r *CreateRequest) { r.Memo, r.ReferenceID = nil, nil }),
				"another reference_id":        with(func(r *CreateRequest) { r.ReferenceID = &other }),
			}
			mismatches := map[string]CreateRequest{
				"wallet: another of the client's":   with(func(r *CreateRequest) { r.WalletID = otherWallet }),
				"wallet: unknown":                   with(func(r *CreateRequest) { r.WalletID = uuid.New() }),
				"wallet: another client's":          with(func(r *CreateRequest) { r.WalletID = theirWallet }),
				"amount: one rupiah more":           with(func(r *CreateRequest) { r.Amount += models.Rupiah(1) }),
				"amount: one ten-thousandth less":   with(func(r *CreateRequest) { r.Amount-- }),
				"bank code":                         with(func(r *CreateRequest) { r.BankCode = "bri" }),
				"account number":                    with(func(r *CreateRequest) { r.AccountNo = "1234567899" }),
				"account number with a leading 0":   with(func(r *CreateRequest) { r.AccountNo = "0" + r.AccountNo }),
				"transfer type":                     with(func(r *CreateRequest) { r.TransferType = models.RTOL }),
				"amount and memo (memo is ignored)": with(func(r *CreateRequest) { r.Amount *= 2; r.Memo = &other }),
			}

			suspended := *e.client
			suspended.Withdrawals = models.WithdrawalsSuspended
			conditions := []struct {
				name   string
				client *models.Client
				setup  func()
			}{
				{"as usual", e.client, nil},
				{"withdrawals suspended", &suspended, nil},
				{"available balance gone", e.client, func() {
					if w := e.walletNow(); w.Available() > 0 {
						e.adjust(w.ID, -w.Available())
					}
				}},
				{"wallet no longer usable", e.client, func() {
					if err := e.db.Model(&models.Wallet{}).Where("id = ?", e.wallet.ID).Update("state", models.WalletProvisioning).Error; err != nil {
						t.Fatal(err)
					}
				}},
			}
			for _, c := range conditions {
				if c.setup != nil {
					c.setup()
				}
				before := e.snapshot()
				for name, r := range replays {
					got, err := e.svc.Create(e.ctx, c.client, r)
					if err != nil {
						t.Errorf("%s, %s: %v, want a replay", c.name, name, err)
						continue
					}
					g := got.Disbursement
					if !got.Replayed || g.ID != d.ID || g.Status != status || g.IdempotencyKey != key || g.Amount != d.Amount ||
						g.Memo == nil || *g.Memo != "first memo" || g.ReferenceID == nil || *g.ReferenceID != "inv-1" {
						t.Errorf("%s, %s: %s, memo %v, reference %v; want a replay of the stored %s disbursement %s", c.name, name, outcome(got, err), g.Memo, g.ReferenceID, status, d.ID)
					}
				}
				for name, r := range mismatches {
					got, err := e.svc.Create(e.ctx, c.client, r)
					if !errors.Is(err, models.ErrIdempotencyMismatch) || got != nil {
						t.Errorf("%s, %s: %s; want ErrIdempotencyMismatch", c.name, name, outcome(got, err))
					}
				}
				e.unchanged(c.name, before)
			}
			e.reconciled()
		})
	}
}

// Keys belong to a client: another client's create with the same key is a
// disbursement of its own, each replay finds its own client's, and a key
// of one client never answers, or reveals, another's disbursement.
func TestIdempotencyKeysArePerClient(t *testing.T) {
	t.Parallel()
	e := newSvcEnv(t, models.Rupiah(1_000_000))
	other := e.newClient(nil)
	theirWallet := e.newWallet(other, sandbox.SimBank, models.Rupiah(500_000))
	const key = "shared-key"
	mine := CreateRequest{Params: e.params(100_000, "1234567890"), IdempotencyKey: key}
	theirs := CreateRequest{Params: Params{WalletID: theirWallet, Amount: models.Rupiah(100_000), BankCode: "bca",
		AccountNo: "1234567890", TransferType: models.BIFAST}, IdempotencyKey: key}

	// Before they used the key, my parameters under it from them are a
	// create on a wallet they do not have, not a replay of mine.
	my := e.mustCreate(e.client, mine)
	if got, err := e.svc.Create(e.ctx, other, mine); !errors.Is(err, models.ErrWalletNotFound) || got != nil {
		t.Fatalf("their create with my key and wallet: %s; want ErrWalletNotFound", outcome(got, err))
	}
	their := e.mustCreate(other, theirs)
	if their.ID == my.ID || their.ClientID != other.ID || their.WalletID != theirWallet {
		t.Fatalf("their disbursement %s (client %s, wallet %s) shares my key's %s", their.ID, their.ClientID, their.WalletID, my.ID)
	}
	before := e.snapshot()
	for _, tc := range []struct {
		name   string
		client *models.Client
		req    CreateRequest
		want   uuid.UUID
	}{
		{"my replay", e.client, mine, my.ID},
		{"their replay", other, theirs, their.ID},
	} {
		got, err := e.svc.Create(e.ctx, tc.client, tc.req)
		if err != nil || !got.Replayed || got.Disbursement.ID != tc.want {
			t.Errorf("%s: %s; want a replay of %s", tc.name, outcome(got, err), tc.want)
		}
	}
	for _, tc := range []struct {
		name   string
		client *models.Client
		req    CreateRequest
	}{
		{"their parameters under my key", e.client, theirs},
		{"my parameters under their key", other, mine},
	} {
		if got, err := e.svc.Create(e.ctx, tc.client, tc.req); !errors.Is(err, models.ErrIdempotencyMismatch) || got != nil {
			t.Errorf("%s: %s; want ErrIdempotencyMismatch", tc.name, outcome(got, err))
		}
	}
	e.unchanged("replays and mismatches", before)
	if w := e.walletNow(); w.Locked != models.Rupiah(100_000) {
		t.Errorf("my wallet locks %s, want my one payout", w.Locked)
	}
	if w := e.walletByID(theirWallet); w.Locked != models.Rupiah(100_000) {
		t.Errorf("their wallet locks %s, want their one payout", w.Locked)
	}
	e.reconciled()
}

// Rule 5: twins with one key at once store one disbursement and lock its
// gross once; every other twin answers its replay or
// ErrIdempotencyInFlight, never a refusal of its own (not
// ErrInsufficientBalance when the winner took the wallet's only funds).
func TestConcurrentCreatesWithOneKey(t *testing.T) {
	t.Parallel()
	const twins = 12
	for _, tc := range []struct {
		name  string
		funds int64
	}{
		{"wallet with room for many", 1_000_000},
		{"wallet funded for exactly one", 100_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newSvcEnv(t, models.Rupiah(tc.funds))
			req := CreateRequest{Params: e.params(100_000, "1234567890"), IdempotencyKey: "twins"}
			results := make([]*Created, twins)
			errs := make([]error, twins)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range twins {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					results[i], errs[i] = e.svc.Create(e.ctx, e.client, req)
				}()
			}
			close(start)
			wg.Wait()

			var fresh []uuid.UUID
			replays, inFlight := 0, 0
			for i := range twins {
				switch {
				case errors.Is(errs[i], models.ErrIdempotencyInFlight):
					inFlight++
				case errs[i] != nil:
					t.Errorf("twin %d: %v", i, errs[i])
				case results[i].Replayed:
					replays++
				default:
					fresh = append(fresh, results[i].Disbursement.ID)
				}
			}
			if len(fresh) != 1 {
				t.Fatalf("%d fresh creates %v, %d replays, %d in flight; want exactly one fresh", len(fresh), fresh, replays, inFlight)
			}
			for i, r := range results {
				if r != nil && r.Disbursement.ID != fresh[0] {
					t.Errorf("twin %d answered %s, the winner is %s", i, r.Disbursement.ID, fresh[0])
				}
			}
			if n := e.count("disbursements", "client_id = ? AND idempotency_key = ?", e.client.ID, "twins"); n != 1 {
				t.Errorf("%d disbursements stored, want 1", n)
			}
			if w := e.walletNow(); w.Locked != models.Rupiah(100_000) || w.Balance != models.Rupiah(tc.funds) {
				t.Errorf("wallet balance %s locked %s; want %d with one lock of 100000", w.Balance, w.Locked, tc.funds)
			}
			e.reconciled()
		})
	}
}

// Rule 5 with the race forced, on both databases (goroutines alone rarely
// interleave on SQLite's one connection): a create held in its recipient
// inquiry, after it found the key free and read the wallet, while a twin
// with the same key is created, then finds the key taken or the funds
// locked by the twin, and answers the twin's replay, never a refusal of
// its own or a second disbursement. (The spec lets a loser answer 409,
// ErrIdempotencyInFlight; once the twin has committed, as here, Create
// promises its replay, as api's TestDisbursementSameKeyTwinThatFinishesFirst
// asserts over HTTP.)
func TestTwinThatFinishesFirst(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		funds int64
	}{
		{"wallet with room for many", 1_000_000},
		{"wallet funded for exactly one", 100_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newSvcEnv(t, models.Rupiah(tc.funds))
			held := &heldInquiry{Vendor: sandbox.NewSimBank(sandbox.Options{CompleteAfter: svcCompleteAfter, Now: e.clock.Now}),
				reached: make(chan struct{}), release: make(chan struct{})}
			svc := New(Options{DB: e.db, Vendors: vendors.NewRegistry(held), LockTTL: svcLockTTL, Now: e.clock.Now})
			req := CreateRequest{Params: e.params(100_000, "1234567890"), IdempotencyKey: "twin"}

			held.arm()
			type answer struct {
				created *Created
				err     error
			}
			first := make(chan answer, 1)
			go func() {
				created, err := svc.Create(e.ctx, e.client, req)
				first <- answer{created, err}
			}()
			select {
			case <-held.reached:
			case a := <-first:
				t.Fatalf("the first create answered %s without reaching its inquiry", outcome(a.created, a.err))
			case <-time.After(30 * time.Second):
				t.Fatal("the first create never reached its inquiry")
			}
			twin := e.mustCreate(e.client, req)
			close(held.release)
			a := <-first
			if a.err != nil || !a.created.Replayed || a.created.Disbursement.ID != twin.ID {
				t.Fatalf("the held create: %s; want a replay of the twin %s", outcome(a.created, a.err), twin.ID)
			}
			if n := e.count("disbursements", "client_id = ? AND idempotency_key = ?", e.client.ID, "twin"); n != 1 {
				t.Errorf("%d disbursements stored, want 1", n)
			}
			if w := e.walletNow(); w.Locked != models.Rupiah(100_000) || w.Balance != models.Rupiah(tc.funds) {
				t.Errorf("wallet balance %s locked %s; want %d with one lock of 100000", w.Balance, w.Locked, tc.funds)
			}
			e.reconciled()
		})
	}
}

// heldInquiry is a vendor whose next account inquiry, once armed, waits
// until release is closed: a slow recipient bank.
type heldInquiry struct {
	vendors.Vendor
	mu      sync.Mutex
	armed   bool
	reached chan struct{}
	release chan struct{}
}

func (v *heldInquiry) arm() {
	v.mu.Lock()
	v.armed = true
	v.mu.Unlock()
}

func (v *heldInquiry) Inquire(ctx context.Context, req vendors.InquiryRequest) (vendors.Account, error) {
	v.mu.Lock()
	armed := v.armed
	v.armed = false
	v.mu.Unlock()
	if armed {
		close(v.reached)
		<-v.release
	}
	return v.Vendor.Inquire(ctx, req)
}

// A create that stored no disbursement does not consume its
// Idempotency-Key. Each refusal stores, locks and posts nothing; a valid
// create with the same key afterwards is a fresh create, and its own
// replay is a replay.
func TestRefusedCreateDoesNotConsumeItsKey(t *testing.T) {
	t.Parallel()
	e := newSvcEnv(t, models.Rupiah(1_000_000))
	stranger := e.newClient(nil)
	theirWallet := e.newWallet(stranger, sandbox.SimBank, models.Rupiah(1_000_000))
	provisioning := e.addWallet(models.Rupiah(1_000_000), models.WalletProvisioning)
	simwallet := e.newWallet(e.client, sandbox.SimWallet, models.Rupiah(1_000_000))
	suspended := *e.client
	suspended.Withdrawals = models.WithdrawalsSuspended

	valid := e.params(20_000, "1234567890")
	with := func(change func(p *Params)) Params {
		p := valid
		change(&p)
		return p
	}
	rule := func(msg string) error { return models.Refuse(msg) }
	cases := []struct {
		name   string
		client *models.Client
		params Params
		want   error // a rule's refusal compares by message
	}{
		{"withdrawals suspended", &suspended, valid, models.ErrWithdrawalsSuspended},
		{"insufficient balance", e.client, with(func(p *Params) { p.Amount = models.Rupiah(1_000_001) }), models.ErrInsufficientBalance},
		{"unknown wallet", e.client, with(func(p *Params) { p.WalletID = uuid.New() }), models.ErrWalletNotFound},
		{"another client's wallet", e.client, with(func(p *Params) { p.WalletID = theirWallet }), models.ErrWalletNotFound},
		{"wallet still provisioning", e.client, with(func(p *Params) { p.WalletID = provisioning }), models.ErrWalletNotFound},
		{"amount below minimum", e.client, with(func(p *Params) { p.Amount = models.Rupiah(12_499) }), rule("withdrawal amount is below minimum: 12500")},
		{"unknown bank code", e.client, with(func(p *Params) { p.BankCode = "xyz" }), models.ErrUnsupportedBank},
		{"e-wallet code on a banks-only vendor", e.client, with(func(p *Params) { p.BankCode, p.AccountNo = "dana", "081234567890" }), models.ErrUnsupportedBank},
		{"transfer type the vendor does not serve", e.client, with(func(p *Params) { p.WalletID, p.TransferType = simwallet, models.RTOL }),
			rule("transfer_type RTOL is not supported for bank_code bca by this wallet's vendor")},
		{"account inactive", e.client, with(func(p *Params) { p.AccountNo = sandbox.AccountInactive }), models.ErrAccountInactive},
		{"account not resolved", e.client, with(func(p *Params) { p.AccountNo = sandbox.AccountUnresolved }), models.ErrAccountNotResolved},
		{"inquiry gateway unavailable", e.client, with(func(p *Params) { p.AccountNo = sandbox.AccountInquiryDown }), models.ErrGatewayUnavailable},
	}
	for i, tc := range cases {
		key := fmt.Sprintf("refused-%d", i)
		before := e.snapshot()
		got, err := e.svc.Create(e.ctx, tc.client, CreateRequest{Params: tc.params, IdempotencyKey: key})
		if !sameError(err, tc.want) || got != nil {
			t.Errorf("%s: %s; want %v", tc.name, outcome(got, err), tc.want)
			continue
		}
		e.unchanged(tc.name, before)
		d := e.mustCreate(e.client, CreateRequest{Params: valid, IdempotencyKey: key})
		if d.IdempotencyKey != key || d.Status != models.StatusVerified {
			t.Errorf("%s: the later valid create stored key %q status %s", tc.name, d.IdempotencyKey, d.Status)
		}
		if again, err := e.create(key, valid); err != nil || !again.Replayed || again.Disbursement.ID != d.ID {
			t.Errorf("%s: the valid create's replay: %s; want a replay of %s", tc.name, outcome(again, err), d.ID)
		}
	}
	if w := e.walletNow(); w.Locked != models.Rupiah(20_000)*models.Amount(len(cases)) {
		t.Errorf("wallet locks %s, want one valid create per case", w.Locked)
	}
	e.reconciled()
}

// sameError: errors.Is, or for a rule's refusal (models.Refuse, made
// afresh each time) the same code and message.
func sameError(err, want error) bool {
	if errors.Is(err, want) {
		return true
	}
	var got, wanted *models.Error
	return errors.As(want, &wanted) && wanted.Code == models.EUNPROCESSABLE &&
		errors.As(err, &got) && got.Code == wanted.Code && got.Message == wanted.Message
}

// outcome describes what a create answered, for a failure message.
func outcome(got *Created, err error) string {
	switch {
	case err != nil && got != nil:
		return fmt.Sprintf("error %q with a result %s", err, got.Disbursement.ID)
	case err != nil:
		return fmt.Sprintf("error %q", err)
	case got.Replayed:
		return fmt.Sprintf("replay of %s (%s)", got.Disbursement.ID, got.Disbursement.Status)
	default:
		return fmt.Sprintf("fresh create %s (%s)", got.Disbursement.ID, got.Disbursement.Status)
	}
}
