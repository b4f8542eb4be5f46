package faults

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
)

// The wallet as a linearizable object, for checking a scenario's history
// with porcupine: what the merchants were answered (creates and balance
// reads, each with the time it was sent and the time its answer came)
// must fit one order of those operations, each at an instant between its
// call and its return, in which a wallet behaves as docs/design.md says
// (Wallets, locks and the ledger):
//
//   - a create of gross g locks g only if available >= g: available -= g,
//     locked += g;
//   - a create refused 402 Insufficient balance saw available < g;
//   - a balance read answers balance, available and locked as they are,
//     and available = balance - locked;
//   - a payout paid (SUCCESS) takes its gross out of balance and lock; one
//     that ends FAILED, EXPIRED or CANCELLED gives it back to available.
//
// The last two happen inside the service, at moments no merchant sees.
// Placing each at the moment its final status was observed is not sound:
// it may have happened long before, and a read in between that saw the
// money back would be reported as a violation. Giving each an operation
// of its own, between its create and that observation, is sound, but then
// porcupine has to try each of them on either side of every read, which
// is exponential in the number pending. So the model takes them lazily
// instead, bounded by what the final states say happened in all: the
// state carries what is still to be paid (paidLeft) and released
// (releasedLeft), and a step applies the least of it its operation
// needs: a read pays and releases exactly what it shows (its balance and
// available pin both), a lock releases only if available would not cover
// it otherwise, and a refusal takes nothing (less available only makes a
// refusal more legal). Whatever a correct service did, the lazy state
// trails it by events still to come, and each step above stays legal, so
// a correct service is never reported; what is given up is which payout's
// money moved (counts are checked, not identities), and the smallest step
// is the gcd of the amounts (unit). The last read, taken after every
// payout was final, must leave nothing to pay or release.

// walletOpKind is what an operation of a wallet's history is.
type walletOpKind int

const (
	// walletStart is the wallet read before the load, with what the
	// payouts' final states say was paid and released meanwhile.
	walletStart walletOpKind = iota
	// walletLock is a create that locked its gross: answered with the
	// payout, or unanswered with the payout stored under its key.
	walletLock
	// walletRefuse is a create answered 402 Insufficient balance.
	walletRefuse
	// walletRead is a balance read; the final one comes after every
	// payout was final.
	walletRead
)

// walletInput is an operation's call.
type walletInput struct {
	kind   walletOpKind
	wallet uuid.UUID
	key    string        // walletLock, walletRefuse: the Idempotency-Key
	gross  models.Amount // walletLock, walletRefuse
	// walletStart: the gross of the payouts that ended paid and of those
	// that ended unpaid, and the gcd of every amount of the history.
	paid, released, unit models.Amount
	final                bool // walletRead
}

// walletOutput is a start's or a read's answer: the wallet's figures.
type walletOutput struct {
	balance, available, locked models.Amount
}

// walletState is one wallet. locked is balance - available; paidLeft and
// releasedLeft are the money the service is still to move on its own.
type walletState struct {
	started                          bool
	balance, available               models.Amount
	paidLeft, releasedLeft, unitSize models.Amount
}

// walletModel is the sequential specification, one partition per wallet.
var walletModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byWallet := map[uuid.UUID][]porcupine.Operation{}
		var order []uuid.UUID
		for _, op := range history {
			w := op.Input.(walletInput).wallet
			if _, seen := byWallet[w]; !seen {
				order = append(order, w)
			}
			byWallet[w] = append(byWallet[w], op)
		}
		partitions := make([][]porcupine.Operation, 0, len(order))
		for _, w := range order {
			partitions = append(partitions, byWallet[w])
		}
		return partitions
	},
	Init: func() any { return walletState{} },
	Step: func(state, input, output any) (bool, any) {
		ok, next := stepWallet(state.(walletState), input.(walletInput), output.(walletOutput))
		return ok, next
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(walletInput), output.(walletOutput)
		switch in.kind {
		case walletStart:
			return fmt.Sprintf("start %s (to pay %s, to release %s)", out, in.paid, in.released)
		case walletLock:
			return fmt.Sprintf("create %s locks %s", in.key, in.gross)
		case walletRefuse:
			return fmt.Sprintf("create %s of %s: 402", in.key, in.gross)
		case walletRead:
			if in.final {
				return "final read " + out.String()
			}
			return "read " + out.String()
		}
		return "?"
	},
	DescribeState: func(state any) string {
		s := state.(walletState)
		if !s.started {
			return "not started"
		}
		return fmt.Sprintf("balance %s available %s (to pay %s, to release %s)", s.balance, s.available, s.paidLeft, s.releasedLeft)
	},
}

