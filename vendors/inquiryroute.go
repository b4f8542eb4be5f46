package vendors

import (
	"context"
	"fmt"
	"sync/atomic"
)

// InquiryRoute is an Inquirer that asks a vendor of a registry by name,
// for a vendor that borrows another's inquiry (a Xendit wallet asks a SNAP
// bank for holder names). The registry is set once composed, so that the
// borrowed inquiry goes through the same guard (circuit breaker,
// concurrency bound, metrics) as the lender's own calls: a bank that is
// down is refused fast for both.
type InquiryRoute struct {
	name string
	reg  atomic.Pointer[Registry]
}

// NewInquiryRoute returns a route to the vendor name; it answers
// ErrUnavailable until Use gives it a registry.
func NewInquiryRoute(name string) *InquiryRoute { return &InquiryRoute{name: name} }

// Use makes the route ask reg's vendor from now on.
func (r *InquiryRoute) Use(reg Registry) { r.reg.Store(&reg) }

// Inquire implements Inquirer.
func (r *InquiryRoute) Inquire(ctx context.Context, req InquiryRequest) (Account, error) {
	reg := r.reg.Load()
	if reg == nil {
		return Account{}, fmt.Errorf("%w: the inquiry of %s is not connected", ErrUnavailable, r.name)
	}
	v, err := reg.Get(r.name)
	if err != nil {
		return Account{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return v.Inquire(ctx, req)
}
