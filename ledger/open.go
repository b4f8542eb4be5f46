package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/payoutd/payoutd/internal/database"
	"github.com/payoutd/payoutd/models"
)

// ErrWriteConflict wraps a database error after which the write may simply
// run again: PostgreSQL gave up the statement as a deadlock victim or a
// serialization failure, and nothing of it was written.
var ErrWriteConflict = errors.New("the write lost a conflict with a concurrent one; nothing was written")

// OpenDisbursements writes new disbursements, each together with the lock
// of its gross on its wallet and its first audit line ("" to its status,
// "created"). The disbursements of one wallet are locked together, with
// LockFunds' condition on the sum of their grosses (the wallet is active
// and its available balance covers the sum): a wallet that cannot cover
// the sum takes none of them, and those leave nothing behind (the caller
// may offer them again one by one, since some may fit); the others are
// stored. It returns the ids stored. The disbursements must have distinct
// Idempotency-Keys.
//
// It is all or nothing: when it returns an error (a twin's key already
// stored trips the unique index, gorm.ErrDuplicatedKey; a deadlock,
// ErrWriteConflict) nothing of any disbursement was written.
//
// This is the one implementation of a create's write, for a lone create
// and for a group alike. On PostgreSQL it is one statement: one round trip
// and one commit for the group, the wallet rows locked in id order, each
// once, and held only while it runs (openManySQL; a lone create's input is
// one row of scalars, openOneSQL, with the same INSERT). On SQLite, which
// has no data-modifying CTEs, it is one transaction of the same steps.
func OpenDisbursements(ctx context.Context, db *gorm.DB, ds []*models.Disbursement) (map[uuid.UUID]bool, error) {
	if len(ds) == 0 {
		return map[uuid.UUID]bool{}, nil
	}
	var opened map[uuid.UUID]bool
	var err error
	if database.DialectOfDB(db) == database.Postgres {
		opened, err = openManyStatement(ctx, db, ds)
	} else {
		opened, err = openInTransaction(ctx, db, ds)
	}
	if err != nil && database.IsRetryable(err) {
		return nil, fmt.Errorf("%w: %w", ErrWriteConflict, err)
	}
	return opened, err
}

