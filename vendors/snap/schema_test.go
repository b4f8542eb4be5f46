package snap_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/snap"
	"github.com/payoutd/payoutd/vendors/snap/snapsim"
)

// recorded is one request the adapter sent.
type recorded struct {
	path   string
	header http.Header
	body   []byte
}

// Every request the adapter sends (token, inquiry, transfer, status) is
// held to the SNAP document the simulator was given from the service
// specifications, not from this adapter: each passes whole, and without
// any one of its documented mandatory members the simulator's check
// answers SNAP's 400xx02 "Invalid Mandatory Field" naming it.
func TestAdapterRequestsMeetTheDocumentedSchema(t *testing.T) {
	var mu sync.Mutex
	var sent []recorded
	e := newEnv(t, func(o *snap.Options) {
		next := o.HTTPClient.Transport
		o.HTTPClient = &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			mu.Lock()
			sent = append(sent, recorded{path: r.URL.Path, header: r.Header.Clone(), body: body})
			mu.Unlock()
			return next.RoundTrip(r)
		})}
	})
	ctx := context.Background()
	if _, err := e.v.Inquire(ctx, vendors.InquiryRequest{BankCode: "bri", AccountNo: "1234567890", TransferType: models.BIFAST}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.v.Submit(ctx, vendors.Payout{Reference: "schema-1", BankCode: "bri", AccountNo: "1234567890",
		TransferType: models.BIFAST, Amount: models.Rupiah(97_500), HolderName: "SANDBOX 7890"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.v.Status(ctx, "schema-1"); err != nil {
		t.Fatal(err)
	}
	services := map[string]string{}
	for _, r := range sent {
		service := serviceOf(r.path)
		if service == "" {
			t.Fatalf("the adapter sent a request to %s, which the document does not describe", r.path)
		}
		services[service] = r.path
		if err := snapsim.ValidateRequest(r.path, r.header, r.body); err != nil {
			t.Errorf("%s: the adapter's request %s is refused by the documented schema: %v", r.path, r.body, err)
			continue
		}
		mandatory := snapsim.MandatoryFields(service)
		if service != "73" && len(mandatory) == 0 {
			t.Errorf("service %s: the document lists no mandatory member", service)
		}
		for _, path := range mandatory {
			err := snapsim.ValidateRequest(r.path, r.header, testenv.WithoutField(t, r.body, path))
			var re *snapsim.RequestError
			if !errors.As(err, &re) || re.Code.Case != "02" || !strings.Contains(re.Message, lastName(path)) {
				t.Errorf("%s without %s: %v; want 400%s02 Invalid Mandatory Field naming it", r.path, path, err, service)
			}
		}
	}
	for _, s := range []string{"73", "16", "18", "36"} {
		if services[s] == "" {
			t.Errorf("the adapter made no request of service %s", s)
		}
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// serviceOf is the SNAP service code of a request path.
func serviceOf(path string) string {
	switch {
	case path == snap.PathAccessToken:
		return "73"
	case path == snap.PathInquiry:
		return snap.ServiceInquiry
	case path == snap.PathTransfer:
		return snap.ServiceTransfer
	case path == snap.PathStatus:
		return snap.ServiceStatus
	}
	return ""
}

func lastName(path string) string { return path[strings.LastIndexByte(path, '.')+1:] }
