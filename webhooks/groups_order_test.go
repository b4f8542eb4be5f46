package webhooks

import (
	"bytes"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/internal/groupcommit"
)

// A group leaves the queue ordered by event id, whatever order its
// deliveries came in, and the rest of the queue keeps its order: two
// processes' statements then lock the same events in the same order.
func TestGroupsAreInEventOrder(t *testing.T) {
	t.Parallel()
	ids := make([]uuid.UUID, maxGroup+3)
	for i := range ids {
		ids[i] = uuid.New()
	}
	queue := make([]*groupcommit.Request[*claimRequest], len(ids))
	for i, id := range ids {
		queue[i] = groupcommit.NewRequest(&claimRequest{id: id})
	}
	group, rest := inEventOrder(func(r *claimRequest) uuid.UUID { return r.id })(queue)
	if len(group) != maxGroup || len(rest) != 3 {
		t.Fatalf("group of %d and %d left, want %d and 3", len(group), len(rest), maxGroup)
	}
	if !slices.IsSortedFunc(group, func(a, b *groupcommit.Request[*claimRequest]) int {
		return bytes.Compare(a.Item.id[:], b.Item.id[:])
	}) {
		t.Error("the group is not in event id order")
	}
	for i, req := range rest {
		if req.Item.id != ids[maxGroup+i] {
			t.Errorf("the rest of the queue changed order at %d", i)
		}
	}
}