// openInTransaction is OpenDisbursements as one transaction: per wallet,
// in id order, the lock of its disbursements' summed gross with their
// statement lines (LockFunds);
// then the rows of the wallets whose lock was taken, and their audit
// lines.
func openInTransaction(ctx context.Context, db *gorm.DB, ds []*models.Disbursement) (map[uuid.UUID]bool, error) {
	locks, at := map[uuid.UUID][]Lock{}, map[uuid.UUID]time.Time{}
	for _, d := range ds {
		locks[d.WalletID] = append(locks[d.WalletID], Lock{DisbursementID: d.ID, Amount: d.Amount})
		if d.CreatedAt.After(at[d.WalletID]) {
			at[d.WalletID] = d.CreatedAt
		}
	}
	opened := make(map[uuid.UUID]bool, len(ds))
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		locked := map[uuid.UUID]bool{}
		for _, id := range inIDOrder(locks) {
			ok, err := LockFunds(tx, id, locks[id], at[id])
			if err != nil {
				return err
			}
			locked[id] = ok
		}
		for _, d := range ds {
			if !locked[d.WalletID] {
				continue
			}
			if err := tx.Create(d).Error; err != nil {
				return err
			}
			if err := tx.Exec(`INSERT INTO disbursement_transitions (disbursement_id, from_status, to_status, reason, created_at)
				VALUES (?, '', ?, 'created', ?)`, d.ID, string(d.Status), d.CreatedAt).Error; err != nil {
				return err
			}
			opened[d.ID] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return opened, nil
}

// openRowsSQL is the end both PostgreSQL statements share, after their
// CTEs input (the disbursements, one row each) and locked (the ids of those
// whose lock was taken): the rows whose lock was taken and their audit
// lines. It is the one INSERT INTO disbursements of the repository.
const openRowsSQL = `created AS (
	        INSERT INTO disbursements (id, client_id, wallet_id, idempotency_key, status, amount, platform_fee, net_amount,
	            currency, transfer_type, bank_code, bank_name, account_no, account_holder_name, memo, reference_id,
	            vendor, vendor_reference, lock_expires_at, submit_attempts, submit_attempted_at, checks, next_check_at, created_at, updated_at,
	            request_signature, supplied_holder_name)
	        SELECT i.id, i.client_id, i.wallet_id, i.idempotency_key, i.status, i.amount, i.platform_fee, i.net_amount,
	            i.currency, i.transfer_type, i.bank_code, i.bank_name, i.account_no, i.account_holder_name, i.memo,
	            i.reference_id, i.vendor, i.vendor_reference, i.lock_expires_at, i.submit_attempts, i.submit_attempted_at, 0, i.next_check_at, i.created_at, i.created_at,
	            i.request_signature, i.supplied_holder_name
	        FROM input i JOIN locked l ON l.id = i.id
	        RETURNING id, status, created_at
	    ), audited AS (
	        INSERT INTO disbursement_transitions (disbursement_id, from_status, to_status, reason, created_at)
	        SELECT id, '', status, 'created', created_at FROM created
	    )
	    SELECT id FROM created`

// openColumns names input's columns, in the order of the arguments
// $1..$25 (openManyArgs, openOneArgs); $26 is models.WalletActive. A
// create submitted by the process that made it is stored with its first
// submit attempt already claimed (submit_attempts 1, submit_attempted_at).
const openColumns = `id, client_id, wallet_id, idempotency_key, status, amount, platform_fee, net_amount, currency,
	            transfer_type, bank_code, bank_name, account_no, account_holder_name, memo, reference_id, vendor,
	            vendor_reference, lock_expires_at, submit_attempts, submit_attempted_at, next_check_at, created_at, request_signature,
	            supplied_holder_name`

// openManySQL writes a group: the disbursements as input by unnest of
// $1..$25 (one array per column), the locks of each wallet's summed gross
// in wallet id order with their statement lines (LockFundsEachSQL: $3 the
// wallet ids), then openRowsSQL.
var openManySQL = `WITH input AS (
	        SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::bigint[], $7::bigint[],
	            $8::bigint[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[],
	            $16::text[], $17::text[], $18::text[], $19::timestamptz[], $20::bigint[], $21::timestamptz[],
	            $22::timestamptz[], $23::timestamptz[], $24::text[], $25::text[])
	        AS t(` + openColumns + `)
	    ), ` + LockFundsEachSQL("input", "$3", "$26") + `, ` + openRowsSQL

// openOneSQL writes a lone create: the same statement with one row of
// scalars as input and LockFunds' plain conditional update as the lock,
// with its statement line.
// The ordered, summed lock of a group holds the wallet's row about half
// as long again, which a lone create need not pay.
var openOneSQL = `WITH input(` + openColumns + `) AS (
	        SELECT $1::uuid, $2::uuid, $3::uuid, $4::text, $5::text, $6::bigint, $7::bigint, $8::bigint, $9::text,
	            $10::text, $11::text, $12::text, $13::text, $14::text, $15::text, $16::text, $17::text, $18::text,
	            $19::timestamptz, $20::bigint, $21::timestamptz, $22::timestamptz, $23::timestamptz, $24::text, $25::text
	    ), locked AS (
	        ` + LockFundsSQL("$6", "$23", "$3", "$26", "$1::uuid") + `
	    ), lock_lines AS (
	        ` + ledgerLockLine + `
	    ), ` + openRowsSQL

// ledgerLockLine is the lone create's payout_locked line (LockLinesSQL).
var ledgerLockLine = LockLinesSQL(`(SELECT l.id, l.wallet_id, $6::bigint AS amount, l.balance, l.locked - $6::bigint AS before,
	            1::bigint AS n, l.statement_seq, l.updated_at FROM locked l) AS l`)

// openManyStatement is OpenDisbursements on PostgreSQL: openManySQL, or
// openOneSQL for a lone create, as its own transaction (db is not one). It
// goes to the connection directly because gorm would expand the array
// arguments into lists, and through database.QueryDirect so that a slow
// or failed create is logged as every other money statement is.
func openManyStatement(ctx context.Context, db *gorm.DB, ds []*models.Disbursement) (map[uuid.UUID]bool, error) {
	query, args := openManySQL, openManyArgs(ds)
	if len(ds) == 1 {
		query, args = openOneSQL, openOneArgs(ds[0])
	}
	rows, err := database.QueryDirect(ctx, db.WithContext(ctx), query, args...)
	if err != nil {
		return nil, translate(db, err)
	}
	defer rows.Close()
	opened := make(map[uuid.UUID]bool, len(ds))
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			return nil, translate(db, err)
		}
		opened[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, translate(db, err)
	}
	return opened, nil
}

