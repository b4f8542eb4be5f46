package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/payoutd/payoutd/models"
)

// decodeTarget resembles the request shapes the API decodes.
type decodeTarget struct {
	ClientWalletID string      `json:"client_wallet_id"`
	Amount         string      `json:"amount"`
	Memo           *string     `json:"memo"`
	Price          json.Number `json:"price"`
	ExpiresIn      *int64      `json:"expiresIn"`
	Flags          []string    `json:"flags"`
	Nested         *struct {
		Inner string `json:"inner"`
	} `json:"nested"`
	Enabled bool `json:"enabled"`
}

func TestDecodeJSONErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		// wantSubstr must appear in the error message.
		wantSubstr string
	}{
		{"nil body", "", "empty"},
		{"whitespace only", " \n\t\r ", "empty"},
		{"not JSON", "amount=100000", "not valid JSON"},
		{"truncated", `{"amount":"100`, "not valid JSON"},
		{"unclosed object", `{"amount":"100000"`, "not valid JSON"},
		{"array", `[{"amount":"100000"}]`, "JSON object"},
		{"empty array", `[]`, "JSON object"},
		{"string", `"hello"`, "JSON object"},
		{"number", `42`, "JSON object"},
		{"boolean", `true`, "JSON object"},
		{"two objects", `{"amount":"1"}{"amount":"2"}`, "single JSON object"},
		{"two objects with newline", "{}\n{}", "single JSON object"},
		{"trailing garbage", `{"amount":"1"} xyz`, "single JSON object"},
		{"trailing comma", `{"amount":"1"},`, "single JSON object"},
		{"trailing bracket", `{"amount":"1"}]`, "single JSON object"},
		{"unknown field", `{"amount":"1","amout":"2"}`, `unknown field "amout"`},
		{"unknown field differing only by case is not silently unknown", `{"bogus_field":1}`, `"bogus_field"`},
		{"amount as number", `{"amount":100000}`, `field "amount" must be a string`},
		{"wallet id as number", `{"client_wallet_id":5}`, `field "client_wallet_id" must be a string`},
		{"memo as object", `{"memo":{}}`, `field "memo" must be a string`},
		{"expiresIn as string", `{"expiresIn":"900"}`, `field "expiresIn" must be an integer`},
		{"expiresIn fractional", `{"expiresIn":1.5}`, `field "expiresIn" must be an integer`},
		{"expiresIn too large", `{"expiresIn":99999999999999999999}`, `field "expiresIn" must be an integer`},
		{"flags as string", `{"flags":"a"}`, `field "flags" must be an array`},
		{"enabled as string", `{"enabled":"yes"}`, `field "enabled" must be a boolean`},
		{"nested as array", `{"nested":[]}`, `"nested" must be an object`},
		{"invalid UTF-8 outside string", "{\xff}", "not valid JSON"},
		{"null", `null`, "JSON object"},
		{"key repeated", `{"amount":"1","amount":"2"}`, `field "amount" is given more than once`},
		{"key differing only by case", `{"AMOUNT":"1"}`, `unknown field "AMOUNT"`},
		{"NUL inside a string", `{"memo":"a\u0000b"}`, `field "memo" must not contain the NUL character`},
		{"NUL alone", `{"amount":"\u0000"}`, `field "amount" must not contain the NUL character`},
		{"NUL after other fields", `{"amount":"1","client_wallet_id":"w\u0000"}`, `field "client_wallet_id" must not contain`},
		{"NUL in an array element", `{"flags":["ok","x\u0000"]}`, `field "flags" must not contain`},
		{"NUL in a nested string", `{"nested":{"inner":"\u0000"}}`, `field "nested" must not contain`},
		{"NUL in a nested key", `{"nested":{"in\u0000ner":"x"}}`, `field "nested" must not contain`},
		{"NUL where a number belongs", `{"price":"15000\u0000"}`, `field "price" must not contain`},
	}
	for _, tt := range tests {
		var dst decodeTarget
		err := decodeJSON([]byte(tt.body), &dst)
		if err == nil {
			t.Errorf("%s: decodeJSON(%q) = nil, want an error", tt.name, tt.body)
			continue
		}
		if models.ErrorCode(err) != models.EINVALID {
			t.Errorf("%s: decodeJSON(%q) error %T %v is not an EINVALID error", tt.name, tt.body, err, err)
		}
		var v *models.Error
		if !errors.As(err, &v) || strings.TrimSpace(v.Message) == "" {
			t.Errorf("%s: decodeJSON(%q): want an EINVALID error with a message, got %v", tt.name, tt.body, err)
		}
		if !strings.Contains(err.Error(), tt.wantSubstr) {
			t.Errorf("%s: decodeJSON(%q) error %q, want it to contain %q", tt.name, tt.body, err, tt.wantSubstr)
		}
		if strings.Contains(err.Error(), "json:") || strings.Contains(err.Error(), "decodeTarget") || strings.Contains(err.Error(), "api.") {
			t.Errorf("%s: decodeJSON(%q) error %q leaks Go internals", tt.name, tt.body, err)
		}
	}
}

