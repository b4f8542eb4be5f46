package payouts

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
)

// Grouped create inserts (PostgreSQL). Creates that reach their insert at
// the same moment are written by one statement: one round trip and one
// commit for the group instead of one each, which is most of what a create
// costs PostgreSQL. It is group commit without a background loop: a create
// that queues while fewer than maxCreateLeaders leaders run starts one; a
// leader writes whatever has queued, group by group, until nothing is
// left, and then stops. An idle API therefore writes a lone create at
// once. Two groups in flight never deadlock: each locks its wallets in id
// order.
//
// A group never holds two creates for one wallet, nor two with one
// client's Idempotency-Key: each wallet's guard then sees one amount, and
// a twin waits for the next group, where the unique index sends it to the
// replay. Should the group's statement fail (a twin committed by another
// instance, a deadlock), nothing of it was written, and each of its
// creates is written on its own, as an ungrouped create would be.

// maxCreateGroup bounds the creates written by one statement.
const maxCreateGroup = 64

// maxCreateLeaders is how many groups may be written at once: while one
// group waits for PostgreSQL the next is already on its way, so neither
// the API nor the database idles between groups.
const maxCreateLeaders = 2

// createGroupTimeout bounds the writing of a group: it runs on behalf of
// several requests, so it does not end with any one of them.
const createGroupTimeout = 30 * time.Second

// insertRequest is one create waiting for its group to be written.
type insertRequest struct {
	d    *models.Disbursement
	done chan error // buffered: the leader never waits for the create
}

// createGrouper queues creates for their leader.
type createGrouper struct {
	sqlDB *sql.DB

	mu      sync.Mutex
	queue   []*insertRequest
	leaders int // running
}

// insertGrouped writes d, its lock and its audit line as part of a group,
// and returns once they are committed (nil) or refused: the result of
// insertOneStatement for d.
func (s *Service) insertGrouped(d *models.Disbursement) error {
	g := s.creates
	req := &insertRequest{d: d, done: make(chan error, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, req)
	if g.leaders < maxCreateLeaders {
		g.leaders++
		go s.leadCreateGroups()
	}
	g.mu.Unlock()
	// Wait for the answer even if the request is cancelled: the row may be
	// committed, and the caller must know.
	return <-req.done
}

// leadCreateGroups writes the queued creates, group by group, until the
// queue is empty.
func (s *Service) leadCreateGroups() {
	g := s.creates
	for {
		g.mu.Lock()
		if len(g.queue) == 0 {
			g.leaders--
			g.mu.Unlock()
			return
		}
		group, rest := nextCreateGroup(g.queue)
		g.queue = rest
		g.mu.Unlock()
		s.writeCreateGroup(group)
	}
}

// nextCreateGroup takes from queue, in order, the creates that can share a
// statement: at most one per wallet and per client's key, at most
// maxCreateGroup. The others stay queued, in order.
func nextCreateGroup(queue []*insertRequest) (group, rest []*insertRequest) {
	type clientKey struct {
		client uuid.UUID
		key    string
	}
	wallets := map[uuid.UUID]bool{}
	keys := map[clientKey]bool{}
	for _, r := range queue {
		k := clientKey{r.d.ClientID, r.d.IdempotencyKey}
		if len(group) == maxCreateGroup || wallets[r.d.WalletID] || keys[k] {
			rest = append(rest, r)
			continue
		}
		wallets[r.d.WalletID], keys[k] = true, true
		group = append(group, r)
	}
	return group, rest
}

// writeCreateGroup writes a group and answers each of its creates.
func (s *Service) writeCreateGroup(group []*insertRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), createGroupTimeout)
	defer cancel()
	answered := 0
	defer func() {
		// A panic must not leave a create waiting for ever.
		if r := recover(); r != nil {
			slog.Error("create group panicked", slog.Any("panic", r))
			for _, req := range group[answered:] {
				req.done <- fmt.Errorf("payouts: writing the create group: %v", r)
			}
		}
	}()
	if len(group) == 1 {
		group[0].done <- s.insertOneStatement(ctx, group[0].d)
		answered = 1
		return
	}
	created, err := s.insertMany(ctx, group)
	if err != nil {
		slog.DebugContext(ctx, "create group not written; writing its creates one by one",
			slog.Int("creates", len(group)), slog.Any("error", err))
		for _, req := range group {
			req.done <- s.insertOneStatement(ctx, req.d)
			answered++
		}
		return
	}
	for _, req := range group {
		if created[req.d.ID] {
			req.done <- nil
		} else {
			req.done <- models.ErrInsufficientBalance
		}
		answered++
	}
}

