package snap_test

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
	"github.com/payoutd/payoutd/vendors/sandbox/sandboxtest"
	"github.com/payoutd/payoutd/vendors/snap"
	"github.com/payoutd/payoutd/vendors/snap/snapsim"
)

// A redirect from the bank's address is not followed, over http or from
// https to http: the token request's X-CLIENT-KEY and RSA signature, and
// a transfer's bearer token and HMAC signature, never reach the other
// host, whose forged success is never taken for the bank's. The
// transfer's outcome is unknown (ErrUnavailable), never a success or a
// rejection, and so is the status inquiry's.
func TestRedirectsAreNotFollowed(t *testing.T) {
	forged := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case snap.PathAccessToken:
			io.WriteString(w, `{"responseCode":"2007300","responseMessage":"Successful","accessToken":"forged","tokenType":"Bearer","expiresIn":"900"}`)
		case snap.PathTransfer:
			io.WriteString(w, `{"responseCode":"2001800","responseMessage":"Successful","referenceNo":"forged","partnerReferenceNo":"ref","latestTransactionStatus":"00"}`)
		case snap.PathStatus:
			io.WriteString(w, `{"responseCode":"2003600","responseMessage":"Successful","originalPartnerReferenceNo":"ref","latestTransactionStatus":"00","transactionStatusDesc":"Success"}`)
		}
	}
	for _, tc := range []struct {
		name     string
		status   int
		https    bool     // the bank's address is https, the Location http
		redirect []string // the paths the bank's address redirects; the others reach the bank
	}{
		{"token 307", http.StatusTemporaryRedirect, false, []string{snap.PathAccessToken}},
		{"transfer 302", http.StatusFound, false, []string{snap.PathTransfer, snap.PathStatus}},
		{"transfer 307 from https", http.StatusTemporaryRedirect, true, []string{snap.PathTransfer, snap.PathStatus}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := testKey(t)
			clock := sandboxtest.NewClock()
			bank := snapsim.New(snapsim.Options{PartnerPublicKey: &key.PublicKey, ClientKey: clientKey, ClientSecret: clientSecret,
				PartnerID: partnerID, SourceAccountNo: sourceAcct, Now: clock.Now, TokenTTL: tokenTTL, CompleteAfter: sandboxtest.CompleteAfter})
			sink := testenv.NewSink(t, forged)
			redirect := sink.Redirect(tc.status)
			front := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for _, p := range tc.redirect {
					if r.URL.Path == p {
						redirect(w, r)
						return
					}
				}
				bank.ServeHTTP(w, r)
			}))
			o := snap.Options{Bank: "bca", PartnerID: partnerID, ClientKey: clientKey, ClientSecret: clientSecret,
				ChannelID: "95221", PrivateKey: key, SourceAccountNo: sourceAcct, Now: clock.Now}
			if tc.https {
				front.StartTLS()
				o.HTTPClient = front.Client()
			} else {
				front.Start()
			}
			t.Cleanup(front.Close)
			o.BaseURL = front.URL
			v, err := snap.New(o)
			if err != nil {
				t.Fatal(err)
			}
			res, err := v.Submit(context.Background(), vendors.Payout{Reference: "ref", BankCode: "bri", AccountNo: "1234567890",
				TransferType: models.BIFAST, Amount: models.Rupiah(97_500)})
			if !errors.Is(err, vendors.ErrUnavailable) || errors.Is(err, vendors.ErrRejected) {
				t.Errorf("Submit answered %+v, %v; want ErrUnavailable (unknown outcome)", res, err)
			}
			res, err = v.Status(context.Background(), "ref")
			if !errors.Is(err, vendors.ErrUnavailable) || errors.Is(err, vendors.ErrUnknownPayout) {
				t.Errorf("Status answered %+v, %v; want ErrUnavailable", res, err)
			}
			sink.Check(t, "Authorization", "X-SIGNATURE", "X-CLIENT-KEY", "X-PARTNER-ID", "X-EXTERNAL-ID", "CHANNEL-ID")
		})
	}
}
