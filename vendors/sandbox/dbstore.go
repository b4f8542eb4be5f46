package sandbox

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/payoutd/payoutd/internal/database"
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

var (
	_ Store      = (*DBStore)(nil)
	_ BatchStore = (*DBStore)(nil)
)

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
// final yet, so a final status is never overwritten; when it matched
// nothing, the read after it sees whichever status won, which cannot
// change any more.
func (s *DBStore) MarkFinal(ctx context.Context, reference string, status vendors.PayoutStatus, reason string, at time.Time) (Record, error) {
	recs, err := s.MarkFinals(ctx, []string{reference}, status, reason, at)
	if err != nil {
		return Record{}, err
	}
	return recs[0], nil
}

// MarkFinals implements BatchStore with one UPDATE ... RETURNING; only the
// payouts it did not change (already final, or unknown) are read again.
func (s *DBStore) MarkFinals(ctx context.Context, references []string, status vendors.PayoutStatus, reason string, at time.Time) ([]Record, error) {
	var rows []sandboxPayoutRow
	err := s.db.WithContext(ctx).Raw(`UPDATE sandbox_payouts
		SET final_status = ?, failure_reason = ?, updated_at = ?
		WHERE reference IN ? AND final_status IS NULL
		RETURNING `+sandboxPayoutColumns,
		string(status), reason, at.UTC(), references).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("finish sandbox payout: %w", err)
	}
	byRef := make(map[string]Record, len(rows))
	for _, r := range rows {
		byRef[r.Reference] = r.record()
	}
	out := make([]Record, len(references))
	for i, ref := range references {
		rec, ok := byRef[ref]
		if !ok {
			if rec, err = s.Get(ctx, ref); err != nil {
				return nil, err
			}
		}
		out[i] = rec
	}
	return out, nil
}

// RecordSubmits implements BatchStore with one multi-row upsert, which
// counts a submit of a reference already accepted as RecordSubmit does and
// stores a new one with its final status when it has one.
func (s *DBStore) RecordSubmits(ctx context.Context, vendor string, ps []vendors.Payout, finals []Final, at time.Time) ([]Record, []bool, error) {
	at = at.UTC()
	var (
		rows *sql.Rows
		err  error
	)
	if s.db.Dialector.Name() == "postgres" {
		rows, err = s.recordSubmitsAsArrays(ctx, vendor, ps, finals, at)
	} else {
		rows, err = s.recordSubmitsAsValues(ctx, vendor, ps, finals, at)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("record sandbox submits: %w", err)
	}
	defer rows.Close()
	byRef := make(map[string]Record, len(ps))
	for rows.Next() {
		var r sandboxPayoutRow
		if err := rows.Scan(&r.Reference, &r.Vendor, &r.BankCode, &r.AccountNo, &r.TransferType, &r.Amount,
			&r.SubmitCalls, &r.AnswerLost, &r.FinalStatus, &r.FailureReason, &r.AcceptedAt); err != nil {
			return nil, nil, fmt.Errorf("record sandbox submits: %w", err)
		}
		byRef[r.Reference] = r.record()
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("record sandbox submits: %w", err)
	}
	records, ok := make([]Record, len(ps)), make([]bool, len(ps))
	for i, p := range ps {
		records[i], ok[i] = byRef[p.Reference]
	}
	return records, ok, nil
}

// recordSubmitsOnConflict is what both forms of the upsert do with a
// reference accepted before: count the submit, unless another vendor has
// it (then no row comes back).
const recordSubmitsOnConflict = `
		ON CONFLICT (reference) DO UPDATE
			SET submit_calls = sandbox_payouts.submit_calls + 1, updated_at = excluded.updated_at
			WHERE sandbox_payouts.vendor = excluded.vendor
		RETURNING ` + sandboxPayoutColumns

// recordSubmitsAsArrays is RecordSubmits' upsert on PostgreSQL, its
// payouts as one array per column: the statement's text is the same for
// every batch size, so each connection prepares and plans it once (a
// VALUES list was a statement of its own, planned again, for every size).
func (s *DBStore) recordSubmitsAsArrays(ctx context.Context, vendor string, ps []vendors.Payout, finals []Final, at time.Time) (*sql.Rows, error) {
	n := len(ps)
	refs, banks, accounts, types := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	amounts, statuses, reasons := make([]int64, n), make([]*string, n), make([]string, n)
	for i, p := range ps {
		refs[i], banks[i], accounts[i], types[i], amounts[i] = p.Reference, p.BankCode, p.AccountNo, string(p.TransferType), int64(p.Amount)
		if f := finals[i]; f.Status != "" {
			status := string(f.Status)
			statuses[i] = &status
		}
		reasons[i] = finals[i].Reason
	}
	return database.QueryDirect(ctx, s.db, `INSERT INTO sandbox_payouts
		(reference, vendor, bank_code, account_no, transfer_type, amount,
		 submit_calls, answer_lost, final_status, failure_reason, accepted_at, updated_at)
		SELECT u.reference, $1, u.bank_code, u.account_no, u.transfer_type, u.amount,
		       1, FALSE, u.final_status, u.failure_reason, $2, $2
		FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[], $9::text[])
		     WITH ORDINALITY AS u(reference, bank_code, account_no, transfer_type, amount, final_status, failure_reason, n)
		ORDER BY u.n`+recordSubmitsOnConflict,
		vendor, at, refs, banks, accounts, types, amounts, statuses, reasons)
}

// recordSubmitsAsValues is RecordSubmits' upsert on SQLite, as one VALUES
// list.
func (s *DBStore) recordSubmitsAsValues(ctx context.Context, vendor string, ps []vendors.Payout, finals []Final, at time.Time) (*sql.Rows, error) {
	var query strings.Builder
	query.WriteString(`INSERT INTO sandbox_payouts
		(reference, vendor, bank_code, account_no, transfer_type, amount,
		 submit_calls, answer_lost, final_status, failure_reason, accepted_at, updated_at)
		VALUES `)
	args := make([]any, 0, 10*len(ps))
	for i, p := range ps {
		if i > 0 {
			query.WriteString(", ")
		}
		query.WriteString("(?, ?, ?, ?, ?, ?, 1, FALSE, ?, ?, ?, ?)")
		var final *string
		if f := finals[i]; f.Status != "" {
			status := string(f.Status)
			final = &status
		}
		args = append(args, p.Reference, vendor, p.BankCode, p.AccountNo, string(p.TransferType), int64(p.Amount),
			final, finals[i].Reason, at, at)
	}
	query.WriteString(recordSubmitsOnConflict)
	return s.db.WithContext(ctx).Raw(query.String(), args...).Rows()
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