// openManyArgs are openManySQL's arguments: one array per column, in the
// order of its unnest, and models.WalletActive.
func openManyArgs(ds []*models.Disbursement) []any {
	n := len(ds)
	var (
		ids, clients, wallets                                  = make([][16]byte, n), make([][16]byte, n), make([][16]byte, n)
		keys, statuses, transferTypes, bankCodes, bankNames    = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		accounts, holders, vendorNames, vendorRefs, currencies = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		memos, references                                      = make([]*string, n), make([]*string, n)
		amounts, fees, nets                                    = make([]int64, n), make([]int64, n), make([]int64, n)
		lockExpiries, nextChecks, createdAt                    = make([]time.Time, n), make([]*time.Time, n), make([]time.Time, n)
		attempts, attemptedAt                                  = make([]int64, n), make([]*time.Time, n)
		signatures, supplied                                   = make([]*string, n), make([]string, n)
	)
	for i, d := range ds {
		ids[i], clients[i], wallets[i] = d.ID, d.ClientID, d.WalletID
		keys[i], statuses[i], transferTypes[i] = d.IdempotencyKey, string(d.Status), string(d.TransferType)
		bankCodes[i], bankNames[i], accounts[i], holders[i] = d.BankCode, d.BankName, d.AccountNo, d.AccountHolderName
		vendorNames[i], vendorRefs[i], currencies[i] = d.Vendor, d.VendorReference, d.Currency
		memos[i], references[i] = d.Memo, d.ReferenceID
		amounts[i], fees[i], nets[i] = int64(d.Amount), int64(d.PlatformFee), int64(d.NetAmount)
		lockExpiries[i], nextChecks[i], createdAt[i] = d.LockExpiresAt, d.NextCheckAt, d.CreatedAt
		attempts[i], attemptedAt[i] = int64(d.SubmitAttempts), d.SubmitAttemptedAt
		signatures[i], supplied[i] = d.RequestSignature, d.SuppliedHolderName
	}
	return []any{ids, clients, wallets, keys, statuses, amounts, fees, nets, currencies, transferTypes, bankCodes, bankNames,
		accounts, holders, memos, references, vendorNames, vendorRefs, lockExpiries, attempts, attemptedAt, nextChecks, createdAt,
		signatures, supplied, string(models.WalletActive)}
}

// openOneArgs are openOneSQL's arguments: d's columns as scalars, in the
// order of openColumns, and models.WalletActive.
func openOneArgs(d *models.Disbursement) []any {
	return []any{d.ID, d.ClientID, d.WalletID, d.IdempotencyKey, string(d.Status), int64(d.Amount), int64(d.PlatformFee),
		int64(d.NetAmount), d.Currency, string(d.TransferType), d.BankCode, d.BankName, d.AccountNo, d.AccountHolderName,
		d.Memo, d.ReferenceID, d.Vendor, d.VendorReference, d.LockExpiresAt, int64(d.SubmitAttempts), d.SubmitAttemptedAt,
		d.NextCheckAt, d.CreatedAt, d.RequestSignature, d.SuppliedHolderName, string(models.WalletActive)}
}

// translate turns a driver error of a statement run outside gorm into
// gorm's (a unique violation: gorm.ErrDuplicatedKey), as gorm's own
// statements report it.
func translate(db *gorm.DB, err error) error {
	if t, ok := db.Dialector.(gorm.ErrorTranslator); ok {
		if translated := t.Translate(err); translated != err {
			return fmt.Errorf("%w: %w", translated, err)
		}
	}
	return err
}
