package snap_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/sandbox/sandboxtest"
	"github.com/payoutd/payoutd/vendors/snap"
)

// fixture is one documented request/response pair under
// testdata/fixtures, replayed against the simulator (the request must get
// the response) and the adapter (the response must mean what "adapter"
// says, and the adapter must send the request).
type fixture struct {
	Source     string                     `json:"source"`
	Path       string                     `json:"path"`
	Setup      string                     `json:"setup"`
	Request    map[string]json.RawMessage `json:"request"`
	HTTPStatus int                        `json:"httpStatus"`
	Response   map[string]json.RawMessage `json:"response"`
	Check      []string                   `json:"check"`
	Adapter    *struct {
		Holder       string          `json:"holder"`
		Status       string          `json:"status"`
		Error        string          `json:"error"`
		StatusAnswer json.RawMessage `json:"statusAnswer"`
	} `json:"adapter"`
}

func loadFixtures(t *testing.T) map[string]fixture {
	t.Helper()
	files, err := filepath.Glob("testdata/fixtures/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	out := map[string]fixture{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var fx fixture
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&fx); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if fx.Source == "" {
			t.Fatalf("%s names no source", f)
		}
		out[filepath.Base(f)] = fx
	}
	return out
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func TestFixturesAgainstSimulator(t *testing.T) {
	for name, fx := range loadFixtures(t) {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, nil)
			switch {
			case strings.HasPrefix(fx.Setup, "transfer:"):
				parts := strings.Split(fx.Setup, ":")
				if _, err := e.submit(parts[1], parts[2], models.BIFAST, models.Rupiah(97_500)); err != nil {
					t.Fatal(err)
				}
				e.clock.Advance(sandboxtest.CompleteAfter)
			case fx.Setup == "balance:0":
				e.bank.SetSourceBalance(0)
			}
			body, _ := json.Marshal(fx.Request)
			var status int
			var got []byte
			if fx.Path == snap.PathAccessToken {
				status, got = rawToken(t, e, e.clock.Now(), body, nil)
			} else {
				_, tok := rawToken(t, e, e.clock.Now(), nil, nil)
				status, got = rawCall(t, e, fx.Path, accessToken(t, tok), "123456789", body, nil)
			}
			if status != fx.HTTPStatus {
				t.Fatalf("HTTP %d, want %d: %s", status, fx.HTTPStatus, got)
			}
			var resp map[string]json.RawMessage
			if err := json.Unmarshal(got, &resp); err != nil {
				t.Fatal(err)
			}
			for _, k := range append([]string{"responseCode", "responseMessage"}, fx.Check...) {
				if !jsonEqual(resp[k], fx.Response[k]) {
					t.Errorf("%s = %s, fixture says %s", k, resp[k], fx.Response[k])
				}
			}
		})
	}
}

func TestFixturesAgainstAdapter(t *testing.T) {
	for name, fx := range loadFixtures(t) {
		if fx.Adapter == nil {
			continue
		}
		t.Run(name, func(t *testing.T) {
			inquiry := loadFixtures(t)["inquiry_success.json"]
			var sent []byte
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				write := func(status int, v any) {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(status)
					_ = json.NewEncoder(w).Encode(v)
				}
				switch {
				case r.URL.Path == snap.PathAccessToken:
					write(200, map[string]string{"responseCode": "2007300", "responseMessage": "Successful", "accessToken": "fixture-token", "tokenType": "Bearer", "expiresIn": "900"})
				case r.URL.Path == fx.Path:
					sent = b
					write(fx.HTTPStatus, fx.Response)
				case r.URL.Path == snap.PathInquiry:
					write(200, inquiry.Response)
				case r.URL.Path == snap.PathStatus && fx.Adapter.StatusAnswer != nil:
					write(200, fx.Adapter.StatusAnswer)
				default:
					w.WriteHeader(500)
				}
			}))
			defer srv.Close()
			v, err := snap.New(snap.Options{
				Bank: "bca", BaseURL: srv.URL, PartnerID: partnerID, ClientKey: clientKey, ClientSecret: clientSecret,
				ChannelID: "95221", PrivateKey: testKey(t), SourceAccountNo: sourceAcct, Now: sandboxtest.NewClock().Now,
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			str := func(k string) string {
				var s string
				_ = json.Unmarshal(fx.Request[k], &s)
				return s
			}
			var res vendors.PayoutResult
			var acc vendors.Account
			switch fx.Path {
			case snap.PathInquiry:
				acc, err = v.Inquire(ctx, vendors.InquiryRequest{BankCode: "bri", AccountNo: str("beneficiaryAccountNo")})
			case snap.PathTransfer:
				var m snap.Money
				_ = json.Unmarshal(fx.Request["amount"], &m)
				amount, _ := snap.ParseAmount(m)
				res, err = v.Submit(ctx, vendors.Payout{Reference: str("partnerReferenceNo"), BankCode: "bri", AccountNo: str("beneficiaryAccountNo"), TransferType: models.BIFAST, Amount: amount})
			case snap.PathStatus:
				res, err = v.Status(ctx, str("originalPartnerReferenceNo"))
			}
			want := map[string]error{
				"ErrAccountNotResolved": models.ErrAccountNotResolved, "ErrAccountInactive": models.ErrAccountInactive,
				"ErrRejected": vendors.ErrRejected, "ErrUnknownPayout": vendors.ErrUnknownPayout,
			}
			switch a := fx.Adapter; {
			case a.Error != "":
				if !errors.Is(err, want[a.Error]) {
					t.Errorf("error %v, want %s", err, a.Error)
				}
			case a.Holder != "":
				if err != nil || acc.HolderName != a.Holder {
					t.Errorf("holder %q, %v; want %q", acc.HolderName, err, a.Holder)
				}
			default:
				if err != nil || string(res.Status) != a.Status {
					t.Errorf("result %+v, %v; want %s", res, err, a.Status)
				}
			}
			// What the adapter sent carries the fixture's request fields.
			if sent != nil {
				var m map[string]json.RawMessage
				if err := json.Unmarshal(sent, &m); err != nil {
					t.Fatal(err)
				}
				for k, want := range fx.Request {
					if !jsonEqual(m[k], want) {
						t.Errorf("adapter sent %s = %s, fixture has %s", k, m[k], want)
					}
				}
			}
		})
	}
}
