package webhooks

import (
	"github.com/google/uuid"

	"github.com/payoutd/payoutd/internal/groupcommit"
)

// ClaimTogether runs one claim statement for ids, as deliveries that
// arrive at the same moment share one (PostgreSQL), and says which of them
// got a claim.
func (d *Deliverer) ClaimTogether(ids ...uuid.UUID) []bool {
	group := make([]*groupcommit.Request[*claimRequest], len(ids))
	for i, id := range ids {
		group[i] = groupcommit.NewRequest(&claimRequest{id: id})
	}
	d.claimGroup(group)
	claimed := make([]bool, len(ids))
	for i, req := range group {
		claimed[i] = req.Item.claim != nil
	}
	return claimed
}
