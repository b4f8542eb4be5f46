package payouts

import (
	"context"
	"errors"

	"github.com/google/uuid"
)

// InquiryBudget bounds how many creates a client may have refused after
// their account inquiry. Every create asks the vendor about the recipient
// before it checks the balance (the spec's order), so a client with
// nothing to pay out could otherwise tell inactive, unverifiable and valid
// accounts apart by the refusals it gets, at full speed.
type InquiryBudget interface {
	// Check runs before a fresh create's inquiry (after its replay lookup,
	// so a retry of a stored create is always answered). An error refuses
	// the create as it is.
	Check(ctx context.Context, clientID uuid.UUID) error
	// Spend counts one create refused after its inquiry: 402, or 422 for an
	// inactive or unresolved account or an amount below the minimum.
	Spend(ctx context.Context, clientID uuid.UUID)
}

// inquiredRefusal marks a refusal decided by, or after, the account
// inquiry: it tells the caller something about the account. It reads and
// matches (errors.Is, errors.As) as the refusal it wraps.
type inquiredRefusal struct{ err error }

func (e inquiredRefusal) Error() string { return e.err.Error() }
func (e inquiredRefusal) Unwrap() error { return e.err }

// afterInquiry marks err as an inquiredRefusal.
func afterInquiry(err error) error { return inquiredRefusal{err} }

// refusedAfterInquiry reports whether err is a refusal marked by afterInquiry.
func refusedAfterInquiry(err error) bool {
	var r inquiredRefusal
	return errors.As(err, &r)
}
