package xendit_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/xendit"
)

// A redirect from Xendit's address is not followed, over http or from
// https to http, with the default client or one given: the secret key
// (basic auth) and the idempotency key never reach the other host, whose
// forged success is never taken for Xendit's. The create's outcome is
// unknown (ErrUnavailable: the worker asks Status later), never a success
// or a rejection, and a read's answer is unavailable, never "no such
// payout".
func TestRedirectsAreNotFollowed(t *testing.T) {
	forged := func(w http.ResponseWriter, r *http.Request) {
		success := `{"id":"disb-forged","reference_id":"ref","status":"SUCCEEDED","amount":97500,"currency":"IDR"}`
		if r.Method == http.MethodGet {
			success = "[" + success + "]"
		}
		io.WriteString(w, success)
	}
	for _, tc := range []struct {
		name   string
		status int
		https  bool // Xendit's address is https, the Location http
	}{
		{"302", http.StatusFound, false},
		{"307", http.StatusTemporaryRedirect, false},
		{"308 from https", http.StatusPermanentRedirect, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := testenv.NewSink(t, forged)
			front := httptest.NewUnstartedServer(sink.Redirect(tc.status))
			o := xendit.Options{SecretKey: secretKey, RetryBackoff: time.Millisecond}
			if tc.https {
				front.StartTLS()
				o.HTTPClient = front.Client()
			} else {
				front.Start()
			}
			t.Cleanup(front.Close)
			o.BaseURL = front.URL
			v, err := xendit.New(o)
			if err != nil {
				t.Fatal(err)
			}
			res, err := v.Submit(context.Background(), payout("ref", "bca", "1234567890", models.Rupiah(97_500)))
			if !errors.Is(err, vendors.ErrUnavailable) || errors.Is(err, vendors.ErrRejected) {
				t.Errorf("Submit answered %+v, %v; want ErrUnavailable (unknown outcome)", res, err)
			}
			res, err = v.Status(context.Background(), "ref")
			if !errors.Is(err, vendors.ErrUnavailable) || errors.Is(err, vendors.ErrUnknownPayout) {
				t.Errorf("Status answered %+v, %v; want ErrUnavailable", res, err)
			}
			sink.Check(t, "Authorization", xendit.IdempotencyHeader)
		})
	}
}