func (o walletOutput) String() string {
	return fmt.Sprintf("balance %s available %s locked %s", o.balance, o.available, o.locked)
}

// stepWallet is one operation on a wallet; see the top of this file.
func stepWallet(s walletState, in walletInput, out walletOutput) (bool, walletState) {
	if in.kind == walletStart {
		if s.started || out.available != out.balance-out.locked || in.unit <= 0 {
			return false, s
		}
		return true, walletState{started: true, balance: out.balance, available: out.available,
			paidLeft: in.paid, releasedLeft: in.released, unitSize: in.unit}
	}
	if !s.started {
		return false, s
	}
	switch in.kind {
	case walletLock:
		if s.available < in.gross {
			// The least release that covers it, taken now.
			need := roundUp(in.gross-s.available, s.unitSize)
			if need > s.releasedLeft || s.balance-s.available-need < 0 {
				return false, s
			}
			s.available += need
			s.releasedLeft -= need
		}
		s.available -= in.gross
		return true, s
	case walletRefuse:
		return s.available < in.gross, s
	case walletRead:
		if out.available != out.balance-out.locked || out.locked < 0 {
			return false, s
		}
		// Only payments lower the balance and only releases raise
		// available; locked >= 0 after them means each could be made.
		paid, released := s.balance-out.balance, out.available-s.available
		if paid < 0 || released < 0 || paid > s.paidLeft || released > s.releasedLeft ||
			paid%s.unitSize != 0 || released%s.unitSize != 0 {
			return false, s
		}
		s.balance, s.available = out.balance, out.available
		s.paidLeft -= paid
		s.releasedLeft -= released
		if in.final && (s.paidLeft != 0 || s.releasedLeft != 0) {
			return false, s
		}
		return true, s
	}
	return false, s
}

// roundUp is a rounded up to a multiple of unit (a > 0).
func roundUp(a, unit models.Amount) models.Amount {
	return (a + unit - 1) / unit * unit
}

