package ledger

import (
	"context"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/internal/pagecursor"
	"github.com/payoutd/payoutd/models"
)

// StatementFilter selects a page of a wallet's statement: newest first,
// at most Limit lines, those strictly before After (nil: from the newest),
// created in [CreatedFrom, CreatedTo) where those are set.
type StatementFilter struct {
	Limit                  int
	After                  *pagecursor.Line
	CreatedFrom, CreatedTo time.Time
}

// Statement reads one page of wallet walletID's statement and the cursor
// of the next page (nil on the last). A page is one index range scan of
// wallet_statement_time, whatever the statement's length.
func Statement(ctx context.Context, db *gorm.DB, walletID uuid.UUID, f StatementFilter) ([]models.StatementLine, *pagecursor.Line, error) {
	q := inRange(db.WithContext(ctx).Where("wallet_id = ?", walletID), f.CreatedFrom, f.CreatedTo)
	if f.After != nil {
		q = q.Where("(created_at, seq) < (?, ?)", f.After.CreatedAt, f.After.Seq)
	}
	var rows []models.StatementLine
	if err := q.Order("created_at DESC, seq DESC").Limit(f.Limit + 1).Find(&rows).Error; err != nil {
		return nil, nil, err
	}
	if len(rows) <= f.Limit {
		return rows, nil, nil
	}
	rows = rows[:f.Limit]
	last := rows[len(rows)-1]
	return rows, &pagecursor.Line{CreatedAt: last.CreatedAt, Seq: last.Seq}, nil
}

// ErrStatementTooLong is an export range holding more lines than
// MaxExportLines.
var ErrStatementTooLong = models.Invalid("the range holds more than 100000 statement lines; narrow created_from and created_to")

// MaxExportLines bounds one export (ExportStatement): a finance team's
// month of a busy wallet, written in seconds.
const MaxExportLines = 100_000

// exportBatch is how many lines ExportStatement reads per query.
const exportBatch = 1000

// ExportStatement calls each with every line of wallet walletID's
// statement created in [from, to), oldest first, as a bank statement
// runs, reading them in batches so that memory stays flat. A zero bound is
// open; with no to, lines written while the export runs come last, after
// the cap was counted. A range of more than MaxExportLines lines is
// ErrStatementTooLong before each is called.
func ExportStatement(ctx context.Context, db *gorm.DB, walletID uuid.UUID, from, to time.Time, each func(*models.StatementLine) error) error {
	var over int64
	err := db.WithContext(ctx).Raw(`SELECT count(*) FROM (?) AS capped`,
		inRange(db.Model(&models.StatementLine{}).Select("1").Where("wallet_id = ?", walletID), from, to).Limit(MaxExportLines+1)).
		Scan(&over).Error
	if err != nil {
		return err
	}
	if over > MaxExportLines {
		return ErrStatementTooLong
	}
	var after *pagecursor.Line
	for {
		q := inRange(db.WithContext(ctx).Where("wallet_id = ?", walletID), from, to)
		if after != nil {
			q = q.Where("(created_at, seq) > (?, ?)", after.CreatedAt, after.Seq)
		}
		var rows []models.StatementLine
		if err := q.Order("created_at, seq").Limit(exportBatch).Find(&rows).Error; err != nil {
			return err
		}
		for i := range rows {
			if err := each(&rows[i]); err != nil {
				return err
			}
		}
		if len(rows) < exportBatch {
			return nil
		}
		last := rows[len(rows)-1]
		after = &pagecursor.Line{CreatedAt: last.CreatedAt, Seq: last.Seq}
	}
}

// inRange keeps q's lines created in [from, to); a zero bound is open.
func inRange(q *gorm.DB, from, to time.Time) *gorm.DB {
	if !from.IsZero() {
		q = q.Where("created_at >= ?", from)
	}
	if !to.IsZero() {
		q = q.Where("created_at < ?", to)
	}
	return q
}
