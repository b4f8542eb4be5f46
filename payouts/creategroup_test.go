package payouts

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/internal/groupcommit"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// unsaved is a VERIFIED disbursement of the fixture's client with its
// key, as a create would insert it.
func (f *fixture) unsaved(wallet uuid.UUID, amount models.Amount, key string) *models.Disbursement {
	d := f.newDisbursement(wallet, models.StatusVerified, amount)
	d.IdempotencyKey = key
	next := d.CreatedAt.Add(firstSweepAfter)
	d.NextCheckAt = &next
	return d
}

func requests(ds ...*models.Disbursement) []*insertRequest {
	out := make([]*insertRequest, len(ds))
	for i, d := range ds {
		out[i] = groupcommit.NewRequest(d)
	}
	return out
}

// A group holds at most one create per client's key, and at most
// maxCreateGroup; several creates of one wallet share it. What is left
// waits in its order.
func TestNextCreateGroup(t *testing.T) {
	t.Parallel()
	client, other := uuid.New(), uuid.New()
	w1, w2, w3 := uuid.New(), uuid.New(), uuid.New()
	d := func(client, wallet uuid.UUID, key string) *models.Disbursement {
		return &models.Disbursement{ID: uuid.New(), ClientID: client, WalletID: wallet, IdempotencyKey: key}
	}
	queue := requests(
		d(client, w1, "a"),
		d(client, w1, "b"), // second on w1: same group
		d(client, w2, "a"), // client's key "a" again (a twin): next group
		d(other, w2, "a"),  // another client's "a" on w2: fine
		d(client, w3, "c"),
		d(client, w2, "d"),
		d(client, w3, "c"), // twin of "c": next group
	)
	group, rest := nextCreateGroup(queue)
	if len(group) != 5 || group[0] != queue[0] || group[1] != queue[1] || group[2] != queue[3] || group[3] != queue[4] || group[4] != queue[5] {
		t.Fatalf("group %v", group)
	}
	if len(rest) != 2 || rest[0] != queue[2] || rest[1] != queue[6] {
		t.Fatalf("rest %v", rest)
	}

	var many []*models.Disbursement
	for i := 0; i < maxCreateGroup+5; i++ {
		many = append(many, d(client, uuid.New(), fmt.Sprint(i)))
	}
	group, rest = nextCreateGroup(requests(many...))
	if len(group) != maxCreateGroup || len(rest) != 5 {
		t.Fatalf("group of %d, %d left; want %d and 5", len(group), len(rest), maxCreateGroup)
	}
}

// groupingService is a Service on the fixture's database.
func groupingService(t *testing.T, f *fixture) *Service {
	t.Helper()
	return New(Options{DB: f.db, Vendors: vendors.NewRegistry(sandbox.NewSimBank(sandbox.Options{}))})
}