func gcd(a, b models.Amount) models.Amount {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// never is the return time of a create whose answer never came: porcupine
// may place it anywhere after its call.
const never = math.MaxInt64

// createAttempt is one POST of a create and what came back. Times are
// since the history's start.
type createAttempt struct {
	key       string
	wallet    uuid.UUID
	gross     models.Amount
	sent, got time.Duration
	answered  bool // false: a transport error, no answer
	code      int
	message   string // an error answer's "error"
	replayed  bool   // Idempotent-Replayed: true
	id        string // a 2xx answer's payout id
	status    string // and its status
	// signature is the attempt's x-signature (lowercase hex), which the
	// payout it created stores: it tells which attempt locked.
	signature string
}

// provesLock reports whether the answer shows that a payout was stored
// under the key by the time it came: the payout itself, a replay, or an
// answer only a stored payout's status gives (answerCreation in api).
func (a createAttempt) provesLock() bool {
	if !a.answered {
		return false
	}
	switch {
	case a.code/100 == 2, a.replayed:
		return true
	case a.code == 503 && a.message == models.ErrorMessage(models.ErrVendorPayoutFailed),
		a.code == 410 && a.message == models.ErrorMessage(models.ErrLockExpired),
		a.code == 409 && a.message == models.ErrorMessage(models.ErrDisbursementCancelled):
		return true
	}
	return false
}

// refusedForBalance reports an answer 402 Insufficient balance.
func (a createAttempt) refusedForBalance() bool {
	return a.answered && a.code == 402 && a.message == models.ErrorMessage(models.ErrInsufficientBalance)
}

// balanceRead is one balance read that was answered 200.
type balanceRead struct {
	wallet                     uuid.UUID
	sent, got                  time.Duration
	balance, available, locked models.Amount
	final                      bool
}

// walletHistory is what a scenario observed, for walletOperations.
type walletHistory struct {
	// starts are the wallets read before the first create was sent.
	starts []balanceRead
	// finalBefore are the payouts already final at the start: their
	// money had moved.
	finalBefore map[uuid.UUID]bool
	attempts    []createAttempt
	reads       []balanceRead // the final reads among them
	// rows are the payouts stored, read after every payout was final and
	// before the final reads.
	rows []models.Disbursement
}

// walletOperations turns what was observed into porcupine's operations.
// A create that locked is one operation from the attempt whose signature
// its payout stores (the first attempt if none matches) to the first
// answer that shows the payout stored, or to that attempt's own answer;
// with neither, it locked at some time after its call (return never). A
// create whose key holds no payout and whose answers never showed one
// changed nothing and is left out (a lock and its row are one
// transaction). Every 402 Insufficient balance is a refusal of its own
// attempt. mismatches are answers that contradict the stored payouts
// outright (a 2xx naming another payout than the one its key holds).
func walletOperations(h walletHistory) (ops []porcupine.Operation, mismatches []string, err error) {
	rowByKey := map[string]*models.Disbursement{}
	for i := range h.rows {
		rowByKey[h.rows[i].IdempotencyKey] = &h.rows[i]
	}
	unit := models.Amount(0)
	for _, r := range h.rows {
		unit = gcd(unit, r.Amount)
	}
	byKey := map[string][]createAttempt{}
	var keys []string
	for _, a := range h.attempts {
		if _, seen := byKey[a.key]; !seen {
			keys = append(keys, a.key)
		}
		byKey[a.key] = append(byKey[a.key], a)
		unit = gcd(unit, a.gross)
	}
	if unit <= 0 {
		unit = 1
	}

	for _, s := range h.starts {
		var paid, released models.Amount
		for _, r := range h.rows {
			if r.WalletID != s.wallet || h.finalBefore[r.ID] {
				continue
			}
			switch r.Status {
			case models.StatusSuccess:
				paid += r.Amount
			case models.StatusFailed, models.StatusExpired, models.StatusCancelled:
				released += r.Amount
			case models.StatusReturned:
				// A return credits the wallet again: not in the model.
				return nil, nil, fmt.Errorf("payout %s was returned: returns are not modelled", r.ID)
			}
		}
		ops = append(ops, porcupine.Operation{Call: int64(s.sent), Return: int64(s.got),
			Input:  walletInput{kind: walletStart, wallet: s.wallet, paid: paid, released: released, unit: unit},
			Output: walletOutput{balance: s.balance, available: s.available, locked: s.locked}, Metadata: "start"})
	}

	for _, key := range keys {
		attempts := byKey[key]
		sort.SliceStable(attempts, func(i, j int) bool { return attempts[i].sent < attempts[j].sent })
		first, row := attempts[0], rowByKey[key]
		ret := int64(never)
		for _, a := range attempts {
			if a.provesLock() {
				ret = min(ret, int64(a.got))
			}
			if row != nil && row.RequestSignature != nil && a.signature == *row.RequestSignature {
				// The attempt that created it: the lock is inside its
				// request, which an answer of any kind closes.
				first = a
				if a.answered {
					ret = min(ret, int64(a.got))
				}
			}
			if a.code/100 == 2 && row != nil && a.id != row.ID.String() {
				mismatches = append(mismatches, fmt.Sprintf("create %s was answered payout %s but %s is stored under its key", key, a.id, row.ID))
			}
			if a.refusedForBalance() {
				ops = append(ops, porcupine.Operation{Call: int64(a.sent), Return: int64(a.got),
					Input:  walletInput{kind: walletRefuse, wallet: a.wallet, key: key, gross: a.gross},
					Output: walletOutput{}, Metadata: key})
			}
		}
		if row == nil && ret == never {
			continue // nothing stored, nothing locked
		}
		wallet, gross := first.wallet, first.gross
		if row != nil {
			wallet, gross = row.WalletID, row.Amount // what was locked
		}
		ops = append(ops, porcupine.Operation{Call: int64(first.sent), Return: ret,
			Input:  walletInput{kind: walletLock, wallet: wallet, key: key, gross: gross},
			Output: walletOutput{}, Metadata: key})
	}

	matchInOrder(ops)
	for _, r := range h.reads {
		ops = append(ops, porcupine.Operation{Call: int64(r.sent), Return: int64(r.got),
			Input:  walletInput{kind: walletRead, wallet: r.wallet, final: r.final},
			Output: walletOutput{balance: r.balance, available: r.available, locked: r.locked}})
	}
	raiseCalls(ops)
	assignLanes(ops)
	return ops, mismatches, nil
}

// matchInOrder gives the locks of each wallet and gross, which are
// interchangeable, their calls and returns matched in order: the k-th
// earliest call with the k-th earliest return. Any order that fits the
// creates as sent fits these too, since the k-th earliest lock of a real
// order comes after k calls and before the last n-k+1 returns, so the
// check stays sound; and these intervals never nest, so porcupine, which
// tries operations in the order of their calls, also tries them in the
// order they must end and need not search which of many long concurrent
// creates a read saw (with retries spanning seconds that search ran out
// of a minute). What is lost is a defect only nesting shows, such as a
// read that saw a long create's lock but not a short one's inside it.
// The keys follow the calls.
func matchInOrder(ops []porcupine.Operation) {
	type class struct {
		wallet uuid.UUID
		gross  models.Amount
	}
	members := map[class][]int{}
	for i, op := range ops {
		if in := op.Input.(walletInput); in.kind == walletLock {
			c := class{in.wallet, in.gross}
			members[c] = append(members[c], i)
		}
	}
	for _, idx := range members {
		calls := make([]int64, len(idx))
		rets := make([]int64, len(idx))
		for k, i := range idx {
			calls[k], rets[k] = ops[i].Call, ops[i].Return
		}
		sort.SliceStable(idx, func(a, b int) bool { return ops[idx[a]].Call < ops[idx[b]].Call })
		slices.Sort(calls)
		slices.Sort(rets)
		for k, i := range idx {
			ops[i].Call, ops[i].Return = calls[k], rets[k]
		}
	}
}

// raiseCalls moves the calls of locks that a read shows were not yet
// taken to just after that read's call. Porcupine tries operations in the
// order of their calls, so a read preceded by many creates sent but not
// yet locked (each waiting on the vendor's inquiry) had it try every
// subset of them before the empty one: 2^16 orders for sixteen merchants,
// per read, half a minute for a latency spike. A read's available bounds
// what was locked before it: at most (available at the start - its
// available + all that was ever released) / gross of each gross, say k;
// the locks of a gross being matched in order (matchInOrder), the k+1-th
// and later come after the read in any order that fits, and so after its
// call: anything answered by then precedes them anyway. Calls only move
// later within their interval, so nothing a correct service may do is
// ruled out; a lock that would have to move past its return is left for
// porcupine to report.
func raiseCalls(ops []porcupine.Operation) {
	type class struct {
		wallet uuid.UUID
		gross  models.Amount
	}
	locks := map[class][]int{}
	type start struct{ available, released models.Amount }
	starts := map[uuid.UUID]start{}
	for i, op := range ops {
		switch in := op.Input.(walletInput); in.kind {
		case walletLock:
			c := class{in.wallet, in.gross}
			locks[c] = append(locks[c], i)
		case walletStart:
			starts[in.wallet] = start{op.Output.(walletOutput).available, in.released}
		}
	}
	for _, idx := range locks {
		sort.SliceStable(idx, func(a, b int) bool { return ops[idx[a]].Call < ops[idx[b]].Call })
	}
	for _, r := range ops {
		in := r.Input.(walletInput)
		st, started := starts[in.wallet]
		if in.kind != walletRead || !started {
			continue
		}
		bound := st.available - r.Output.(walletOutput).available + st.released
		for c, idx := range locks {
			if c.wallet != in.wallet {
				continue
			}
			k := max(int(bound/c.gross), 0)
			for _, i := range idx[min(k, len(idx)):] {
				if ops[i].Call > r.Call {
					break // calls are in order: the rest are later still
				}
				if r.Call+1 <= ops[i].Return {
					ops[i].Call = r.Call + 1
				}
			}
		}
	}
}

// assignLanes gives each operation a ClientId such that one client's
// operations never overlap: the rows of porcupine's visualization.
func assignLanes(ops []porcupine.Operation) {
	idx := make([]int, len(ops))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return ops[idx[a]].Call < ops[idx[b]].Call })
	var busyUntil []int64
	for _, i := range idx {
		lane := -1
		for l, until := range busyUntil {
			if until < ops[i].Call {
				lane = l
				break
			}
		}
		if lane < 0 {
			lane = len(busyUntil)
			busyUntil = append(busyUntil, 0)
		}
		busyUntil[lane] = ops[i].Return
		ops[i].ClientId = lane
	}
}

