package api

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/internal/groupcommit"
	"github.com/payoutd/payoutd/internal/metrics"
	"github.com/payoutd/payoutd/models"
)

// walletReads answers the wallet reads of requests that arrive at the same
// moment (a balance, a statement's wallet) with one query: one round trip
// and one statement for PostgreSQL instead of one each, which at a few
// thousand reads a second is most of what a read costs. An
// idle API reads a lone wallet at once; nothing waits on a timer. A read
// queued after a commit is answered by a query that starts after it, so a
// merchant reads their own writes.
type walletReads struct {
	store *models.Store
	group groupcommit.Group[*walletRead]
}

// walletRead is one caller's wallet and what the query found.
type walletRead struct {
	clientID, walletID uuid.UUID
	wallet             *models.Wallet
	err                error
}

// maxWalletReads is the most wallets one query reads, and walletReadLeaders
// how many queries may be out at once: while one is, the next group
// gathers; the second only behind a backlog (readBusyAt, as the signature
// records).
const maxWalletReads, walletReadLeaders = 128, 2

func newWalletReads(store *models.Store, m *metrics.Metrics) *walletReads {
	r := &walletReads{store: store}
	r.group = groupcommit.Group[*walletRead]{MaxLeaders: walletReadLeaders, BusyAt: readBusyAt,
		Next: groupcommit.First[*walletRead](maxWalletReads), Run: r.read,
		Observe: func(size int, took time.Duration) { m.GroupRun("wallet_reads", size, took) }}
	return r
}

// find returns the client's active wallet walletID, or ErrWalletNotFound,
// as models.Store's FindClientWallet does. A caller whose ctx ends first
// gets ctx's error.
func (r *walletReads) find(ctx context.Context, clientID, walletID uuid.UUID) (*models.Wallet, error) {
	read := &walletRead{clientID: clientID, walletID: walletID}
	if err := r.group.DoContext(ctx, read); err != nil {
		return nil, err
	}
	return read.wallet, read.err
}

// read answers a group with one query. Its context is its own, bounded
// like a request: one caller hanging up must not fail the others.
func (r *walletReads) read(group []*groupcommit.Request[*walletRead]) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	ids := make([]uuid.UUID, 0, len(group))
	seen := make(map[uuid.UUID]bool, len(group))
	for _, req := range group {
		if !seen[req.Item.walletID] {
			seen[req.Item.walletID] = true
			ids = append(ids, req.Item.walletID)
		}
	}
	wallets, err := r.store.FindWallets(ctx, ids)
	byID := make(map[uuid.UUID]*models.Wallet, len(wallets))
	for i := range wallets {
		byID[wallets[i].ID] = &wallets[i]
	}
	for _, req := range group {
		read := req.Item
		w := byID[read.walletID]
		switch {
		case err != nil:
			read.err = err
		case w == nil || w.ClientID != read.clientID || w.State != models.WalletActive:
			read.err = models.ErrWalletNotFound
		default:
			copied := *w // each caller gets its own copy
			read.wallet = &copied
		}
		req.Answer(nil)
	}
}
