package faults

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
)

// The history check on hand-made histories: each defect a wallet could
// show a merchant is reported, and what a correct wallet may show under
// concurrency, retries and unanswered creates never is. These run in
// every `go test`, without PAYOUTD_FAULTS.

var (
	caseWallet = uuid.MustParse("7b0e6a1c-3f5e-4c1a-9d2b-8e4f6a7b9c0d")
	g          = models.Rupiah(20_000) // each case's gross
)

// A small language for the cases: times are plain numbers.
func startOp(balance, paid, released models.Amount) porcupine.Operation {
	return porcupine.Operation{Call: 0, Return: 1,
		Input:  walletInput{kind: walletStart, wallet: caseWallet, paid: paid, released: released, unit: g},
		Output: walletOutput{balance: balance, available: balance}}
}

func lockOp(key string, call, ret int64) porcupine.Operation {
	return porcupine.Operation{Call: call, Return: ret, Input: walletInput{kind: walletLock, wallet: caseWallet, key: key, gross: g},
		Output: walletOutput{}}
}

func refuseOp(key string, call, ret int64) porcupine.Operation {
	return porcupine.Operation{Call: call, Return: ret, Input: walletInput{kind: walletRefuse, wallet: caseWallet, key: key, gross: g},
		Output: walletOutput{}}
}

func readOp(call, ret int64, balance, locked models.Amount) porcupine.Operation {
	return porcupine.Operation{Call: call, Return: ret, Input: walletInput{kind: walletRead, wallet: caseWallet},
		Output: walletOutput{balance: balance, available: balance - locked, locked: locked}}
}

func finalOp(call, ret int64, balance models.Amount) porcupine.Operation {
	op := readOp(call, ret, balance, 0)
	in := op.Input.(walletInput)
	in.final = true
	op.Input = in
	return op
}

func TestWalletHistoryCases(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ops   []porcupine.Operation
		legal bool
	}{
		// What a correct wallet may show.
		{"a read concurrent with a create that has not locked yet", []porcupine.Operation{startOp(3*g, g, 0),
			lockOp("a", 10, 50), readOp(20, 30, 3*g, 0), finalOp(100, 110, 2*g)}, true},
		{"a read concurrent with a create that has locked", []porcupine.Operation{startOp(3*g, g, 0),
			lockOp("a", 10, 50), readOp(20, 30, 3*g, g), finalOp(100, 110, 2*g)}, true},
		{"a payout paid between two reads", []porcupine.Operation{startOp(3*g, g, 0),
			lockOp("a", 10, 20), readOp(30, 40, 3*g, g), readOp(50, 60, 2*g, 0), finalOp(100, 110, 2*g)}, true},
		{"a failed payout's gross back in available", []porcupine.Operation{startOp(g, 0, g),
			lockOp("a", 10, 20), readOp(30, 40, g, g), readOp(50, 60, g, 0), finalOp(100, 110, g)}, true},
		{"a refusal after the create that took the last money, concurrent with it", []porcupine.Operation{startOp(g, g, 0),
			lockOp("a", 10, 40), refuseOp("b", 20, 30), finalOp(100, 110, 0)}, true},
		{"a create made possible by a payout that failed unseen", []porcupine.Operation{startOp(g, g, g),
			lockOp("a", 10, 20), lockOp("b", 30, 40), finalOp(100, 110, 0)}, true},
		{"an unanswered create that locked after a read", []porcupine.Operation{startOp(2*g, g, 0),
			lockOp("a", 10, never), readOp(20, 30, 2*g, 0), readOp(40, 50, 2*g, g), finalOp(100, 110, g)}, true},
		{"an unanswered create found locked only at the end", []porcupine.Operation{startOp(2*g, g, 0),
			lockOp("a", 10, never), readOp(20, 30, 2*g, 0), finalOp(100, 110, g)}, true},

		// Defects.
		{"a read sees money twice locked", []porcupine.Operation{startOp(3*g, g, 0),
			lockOp("a", 10, 20), readOp(30, 40, 3*g, 2*g), finalOp(100, 110, 2*g)}, false},
		{"a create accepted beyond the balance", []porcupine.Operation{startOp(2*g, 3*g, 0),
			lockOp("a", 10, 20), lockOp("b", 30, 40), lockOp("c", 50, 60), finalOp(100, 110, -g)}, false},
		{"a refusal while money was available", []porcupine.Operation{startOp(2*g, g, 0),
			lockOp("a", 10, 20), refuseOp("b", 30, 40), finalOp(100, 110, g)}, false},
		{"a read misses a create answered before it was sent", []porcupine.Operation{startOp(2*g, g, 0),
			lockOp("a", 10, 20), readOp(30, 40, 2*g, 0), finalOp(100, 110, g)}, false},
		{"a read sees a lock that an earlier read had seen released", []porcupine.Operation{startOp(2*g, 0, g),
			lockOp("a", 10, 20), readOp(30, 40, 2*g, 0), readOp(50, 60, 2*g, g), finalOp(100, 110, 2*g)}, false},
		{"the balance rises with nothing returned", []porcupine.Operation{startOp(2*g, g, 0),
			lockOp("a", 10, 20), readOp(30, 40, g, 0), readOp(50, 60, 2*g, 0), finalOp(100, 110, g)}, false},
		{"money back in available with no payout failed", []porcupine.Operation{startOp(2*g, 0, 0),
			lockOp("a", 10, 20), readOp(30, 40, 2*g, g), readOp(50, 60, 2*g, 0), finalOp(100, 110, 2*g)}, false},
		{"a read whose available is not balance minus locked", []porcupine.Operation{startOp(2*g, 0, 0),
			{Call: 10, Return: 20, Input: walletInput{kind: walletRead, wallet: caseWallet},
				Output: walletOutput{balance: 2 * g, available: g, locked: 0}}}, false},
		{"a paid payout whose money never left the balance", []porcupine.Operation{startOp(2*g, g, 0),
			lockOp("a", 10, 20), finalOp(100, 110, 2*g)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := checkWalletOperations(tc.ops, time.Minute)
			want := porcupine.Ok
			if !tc.legal {
				want = porcupine.Illegal
			}
			if v.result != want {
				t.Errorf("%s; want %v", v, want)
			}
		})
	}
}

