package vendors

import (
	"context"
	"net/http"
	"testing"
	"time"
)

type pollOnly struct{}

func (pollOnly) Name() string                                             { return "poll-only" }
func (pollOnly) Banks(context.Context) ([]Bank, error)                    { return nil, nil }
func (pollOnly) Inquire(context.Context, InquiryRequest) (Account, error) { return Account{}, nil }
func (pollOnly) Submit(context.Context, Payout) (PayoutResult, error)     { return PayoutResult{}, nil }
func (pollOnly) Status(context.Context, string) (PayoutResult, error)     { return PayoutResult{}, nil }

type pushing struct{ pollOnly }

func (pushing) ParseCallback(string, http.Header, []byte, time.Time) (PayoutResult, error) {
	return PayoutResult{Reference: "r"}, nil
}

type configured struct {
	pushing
	on bool
}

func (c configured) Notifies() bool { return c.on }

// A vendor notifies when it parses callbacks and, if it says, is
// configured to; ReceiverOf keeps both answers for a wrapper.
func TestNotifies(t *testing.T) {
	for _, tt := range []struct {
		name string
		v    Vendor
		want bool
	}{
		{"no callbacks", pollOnly{}, false},
		{"callbacks, nothing said", pushing{}, true},
		{"callbacks, configured on", configured{on: true}, true},
		{"callbacks, configured off", configured{on: false}, false},
	} {
		if got := Notifies(tt.v); got != tt.want {
			t.Errorf("%s: Notifies = %v, want %v", tt.name, got, tt.want)
		}
		r, ok := ReceiverOf(tt.v)
		if _, parses := tt.v.(CallbackParser); ok != parses {
			t.Errorf("%s: ReceiverOf ok = %v", tt.name, ok)
		}
		if !ok {
			continue
		}
		if r.Notifies() != tt.want {
			t.Errorf("%s: the receiver notifies %v, want %v", tt.name, r.Notifies(), tt.want)
		}
		if res, err := r.ParseCallback("/p", nil, nil, time.Time{}); err != nil || res.Reference != "r" {
			t.Errorf("%s: the receiver parses %+v, %v; want the vendor's parse", tt.name, res, err)
		}
	}
}
