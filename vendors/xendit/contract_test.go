package xendit

// Contract tests: Xendit's documented examples (testdata/*.json, each
// naming its source document) replayed against both the adapter and the
// simulator, so that the two cannot agree on something the documents say
// otherwise.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
	"github.com/payoutd/payoutd/vendors/xendit/xenditsim"
)

type fixture struct {
	Source string          `json:"source"`
	URL    string          `json:"url"`
	Note   string          `json:"note"`
	Body   json.RawMessage `json:"body"`
}

func loadFixture(t *testing.T, name string) fixture {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var f fixture
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if f.Source == "" || !strings.HasPrefix(f.URL, "https://") || len(f.Body) == 0 {
		t.Fatalf("%s must name its source document and carry a body", name)
	}
	return f
}

func TestFixturesNameTheirSource(t *testing.T) {
	names, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	if len(names) < 6 {
		t.Fatalf("only %d fixtures", len(names))
	}
	for _, n := range names {
		loadFixture(t, filepath.Base(n))
	}
}

// shape maps each path of a JSON value to its type; array elements are
// described under "[]" by their first element.
func shape(t *testing.T, raw []byte) map[string]string {
	t.Helper()
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, raw)
	}
	out := map[string]string{}
	var walk func(string, any)
	walk = func(p string, v any) {
		switch x := v.(type) {
		case map[string]any:
			out[p] = "object"
			for k, e := range x {
				walk(p+"."+k, e)
			}
		case []any:
			out[p] = "array"
			if len(x) > 0 {
				walk(p+"[]", x[0])
			}
		case string:
			out[p] = "string"
		case json.Number:
			out[p] = "number"
		case bool:
			out[p] = "bool"
		default:
			out[p] = "null"
		}
	}
	walk("", v)
	return out
}

// covers reports the paths of want missing from got or of another type.
func covers(got, want map[string]string) []string {
	var bad []string
	for p, typ := range want {
		if got[p] != typ {
			bad = append(bad, p+": documented "+typ+", got "+orDefault(got[p], "nothing"))
		}
	}
	sort.Strings(bad)
	return bad
}