// caseAttempt is a create attempt of a case: answered code, or a
// transport error when code is 0.
func caseAttempt(key string, sent, got time.Duration, code int, message string, replayed bool, id string) createAttempt {
	return createAttempt{key: key, wallet: caseWallet, gross: g, sent: sent, got: got, answered: code != 0,
		code: code, message: message, replayed: replayed, id: id}
}

func caseRow(key string, status models.DisbursementStatus) models.Disbursement {
	return models.Disbursement{ID: uuid.New(), WalletID: caseWallet, IdempotencyKey: key, Status: status, Amount: g}
}

func caseStart(balance models.Amount) []balanceRead {
	return []balanceRead{{wallet: caseWallet, sent: 0, got: 1, balance: balance, available: balance}}
}

// TestWalletOperationsFromAnswers: how creates' attempts become
// operations.
func TestWalletOperationsFromAnswers(t *testing.T) {
	paid := caseRow("retried", models.StatusSuccess)
	failed := caseRow("failed-inline", models.StatusFailed)
	lost := caseRow("unanswered-stored", models.StatusSuccess)
	ops, mismatches, err := walletOperations(walletHistory{
		starts: caseStart(10 * g),
		attempts: []createAttempt{
			caseAttempt("retried", 10, 15, 0, "", false, ""),
			caseAttempt("retried", 20, 30, 503, "database unavailable", false, ""),
			caseAttempt("retried", 40, 50, 200, "", true, paid.ID.String()),
			caseAttempt("failed-inline", 60, 70, 503, "Vendor payout request failed", false, ""),
			caseAttempt("unanswered-stored", 80, 90, 0, "", false, ""),
			caseAttempt("unanswered-nothing", 100, 110, 0, "", false, ""),
			caseAttempt("refused", 120, 130, 402, "Insufficient balance", false, ""),
			caseAttempt("invalid", 140, 150, 422, "withdrawal amount is below minimum: 12500", false, ""),
		},
		rows: []models.Disbursement{paid, failed, lost},
	})
	if err != nil || len(mismatches) > 0 {
		t.Fatal(err, mismatches)
	}
	var got []string
	for _, op := range ops {
		in := op.Input.(walletInput)
		ret := fmt.Sprint(op.Return)
		if op.Return == never {
			ret = "never"
		}
		switch in.kind {
		case walletStart:
			got = append(got, fmt.Sprintf("start paid=%s released=%s", in.paid, in.released))
		case walletLock:
			got = append(got, fmt.Sprintf("lock %s [%d,%s]", in.key, op.Call, ret))
		case walletRefuse:
			got = append(got, fmt.Sprintf("refuse %s [%d,%s]", in.key, op.Call, ret))
		}
	}
	slices.Sort(got)
	want := []string{
		"lock failed-inline [60,70]", // the answer names a stored payout's status
		"lock retried [10,50]",       // from the first attempt to the replay
		"lock unanswered-stored [80,never]",
		"refuse refused [120,130]",
		fmt.Sprintf("start paid=%s released=%s", 2*g, g),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("operations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The attempt whose signature the payout stores is the one that locked:
// the lock is placed inside it, not across the retries before it.
func TestWalletOperationsLockInTheCreatingAttempt(t *testing.T) {
	row := caseRow("a", models.StatusSuccess)
	sig := "b1946ac92492d2347c6235b4d2611184"
	row.RequestSignature = &sig
	first := caseAttempt("a", 10, 20, 503, "payout gateway is temporarily unavailable; retry later", false, "")
	first.signature = "0f343b0931126a20f133d67c2b018a3b"
	second := caseAttempt("a", 30, 40, 0, "", false, "")
	second.signature = sig
	third := caseAttempt("a", 50, 60, 200, "", true, row.ID.String())
	ops, _, err := walletOperations(walletHistory{starts: caseStart(g), rows: []models.Disbursement{row},
		attempts: []createAttempt{first, second, third}})
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		if op.Input.(walletInput).kind == walletLock && (op.Call != 30 || op.Return != 60) {
			t.Errorf("lock [%d,%d]; want [30,60]: from the attempt that created the payout to the replay", op.Call, op.Return)
		}
	}
}

// Interchangeable locks get their calls and returns matched in order.
func TestMatchInOrder(t *testing.T) {
	ops := []porcupine.Operation{lockOp("long", 0, 100), lockOp("short", 40, 60), refuseOp("r", 50, 55)}
	matchInOrder(ops)
	got := fmt.Sprintf("%s [%d,%d] %s [%d,%d] %s [%d,%d]", ops[0].Input.(walletInput).key, ops[0].Call, ops[0].Return,
		ops[1].Input.(walletInput).key, ops[1].Call, ops[1].Return, ops[2].Input.(walletInput).key, ops[2].Call, ops[2].Return)
	if want := "long [0,60] short [40,100] r [50,55]"; got != want {
		t.Errorf("%s; want %s", got, want)
	}
}

func TestWalletOperationsMismatchesAndReturns(t *testing.T) {
	row := caseRow("a", models.StatusSuccess)
	_, mismatches, err := walletOperations(walletHistory{starts: caseStart(g), rows: []models.Disbursement{row},
		attempts: []createAttempt{caseAttempt("a", 10, 20, 201, "", false, uuid.NewString())}})
	if err != nil || len(mismatches) != 1 {
		t.Errorf("a 201 naming another payout than the stored one: mismatches %q, err %v; want one", mismatches, err)
	}
	row.Status = models.StatusReturned
	if _, _, err := walletOperations(walletHistory{starts: caseStart(g), rows: []models.Disbursement{row}}); err == nil {
		t.Error("a returned payout was taken as modelled")
	}
}

// An unanswered create with nothing stored under its key locked nothing:
// a read that shows its gross locked is a violation (money held for no
// payout).
func TestUnansweredCreateWithoutPayoutLocksNothing(t *testing.T) {
	ops, _, err := walletOperations(walletHistory{
		starts:   caseStart(2 * g),
		attempts: []createAttempt{caseAttempt("a", 10, 20, 0, "", false, "")},
		reads: []balanceRead{{wallet: caseWallet, sent: 30, got: 40, balance: 2 * g, available: g, locked: g},
			{wallet: caseWallet, sent: 100, got: 110, balance: 2 * g, available: 2 * g, final: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if v := checkWalletOperations(ops, time.Minute); v.result != porcupine.Illegal {
		t.Errorf("%s; want a violation", v)
	}
}

// TestWalletHistorySimulated runs a correct wallet (the one
// docs/design.md describes) under concurrent merchants whose attempts
// lose answers, are retried and are sometimes never answered, with payouts
// paid or failed at moments no one sees and reads in between: its history
// is never reported. The same history with one read answered stale (the
// figures of an earlier read, though a create that started after that
// read had been answered before this one was sent) must be.
func TestWalletHistorySimulated(t *testing.T) {
	for seed := range uint64(20) {
		failures := seed%2 == 0
		t.Run(fmt.Sprintf("seed=%d,failures=%v", seed, failures), func(t *testing.T) {
			h := simulateWallet(rand.New(rand.NewPCG(seed, 7)), failures)
			ops, mismatches, err := walletOperations(h)
			if err != nil || len(mismatches) > 0 {
				t.Fatal(err, mismatches)
			}
			if v := checkWalletOperations(ops, time.Minute); v.result != porcupine.Ok {
				t.Fatalf("a correct wallet's history: %s (%s)", v, describeOps(ops))
			}
			if failures {
				return // available may come back: a stale figure can be a legal one
			}
			broken, ok := staleRead(h, ops)
			if !ok {
				t.Fatal("the simulation had no read to answer stale")
			}
			ops, _, _ = walletOperations(broken)
			if v := checkWalletOperations(ops, time.Minute); v.result != porcupine.Illegal {
				t.Errorf("a stale read: %s; want a violation", v)
			}
		})
	}
}

// simulateWallet runs a correct wallet and returns what its merchants
// and readers observed. Each create has one or two attempts, each taking
// effect at an instant inside its window (locking if nothing is stored
// under the key and available covers the gross, refused otherwise); only
// the last may be answered, nine times in ten. Each payout is paid, or
// with failures one in four fails, at an instant after its lock.
func simulateWallet(r *rand.Rand, failures bool) walletHistory {
	type event struct {
		at  time.Duration
		run func()
	}
	var events []event
	at := func(t time.Duration, f func()) { events = append(events, event{t, f}) }
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(r.Int64N(int64(hi-lo)+1)) }

	var h walletHistory
	balance, locked := 300*g, models.Amount(0)
	h.starts = caseStart(balance)
	stored := map[string]*models.Disbursement{}
	const creates, span = 400, 3000
	for i := range creates {
		key := fmt.Sprintf("k%d", i)
		gross := g * models.Amount(1+r.IntN(3))
		sent := between(10, span)
		attempts := 1 + r.IntN(2)
		for n := range attempts {
			got := sent + between(1, 60)
			answered := n == attempts-1 && r.IntN(10) > 0
			idx := len(h.attempts)
			sig := fmt.Sprintf("%s/%d", key, n)
			h.attempts = append(h.attempts, createAttempt{key: key, wallet: caseWallet, gross: gross, sent: sent, got: got, signature: sig})
			effect := between(sent, got)
			at(effect, func() {
				row, created := stored[key], false
				if row == nil && balance-locked >= gross {
					row, created = &models.Disbursement{ID: uuid.New(), WalletID: caseWallet, IdempotencyKey: key,
						Amount: gross, Status: models.StatusVerified, RequestSignature: &sig}, true
					stored[key] = row
					locked += gross
					at(effect+between(1, 300), func() {
						locked -= gross
						if failures && r.IntN(4) == 0 {
							row.Status = models.StatusFailed
							return
						}
						row.Status = models.StatusSuccess
						balance -= gross
					})
				}
				if !answered {
					return
				}
				a := &h.attempts[idx]
				a.answered = true
				if row != nil {
					a.code, a.id, a.replayed = 201, row.ID.String(), !created
					if !created {
						a.code = 200
					}
				} else {
					a.code, a.message = 402, "Insufficient balance"
				}
			})
			sent = got + between(1, 20)
		}
	}
	for t := time.Duration(5); t < span; t += between(5, 40) {
		sent, got := t, t+between(1, 15)
		at(between(sent, got), func() {
			h.reads = append(h.reads, balanceRead{wallet: caseWallet, sent: sent, got: got,
				balance: balance, available: balance - locked, locked: locked})
		})
	}
	for len(events) > 0 { // in time order, including those scheduled meanwhile
		slices.SortStableFunc(events, func(a, b event) int { return int(a.at - b.at) })
		e := events[0]
		events = events[1:]
		e.run()
	}
	for _, row := range stored {
		h.rows = append(h.rows, *row)
	}
	h.reads = append(h.reads, balanceRead{wallet: caseWallet, sent: span * 10, got: span*10 + 1,
		balance: balance, available: balance - locked, locked: locked, final: true})
	return h
}

// staleRead returns h with one read answering the figures of an earlier
// read, although a create that started after that read ended was
// answered before this one was sent. Without failures available only
// falls, by every lock, so no order explains it.
func staleRead(h walletHistory, ops []porcupine.Operation) (walletHistory, bool) {
	reads := slices.Clone(h.reads)
	slices.SortFunc(reads, func(a, b balanceRead) int { return int(a.sent - b.sent) })
	for i := range reads {
		for j := i - 1; j >= 0 && !reads[i].final; j-- {
			for _, op := range ops {
				if op.Input.(walletInput).kind == walletLock && op.Call > int64(reads[j].got) && op.Return < int64(reads[i].sent) {
					stale := reads[j]
					stale.sent, stale.got = reads[i].sent, reads[i].got
					reads[i] = stale
					h.reads = reads
					return h, true
				}
			}
		}
	}
	return h, false
}

// A violation's failure message names the operation no order could place,
// and its visualization is written where FAULTS_HISTORY_DIR says.
func TestViolationIsExplainedAndVisualized(t *testing.T) {
	ops := []porcupine.Operation{startOp(2*g, g, 0), lockOp("a", 10, 20), refuseOp("b", 30, 40), finalOp(100, 110, g)}
	v := checkWalletOperations(ops, time.Minute)
	if v.result != porcupine.Illegal {
		t.Fatalf("%s; want a violation", v)
	}
	if got := explainViolation(ops, v.info); !strings.Contains(got, "create b of 20000: 402") || !strings.Contains(got, "available 20000") {
		t.Errorf("explanation %q: want the refusal named and the 20000 still available", got)
	}
	dir := t.TempDir()
	t.Setenv("FAULTS_HISTORY_DIR", dir)
	path, err := writeVisualization("case", v.info)
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(path)
	if err != nil || filepath.Dir(path) != dir || !strings.Contains(string(page), "create b of 20000: 402") {
		t.Errorf("visualization %s (%v): want a page in %s showing the refusal", path, err, dir)
	}
}

// Creates sent before a read that its available shows were not locked
// yet have their calls moved after the read's: with sixteen of them,
// porcupine would otherwise try every subset of them before the read.
func TestRaiseCalls(t *testing.T) {
	ops := []porcupine.Operation{startOp(10*g, 0, 0),
		lockOp("a", 10, 20), lockOp("b", 12, 60), lockOp("c", 14, 70), lockOp("d", 16, 25),
		readOp(30, 40, 10*g, g), // one lock before it: the earliest, "a"
		readOp(50, 55, 10*g, 3*g)}
	matchInOrder(ops)
	raiseCalls(ops)
	var got []string
	for _, op := range ops[1:5] {
		got = append(got, fmt.Sprintf("%s [%d,%d]", op.Input.(walletInput).key, op.Call, op.Return))
	}
	// Matched in order: a [10,20] b [12,25] c [14,60] d [16,70]; the read
	// at 30 saw one lock, so the second and later come after its call (b
	// must end by 25, before the read: left for porcupine to report), and
	// the read at 50 saw three, so the fourth comes after it.
	if want := "a [10,20] b [12,25] c [31,60] d [51,70]"; strings.Join(got, " ") != want {
		t.Errorf("%s; want %s", strings.Join(got, " "), want)
	}
	if v := checkWalletOperations(ops, time.Minute); v.result != porcupine.Illegal {
		t.Errorf("%s: a lock answered at 25 is missing from the read at 30; want a violation", v)
	}
}