// One write writes a group and answers each create: stored with its
// lock and audit line, or refused (ErrInsufficientBalance) when its wallet
// cannot cover it or is not active, leaving nothing of it behind.
func TestCreateGroupAnswersEachCreate(t *testing.T) {
	t.Parallel()
	f := newFixture(t, models.Rupiah(100_000))
	svc := groupingService(t, f)
	short := f.addWallet(models.Rupiah(50_000), models.WalletActive)
	inactive := f.addWallet(models.Rupiah(500_000), models.WalletProvisioning)
	exact := f.addWallet(models.Rupiah(70_000), models.WalletActive)

	paid := f.unsaved(f.wallet.ID, models.Rupiah(100_000), "whole balance")
	tooMuch := f.unsaved(short, models.Rupiah(50_001), "one rupiah short")
	notActive := f.unsaved(inactive, models.Rupiah(10_000), "inactive")
	memo := "invoice 7"
	withMemo := f.unsaved(exact, models.Rupiah(70_000), "exact")
	withMemo.Memo = &memo
	group := requests(paid, tooMuch, notActive, withMemo)
	svc.writeCreateGroup(group)

	want := []error{nil, models.ErrInsufficientBalance, models.ErrInsufficientBalance, nil}
	for i, req := range group {
		if err := <-req.Done(); !errors.Is(err, want[i]) || (want[i] == nil && err != nil) {
			t.Errorf("create %q answered %v, want %v", req.Item.IdempotencyKey, err, want[i])
		}
	}
	for _, tc := range []struct {
		d      *models.Disbursement
		stored int64
		locked models.Amount
	}{{paid, 1, models.Rupiah(100_000)}, {tooMuch, 0, 0}, {notActive, 0, 0}, {withMemo, 1, models.Rupiah(70_000)}} {
		if n := f.count("disbursements", "id = ?", tc.d.ID); n != tc.stored {
			t.Errorf("%q: %d rows stored, want %d", tc.d.IdempotencyKey, n, tc.stored)
		}
		if n := f.count("disbursement_transitions", "disbursement_id = ? AND from_status = '' AND to_status = ?", tc.d.ID, models.StatusVerified); n != tc.stored {
			t.Errorf("%q: %d audit lines, want %d", tc.d.IdempotencyKey, n, tc.stored)
		}
		if w := f.walletByID(tc.d.WalletID); w.Locked != tc.locked {
			t.Errorf("%q: wallet locks %s, want %s", tc.d.IdempotencyKey, w.Locked, tc.locked)
		}
	}
	stored, err := svc.Get(context.Background(), withMemo.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Memo == nil || *stored.Memo != memo || stored.ReferenceID != nil || stored.NetAmount != withMemo.NetAmount ||
		!stored.CreatedAt.Equal(withMemo.CreatedAt) || stored.NextCheckAt == nil || !stored.NextCheckAt.Equal(*withMemo.NextCheckAt) {
		t.Errorf("stored %+v", stored)
	}
	f.reconciled()
}

// A group whose write fails (here a twin of one create, committed
// elsewhere, trips the unique key) writes nothing; each create is then
// written on its own, so only the twin is refused, as a duplicate key.
func TestCreateGroupFallsBackOneByOne(t *testing.T) {
	t.Parallel()
	f := newFixture(t, models.Rupiah(1_000_000))
	svc := groupingService(t, f)
	other := f.addWallet(models.Rupiah(1_000_000), models.WalletActive)
	twin := f.unsaved(f.wallet.ID, models.Rupiah(100_000), "taken")
	if err := svc.openOne(context.Background(), twin); err != nil {
		t.Fatal(err)
	}
	again := f.unsaved(f.wallet.ID, models.Rupiah(100_000), "taken")
	fresh := f.unsaved(other, models.Rupiah(200_000), "fresh")
	group := requests(again, fresh)
	svc.writeCreateGroup(group)
	if err := <-group[0].Done(); !errors.Is(err, gorm.ErrDuplicatedKey) {
		t.Errorf("the twin answered %v, want a duplicate key", err)
	}
	if err := <-group[1].Done(); err != nil {
		t.Errorf("the other create answered %v", err)
	}
	if w := f.walletNow(); w.Locked != models.Rupiah(100_000) {
		t.Errorf("the twin's wallet locks %s, want only the first create's 100000", w.Locked)
	}
	if n := f.count("disbursements", "id IN ?", []uuid.UUID{again.ID, fresh.ID}); n != 1 {
		t.Errorf("%d of the group stored, want the fresh one", n)
	}
	f.reconciled()
}

// Creates of one wallet in one group are locked together when the wallet
// covers their sum; when it does not, each is offered on its own, in its
// order, so those that fit are stored and only the others refused.
func TestCreateGroupOnOneWallet(t *testing.T) {
	t.Parallel()
	amount := models.Rupiah(100_000)
	for _, tc := range []struct {
		name   string
		funds  models.Amount
		stored []bool
	}{
		{"all fit", 3 * amount, []bool{true, true, true}},
		{"two of three fit", 2*amount + 1, []bool{true, true, false}},
		{"none fit", amount - 1, []bool{false, false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.funds)
			svc := groupingService(t, f)
			group := requests(f.unsaved(f.wallet.ID, amount, "1"), f.unsaved(f.wallet.ID, amount, "2"), f.unsaved(f.wallet.ID, amount, "3"))
			svc.writeCreateGroup(group)
			var locked models.Amount
			for i, req := range group {
				err := <-req.Done()
				switch {
				case tc.stored[i] && err != nil:
					t.Errorf("create %d answered %v, want stored", i, err)
				case !tc.stored[i] && !errors.Is(err, models.ErrInsufficientBalance):
					t.Errorf("create %d answered %v, want ErrInsufficientBalance", i, err)
				}
				want := int64(0)
				if tc.stored[i] {
					want, locked = 1, locked+amount
				}
				if n := f.count("disbursements", "id = ?", req.Item.ID); n != want {
					t.Errorf("create %d: %d rows, want %d", i, n, want)
				}
			}
			if w := f.walletNow(); w.Locked != locked || w.Available() < 0 {
				t.Errorf("wallet: balance %s locked %s, want locked %s", w.Balance, w.Locked, locked)
			}
			f.reconciled()
		})
	}
}