// The adapter's create body is the documented one, the holder name
// included: Xendit refuses a create without it.
func TestContractAdapterEncodesDocumentedRequest(t *testing.T) {
	f := loadFixture(t, "create_payout_request.json")
	v, err := New(Options{SecretKey: "k", Description: "Test Txn 001"})
	if err != nil {
		t.Fatal(err)
	}
	req, err := v.payoutRequest(vendors.Payout{HolderName: "Testing",
		Reference: "test-transaction-010121", BankCode: "mandiri", AccountNo: "1231231231231",
		TransferType: models.BIFAST, Amount: models.Rupiah(10_000),
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(req)
	var doc map[string]any
	json.Unmarshal(f.Body, &doc)
	want, _ := json.Marshal(doc)
	var a, b any
	json.Unmarshal(got, &a)
	json.Unmarshal(want, &b)
	ga, _ := json.Marshal(a)
	gb, _ := json.Marshal(b)
	if !bytes.Equal(ga, gb) {
		t.Errorf("adapter request\n%s\ndocumented (%s)\n%s", ga, f.URL, gb)
	}
}

func TestContractAdapterDecodesDocumentedAnswers(t *testing.T) {
	var obj payoutObject
	if err := json.Unmarshal(loadFixture(t, "payout_object.json").Body, &obj); err != nil {
		t.Fatal(err)
	}
	if r, err := resultOf(obj); err != nil || r.Reference != "myref-1482928194" || r.Status != vendors.PayoutPending {
		t.Errorf("payout object: %+v, %v", r, err)
	}
	list, err := decodePayoutList(loadFixture(t, "get_payouts_by_reference_response.json").Body)
	if err != nil || len(list) != 1 || list[0].ReferenceID != "myref-1482928194" || list[0].ID != "disb-571f3644d2b4edf0745e9703" {
		t.Errorf("payout list: %+v, %v", list, err)
	}
	// The SDK's shape of the same answer.
	sdk, _ := json.Marshal(map[string]any{"data": json.RawMessage(loadFixture(t, "get_payouts_by_reference_response.json").Body), "has_more": false})
	if list, err := decodePayoutList(sdk); err != nil || len(list) != 1 {
		t.Errorf("SDK-shaped payout list: %+v, %v", list, err)
	}
	var chans []channel
	if err := json.Unmarshal(loadFixture(t, "payouts_channels_response.json").Body, &chans); err != nil {
		t.Fatal(err)
	}
	if banks := banksOf(chans); len(banks) != 1 || banks[0].Code != "bsi" || banks[0].Name != "Bank Syariah Indonesia" {
		t.Errorf("channels: %+v", banks)
	}
	if r, err := DecodeWebhook(loadFixture(t, "webhook_payout_succeeded.json").Body); err != nil || r.Reference != "myref-1482928194" || r.Status != vendors.PayoutSuccess {
		t.Errorf("webhook: %+v, %v", r, err)
	}
	e := apiError(401, loadFixture(t, "error_401_invalid_api_key.json").Body)
	if e.Code != CodeInvalidAPIKey || e.Message != "API key format is invalid" {
		t.Errorf("401: %+v", e)
	}
}

// simulator serves xenditsim with a webhook receiver.
type simulator struct {
	url   string
	sim   *xenditsim.Server
	mu    sync.Mutex
	hooks [][]byte
	now   time.Time
}

const simKey = "xnd_development_contract"

func newSimulator(t *testing.T) *simulator {
	s := &simulator{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.hooks = append(s.hooks, b)
		s.mu.Unlock()
	}))
	t.Cleanup(hook.Close)
	sim, err := xenditsim.New(xenditsim.Options{
		SecretKey: simKey, CallbackToken: "token", CallbackURL: hook.URL,
		Now:    func() time.Time { s.mu.Lock(); defer s.mu.Unlock(); return s.now },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(sim)
	t.Cleanup(ts.Close)
	s.url, s.sim = ts.URL, sim
	return s
}

func (s *simulator) do(t *testing.T, method, path, key string, body []byte) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, s.url+path, bytes.NewReader(body))
	req.SetBasicAuth(key, "")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-key", "contract-key")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

// The simulator accepts the documented request and answers the documented
// shapes.
func TestContractSimulatorAnswersDocumentedShapes(t *testing.T) {
	s := newSimulator(t)
	req := loadFixture(t, "create_payout_request.json")
	status, created := s.do(t, http.MethodPost, "/v2/payouts", simKey, req.Body)
	if status != http.StatusOK {
		t.Fatalf("documented create: HTTP %d %s", status, created)
	}
	obj := loadFixture(t, "payout_object.json")
	if bad := covers(shape(t, created), shape(t, obj.Body)); len(bad) > 0 {
		t.Errorf("create answer lacks the documented Payout object (%s): %v\n%s", obj.URL, bad, created)
	}
	var c payoutObject
	json.Unmarshal(created, &c)
	if c.Status != StatusAccepted || !strings.HasPrefix(c.ID, "disb-") || len(c.ID) != len("disb-571f3644d2b4edf0745e9703") || string(c.Amount) != "10000" {
		t.Errorf("create answer %s", created)
	}

	status, list := s.do(t, http.MethodGet, "/v2/payouts?reference_id=test-transaction-010121", simKey, nil)
	doc := loadFixture(t, "get_payouts_by_reference_response.json")
	if bad := covers(shape(t, list), shape(t, doc.Body)); status != http.StatusOK || len(bad) > 0 {
		t.Errorf("get by reference_id (%s): HTTP %d %v\n%s", doc.URL, status, bad, list)
	}
	if status, none := s.do(t, http.MethodGet, "/v2/payouts?reference_id=nothing", simKey, nil); status != http.StatusOK || string(bytes.TrimSpace(none)) != "[]" {
		t.Errorf("get by an unknown reference_id: HTTP %d %s; documented: an empty array", status, none)
	}

	status, chans := s.do(t, http.MethodGet, "/payouts_channels", simKey, nil)
	cdoc := loadFixture(t, "payouts_channels_response.json")
	if bad := covers(shape(t, chans), shape(t, cdoc.Body)); status != http.StatusOK || len(bad) > 0 {
		t.Errorf("channels (%s): HTTP %d %v", cdoc.URL, status, bad)
	}
	var got []channel
	json.Unmarshal(chans, &got)
	codes := make([]string, len(got))
	for i, c := range got {
		codes[i] = c.ChannelCode
	}
	if !slices.IsSorted(codes) || !slices.Contains(codes, "ID_BSI") || !slices.Contains(codes, "PH_AUB") {
		t.Errorf("channels not sorted by channel_code or missing the documented ones: %v", codes)
	}
	_, idr := s.do(t, http.MethodGet, "/payouts_channels?currency=IDR&channel_category=EWALLET", simKey, nil)
	json.Unmarshal(idr, &got)
	for _, c := range got {
		if c.Currency != "IDR" || c.ChannelCategory != "EWALLET" {
			t.Errorf("filter ignored: %+v", c)
		}
	}

	status, unauth := s.do(t, http.MethodGet, "/payouts_channels", "xnd_wrong", nil)
	edoc := loadFixture(t, "error_401_invalid_api_key.json")
	if bad := covers(shape(t, unauth), shape(t, edoc.Body)); status != http.StatusUnauthorized || len(bad) > 0 {
		t.Errorf("wrong key (%s): HTTP %d %v %s", edoc.URL, status, bad, unauth)
	}

	// The webhook of a succeeded payout.
	s.mu.Lock()
	s.now = s.now.Add(time.Hour)
	s.mu.Unlock()
	if n, err := s.sim.Flush(context.Background()); n != 1 || err != nil {
		t.Fatalf("Flush: %d, %v", n, err)
	}
	wdoc := loadFixture(t, "webhook_payout_succeeded.json")
	if bad := covers(shape(t, s.hooks[0]), shape(t, wdoc.Body)); len(bad) > 0 {
		t.Errorf("webhook (%s): %v\n%s", wdoc.URL, bad, s.hooks[0])
	}
	if r, err := DecodeWebhook(s.hooks[0]); err != nil || r.Status != vendors.PayoutSuccess || r.Reference != "test-transaction-010121" {
		t.Errorf("simulator webhook decoded: %+v, %v", r, err)
	}
}

// The simulator refuses what the documents refuse.
func TestContractSimulatorValidation(t *testing.T) {
	s := newSimulator(t)
	base := loadFixture(t, "create_payout_request.json").Body
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		json.Unmarshal(base, &m)
		f(m)
		b, _ := json.Marshal(m)
		return b
	}
	tests := []struct {
		name   string
		body   []byte
		status int
		code   string
	}{
		{"not JSON", []byte(`{"reference_id":`), 400, CodeInvalidJSONFormat},
		{"unknown field", edit(func(m map[string]any) { m["bank_code"] = "BCA" }), 400, CodeInvalidJSONFormat},
		{"no reference_id", edit(func(m map[string]any) { delete(m, "reference_id") }), 400, CodeAPIValidation},
		{"no channel_code", edit(func(m map[string]any) { delete(m, "channel_code") }), 400, CodeAPIValidation},
		{"no account_number", edit(func(m map[string]any) { m["channel_properties"] = map[string]any{} }), 400, CodeAPIValidation},
		{"no currency", edit(func(m map[string]any) { delete(m, "currency") }), 400, CodeAPIValidation},
		{"no amount", edit(func(m map[string]any) { delete(m, "amount") }), 400, CodeAPIValidation},
		{"decimal IDR amount", edit(func(m map[string]any) { m["amount"] = 10000.5 }), 400, CodeAPIValidation},
		{"amount as a string", edit(func(m map[string]any) { m["amount"] = "10000" }), 400, CodeAPIValidation},
		{"negative amount", edit(func(m map[string]any) { m["amount"] = -10000 }), 400, CodeAPIValidation},
		{"unknown channel", edit(func(m map[string]any) { m["channel_code"] = "ID_NOPE" }), 400, CodeChannelNotSupported},
		{"currency of another channel", edit(func(m map[string]any) { m["currency"] = "PHP" }), 400, CodeChannelNotSupported},
		{"letters in account", edit(func(m map[string]any) {
			m["channel_properties"] = map[string]any{"account_number": "12ab45", "account_holder_name": "Testing"}
		}), 400, CodeRecipientAccountNumber},
		{"below minimum", edit(func(m map[string]any) { m["amount"] = 9999 }), 400, CodeRecipientAmount},
		{"above maximum", edit(func(m map[string]any) { m["amount"] = 250000001 }), 400, CodeMaximumTransferLimit},
	}
	for _, tt := range tests {
		status, raw := s.do(t, http.MethodPost, "/v2/payouts", simKey, tt.body)
		var e errorBody
		json.Unmarshal(raw, &e)
		if status != tt.status || e.ErrorCode != tt.code || e.text() == "" {
			t.Errorf("%s: HTTP %d %s; want %d %s", tt.name, status, raw, tt.status, tt.code)
		}
	}
	if s.sim.Payouts("test-transaction-010121") != 0 {
		t.Error("a refused create left a payout")
	}
	// Idempotency-key: required, at most 100 characters; same key, other
	// body: DUPLICATE_ERROR; same key, same body: the same payout.
	for _, key := range []string{"", strings.Repeat("k", 101)} {
		req, _ := http.NewRequest(http.MethodPost, s.url+"/v2/payouts", bytes.NewReader(base))
		req.SetBasicAuth(simKey, "")
		if key != "" {
			req.Header.Set("Idempotency-key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("Idempotency-key %q: HTTP %d", key, resp.StatusCode)
		}
	}
	_, first := s.do(t, http.MethodPost, "/v2/payouts", simKey, base)
	_, again := s.do(t, http.MethodPost, "/v2/payouts", simKey, base)
	if !bytes.Equal(first, again) {
		t.Errorf("same key and body answered another object:\n%s\n%s", first, again)
	}
	status, dup := s.do(t, http.MethodPost, "/v2/payouts", simKey, edit(func(m map[string]any) { m["amount"] = 20000 }))
	var e errorBody
	json.Unmarshal(dup, &e)
	if status != http.StatusConflict || e.ErrorCode != CodeDuplicate {
		t.Errorf("same key, other body: HTTP %d %s", status, dup)
	}
	if n := s.sim.Payouts("test-transaction-010121"); n != 1 {
		t.Errorf("%d payouts", n)
	}
	// Password set, or no auth: 401.
	req, _ := http.NewRequest(http.MethodGet, s.url+"/payouts_channels", nil)
	req.SetBasicAuth(simKey, "password")
	if resp, _ := http.DefaultClient.Do(req); resp.StatusCode != 401 {
		t.Errorf("non-empty password: HTTP %d", resp.StatusCode)
	}
	if resp, _ := http.Get(s.url + "/payouts_channels"); resp.StatusCode != 401 {
		t.Errorf("no auth: HTTP %d", resp.StatusCode)
	}
	// Both cancel paths exist; a payout past ACCEPTED cannot be cancelled.
	var c payoutObject
	json.Unmarshal(first, &c)
	s.mu.Lock()
	s.now = s.now.Add(time.Second)
	s.mu.Unlock()
	for _, p := range []string{"/cancels", "/cancel"} {
		status, raw := s.do(t, http.MethodPost, "/v2/payouts/"+c.ID+p, simKey, nil)
		json.Unmarshal(raw, &e)
		if status != 400 || e.ErrorCode != CodeCancellationNotAllowed {
			t.Errorf("cancel%s of a REQUESTED payout: HTTP %d %s", p, status, raw)
		}
	}
	if status, raw := s.do(t, http.MethodGet, "/v2/payouts/disb-000000000000000000000000", simKey, nil); status != 404 || !strings.Contains(string(raw), CodeDataNotFound) {
		t.Errorf("unknown id: HTTP %d %s", status, raw)
	}
}
