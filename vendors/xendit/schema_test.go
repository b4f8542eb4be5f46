package xendit

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/xendit/xenditsim"
)

// The create the adapter sends is held to the request schema the
// simulator was given from Xendit's API reference (not from this
// adapter): it passes whole, and without any one of the documented
// required fields the simulator answers Xendit's validation error naming
// that field. An adapter that stops sending a field fails here.
func TestAdapterCreateMeetsTheDocumentedSchema(t *testing.T) {
	s := newSimulator(t)
	var mu sync.Mutex
	var sent []byte
	var header http.Header
	rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v2/payouts" {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			mu.Lock()
			sent, header = body, r.Header.Clone()
			mu.Unlock()
		}
		s.sim.ServeHTTP(w, r)
	}))
	t.Cleanup(rec.Close)
	v, err := New(Options{BaseURL: rec.URL, SecretKey: simKey, CallbackToken: "token"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.Submit(context.Background(), vendors.Payout{Reference: "schema-1", BankCode: "bca", AccountNo: "1234567890",
		TransferType: models.BIFAST, Amount: models.Rupiah(97_500), HolderName: "Budi Santoso"})
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	if err := xenditsim.ValidateCreateBody(sent); err != nil {
		t.Fatalf("the adapter's create %s is refused by the documented schema: %v", sent, err)
	}

	required := xenditsim.RequiredFields()
	if len(required) == 0 {
		t.Fatal("the schema lists no required field")
	}
	for i, path := range required {
		body := testenv.WithoutField(t, sent, path)
		req, _ := http.NewRequest(http.MethodPost, s.url+"/v2/payouts", bytes.NewReader(body))
		req.Header = header.Clone()
		req.Header.Set(IdempotencyHeader, "schema-missing-"+string(rune('a'+i)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e errorBody
		json.Unmarshal(raw, &e)
		if resp.StatusCode != http.StatusBadRequest || e.ErrorCode != CodeAPIValidation || !strings.Contains(e.text(), path) {
			t.Errorf("without %s: HTTP %d %s; want 400 %s naming the field", path, resp.StatusCode, raw, CodeAPIValidation)
		}
	}
}
