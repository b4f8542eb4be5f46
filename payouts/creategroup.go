package payouts

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/internal/groupcommit"
	"github.com/payoutd/payoutd/ledger"
	"github.com/payoutd/payoutd/models"
)

// Grouped create inserts. Creates that reach their insert at the same
// moment are written by one call of ledger.OpenDisbursements (groupCommit):
// on PostgreSQL one round trip and one commit for the group instead of one
// each, which is most of what a create costs the database. A lone create
// is a group of one: there is one write path. Two groups in flight never
// deadlock: each locks its wallets in id order.
//
// A busy wallet's creates share a group: its guard sees their summed
// gross, and one row update locks them all, so the wallet's row is taken
// once for many creates. When the wallet cannot cover the sum, none of
// them is written by the group; each is then written on its own, in its
// order, so that those that fit still do. A group never holds two creates
// with one client's Idempotency-Key: a twin waits for the next group,
// where the unique index sends it to the replay. Should the group's write
// fail (a twin committed by another instance, a deadlock), nothing of it
// was written, and each of its creates is written on its own, as a group
// of one.

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
type insertRequest = groupcommit.Request[*models.Disbursement]

// newCreateGrouper returns the group commit of the Service's creates.
func (s *Service) newCreateGrouper() *groupcommit.Group[*models.Disbursement] {
	return &groupcommit.Group[*models.Disbursement]{MaxLeaders: maxCreateLeaders, Next: nextCreateGroup, Run: s.writeCreateGroup,
		Observe: s.ObserveGroup("create")}
}

// insertGrouped writes d, its lock and its audit line as part of a group,
// and returns once they are committed (nil) or refused: what
// ledger.OpenDisbursements of d alone would answer.
func (s *Service) insertGrouped(d *models.Disbursement) error { return s.creates.Do(d) }

// nextCreateGroup takes from queue, in order, the creates that can share a
// statement: at most one per client's key, at most maxCreateGroup. The
// others stay queued, in order.
func nextCreateGroup(queue []*insertRequest) (group, rest []*insertRequest) {
	type clientKey struct {
		client uuid.UUID
		key    string
	}
	keys := map[clientKey]bool{}
	for _, r := range queue {
		k := clientKey{r.Item.ClientID, r.Item.IdempotencyKey}
		if len(group) == maxCreateGroup || keys[k] {
			rest = append(rest, r)
			continue
		}
		keys[k] = true
		group = append(group, r)
	}
	return group, rest
}

// writeCreateGroup writes a group and answers each of its creates.
func (s *Service) writeCreateGroup(group []*insertRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), createGroupTimeout)
	defer cancel()
	ds := make([]*models.Disbursement, len(group))
	for i, req := range group {
		ds[i] = req.Item
	}
	opened, err := ledger.OpenDisbursements(ctx, s.db, ds)
	if err != nil && len(group) > 1 {
		slog.DebugContext(ctx, "create group not written; writing its creates one by one",
			slog.Int("creates", len(group)), slog.Any("error", err))
		for _, req := range group {
			req.Answer(s.openOne(ctx, req.Item))
		}
		return
	}
	perWallet := map[uuid.UUID]int{}
	for _, d := range ds {
		perWallet[d.WalletID]++
	}
	for _, req := range group {
		switch {
		case err != nil:
			req.Answer(err)
		case opened[req.Item.ID]:
			req.Answer(nil)
		case perWallet[req.Item.WalletID] > 1:
			// Refused with its wallet's other creates, for their sum:
			// on its own it may fit.
			req.Answer(s.openOne(ctx, req.Item))
		default:
			req.Answer(models.ErrInsufficientBalance)
		}
	}
}

// openOne writes one create as a group of one: nil when stored,
// ErrInsufficientBalance when its lock is refused.
func (s *Service) openOne(ctx context.Context, d *models.Disbursement) error {
	opened, err := ledger.OpenDisbursements(ctx, s.db, []*models.Disbursement{d})
	switch {
	case err != nil:
		return err
	case !opened[d.ID]:
		return models.ErrInsufficientBalance
	}
	return nil
}
