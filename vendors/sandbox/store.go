package sandbox

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/payoutd/payoutd/vendors"
)

// Record is a payout a sandbox vendor accepted, as its Store keeps it.
type Record struct {
	vendors.Payout        // as first submitted; a later submit never replaces it
	Vendor         string // the vendor that accepted it
	SubmitCalls    int    // Submit calls counted for the reference, the first included
	AnswerLost     bool   // the answer to the first submit was dropped (1000000007)
	// FinalStatus is PayoutSuccess or PayoutFailed once the payout is final
	// (completed by hand, or its automatic outcome was observed); "" before.
	FinalStatus   vendors.PayoutStatus
	FailureReason string
	AcceptedAt    time.Time
}

// Store keeps the payouts sandbox vendors accepted, keyed by reference (the
// vendor's idempotency key). Several vendors, and several processes, may
// share one store; every method is safe for concurrent use.
type Store interface {
	// RecordSubmit counts a submit of p.Reference by vendor: it creates the
	// payout (SubmitCalls 1, accepted at at) when the reference is new, and
	// otherwise increments SubmitCalls of the existing payout, which it
	// returns unchanged otherwise. A reference held by another vendor is
	// ErrReferenceInUse and is not counted.
	RecordSubmit(ctx context.Context, vendor string, p vendors.Payout, at time.Time) (Record, error)
	// Get returns the payout of reference, or vendors.ErrUnknownPayout.
	Get(ctx context.Context, reference string) (Record, error)
	// MarkFinal sets the final status (and reason) of a payout that has
	// none, and returns the payout as stored afterwards: when it was already
	// final, with its earlier status, which the caller compares.
	// vendors.ErrUnknownPayout when there is no such payout.
	MarkFinal(ctx context.Context, reference string, status vendors.PayoutStatus, reason string, at time.Time) (Record, error)
	// MarkAnswerLost flags that the answer to the first submit of reference
	// was dropped. It reports true only to the call that set the flag.
	MarkAnswerLost(ctx context.Context, reference string, at time.Time) (bool, error)
}

// BatchStore is a Store that records the submits of many payouts, and
// their final statuses, in one round each: DBStore, where every round is
// a statement. Vendor.SubmitBatch uses it when the store has it.
type BatchStore interface {
	// RecordSubmits is RecordSubmit for payouts of distinct references:
	// records in the order of ps; ok[i] is false, and records[i] empty,
	// when ps[i]'s reference is held by another vendor. A payout new to
	// the store is stored with finals[i] as its final status (none when
	// its Status is empty); one accepted before keeps what it has.
	RecordSubmits(ctx context.Context, vendor string, ps []vendors.Payout, finals []Final, at time.Time) (records []Record, ok []bool, err error)
	// MarkFinals is MarkFinal for distinct references with one status and
	// reason: records in the order of references, as stored afterwards.
	MarkFinals(ctx context.Context, references []string, status vendors.PayoutStatus, reason string, at time.Time) ([]Record, error)
}

// Final is a final status with its failure reason; the zero Final is
// none.
type Final struct {
	Status vendors.PayoutStatus
	Reason string
}

// ErrReferenceInUse: the reference belongs to a payout of another vendor
// sharing the store.
var ErrReferenceInUse = errors.New("reference already used by another sandbox vendor")

// MemoryStore is a Store in the process's memory: the default, for one
// process (tests, payoutd dev, payoutd vendorsim).
type MemoryStore struct {
	mu      sync.Mutex
	payouts map[string]*Record
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{payouts: map[string]*Record{}}
}

// RecordSubmit implements Store.
func (m *MemoryStore) RecordSubmit(_ context.Context, vendor string, p vendors.Payout, at time.Time) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.payouts[p.Reference]; ok {
		if r.Vendor != vendor {
			return Record{}, ErrReferenceInUse
		}
		r.SubmitCalls++
		return *r, nil
	}
	r := &Record{Payout: p, Vendor: vendor, SubmitCalls: 1, AcceptedAt: at}
	m.payouts[p.Reference] = r
	return *r, nil
}

// Get implements Store.
func (m *MemoryStore) Get(_ context.Context, reference string) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.payouts[reference]
	if !ok {
		return Record{}, vendors.ErrUnknownPayout
	}
	return *r, nil
}

// MarkFinal implements Store.
func (m *MemoryStore) MarkFinal(_ context.Context, reference string, status vendors.PayoutStatus, reason string, _ time.Time) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.payouts[reference]
	if !ok {
		return Record{}, vendors.ErrUnknownPayout
	}
	if r.FinalStatus == "" {
		r.FinalStatus, r.FailureReason = status, reason
	}
	return *r, nil
}

// MarkAnswerLost implements Store.
func (m *MemoryStore) MarkAnswerLost(_ context.Context, reference string, _ time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.payouts[reference]
	if !ok {
		return false, vendors.ErrUnknownPayout
	}
	if r.AnswerLost {
		return false, nil
	}
	r.AnswerLost = true
	return true, nil
}