// insertManySQL is insertMany's statement: the group as input (one row
// per create, by unnest of $1..$21), the ledger's locks of the grosses in
// wallet id order (LockFundsEachSQL: $3 the wallet ids, $22
// models.WalletActive), then the rows whose lock was taken and their audit
// lines.
var insertManySQL = `WITH input AS (
	        SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::bigint[], $7::bigint[],
	            $8::bigint[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[],
	            $16::text[], $17::text[], $18::text[], $19::timestamptz[], $20::timestamptz[], $21::timestamptz[])
	        AS t(id, client_id, wallet_id, idempotency_key, status, amount, platform_fee, net_amount, currency,
	            transfer_type, bank_code, bank_name, account_no, account_holder_name, memo, reference_id, vendor,
	            vendor_reference, lock_expires_at, next_check_at, created_at)
	    ), ` + ledger.LockFundsEachSQL("input", "$3", "$22") + `, created AS (
	        INSERT INTO disbursements (id, client_id, wallet_id, idempotency_key, status, amount, platform_fee, net_amount,
	            currency, transfer_type, bank_code, bank_name, account_no, account_holder_name, memo, reference_id,
	            vendor, vendor_reference, lock_expires_at, submit_attempts, checks, next_check_at, created_at, updated_at)
	        SELECT i.id, i.client_id, i.wallet_id, i.idempotency_key, i.status, i.amount, i.platform_fee, i.net_amount,
	            i.currency, i.transfer_type, i.bank_code, i.bank_name, i.account_no, i.account_holder_name, i.memo,
	            i.reference_id, i.vendor, i.vendor_reference, i.lock_expires_at, 0, 0, i.next_check_at, i.created_at, i.created_at
	        FROM input i JOIN locked l ON l.id = i.id
	        RETURNING id, status, created_at
	    ), audited AS (
	        INSERT INTO disbursement_transitions (disbursement_id, from_status, to_status, reason, created_at)
	        SELECT id, '', status, 'created', created_at FROM created
	    )
	    SELECT id FROM created`

// insertMany is insertOneStatement for a group of creates on distinct
// wallets: each wallet's lock is the same conditional update, taken in
// wallet id order (as the ledger takes them, so the two cannot deadlock),
// and a create whose wallet is not active or cannot cover its gross
// inserts nothing. It returns the ids inserted.
func (s *Service) insertMany(ctx context.Context, group []*insertRequest) (map[uuid.UUID]bool, error) {
	n := len(group)
	var (
		ids, clients, wallets                                  = make([][16]byte, n), make([][16]byte, n), make([][16]byte, n)
		keys, statuses, transferTypes, bankCodes, bankNames    = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		accounts, holders, vendorNames, vendorRefs, currencies = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		memos, references                                      = make([]*string, n), make([]*string, n)
		amounts, fees, nets                                    = make([]int64, n), make([]int64, n), make([]int64, n)
		lockExpiries, nextChecks, createdAt                    = make([]time.Time, n), make([]*time.Time, n), make([]time.Time, n)
	)
	for i, r := range group {
		d := r.d
		ids[i], clients[i], wallets[i] = d.ID, d.ClientID, d.WalletID
		keys[i], statuses[i], transferTypes[i] = d.IdempotencyKey, string(d.Status), string(d.TransferType)
		bankCodes[i], bankNames[i], accounts[i], holders[i] = d.BankCode, d.BankName, d.AccountNo, d.AccountHolderName
		vendorNames[i], vendorRefs[i], currencies[i] = d.Vendor, d.VendorReference, d.Currency
		memos[i], references[i] = d.Memo, d.ReferenceID
		amounts[i], fees[i], nets[i] = int64(d.Amount), int64(d.PlatformFee), int64(d.NetAmount)
		lockExpiries[i], nextChecks[i], createdAt[i] = d.LockExpiresAt, d.NextCheckAt, d.CreatedAt
	}
	rows, err := s.creates.sqlDB.QueryContext(ctx, insertManySQL,
		ids, clients, wallets, keys, statuses, amounts, fees, nets, currencies, transferTypes, bankCodes, bankNames,
		accounts, holders, memos, references, vendorNames, vendorRefs, lockExpiries, nextChecks, createdAt,
		string(models.WalletActive))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	created := make(map[uuid.UUID]bool, n)
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		created[id] = true
	}
	return created, rows.Err()
}