// historyVerdict is the check's outcome.
type historyVerdict struct {
	result porcupine.CheckResult
	ops    int
	took   time.Duration
	info   porcupine.LinearizationInfo // with an illegal result only
}

func (v historyVerdict) String() string {
	name := map[porcupine.CheckResult]string{porcupine.Ok: "linearizable", porcupine.Illegal: "violation",
		porcupine.Unknown: "unknown"}[v.result]
	return fmt.Sprintf("history=%s ops=%d check_s=%.1f", name, v.ops, v.took.Seconds())
}

// checkWalletOperations checks ops within timeout; an illegal history is
// checked again for porcupine's partial linearizations, which the
// visualization shows (the first pass does without: recording them costs
// time on every backtrack).
func checkWalletOperations(ops []porcupine.Operation, timeout time.Duration) historyVerdict {
	started := time.Now()
	v := historyVerdict{ops: len(ops)}
	v.result = porcupine.CheckOperationsTimeout(walletModel, ops, timeout)
	if v.result == porcupine.Illegal {
		var result porcupine.CheckResult
		result, v.info = porcupine.CheckOperationsVerbose(walletModel, ops, timeout)
		if result != porcupine.Illegal {
			v.info = porcupine.LinearizationInfo{}
		}
	}
	v.took = time.Since(started)
	return v
}

