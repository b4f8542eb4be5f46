package sandbox

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
)

// DBStore is a Store in the sandbox_payouts table, so that the api, the
// worker and the admin CLI, each in its own process, see the same sandbox
// payouts. Every write is one conditional statement: no read-then-write, so
// processes submitting or completing one reference at once cannot pay twice
// or overwrite a final status.
type DBStore struct {
	db *gorm.DB
}

var _ Store = (*DBStore)(nil)

// NewDBStore returns a Store over db (PostgreSQL or SQLite, migrated).
func NewDBStore(db *gorm.DB) *DBStore { return &DBStore{db: db} }

// sandboxPayoutRow is a row of sandbox_payouts.
type sandboxPayoutRow struct {
	Reference     string
	Vendor        string
	BankCode      string
	AccountNo     string
	TransferType  string
	Amount        int64
	SubmitCalls   int
	AnswerLost    bool
	FinalStatus   *string
	FailureReason string
	AcceptedAt    time.Time
}

const sandboxPayoutColumns = `reference, vendor, bank_code, account_no, transfer_type, amount,
	submit_calls, answer_lost, final_status, failure_reason, accepted_at`

func (r sandboxPayoutRow) record() Record {
	rec := Record{
		Payout: vendors.Payout{
			Reference: r.Reference, BankCode: r.BankCode, AccountNo: r.AccountNo,
			TransferType: models.TransferType(r.TransferType), Amount: models.Amount(r.Amount),
		},
		Vendor: r.Vendor, SubmitCalls: r.SubmitCalls, AnswerLost: r.AnswerLost,
		FailureReason: r.FailureReason, AcceptedAt: r.AcceptedAt.UTC(),
	}
	if r.FinalStatus != nil {
		rec.FinalStatus = vendors.PayoutStatus(*r.FinalStatus)
	}
	return rec
}

// RecordSubmit implements Store with one upsert: a concurrent insert of the
// same reference turns into the increment, in PostgreSQL and SQLite alike.
func (s *DBStore) RecordSubmit(ctx context.Context, vendor string, p vendors.Payout, at time.Time) (Record, error) {
	at = at.UTC()
	var rows []sandboxPayoutRow
	err := s.db.WithContext(ctx).Raw(`INSERT INTO sandbox_payouts
		(reference, vendor, bank_code, account_no, transfer_type, amount,
		 submit_calls, answer_lost, failure_reason, accepted_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, 1, FALSE, '', ?, ?)
		ON CONFLICT (reference) DO UPDATE
			SET submit_calls = sandbox_payouts.submit_calls + 1, updated_at = excluded.updated_at
			WHERE sandbox_payouts.vendor = excluded.vendor
		RETURNING `+sandboxPayoutColumns,
		p.Reference, vendor, p.BankCode, p.AccountNo, string(p.TransferType), int64(p.Amount), at, at,
	).Scan(&rows).Error
	if err != nil {
		return Record{}, fmt.Errorf("record sandbox submit: %w", err)
	}
	if len(rows) == 0 {
		// The conflict's WHERE did not match: another vendor's reference.
		return Record{}, ErrReferenceInUse
	}
	return rows[0].record(), nil
}

// Get implements Store.
func (s *DBStore) Get(ctx context.Context, reference string) (Record, error) {
	var rows []sandboxPayoutRow
	err := s.db.WithContext(ctx).Raw(`SELECT `+sandboxPayoutColumns+` FROM sandbox_payouts WHERE reference = ?`, reference).
		Scan(&rows).Error
	if err != nil {
		return Record{}, fmt.Errorf("read sandbox payout: %w", err)
	}
	if len(rows) == 0 {
		return Record{}, vendors.ErrUnknownPayout
	}
	return rows[0].record(), nil
}

// MarkFinal implements Store. The update only matches a payout that is not
// final yet, so a final status is never overwritten; the read after it sees
// whichever status won, which cannot change any more.
func (s *DBStore) MarkFinal(ctx context.Context, reference string, status vendors.PayoutStatus, reason string, at time.Time) (Record, error) {
	err := s.db.WithContext(ctx).Exec(`UPDATE sandbox_payouts
		SET final_status = ?, failure_reason = ?, updated_at = ?
		WHERE reference = ? AND final_status IS NULL`,
		string(status), reason, at.UTC(), reference).Error
	if err != nil {
		return Record{}, fmt.Errorf("finish sandbox payout: %w", err)
	}
	return s.Get(ctx, reference)
}

// MarkAnswerLost implements Store.
func (s *DBStore) MarkAnswerLost(ctx context.Context, reference string, at time.Time) (bool, error) {
	res := s.db.WithContext(ctx).Exec(`UPDATE sandbox_payouts SET answer_lost = TRUE, updated_at = ?
		WHERE reference = ? AND answer_lost = FALSE`, at.UTC(), reference)
	if res.Error != nil {
		return false, fmt.Errorf("mark sandbox answer lost: %w", res.Error)
	}
	if res.RowsAffected == 1 {
		return true, nil
	}
	if _, err := s.Get(ctx, reference); err != nil {
		return false, err
	}
	return false, nil
}