func TestDecodeJSONValid(t *testing.T) {
	t.Parallel()
	memo := "invoice 7"
	tests := []struct {
		name string
		body string
		want decodeTarget
	}{
		{"empty object", `{}`, decodeTarget{}},
		{"surrounding whitespace", " \n {\"amount\":\"1\"} \n ", decodeTarget{Amount: "1"}},
		{"all fields", `{"client_wallet_id":"w","amount":"100000.50","memo":"invoice 7","price":15000,"expiresIn":900}`,
			decodeTarget{ClientWalletID: "w", Amount: "100000.50", Memo: &memo, Price: "15000", ExpiresIn: ptrInt64(900)}},
		{"price keeps its digits", `{"price":15000.0000000000000001}`, decodeTarget{Price: "15000.0000000000000001"}},
		{"null memo", `{"memo":null}`, decodeTarget{}},
		{"unicode escapes", `{"memo":"caf\u00e9"}`, decodeTarget{Memo: ptrString("café")}},
		// An escaped backslash before "u0000" is text, not a NUL.
		{"escaped backslash then u0000", `{"memo":"a\\u0000b"}`, decodeTarget{Memo: ptrString(`a\u0000b`)}},
		{"other control characters", `{"memo":"tab\tand\u0001"}`, decodeTarget{Memo: ptrString("tab\tand\x01")}},
	}
	for _, tt := range tests {
		var got decodeTarget
		if err := decodeJSON([]byte(tt.body), &got); err != nil {
			t.Errorf("%s: decodeJSON(%q) error %v", tt.name, tt.body, err)
			continue
		}
		if got.ClientWalletID != tt.want.ClientWalletID || got.Amount != tt.want.Amount || got.Price != tt.want.Price ||
			!eqPtr(got.Memo, tt.want.Memo) || !eqPtr(got.ExpiresIn, tt.want.ExpiresIn) {
			t.Errorf("%s: decodeJSON(%q) = %+v, want %+v", tt.name, tt.body, got, tt.want)
		}
	}
}

func ptrInt64(v int64) *int64    { return &v }
func ptrString(v string) *string { return &v }

func eqPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{
		"", " ", "{}", "[]", "null", "{}{}", `{"amount":"1"} x`, `{"x":1}`,
		`{"client_wallet_id":"w","amount":"100000","memo":"m","price":15000,"expiresIn":900}`,
		`{"price":"abc"}`, `{"price":true}`, `{"expiresIn":1e400}`, `{"amount":1}`, `{"memo":[1,{"a":null}]}`,
		"{\"memo\":\"\xff\"}", `{"amount":"1","amount":2}`, `{"AMOUNT":"1"}`,
		`{"memo":"a\u0000"}`, `{"memo":"a\\u0000"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var dst struct {
			ClientWalletID string      `json:"client_wallet_id"`
			Amount         string      `json:"amount"`
			Memo           *string     `json:"memo"`
			Price          json.Number `json:"price"`
			ExpiresIn      *int64      `json:"expiresIn"`
		}
		err := decodeJSON(body, &dst)
		if err == nil {
			// Whatever is accepted can be stored: no NUL reaches PostgreSQL.
			for _, s := range []string{dst.ClientWalletID, dst.Amount, string(dst.Price)} {
				if strings.ContainsRune(s, 0) {
					t.Fatalf("decodeJSON(%q) accepted a NUL: %q", body, s)
				}
			}
			if dst.Memo != nil && strings.ContainsRune(*dst.Memo, 0) {
				t.Fatalf("decodeJSON(%q) accepted a NUL in memo", body)
			}
			return
		}
		var v *models.Error
		if !errors.As(err, &v) || v.Code != models.EINVALID {
			t.Fatalf("decodeJSON(%q) error %T %v is not an EINVALID error", body, err, err)
		}
		if strings.TrimSpace(v.Message) == "" {
			t.Fatalf("decodeJSON(%q) EINVALID error with an empty message", body)
		}
	})
}

// A NUL character in any string of a body is a 400 naming the field, on
// every route that decodes one; before this PostgreSQL refused the text
// (SQLSTATE 22021) and the client got a 500. Nothing is stored, and the
// Idempotency-Key of a refused create stays free.
func TestBodiesWithNULRefused(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{})
	pay := func(body string) response {
		return e.do(request{method: http.MethodPost, path: "/api/v1/payments", body: []byte(body), apiKey: e.m.apiKey, timestamp: true})
	}
	for _, tt := range []struct{ body, field string }{
		{`{"price":15000,"playerId":"a\u0000b"}`, "playerId"},
		{`{"price":15000,"playerId":"\u0000"}`, "playerId"},
		{`{"price":15000,"playerId":"p","flow":"embed\u0000"}`, "flow"},
	} {
		r := pay(tt.body)
		r.expect(t, http.StatusBadRequest, `field "`+tt.field+`" must not contain the NUL character (\u0000)`)
	}
	var payments int64
	e.db.Model(&models.Payment{}).Count(&payments)
	if payments != 0 {
		t.Fatalf("%d payments stored from refused bodies", payments)
	}

	before := e.snapshot()
	withMemo := e.body("100000", "1234567890")
	withMemo.memo = "invoice\x007"
	e.create("nul-memo", withMemo).expect(t, http.StatusBadRequest, `field "memo" must not contain the NUL character (\u0000)`)
	withRef := e.body("100000", "1234567890")
	withRef.referenceID = "inv-\x00"
	e.create("nul-memo", withRef).expect(t, http.StatusBadRequest, `field "reference_id" must not contain the NUL character (\u0000)`)
	withAccount := e.body("100000", "12345\x0067890")
	e.quote(withAccount).expect(t, http.StatusBadRequest, `field "account_no" must not contain the NUL character (\u0000)`)
	e.unchanged(before)
	withMemo.memo = "invoice 7"
	e.create("nul-memo", withMemo).created(t, models.StatusSuccess)

	// The same text without the NUL is a payment like any other.
	pay(`{"price":15000,"playerId":"a b"}`).expect(t, http.StatusCreated, "")
}

// A NUL can reach a handler only through the URL path (%00); every path
// parameter is a UUID or a name looked up in memory, never sent to the
// database. (net/http itself answers 400 to a NUL in a header, such as
// X-Forwarded-For or Idempotency-Key, before any handler runs.)
func TestPathParamsWithNULRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOptions{env: models.Staging})
	m := b.newCheckoutMerchant("Toko")
	for _, tt := range []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/api/v3/payments/%00", http.StatusBadRequest},
		{http.MethodGet, "/api/v3/disbursements/6f1c2a9e-8d4b-4c3e-9a7f-1b2c3d4e5f6%00", http.StatusBadRequest},
		{http.MethodGet, "/api/v3/wallets/%00/balance", http.StatusBadRequest},
		{http.MethodGet, "/checkout/%00/status", http.StatusBadRequest},
		{http.MethodPost, "/checkout/%00/simulate", http.StatusBadRequest},
		{http.MethodPost, "/acquirer-callbacks/sandboxpay%00", http.StatusNotFound},
		{http.MethodPost, "/vendor-callbacks/simbank%00", http.StatusNotFound},
	} {
		r := b.do(request{method: tt.method, path: tt.path, apiKey: m.apiKey, timestamp: true, body: []byte(`{}`)})
		if r.status != tt.status {
			t.Errorf("%s %s: %d %s, want %d", tt.method, tt.path, r.status, r.body, tt.status)
		}
	}
}