// Concurrent creates on many wallets, each funded for exactly three: every
// wallet takes exactly three, whichever group each create lands in, and
// the rest are refused; no lock goes beyond a balance.
func TestConcurrentCreatesAcrossWallets(t *testing.T) {
	t.Parallel()
	const wallets, perWallet, fits = 8, 6, 3
	amount := models.Rupiah(100_000)
	f := newFixture(t, 0)
	svc := New(Options{DB: f.db, Vendors: vendors.NewRegistry(sandbox.NewSimBank(sandbox.Options{}))})
	ids := make([]uuid.UUID, wallets)
	for i := range ids {
		ids[i] = f.addWallet(fits*amount, models.WalletActive)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted := map[uuid.UUID]int{}
	refused := 0
	for i := 0; i < wallets*perWallet; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wallet := ids[i%wallets]
			created, err := svc.Create(context.Background(), f.client, CreateRequest{
				Params:         Params{WalletID: wallet, Amount: amount, BankCode: "bca", AccountNo: "1234567890", TransferType: models.BIFAST},
				IdempotencyKey: fmt.Sprintf("key-%d", i)})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && !created.Replayed:
				accepted[wallet]++
			case errors.Is(err, models.ErrInsufficientBalance):
				refused++
			default:
				t.Errorf("create %d: %+v, %v", i, created, err)
			}
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if accepted[id] != fits {
			t.Errorf("wallet %s took %d creates, want %d", id, accepted[id], fits)
		}
		if w := f.walletByID(id); w.Locked != fits*amount || w.Available() != 0 {
			t.Errorf("wallet %s: balance %s locked %s", id, w.Balance, w.Locked)
		}
	}
	if refused != wallets*(perWallet-fits) {
		t.Errorf("%d refused, want %d", refused, wallets*(perWallet-fits))
	}
	f.reconciled()
}

// Many concurrent creates on one busy wallet, funded for exactly some of
// them: whichever groups they land in, exactly that many are stored, the
// lock is exactly theirs, nothing is overdrawn, and the ledger reconciles.
func TestConcurrentCreatesOnOneWallet(t *testing.T) {
	t.Parallel()
	const creates, fits = 120, 47
	amount := models.Rupiah(100_000)
	f := newFixture(t, fits*amount)
	svc := groupingService(t, f)
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted, refused := 0, 0
	for i := 0; i < creates; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			created, err := svc.Create(context.Background(), f.client, CreateRequest{
				Params:         Params{WalletID: f.wallet.ID, Amount: amount, BankCode: "bca", AccountNo: "1234567890", TransferType: models.BIFAST},
				IdempotencyKey: fmt.Sprintf("hot-%d", i)})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && !created.Replayed:
				accepted++
			case errors.Is(err, models.ErrInsufficientBalance):
				refused++
			default:
				t.Errorf("create %d: %+v, %v", i, created, err)
			}
		}()
	}
	wg.Wait()
	if accepted != fits || refused != creates-fits {
		t.Errorf("%d accepted and %d refused, want %d and %d", accepted, refused, fits, creates-fits)
	}
	if w := f.walletNow(); w.Locked != fits*amount || w.Available() != 0 {
		t.Errorf("wallet: balance %s locked %s", w.Balance, w.Locked)
	}
	if n := f.count("disbursements", "wallet_id = ?", f.wallet.ID); n != fits {
		t.Errorf("%d disbursements stored, want %d", n, fits)
	}
	f.reconciled()
}
