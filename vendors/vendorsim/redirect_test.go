package vendorsim_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/vendorsim"
)

// A redirect from the vendor's address is not followed, over http or from
// https to http, with the default client or one given: the bearer token
// never reaches the other host, whose forged success is never taken for
// the vendor's. A submit's outcome is unknown (ErrUnavailable), never a
// success or a rejection, and a read's answer is unavailable, never "no
// such payout".
func TestRedirectsAreNotFollowed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := vendors.Payout{HolderName: "Budi Santoso", Reference: "r", BankCode: "bca", AccountNo: "1234567890", TransferType: models.BIFAST, Amount: models.Rupiah(97_500)}
	forged := func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"reference":"r","status":"SUCCESS","failure_reason":"","submit_calls":1}`)
	}
	for _, tc := range []struct {
		name   string
		status int
		https  bool // the vendor's address is https, the Location http
	}{
		{"302", http.StatusFound, false},
		{"307", http.StatusTemporaryRedirect, false},
		{"308 from https", http.StatusPermanentRedirect, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := testenv.NewSink(t, forged)
			front := httptest.NewUnstartedServer(sink.Redirect(tc.status))
			o := clientOpts
			if tc.https {
				front.StartTLS()
				o.HTTPClient = front.Client()
			} else {
				front.Start()
			}
			t.Cleanup(front.Close)
			c := newClient(t, front.URL, "simbank", secrets, o)
			if res, err := c.Submit(ctx, p); !errors.Is(err, vendors.ErrUnavailable) || errors.Is(err, vendors.ErrRejected) {
				t.Errorf("Submit answered %+v, %v; want ErrUnavailable (unknown outcome)", res, err)
			}
			if res, err := c.Status(ctx, "r"); !errors.Is(err, vendors.ErrUnavailable) || errors.Is(err, vendors.ErrUnknownPayout) {
				t.Errorf("Status answered %+v, %v; want ErrUnavailable", res, err)
			}
			sink.Check(t, "Authorization")
		})
	}
	// A 3xx's body is not the vendor's word, even when it reads like an
	// error the vendor could give: a submit stays an unknown outcome.
	for code, not := range map[string]error{vendorsim.CodeRejected: vendors.ErrRejected, vendorsim.CodeUnknownPayout: vendors.ErrUnknownPayout} {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusTemporaryRedirect) // no Location: nothing to follow
			io.WriteString(w, `{"error":"no","code":"`+code+`"}`)
		}))
		c := newClient(t, ts.URL, "simbank", secrets, clientOpts)
		_, err := c.Submit(ctx, p)
		ts.Close()
		if !errors.Is(err, vendors.ErrUnavailable) || errors.Is(err, not) {
			t.Errorf("Submit over a 307 with code %q = %v, want ErrUnavailable only", code, err)
		}
	}
}
