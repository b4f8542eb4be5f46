package payouts

import (
	"context"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
)

// Handoff is what the rules tell, once a commit is over, so that a
// payout's next step runs soon: package dispatch implements it (it decides
// when submits run; these rules only say what a submit does). Nothing
// depends on being told: the committed row, VERIFIED with next_check_at,
// is what carries a payout through (the sweep), and every method is best
// effort and must not block the caller for long.
type Handoff interface {
	// Due is told of a payout committed VERIFIED and due for its first
	// submit, no attempt claimed (a create, an approval).
	Due(ctx context.Context, d *models.Disbursement)
	// Claimed is given a copy of a create's payout stored with its first
	// submit attempt claimed for this process (Options.SubmitInline), to
	// submit at once (SubmitClaimed). What it returns is kept in
	// Created.Inline for the create's waiter.
	Claimed(d *models.Disbursement) any
	// LeftVerified is told of the payouts a commit moved out of VERIFIED
	// (the waiting creates wake).
	LeftVerified(ctx context.Context, ids []uuid.UUID)
}
