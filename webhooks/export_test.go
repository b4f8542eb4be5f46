package webhooks

import (
	"github.com/google/uuid"

	"github.com/payoutd/payoutd/internal/groupcommit"
	"github.com/payoutd/payoutd/models"
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

// RecordTogether records, in one outcome statement (PostgreSQL), attempt 1
// of each event as delivered, and says which of them it settled (those
// still pending).
func (d *Deliverer) RecordTogether(events ...*models.WebhookEvent) []bool {
	group := make([]*groupcommit.Request[*outcomeRequest], len(events))
	now := d.now().UTC()
	for i, ev := range events {
		group[i] = groupcommit.NewRequest(&outcomeRequest{in: outcomeInput{EventID: ev.ID, Attempt: 1, URL: "https://merchant.example/",
			StartedAt: now, State: models.WebhookDelivered, DeliveredAt: &now, SubjectID: ev.SubjectID, Sequence: ev.Sequence}})
	}
	d.outcomeGroup(group)
	settled := make([]bool, len(events))
	for i, req := range group {
		settled[i] = req.Item.settled && req.Item.err == nil
	}
	return settled
}
