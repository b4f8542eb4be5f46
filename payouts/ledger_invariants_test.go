package payouts

import (
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// The money invariants (docs/design.md, Money; ledger/wallets.go) hold after
// every step of a mixed lifecycle driven through the service as the API,
// the worker and the operators drive it: creates (one refused, one
// replayed), a review and its approval, vendor rejection and later
// failure, payment, cancellation (VERIFIED and PENDING_VERIFICATION),
// expiry (both), a bank's return, and an operator's adjustment, on two
// wallets. After each step, checked here from the rows themselves and not
// only by ledger.Reconcile:
//   - available = balance − locked is never negative;
//   - each wallet's lock is the sum of the gross of its disbursements
//     that hold one (PENDING_VERIFICATION, VERIFIED, REQUESTED);
//   - each wallet's balance is what the steps say it must be, and the sum
//     of its ledger entries;
//   - every balance change is one ledger transaction, balanced to zero: a
//     payment posts the gross off the wallet, the net to the vendor and the
//     fee to the platform; a return posts the net back; a disbursement that
//     ends unpaid posts nothing;
//   - ledger.Reconcile reports OK.
func TestLedgerInvariantsThroughAMixedLifecycle(t *testing.T) {
	t.Parallel()
	e := newSvcEnv(t, models.Rupiah(1_000_000))
	w1 := e.wallet.ID
	w2 := e.addWallet(models.Rupiah(500_000), models.WalletActive)
	m := &moneyModel{balance: map[uuid.UUID]models.Amount{w1: models.Rupiah(1_000_000), w2: models.Rupiah(500_000)}, postings: 2}
	check := func(step string) {
		t.Helper()
		e.moneyInvariants(step, m)
	}
	check("funded")

	reviewed := *e.client
	threshold := models.Rupiah(200_000)
	reviewed.ReviewThreshold = &threshold
	create := func(c *models.Client, key string, wallet uuid.UUID, rupiah int64, account string, tt models.TransferType) *models.Disbursement {
		t.Helper()
		d := e.mustCreate(c, CreateRequest{IdempotencyKey: key,
			Params: Params{WalletID: wallet, Amount: models.Rupiah(rupiah), BankCode: "bca", AccountNo: account, TransferType: tt}})
		check("create " + key)
		return d
	}
	paid := create(e.client, "paid", w1, 100_000, "1234567890", models.BIFAST)
	rejected := create(e.client, "rejected", w1, 50_000, sandbox.AccountSubmitRejected, models.BIFAST)
	failsLater := create(e.client, "fails-later", w1, 70_000, sandbox.AccountFailsLater, models.BIFAST)
	approved := create(&reviewed, "approved", w1, 200_000, "1234567891", models.BIFAST)
	returned := create(e.client, "returned", w1, 60_000, sandbox.AccountReturnedLater, models.BIFAST)
	reviewCancelled := create(&reviewed, "review-cancelled", w1, 300_000, "1234567892", models.BIFAST)
	expires := create(e.client, "expires", w2, 40_000, "1234567893", models.BIFAST)
	cancelled := create(e.client, "cancelled", w2, 30_000, "1234567894", models.BIFAST)
	paidRTOL := create(e.client, "paid-rtol", w2, 25_000, "1234567895", models.RTOL)
	reviewExpires := create(&reviewed, "review-expires", w2, 250_000, "1234567896", models.BIFAST)

	// 155,000 available on w2: refused, nothing moves; a replay moves nothing.
	if got, err := e.create("refused", Params{WalletID: w2, Amount: models.Rupiah(200_000), BankCode: "bca",
		AccountNo: "1234567890", TransferType: models.BIFAST}); got != nil || err == nil {
		t.Fatalf("create beyond the available balance: %+v, %v", got, err)
	}
	check("refused create")
	if got, err := e.create("paid", e.params(100_000, "1234567890")); err != nil || !got.Replayed {
		t.Fatalf("replay: %+v, %v", got, err)
	}
	check("replay")

	e.adjust(w1, models.Rupiah(50_000))
	m.balance[w1] += models.Rupiah(50_000)
	m.postings++
	check("adjustment")

	if _, err := e.svc.Approve(e.ctx, approved.ID, "ops"); err != nil {
		t.Fatal(err)
	}
	check("approve")

	for _, d := range []*models.Disbursement{paid, rejected, failsLater, approved, returned, paidRTOL} {
		e.submit(d.ID)
		check("submit " + d.IdempotencyKey)
	}
	e.wantStatus(rejected.ID, models.StatusFailed)

	for _, d := range []*models.Disbursement{cancelled, reviewCancelled} {
		if _, err := e.svc.Cancel(e.ctx, d.ID, "ops"); err != nil {
			t.Fatal(err)
		}
		e.wantStatus(d.ID, models.StatusCancelled)
		check("cancel " + d.IdempotencyKey)
	}

	e.clock.Advance(svcLockTTL)
	if n := e.expireLocks(); n != 2 {
		t.Fatalf("%d expired, want 2", n)
	}
	e.wantStatus(expires.ID, models.StatusExpired)
	e.wantStatus(reviewExpires.ID, models.StatusExpired)
	check("expiry")

	for _, d := range []*models.Disbursement{paid, failsLater, approved, returned, paidRTOL} {
		e.poll(d.ID)
		if d != failsLater {
			m.balance[d.WalletID] -= d.Amount
			m.postings++
		}
		check("poll " + d.IdempotencyKey)
	}
	e.wantStatus(failsLater.ID, models.StatusFailed)
	e.wantStatus(returned.ID, models.StatusSuccess)

	e.poll(returned.ID) // the return watch finds it returned
	e.wantStatus(returned.ID, models.StatusReturned)
	m.balance[w1] += returned.NetAmount
	m.postings++
	check("return")

	for _, w := range []uuid.UUID{w1, w2} {
		if locked := e.walletByID(w).Locked; locked != 0 {
			t.Errorf("wallet %s still locks %s with every disbursement final", w, locked)
		}
	}
	// 1,000,000 + 50,000 − 100,000 − 200,000 − 60,000 + 57,500 and
	// 500,000 − 25,000: the model agrees with the figures.
	if m.balance[w1] != models.Rupiah(747_500) || m.balance[w2] != models.Rupiah(475_000) {
		t.Errorf("model balances %s and %s", m.balance[w1], m.balance[w2])
	}
}

// moneyModel is what the steps of a test say the money must be: each
// wallet's balance and the number of ledger transactions.
type moneyModel struct {
	balance  map[uuid.UUID]models.Amount
	postings int64
}

// moneyInvariants checks the invariants of
// TestLedgerInvariantsThroughAMixedLifecycle against m after step.
func (e *svcEnv) moneyInvariants(step string, m *moneyModel) {
	e.t.Helper()
	var ds []models.Disbursement
	if err := e.db.Find(&ds).Error; err != nil {
		e.t.Fatal(err)
	}
	holding := map[uuid.UUID]models.Amount{}
	for _, d := range ds {
		if slices.Contains([]models.DisbursementStatus{models.StatusPendingVerification, models.StatusVerified, models.StatusRequested}, d.Status) {
			holding[d.WalletID] += d.Amount
		}
	}
	for id, want := range m.balance {
		w := e.walletByID(id)
		if w.Available() < 0 || w.Locked < 0 {
			e.t.Errorf("%s: wallet %s balance %s locked %s: available negative", step, id, w.Balance, w.Locked)
		}
		if w.Locked != holding[id] {
			e.t.Errorf("%s: wallet %s locks %s, its disbursements holding a lock sum to %s", step, id, w.Locked, holding[id])
		}
		if w.Balance != want {
			e.t.Errorf("%s: wallet %s balance %s, want %s", step, id, w.Balance, want)
		}
		if sum := e.sumEntries("account = ?", models.WalletAccount(id)); sum != w.Balance {
			e.t.Errorf("%s: wallet %s balance %s, its ledger entries sum to %s", step, id, w.Balance, sum)
		}
	}
	if n := e.count("ledger_transactions", "1 = 1"); n != m.postings {
		e.t.Errorf("%s: %d ledger transactions, want %d", step, n, m.postings)
	}
	var unbalanced []string
	if err := e.db.Table("ledger_entries").Select("transaction_id").Group("transaction_id").
		Having("SUM(amount) <> 0").Pluck("transaction_id", &unbalanced).Error; err != nil {
		e.t.Fatal(err)
	}
	if len(unbalanced) > 0 {
		e.t.Errorf("%s: ledger transactions %v do not balance", step, unbalanced)
	}
	for _, d := range ds {
		e.disbursementPostings(step, &d)
	}
	e.reconciled()
}

// disbursementPostings checks the ledger transactions referencing d: a
// payment when it was paid (SUCCESS, RETURNED), a return when returned,
// none otherwise.
func (e *svcEnv) disbursementPostings(step string, d *models.Disbursement) {
	e.t.Helper()
	var txns []models.LedgerTransaction
	if err := e.db.Where("reference = ?", d.ID.String()).Order("created_at, kind").Find(&txns).Error; err != nil {
		e.t.Fatal(err)
	}
	wallet, clearing := models.WalletAccount(d.WalletID), models.VendorClearingAccount(d.Vendor)
	want := map[string]map[string]models.Amount{}
	if d.Status == models.StatusSuccess || d.Status == models.StatusReturned {
		want["payout"] = map[string]models.Amount{wallet: -d.Amount, clearing: d.NetAmount}
		if d.PlatformFee != 0 {
			want["payout"][models.AccountPlatformFees] = d.PlatformFee
		}
	}
	if d.Status == models.StatusReturned {
		want["return"] = map[string]models.Amount{wallet: d.NetAmount, clearing: -d.NetAmount}
	}
	if len(txns) != len(want) {
		e.t.Errorf("%s: %s disbursement %s has %d ledger transactions, want %d", step, d.Status, d.IdempotencyKey, len(txns), len(want))
		return
	}
	for _, txn := range txns {
		var entries []models.LedgerEntry
		if err := e.db.Where("transaction_id = ?", txn.ID).Find(&entries).Error; err != nil {
			e.t.Fatal(err)
		}
		got := map[string]models.Amount{}
		for _, en := range entries {
			got[en.Account] += en.Amount
		}
		expected, ok := want[txn.Kind]
		if !ok || len(got) != len(expected) {
			e.t.Errorf("%s: %s has a %s posting %v, want %v", step, d.IdempotencyKey, txn.Kind, got, want)
			continue
		}
		for account, amount := range expected {
			if got[account] != amount {
				e.t.Errorf("%s: %s's %s posting gives %s %s, want %s", step, d.IdempotencyKey, txn.Kind, account, got[account], amount)
			}
		}
	}
}

// sumEntries sums the ledger entries that match where.
func (e *svcEnv) sumEntries(where string, args ...any) models.Amount {
	e.t.Helper()
	var sum int64
	if err := e.db.Table("ledger_entries").Where(where, args...).Select("COALESCE(SUM(amount), 0)").Scan(&sum).Error; err != nil {
		e.t.Fatal(err)
	}
	return models.Amount(sum)
}