// explainViolation names, for a failure message, an operation porcupine
// could not place: of those of a wallet left out of the longest order it
// found, the one answered first, with the state that order leaves. A
// hint for a reader; the visualization shows every order tried.
func explainViolation(ops []porcupine.Operation, info porcupine.LinearizationInfo) string {
	type opKey struct {
		call, ret int64
		in        walletInput
	}
	for _, partials := range info.PartialLinearizationsOperations() {
		var longest []porcupine.Operation
		for _, l := range partials {
			if len(l) > len(longest) {
				longest = l
			}
		}
		if len(longest) == 0 {
			continue
		}
		wallet := longest[0].Input.(walletInput).wallet
		placed := map[opKey]bool{}
		state := walletModel.Init()
		for _, op := range longest {
			placed[opKey{op.Call, op.Return, op.Input.(walletInput)}] = true
			_, state = walletModel.Step(state, op.Input, op.Output)
		}
		var first *porcupine.Operation
		for i, op := range ops {
			in := op.Input.(walletInput)
			if in.wallet == wallet && !placed[opKey{op.Call, op.Return, in}] && (first == nil || op.Return < first.Return) {
				first = &ops[i]
			}
		}
		if first == nil {
			continue // this wallet's history is linearizable
		}
		return fmt.Sprintf("%s, sent at %s, fits after none of the %d operations of the longest order found, which leaves %s",
			walletModel.DescribeOperation(first.Input, first.Output), time.Duration(first.Call), len(longest),
			walletModel.DescribeState(state))
	}
	return "no partial order to show"
}

// describeOps is a one-line account of a history, for a failure message.
func describeOps(ops []porcupine.Operation) string {
	count := map[walletOpKind]int{}
	unanswered := 0
	for _, op := range ops {
		in := op.Input.(walletInput)
		count[in.kind]++
		if op.Return == never {
			unanswered++
		}
	}
	var parts []string
	parts = append(parts, fmt.Sprintf("%d locks (%d unanswered)", count[walletLock], unanswered),
		fmt.Sprintf("%d refusals", count[walletRefuse]), fmt.Sprintf("%d reads", count[walletRead]))
	return strings.Join(parts, ", ")
}
