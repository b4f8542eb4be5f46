package sandbox_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox"
	"github.com/payoutd/payoutd/vendors/sandbox/sandboxtest"
)

// storeKinds are the stores every behaviour is checked on. newStore returns
// a fresh, empty store.
var storeKinds = []struct {
	name     string
	newStore func(t *testing.T) sandbox.Store
}{
	{"memory", func(*testing.T) sandbox.Store { return sandbox.NewMemoryStore() }},
	{"db", func(t *testing.T) sandbox.Store { return sandbox.NewDBStore(testenv.DB(t)) }},
}

// The vendors' whole behaviour (magic numbers, caps, e-wallet rules,
// idempotent submits, completion), once per store.
func TestVendorBehaviour(t *testing.T) {
	t.Parallel()
	t.Run("own-memory-stores", func(t *testing.T) {
		t.Parallel()
		sandboxtest.Run(t, func(t *testing.T, o sandbox.Options) sandboxtest.Pair {
			return sandboxtest.Pair{SimBank: sandbox.NewSimBank(o), SimWallet: sandbox.NewSimWallet(o)}
		})
	})
	for _, kind := range storeKinds {
		t.Run("shared-"+kind.name+"-store", func(t *testing.T) {
			t.Parallel()
			sandboxtest.Run(t, func(t *testing.T, o sandbox.Options) sandboxtest.Pair {
				o.Store = kind.newStore(t)
				return sandboxtest.Pair{SimBank: sandbox.NewSimBank(o), SimWallet: sandbox.NewSimWallet(o)}
			})
		})
	}
}

// The list a caller gets is a copy: changing it does not change the vendor.
func TestBanksIsACopy(t *testing.T) {
	t.Parallel()
	v := sandbox.NewSimBank(sandbox.Options{})
	a, _ := v.Banks(context.Background())
	a[0].Code = "changed"
	b, _ := v.Banks(context.Background())
	if b[0].Code == "changed" {
		t.Error("Banks returned the vendor's own slice")
	}
}

func TestRegistryHasBothVendors(t *testing.T) {
	t.Parallel()
	r := sandbox.Registry(sandbox.Options{})
	for _, name := range []string{"simbank", "simwallet"} {
		if v, err := r.Get(name); err != nil || v.Name() != name {
			t.Errorf("Registry.Get(%q) = %v, %v", name, v, err)
		}
	}
	if len(r.Names()) != 2 {
		t.Errorf("Registry names %v, want 2", r.Names())
	}
}

func payout(ref, account string) vendors.Payout {
	return vendors.Payout{HolderName: "Budi Santoso", Reference: ref, BankCode: "bca", AccountNo: account, TransferType: models.BIFAST, Amount: models.Rupiah(97_500)}
}

