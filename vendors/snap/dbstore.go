package snap

import (
	"context"
	"errors"
	"strings"
	"time"

	"gorm.io/gorm"
)

// DBStore is a Store in the snap_transfers table, one bank's rows, so
// that the api, the worker and the admin CLI, each in its own process,
// and a restarted process find what the transfer sent.
type DBStore struct {
	db   *gorm.DB
	bank string
}

var _ Store = (*DBStore)(nil)

// NewDBStore returns the Store of bank (the slug, "bca") over db
// (PostgreSQL or SQLite, migrated).
func NewDBStore(db *gorm.DB, bank string) *DBStore {
	return &DBStore{db: db, bank: strings.ToLower(bank)}
}

// Put implements Store with one upsert. The X-EXTERNAL-ID and
// transactionDate first stored for a reference are kept: they are what
// the bank first received, and a resubmit sends them again (Submit reads
// them back before it sends). A referenceNo is recorded once known and
// never cleared.
func (s *DBStore) Put(ctx context.Context, t Transfer) error {
	if t.Reference == "" || t.ExternalID == "" {
		return errors.New("snap store: a transfer needs its reference and X-EXTERNAL-ID")
	}
	now := time.Now().UTC()
	return s.db.WithContext(ctx).Exec(`INSERT INTO snap_transfers
		(bank, reference, external_id, transaction_date, reference_no, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (bank, reference) DO UPDATE
			SET reference_no = CASE WHEN excluded.reference_no <> '' THEN excluded.reference_no ELSE snap_transfers.reference_no END,
			    updated_at = excluded.updated_at`,
		s.bank, t.Reference, t.ExternalID, t.Date, t.ReferenceNo, now, now).Error
}

// Get implements Store.
func (s *DBStore) Get(ctx context.Context, reference string) (Transfer, bool, error) {
	var rows []struct {
		ExternalID      string
		TransactionDate string
		ReferenceNo     string
	}
	err := s.db.WithContext(ctx).Raw(`SELECT external_id, transaction_date, reference_no FROM snap_transfers
		WHERE bank = ? AND reference = ?`, s.bank, reference).Scan(&rows).Error
	if err != nil || len(rows) == 0 {
		return Transfer{}, false, err
	}
	r := rows[0]
	return Transfer{Reference: reference, ExternalID: r.ExternalID, Date: r.TransactionDate, ReferenceNo: r.ReferenceNo}, true, nil
}
