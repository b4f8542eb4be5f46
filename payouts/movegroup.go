package payouts

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/internal/groupcommit"
	"github.com/payoutd/payoutd/models"
)

// Grouped moves of vendor results. The payouts of a busy wallet reach
// their results at the same moment, from many status checks and
// callbacks. Moved one by one, each takes the wallet's row in a
// transaction of its own (a paid payout's postings change the balance and
// release its lock; a failed one's release its lock), and the wallet's
// creates queue behind every one of them. Results that reach their move
// together are applied by one moveAll (groupCommit): one transaction, in
// which the wallet's row is updated once for all of them (PostAll and
// ReleaseLocks sum per wallet). Should the group's transaction fail (a row
// moved meanwhile: ErrStaleStatus; a deadlock), nothing of it was written,
// and each plan is then applied on its own, so that each caller is
// answered exactly what a move of its own would answer.

// maxMoveGroup bounds the plans applied by one transaction.
const maxMoveGroup = 64

// maxMoveLeaders is how many groups may be applied at once.
const maxMoveLeaders = 2

// moveGroupTimeout bounds the applying of a group: it runs on behalf of
// several callers, so it does not end with any one of them.
const moveGroupTimeout = 30 * time.Second

// moveRequest is one plan waiting for its group to be applied.
type moveRequest = groupcommit.Request[plan]

// newMoveGrouper returns the group commit of the Service's result moves.
func (s *Service) newMoveGrouper() *groupcommit.Group[plan] {
	return &groupcommit.Group[plan]{MaxLeaders: maxMoveLeaders, Next: nextMoveGroup, Run: s.writeMoveGroup,
		Observe: s.ObserveGroup("move")}
}

// moveGrouped applies d's moves as part of a group and returns what
// moveAll of them alone would: d changes only once they are committed.
func (s *Service) moveGrouped(d *models.Disbursement, moves ...Move) error {
	return s.moves.Do(plan{d: d, moves: moves})
}

// nextMoveGroup takes from queue, in order, the plans that can share a
// transaction: at most one per disbursement (two results for one payout
// are judged one after the other), at most maxMoveGroup. The others stay
// queued, in order.
func nextMoveGroup(queue []*moveRequest) (group, rest []*moveRequest) {
	seen := map[uuid.UUID]bool{}
	for _, r := range queue {
		if len(group) == maxMoveGroup || seen[r.Item.d.ID] {
			rest = append(rest, r)
			continue
		}
		seen[r.Item.d.ID] = true
		group = append(group, r)
	}
	return group, rest
}

// writeMoveGroup applies a group in one transaction and answers each of
// its plans. A plan whose row moved meanwhile (a callback and a status
// check of one payout at once) fails the whole transaction: it is
// answered ErrStaleStatus, as its own move would be, and the rest is
// applied again as a group. Any other failure: each plan on its own.
func (s *Service) writeMoveGroup(group []*moveRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), moveGroupTimeout)
	defer cancel()
	for len(group) > 0 {
		plans := make([]plan, len(group))
		for i, req := range group {
			plans[i] = req.Item
		}
		err := s.moveAll(ctx, plans)
		if err == nil || len(group) == 1 {
			for _, req := range group {
				req.Answer(err)
			}
			return
		}
		var fresh []*moveRequest
		if errors.Is(err, models.ErrStaleStatus) {
			fresh = s.answerStale(ctx, group)
		}
		if fresh == nil || len(fresh) == len(group) {
			for _, req := range group {
				req.Answer(s.moveAll(ctx, []plan{req.Item}))
			}
			return
		}
		group = fresh
	}
}

// answerStale answers ErrStaleStatus to the plans of group whose row is no
// longer in the status they were read in, and returns the others; nil when
// the rows cannot be read.
func (s *Service) answerStale(ctx context.Context, group []*moveRequest) []*moveRequest {
	ids := make([]uuid.UUID, len(group))
	for i, req := range group {
		ids[i] = req.Item.d.ID
	}
	var rows []models.Disbursement
	if err := s.db.WithContext(ctx).Select("id", "status").Where("id IN ?", ids).Find(&rows).Error; err != nil {
		return nil
	}
	now := make(map[uuid.UUID]models.DisbursementStatus, len(rows))
	for _, r := range rows {
		now[r.ID] = r.Status
	}
	fresh := make([]*moveRequest, 0, len(group))
	for _, req := range group {
		d := req.Item.d
		if now[d.ID] == d.Status {
			fresh = append(fresh, req)
			continue
		}
		req.Answer(fmt.Errorf("%w: %s no longer %s", models.ErrStaleStatus, d.ID, d.Status))
	}
	return fresh
}
