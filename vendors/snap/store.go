package snap

import (
	"context"
	"crypto/sha256"
	"math/big"
	"sync"
	"time"
)

// Transfer is what the adapter keeps about a transfer it sent, so that the
// status inquiry can name it as the bank knows it.
type Transfer struct {
	Reference   string // partnerReferenceNo, the payout reference
	ExternalID  string // X-EXTERNAL-ID of the transfer request
	Date        string // transactionDate sent
	ReferenceNo string // the bank's referenceNo, once known
}

// Store keeps transfers by payout reference. Put replaces; Get reports
// ok=false for a reference never stored.
type Store interface {
	Put(ctx context.Context, t Transfer) error
	Get(ctx context.Context, reference string) (Transfer, bool, error)
}

// MemoryStore is a Store in memory, safe for concurrent use. It is enough
// for one process because the external id is derived from the reference
// (TransferExternalID): a lost store only loses the bank's referenceNo,
// which the status inquiry does not need. Several processes (api, worker,
// admin) share a DBStore instead.
type MemoryStore struct {
	mu sync.Mutex
	m  map[string]Transfer
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{m: map[string]Transfer{}} }

// Put implements Store.
func (s *MemoryStore) Put(_ context.Context, t Transfer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[t.Reference] = t
	return nil
}

// Get implements Store.
func (s *MemoryStore) Get(_ context.Context, reference string) (Transfer, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.m[reference]
	return t, ok, nil
}

// TransferExternalID is the X-EXTERNAL-ID of the transfer of a payout
// reference: "9" followed by the first 112 bits of SHA-256(reference) as
// 34 decimal digits (35 characters, within String(36) numeric, [MT-XFER]).
//
// Why derived and not random: X-EXTERNAL-ID must be unique per day
// ([FP-DISB], [DP-CODES] 409xx00 "Cannot use same X-EXTERNAL-ID in same
// day"), and the status inquiry sends it back as originalExternalId. A
// derived id needs no storage to be found again, and it makes a resubmit of
// the same payout on the same day collide on purpose: the bank answers
// 409xx00 without processing it, and the adapter asks the status instead
// (on another day the partnerReferenceNo check, two months at the bank
// [MT-XFER], answers 409xx01 and the same happens). So a repeated submit
// cannot pay twice, whichever check catches it. Other requests (inquiries,
// status inquiries) take a fresh id (requestExternalID) starting with the
// date, so they never meet a derived one, which starts with 9.
func TransferExternalID(reference string) string {
	h := sha256.Sum256([]byte(reference))
	n := new(big.Int).SetBytes(h[:14])
	s := n.String()
	for len(s) < 34 {
		s = "0" + s
	}
	return "9" + s
}

// requestExternalID is a fresh X-EXTERNAL-ID for a request other than a
// transfer: yyyyMMddHHmmss in Jakarta, then 16 random digits (30 digits).
func requestExternalID(now time.Time, random func() uint64) string {
	r := random() % 1e16
	s := new(big.Int).SetUint64(r).String()
	for len(s) < 16 {
		s = "0" + s
	}
	return now.In(Jakarta).Format("20060102150405") + s
}