func paidCount(t *testing.T, v *sandbox.Vendor, ref string) int {
	t.Helper()
	n, err := v.PaidCount(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Without a store each vendor instance keeps its own payouts.
func TestVendorsWithoutStoreDoNotSharePayouts(t *testing.T) {
	t.Parallel()
	a := sandbox.NewSimBank(sandbox.Options{})
	b := sandbox.NewSimBank(sandbox.Options{})
	if _, err := a.Submit(context.Background(), payout("shared-ref", "1234567890")); err != nil {
		t.Fatal(err)
	}
	if paidCount(t, a, "shared-ref") != 1 || paidCount(t, b, "shared-ref") != 0 {
		t.Error("a payout submitted to one vendor without a store shows up in another")
	}
}

// Vendor instances on one store, like the api, the worker and the admin CLI
// on one database, see one payout per reference: whoever submits, completes
// or asks.
func TestInstancesOnOneStoreShareState(t *testing.T) {
	t.Parallel()
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			c := sandboxtest.NewClock()
			store := kind.newStore(t)
			api := sandbox.NewSimBank(sandbox.Options{Store: store, Now: c.Now})
			worker := sandbox.NewSimBank(sandbox.Options{Store: store, Now: c.Now})
			admin := sandbox.NewSimBank(sandbox.Options{Store: store, Now: c.Now})
			if _, err := api.Submit(ctx, payout("ref", sandbox.AccountFirstSubmitLost)); !errors.Is(err, vendors.ErrUnavailable) {
				t.Fatalf("first submit: %v, want the answer lost", err)
			}
			// The worker resolves the unknown outcome by asking, then resubmits.
			if st, err := worker.Status(ctx, "ref"); err != nil || st.Status != vendors.PayoutPending {
				t.Fatalf("worker Status = %+v, %v; want PENDING", st, err)
			}
			if res, err := worker.Submit(ctx, payout("ref", sandbox.AccountFirstSubmitLost)); err != nil || res.Status != vendors.PayoutPending {
				t.Fatalf("worker resubmit = %+v, %v; want the accepted payout", res, err)
			}
			if err := admin.Complete(ctx, "ref", vendors.PayoutFailed, "operator"); err != nil {
				t.Fatal(err)
			}
			for _, v := range []*sandbox.Vendor{api, worker, admin} {
				st, err := v.Status(ctx, "ref")
				if err != nil || st.Status != vendors.PayoutFailed || st.FailureReason != "operator" {
					t.Errorf("Status = %+v, %v; want FAILED by the operator", st, err)
				}
				if n, err := v.SubmitCalls(ctx, "ref"); err != nil || n != 2 {
					t.Errorf("SubmitCalls = %d, %v; want 2", n, err)
				}
				if paidCount(t, v, "ref") != 1 {
					t.Error("PaidCount is not 1")
				}
			}
		})
	}
}

// simbank and simwallet on one store: a reference is one vendor's.
func TestSharedStoreKeepsVendorsApart(t *testing.T) {
	t.Parallel()
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			o := sandbox.Options{Store: kind.newStore(t)}
			bank, wallet := sandbox.NewSimBank(o), sandbox.NewSimWallet(o)
			if _, err := bank.Submit(ctx, payout("ref", "1234567890")); err != nil {
				t.Fatal(err)
			}
			if _, err := wallet.Submit(ctx, payout("ref", "1234567890")); !errors.Is(err, vendors.ErrRejected) || !errors.Is(err, sandbox.ErrReferenceInUse) {
				t.Errorf("simwallet submit of simbank's reference = %v, want ErrRejected (ErrReferenceInUse)", err)
			}
			if err := wallet.Complete(ctx, "ref", vendors.PayoutFailed, "x"); !errors.Is(err, vendors.ErrUnknownPayout) {
				t.Errorf("simwallet Complete of simbank's payout = %v, want ErrUnknownPayout", err)
			}
			if n, err := bank.SubmitCalls(ctx, "ref"); err != nil || n != 1 {
				t.Errorf("simbank SubmitCalls = %d, %v; want 1 (simwallet's attempt not counted)", n, err)
			}
		})
	}
}

// The Store contract, the same for both stores.
func TestStore(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 22, 10, 0, 0, 123456000, time.UTC)
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := kind.newStore(t)
			if _, err := s.Get(ctx, "ref"); !errors.Is(err, vendors.ErrUnknownPayout) {
				t.Errorf("Get(unknown) = %v, want ErrUnknownPayout", err)
			}
			if _, err := s.MarkFinal(ctx, "ref", vendors.PayoutSuccess, "", at); !errors.Is(err, vendors.ErrUnknownPayout) {
				t.Errorf("MarkFinal(unknown) = %v, want ErrUnknownPayout", err)
			}
			if _, err := s.MarkAnswerLost(ctx, "ref", at); !errors.Is(err, vendors.ErrUnknownPayout) {
				t.Errorf("MarkAnswerLost(unknown) = %v, want ErrUnknownPayout", err)
			}
			first := vendors.Payout{Reference: "ref", BankCode: "mandiri", AccountNo: "1234567890", TransferType: models.RTOL, Amount: models.Rupiah(50_000_000) + 1}
			want := sandbox.Record{Payout: first, Vendor: "simbank", SubmitCalls: 1, AcceptedAt: at}
			rec, err := s.RecordSubmit(ctx, "simbank", first, at)
			if err != nil || rec != want {
				t.Fatalf("first RecordSubmit = %+v, %v; want %+v", rec, err, want)
			}
			other := vendors.Payout{Reference: "ref", BankCode: "bca", AccountNo: "1000000005", TransferType: models.BIFAST, Amount: 1}
			rec, err = s.RecordSubmit(ctx, "simbank", other, at.Add(time.Hour))
			want.SubmitCalls = 2
			if err != nil || rec != want {
				t.Fatalf("second RecordSubmit = %+v, %v; want %+v", rec, err, want)
			}
			if _, err := s.RecordSubmit(ctx, "simwallet", other, at); !errors.Is(err, sandbox.ErrReferenceInUse) {
				t.Errorf("RecordSubmit by another vendor = %v, want ErrReferenceInUse", err)
			}
			if lost, err := s.MarkAnswerLost(ctx, "ref", at); err != nil || !lost {
				t.Errorf("first MarkAnswerLost = %v, %v; want true", lost, err)
			}
			if lost, err := s.MarkAnswerLost(ctx, "ref", at); err != nil || lost {
				t.Errorf("second MarkAnswerLost = %v, %v; want false", lost, err)
			}
			rec, err = s.MarkFinal(ctx, "ref", vendors.PayoutFailed, "returned", at)
			want.AnswerLost, want.FinalStatus, want.FailureReason = true, vendors.PayoutFailed, "returned"
			if err != nil || rec != want {
				t.Fatalf("MarkFinal = %+v, %v; want %+v", rec, err, want)
			}
			rec, err = s.MarkFinal(ctx, "ref", vendors.PayoutSuccess, "", at)
			if err != nil || rec != want {
				t.Errorf("MarkFinal of a final payout = %+v, %v; want it unchanged %+v", rec, err, want)
			}
			if rec, err := s.Get(ctx, "ref"); err != nil || rec != want {
				t.Errorf("Get = %+v, %v; want %+v", rec, err, want)
			}
		})
	}
}

// Submits of one reference from several goroutines (and, for the database,
// several connection pools as from several processes) create one payout and
// count every call.
func TestStoreConcurrentRecordSubmit(t *testing.T) {
	t.Parallel()
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			var stores []sandbox.Store
			if kind.name == "db" {
				db, url := testenv.DBWithURL(t)
				second, err := database.Open(url)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					if sqlDB, err := second.DB(); err == nil {
						sqlDB.Close()
					}
				})
				stores = []sandbox.Store{sandbox.NewDBStore(db), sandbox.NewDBStore(second)}
			} else {
				stores = []sandbox.Store{kind.newStore(t)}
			}
			const n = 20
			calls := make(chan int, n)
			var wg sync.WaitGroup
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rec, err := stores[i%len(stores)].RecordSubmit(context.Background(), "simbank", payout("ref", "1234567890"), time.Now())
					if err != nil {
						t.Errorf("RecordSubmit: %v", err)
						return
					}
					calls <- rec.SubmitCalls
				}()
			}
			wg.Wait()
			close(calls)
			seen := map[int]bool{}
			for c := range calls {
				if seen[c] {
					t.Errorf("two calls saw SubmitCalls = %d", c)
				}
				seen[c] = true
			}
			for c := 1; c <= n; c++ {
				if !seen[c] {
					t.Errorf("no call saw SubmitCalls = %d (each call must count once)", c)
				}
			}
			if rec, err := stores[0].Get(context.Background(), "ref"); err != nil || rec.SubmitCalls != n {
				t.Errorf("Get = %+v, %v; want SubmitCalls %d", rec, err, n)
			}
		})
	}
}
