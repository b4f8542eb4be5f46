package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/signature"
	"github.com/payoutd/payoutd/vendors/sandbox"
)

// Messages of the 400 answers, as the client reads them.
const (
	amountSyntaxMsg = `amount must be a decimal string such as "100000" or "100000.50"`
	accountNoMsg    = "account_no must be digits only (for e-wallets the phone number in local format, e.g. 081234567890)"
	walletUUIDMsg   = "client_wallet_id must be a UUID such as 6f1c2a9e-8d4b-4c3e-9a7f-1b2c3d4e5f60"
	transferTypeMsg = "transfer_type must be BIFAST or RTOL"
	mismatchMsg     = "Idempotency-Key was already used with different parameters"
	unsupportedMsg  = "bank_code is not supported by this wallet's vendor"
	gatewayDownMsg  = "payout gateway is temporarily unavailable; retry later"
	suspendedMsg    = "withdrawals are suspended for this client"
)

// Every malformed create is a 400 that names what is wrong, stores nothing,
// locks nothing and leaves its Idempotency-Key free for a valid create; the
// limits themselves (64, 255, 64) are accepted.
func TestDisbursementCreateValidation(t *testing.T) {
	t.Parallel()
	forEachQueue(t, payoutSetup{}, func(t *testing.T, e *payoutEnv) {
		const key = "key-refused-then-used"
		cases := []struct {
			name string
			key  string
			body []byte
			msg  string
		}{
			{"Idempotency-Key missing", "", e.jsonBody(nil), "missing Idempotency-Key header"},
			{"Idempotency-Key blank", "   ", e.jsonBody(nil), "missing Idempotency-Key header"},
			{"Idempotency-Key of 65 characters", strings.Repeat("k", 65), e.jsonBody(nil), "Idempotency-Key must be at most 64 characters"},
			{"client_wallet_id missing", key, e.jsonBody(nil, "client_wallet_id"), "client_wallet_id is required"},
			{"amount missing", key, e.jsonBody(nil, "amount"), "amount is required"},
			{"bank_code missing", key, e.jsonBody(nil, "bank_code"), "bank_code is required"},
			{"account_no missing", key, e.jsonBody(nil, "account_no"), "account_no is required"},
			{"transfer_type missing", key, e.jsonBody(nil, "transfer_type"), "transfer_type is required"},
			{"account_no blank", key, e.jsonBody(map[string]any{"account_no": "   "}), "account_no is required"},
			{"client_wallet_id not a UUID", key, e.jsonBody(map[string]any{"client_wallet_id": "main-wallet"}), walletUUIDMsg},
			{"client_wallet_id UUID without dashes", key, e.jsonBody(map[string]any{"client_wallet_id": strings.ReplaceAll(e.wallet.String(), "-", "")}), walletUUIDMsg},
			{"amount 0", key, e.jsonBody(map[string]any{"amount": "0"}), "amount must be greater than zero"},
			{"amount 0.0000", key, e.jsonBody(map[string]any{"amount": "0.0000"}), "amount must be greater than zero"},
			{"amount -1", key, e.jsonBody(map[string]any{"amount": "-1"}), amountSyntaxMsg},
			{"amount 1e5", key, e.jsonBody(map[string]any{"amount": "1e5"}), amountSyntaxMsg},
			{"amount with 5 fraction digits", key, e.jsonBody(map[string]any{"amount": "1.00001"}), "amount must have at most 4 fraction digits"},
			{"amount abc", key, e.jsonBody(map[string]any{"amount": "abc"}), amountSyntaxMsg},
			{"amount with a thousands separator", key, e.jsonBody(map[string]any{"amount": "100,000"}), amountSyntaxMsg},
			{"amount as a JSON number", key, e.jsonBody(map[string]any{"amount": 100000}), `field "amount" must be a string`},
			{"amount above 10^14", key, e.jsonBody(map[string]any{"amount": "100000000000000.0001"}), "amount must not exceed 100000000000000"},
			{"transfer_type lowercase", key, e.jsonBody(map[string]any{"transfer_type": "bifast"}), transferTypeMsg},
			{"transfer_type SKN", key, e.jsonBody(map[string]any{"transfer_type": "SKN"}), transferTypeMsg},
			{"account_no with letters", key, e.jsonBody(map[string]any{"account_no": "12345abc90"}), accountNoMsg},
			{"account_no with dashes", key, e.jsonBody(map[string]any{"account_no": "1234-567-890"}), accountNoMsg},
			{"account_no with a country prefix", key, e.jsonBody(map[string]any{"account_no": "+6281234567890"}), accountNoMsg},
			{"memo of 256 characters", key, e.jsonBody(map[string]any{"memo": strings.Repeat("m", 256)}), "memo must be at most 255 characters"},
			{"reference_id of 65 characters", key, e.jsonBody(map[string]any{"reference_id": strings.Repeat("r", 65)}), "reference_id must be at most 64 characters"},
			{"unknown field", key, e.jsonBody(map[string]any{"fee": "2500"}), `unknown field "fee"`},
			{"field name in another case", key, e.jsonBody(map[string]any{"AMOUNT": "100000"}, "amount"), `unknown field "AMOUNT"`},
			{"body not JSON", key, []byte("amount=100000"), "request body is not valid JSON (at byte 1)"},
			{"body a JSON array", key, []byte(`[]`), "request body must be a JSON object"},
			{"body empty", key, []byte(""), "request body is empty; send a JSON object"},
		}
		before := e.snapshot()
		t.Run("refused", func(t *testing.T) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					e.sub(t).createRaw(tc.key, tc.body).expect(t, http.StatusBadRequest, tc.msg)
				})
			}
		})
		if t.Failed() {
			return
		}
		e.unchanged(before)

		// The key of the refused requests was not consumed.
		d := e.create(key, e.body("100000", "1234567890")).created(t, models.StatusSuccess)
		if d.IdempotencyKey != key {
			t.Fatalf("idempotency_key %q", d.IdempotencyKey)
		}
		// The limits are inclusive; memo counts characters, not bytes.
		e.createRaw(strings.Repeat("k", 64), e.jsonBody(nil)).created(t, models.StatusSuccess)
		memo := strings.Repeat("é", 255)
		r := e.createRaw("memo-255", e.jsonBody(map[string]any{"memo": memo}))
		if got := r.created(t, models.StatusSuccess); got.Memo == nil || *got.Memo != memo {
			t.Fatalf("memo not echoed: %s", r.body)
		}
		ref := strings.Repeat("r", 64)
		r = e.createRaw("ref-64", e.jsonBody(map[string]any{"reference_id": ref}))
		if got := r.created(t, models.StatusSuccess); got.ReferenceID == nil || *got.ReferenceID != ref {
			t.Fatalf("reference_id not echoed: %s", r.body)
		}
		e.wantWallet(e.wallet, 600_000, 0)
		e.reconciled()
	})
}

// The error table of create and of quote (spec "Errors"; a quote applies
// what create applies): every refusal answers its status and exact
// message, and leaves the wallets, the stored disbursements and the vendor
// untouched. The key used by every refused create still works afterwards.
// The minimums per transfer type and client, and which check answers
// first, are payouts.TestFeesAndMinimumsPerTransferType and
// payouts.TestChecksRunInTheSpecsOrder; here one minimum row keeps the
// 422 and its message.
func TestDisbursementCreateAndQuoteRefusals(t *testing.T) {
	t.Parallel()
	forEachQueue(t, payoutSetup{}, func(t *testing.T, e *payoutEnv) {
		other := e.newMerchant()
		theirs := e.newWallet(other.id, "Theirs", sandbox.SimBank, false)
		e.fund(theirs, "1000000")
		provisioning := e.newWallet(e.m.id, "Not yet", sandbox.SimBank, true)
		const key = "key-refused"

		withWallet := func(p payoutBody, w uuid.UUID) payoutBody { p.wallet = w.String(); return p }
		withBank := func(p payoutBody, bank string) payoutBody { p.bank = bank; return p }
		rows := []struct {
			name   string
			body   payoutBody
			status int
			msg    string
		}{
			{"gross above the balance", e.body("1000001", "1234567890"), 402, "Insufficient balance"},
			{"the largest amount, well-formed", e.body("100000000000000", "1234567890"), 402, "Insufficient balance"},
			{"wallet of another client", withWallet(e.body("100000", "1234567890"), theirs), 404, "wallet not found"},
			{"wallet still provisioning", withWallet(e.body("100000", "1234567890"), provisioning), 404, "wallet not found"},
			{"wallet unknown", withWallet(e.body("100000", "1234567890"), uuid.New()), 404, "wallet not found"},
			{"e-wallet code on the simbank wallet", withBank(e.body("100000", "081234567890"), "dana"), 422, unsupportedMsg},
			{"unknown bank code", withBank(e.body("100000", "1234567890"), "xyz"), 422, unsupportedMsg},
			{"bank simwallet does not serve", e.ewalletBody("100000", "cimb", "1234567890"), 422, unsupportedMsg},
			{"RTOL on the simwallet wallet", e.ewalletBody("100000", "bca", "1234567890").rtol(), 422,
				"transfer_type RTOL is not supported for bank_code bca by this wallet's vendor"},
			{"account inactive (1000000001)", e.body("100000", sandbox.AccountInactive), 422, "bank account is inactive"},
			{"account not resolved (1000000002)", e.body("100000", sandbox.AccountUnresolved), 422, "bank account verification failed"},
			{"e-wallet number with country prefix", e.ewalletBody("100000", "ovo", "6281234567890"), 422, "bank account verification failed"},
			{"BIFAST below minimum", e.body("12499", "1234567890"), 422, "withdrawal amount is below minimum: 12500"},
			{"BIFAST a fraction below minimum: a fraction first", e.body("12499.9999", "1234567890"), 400, "amount must be a whole number of rupiah"},
			{"inquiry gateway down (1000000006)", e.body("100000", sandbox.AccountInquiryDown), 503, gatewayDownMsg},
		}
		valid := e.body("100000", "1234567890").json()
		otherBytes := e.body("100001", "1234567890").json()
		invalidSignature := errInvalidSignature.Error()
		auth := []struct {
			name   string
			req    request
			status int
			msg    string
		}{
			{"x-timestamp without x-signature", request{body: valid, apiKey: e.m.apiKey, timestamp: true}, 401, "missing x-signature header"},
			{"no authentication header but the key", request{body: valid, apiKey: e.m.apiKey}, 401, "missing x-signature header"},
			{"signature with a wrong secret", request{body: valid, apiKey: e.m.apiKey, sign: strings.Repeat("0", 64)}, 401, invalidSignature},
			{"signature over other bytes", request{body: valid, apiKey: e.m.apiKey,
				headers: map[string]string{"x-signature": signature.Sign(e.m.signingSecret, otherBytes, e.now())}}, 401, invalidSignature},
			{"another client's signature", request{body: valid, apiKey: e.m.apiKey, sign: other.signingSecret}, 401, invalidSignature},
			{"signature t outside the window", request{body: valid, apiKey: e.m.apiKey,
				headers: map[string]string{"x-signature": signature.Sign(e.m.signingSecret, valid, e.now().Add(-6*time.Minute))}}, 401,
				"Request timestamp outside valid window (5 minutes)"},
			{"x-api-key missing", request{body: valid, sign: e.m.signingSecret}, 401, "missing x-api-key header"},
		}
		before := e.snapshot()
		for _, endpoint := range []string{"create", "quote"} {
			t.Run(endpoint, func(t *testing.T) {
				for _, row := range rows {
					t.Run(row.name, func(t *testing.T) {
						t.Parallel()
						e := e.sub(t)
						var r response
						if endpoint == "create" {
							r = e.create(key, row.body)
						} else {
							r = e.quote(row.body)
						}
						r.expect(t, row.status, row.msg)
					})
				}
				for _, a := range auth {
					t.Run(a.name, func(t *testing.T) {
						t.Parallel()
						req := a.req
						req.method, req.path = http.MethodPost, "/api/v3/disbursements/quote"
						if endpoint == "create" {
							req.path = "/api/v3/disbursements"
							req.headers = map[string]string{"Idempotency-Key": key}
							for k, v := range a.req.headers {
								req.headers[k] = v
							}
						}
						e.sub(t).do(req).expect(t, a.status, a.msg)
					})
				}
			})
		}
		if t.Failed() {
			return
		}
		e.unchanged(before)
		e.create(key, e.body("100000", "1234567890")).created(t, models.StatusSuccess)
		e.wantWallet(e.wallet, 900_000, 0)
	})
}

// Fees and minimums come from the client's own settings, set with payoutd
// admin client update (--bifast-fee, --rtol-fee, --bifast-min-net,
// --rtol-min-net) and read by the API for the calling client: the quote,
// the create, the refusal's minimum and the money moved all follow them.
// The pricing rule itself (fee, net, minimum, boundaries, other clients
// unaffected) is payouts.TestFeesAndMinimumsPerTransferType.
func TestDisbursementFeesAndMinimumsFollowClientSettings(t *testing.T) {
	t.Parallel()
	forEachQueue(t, payoutSetup{}, func(t *testing.T, e *payoutEnv) {
		e.update(map[string]string{"bifast-fee": "1000", "rtol-fee": "4000", "bifast-min-net": "20000", "rtol-min-net": "50000"})

		for _, tc := range []struct {
			body              payoutBody
			belowMin, minimum string
			fee, net          string
		}{
			{e.body("100000", "1234567890"), "20999", "21000", "1000", "99000"},
			{e.body("100000", "1234567890").rtol(), "53999", "54000", "4000", "96000"},
		} {
			below := tc.body
			below.amount = tc.belowMin
			e.quote(below).expect(t, http.StatusUnprocessableEntity, "withdrawal amount is below minimum: "+tc.minimum)
			e.create("below-"+tc.body.transferType, below).expect(t, http.StatusUnprocessableEntity, "withdrawal amount is below minimum: "+tc.minimum)
			atMin := tc.body
			atMin.amount = tc.minimum
			e.quote(atMin).expect(t, http.StatusOK, "")

			q := e.quote(tc.body)
			q.expect(t, http.StatusOK, "")
			var quote quoteResponse
			q.decode(t, &quote)
			if quote.PlatformFee != tc.fee || quote.NetAmount != tc.net {
				t.Fatalf("%s quote %s, want fee %s net %s", tc.body.transferType, q.body, tc.fee, tc.net)
			}
			d := e.create("fee-"+tc.body.transferType, tc.body).created(t, models.StatusSuccess)
			if d.PlatformFee != tc.fee || d.NetAmount != tc.net {
				t.Fatalf("%s created %+v", tc.body.transferType, d)
			}
		}
		// The gross leaves the wallet; the fee ledger and the vendor clearing
		// reconcile against the stored fee and net.
		e.wantWallet(e.wallet, 800_000, 0)
		e.reconciled()
	})
}

// A payout the vendor rejects at submit (account 1000000003, a net above
// the network's or the bank's cap) answers 503 Vendor payout request
// failed, is stored FAILED with its reason, and releases its lock with the
// balance untouched; a net equal to the cap is paid.
func TestDisbursementVendorRejections(t *testing.T) {
	t.Parallel()
	forEachQueue(t, payoutSetup{funds: "400000000"}, func(t *testing.T, e *payoutEnv) {
		balance := int64(400_000_000)
		cases := []struct {
			name   string
			body   payoutBody
			paid   bool
			reason string
		}{
			{"account closed (1000000003)", e.body("100000", sandbox.AccountSubmitRejected), false, "recipient account closed"},
			{"BIFAST net one above the cap", e.body("250002501", "1234567890"), false, "amount 250000001 above the BIFAST cap 250000000"},
			{"BIFAST net at the cap", e.body("250002500", "1234567890"), true, ""},
			{"RTOL net one above the default bank cap", e.body("25006501", "1234567890").rtol(), false, "amount 25000001 above the RTOL cap 25000000"},
			{"RTOL net at the default bank cap", e.body("25006500", "1234567890").rtol(), true, ""},
			{"RTOL to mandiri above its cap", payoutBody{wallet: e.wallet.String(), amount: "50006501", bank: "mandiri", account: "1234567890", transferType: "RTOL"}, false, "amount 50000001 above the RTOL cap 50000000"},
			{"RTOL to mandiri at its cap", payoutBody{wallet: e.wallet.String(), amount: "50006500", bank: "mandiri", account: "1234567890", transferType: "RTOL"}, true, ""},
		}
		for i, tc := range cases {
			key := "reject-" + rp(int64(i))
			r := e.create(key, tc.body)
			if tc.paid {
				d := r.created(t, models.StatusSuccess)
				gross, err := models.ParsePositiveAmount(tc.body.amount)
				if err != nil {
					t.Fatal(err)
				}
				balance -= int64(gross / models.Rupiah(1))
				e.wantWallet(e.wallet, balance, 0)
				if e.submitCalls(d.ID) != 1 {
					t.Fatalf("%s: vendor asked %d times", tc.name, e.submitCalls(d.ID))
				}
				continue
			}
			r.expect(t, http.StatusServiceUnavailable, "Vendor payout request failed")
			if r.header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("%s: a fresh create carries Idempotent-Replayed", tc.name)
			}
			e.wantWallet(e.wallet, balance, 0)
			stored := e.byKey(key)
			if stored.Status != models.StatusFailed || stored.FailedReason == nil || *stored.FailedReason != tc.reason || stored.CompletedAt == nil {
				t.Fatalf("%s: stored %s reason %v", tc.name, stored.Status, stored.FailedReason)
			}
			// The client reads the same through GET and a replay.
			rec := e.get(stored.ID.String())
			rec.expect(t, http.StatusOK, "")
			if got := rec.disbursement(t); got.Status != "FAILED" || got.FailedReason == nil || *got.FailedReason != tc.reason || got.CompletedAt == nil {
				t.Fatalf("%s: record %s", tc.name, rec.body)
			}
			e.create(key, tc.body).replayed(t, http.StatusServiceUnavailable, "Vendor payout request failed")
		}
		e.reconciled()
	})
}

// Quote prices and verifies without a side effect: the spec's fields with
// the sandbox's holder name, nothing stored, nothing locked, nothing sent
// to the vendor, also for an account whose submit the vendor would reject.
func TestDisbursementQuote(t *testing.T) {
	t.Parallel()
	forEachQueue(t, payoutSetup{}, func(t *testing.T, e *payoutEnv) {
		before := e.snapshot()
		cases := []struct {
			name string
			body payoutBody
			want quoteResponse
		}{
			{"BIFAST", e.body("100000", " 1234567890 "), quoteResponse{Amount: "100000", PlatformFee: "2500", NetAmount: "97500",
				Currency: "IDR", TransferType: "BIFAST", BankCode: "bca", BankName: "Bank Central Asia", AccountNo: "1234567890", AccountHolderName: "SANDBOX 7890"}},
			{"RTOL, bank code in capitals, amount with scale", payoutBody{wallet: e.wallet.String(), amount: "250000.0000", bank: "MANDIRI", account: "9876543210", transferType: "RTOL"},
				quoteResponse{Amount: "250000", PlatformFee: "6500", NetAmount: "243500", Currency: "IDR", TransferType: "RTOL", BankCode: "mandiri",
					BankName: "Bank Mandiri", AccountNo: "9876543210", AccountHolderName: "SANDBOX 3210"}},
			{"e-wallet on simwallet", e.ewalletBody("50000", "gopay", "081234567890"), quoteResponse{Amount: "50000", PlatformFee: "2500", NetAmount: "47500",
				Currency: "IDR", TransferType: "BIFAST", BankCode: "gopay", BankName: "GoPay", AccountNo: "081234567890", AccountHolderName: "SANDBOX 7890"}},
			{"account the vendor would reject at submit", e.body("100000", sandbox.AccountSubmitRejected), quoteResponse{Amount: "100000", PlatformFee: "2500",
				NetAmount: "97500", Currency: "IDR", TransferType: "BIFAST", BankCode: "bca", BankName: "Bank Central Asia", AccountNo: "1000000003", AccountHolderName: "SANDBOX 0003"}},
			{"the whole balance", e.body("1000000", "1234567890"), quoteResponse{Amount: "1000000", PlatformFee: "2500", NetAmount: "997500",
				Currency: "IDR", TransferType: "BIFAST", BankCode: "bca", BankName: "Bank Central Asia", AccountNo: "1234567890", AccountHolderName: "SANDBOX 7890"}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				r := e.sub(t).quote(tc.body)
				r.expect(t, http.StatusOK, "")
				var got quoteResponse
				r.decode(t, &got)
				if got != tc.want {
					t.Fatalf("quote\n%+v\nwant\n%+v", got, tc.want)
				}
				if _, ok := r.fields(t)["idempotency_key"]; ok {
					t.Fatalf("quote answers an idempotency_key: %s", r.body)
				}
			})
		}
		// Quote takes neither memo nor reference_id (the current decision), nor
		// a transfer_type it cannot use.
		refused := []struct {
			name string
			body []byte
			msg  string
		}{
			{"memo", e.jsonBody(map[string]any{"memo": "invoice 7"}), `unknown field "memo"`},
			{"reference_id", e.jsonBody(map[string]any{"reference_id": "inv-7"}), `unknown field "reference_id"`},
			{"transfer_type missing", e.jsonBody(nil, "transfer_type"), "transfer_type is required"},
			{"transfer_type invalid", e.jsonBody(map[string]any{"transfer_type": "SKN"}), transferTypeMsg},
			{"amount invalid", e.jsonBody(map[string]any{"amount": "1e5"}), amountSyntaxMsg},
			{"amount zero", e.jsonBody(map[string]any{"amount": "0"}), "amount must be greater than zero"},
			{"account_no with letters", e.jsonBody(map[string]any{"account_no": "12ab"}), accountNoMsg},
		}
		for _, tc := range refused {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				e.sub(t).quoteRaw(tc.body).expect(t, http.StatusBadRequest, tc.msg)
			})
		}
		t.Cleanup(func() {
			if !t.Failed() {
				e.unchanged(before)
			}
		})
	})
}

// GET /api/v3/disbursements/{id}: the client's own disbursement only, the
// record's fields (requested_at and completed_at null until set,
// reference_id omitted when none was given, no idempotency_key), and
// timestamps in RFC 3339 UTC with Z.
func TestDisbursementGet(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{noSubmit: true, submitWait: 1})
	other := e.newMerchant()
	theirs := e.newWallet(other.id, "Theirs", sandbox.SimBank, false)
	e.fund(theirs, "1000000")
	their := e.createAs(other, "k", payoutBody{wallet: theirs.String(), amount: "100000", bank: "bca", account: "1234567890", transferType: "BIFAST"}).
		created(t, models.StatusVerified)

	e.get("not-a-uuid").expect(t, http.StatusBadRequest, "id must be a UUID such as 6f1c2a9e-8d4b-4c3e-9a7f-1b2c3d4e5f60")
	e.get(uuid.NewString()).expect(t, http.StatusNotFound, "disbursement not found")
	e.get(their.ID).expect(t, http.StatusNotFound, "disbursement not found")

	d := e.create("k", e.body("100000", "1234567890")).created(t, models.StatusVerified)
	r := e.get(d.ID)
	r.expect(t, http.StatusOK, "")
	f := r.fields(t)
	for _, k := range []string{"requested_at", "completed_at", "memo", "failed_reason"} {
		if v, ok := f[k]; !ok || v != nil {
			t.Fatalf("%s = %v (present %v), want null: %s", k, v, ok, r.body)
		}
	}
	for _, k := range []string{"reference_id", "idempotency_key"} {
		if _, ok := f[k]; ok {
			t.Fatalf("record carries %s: %s", k, r.body)
		}
	}
	wantUTC(t, "created_at", f["created_at"])
	if f["status"] != "VERIFIED" || f["id"] != d.ID || f["client_id"] != e.m.id.String() || f["wallet_id"] != e.wallet.String() {
		t.Fatalf("record %s", r.body)
	}

	e.runSubmits() // accepted and (sandbox, 1 ns) paid
	f = e.get(d.ID).fields(t)
	if f["status"] != "SUCCESS" {
		t.Fatalf("status %v", f["status"])
	}
	wantUTC(t, "requested_at", f["requested_at"])
	wantUTC(t, "completed_at", f["completed_at"])

	// With a reference_id: echoed by create and GET alike.
	p := e.body("100000", "1234567890")
	p.referenceID = "inv-42"
	created := e.create("with-ref", p)
	if got := created.fields(t)["reference_id"]; got != "inv-42" {
		t.Fatalf("create reference_id %v", got)
	}
	if got := e.get(created.disbursement(t).ID).fields(t)["reference_id"]; got != "inv-42" {
		t.Fatalf("record reference_id %v", got)
	}
	// An empty reference_id counts as none.
	noRef := e.createRaw("empty-ref", e.jsonBody(map[string]any{"reference_id": ""}))
	if _, ok := noRef.fields(t)["reference_id"]; ok {
		t.Fatalf("empty reference_id echoed: %s", noRef.body)
	}
	// x-signature is optional on GET: x-timestamp alone is enough.
	e.do(request{path: "/api/v3/disbursements/" + d.ID, apiKey: e.m.apiKey, timestamp: true}).expect(t, http.StatusOK, "")
	// Another client cannot read ours either.
	e.do(request{path: "/api/v3/disbursements/" + d.ID, apiKey: other.apiKey, sign: other.signingSecret}).
		expect(t, http.StatusNotFound, "disbursement not found")
}

// x-timestamp is ignored when x-signature is present: a signed create or
// quote with a stale or malformed x-timestamp is served, the signature's
// own t being what is checked.
func TestDisbursementSignedRequestIgnoresTimestampHeader(t *testing.T) {
	t.Parallel()
	e := setupPayouts(t, payoutSetup{})
	p := e.body("100000", "1234567890")
	for i, stamp := range []string{"12", "not-a-number", fmt.Sprint(e.now().Add(-time.Hour).UnixMilli())} {
		headers := map[string]string{"x-timestamp": stamp}
		e.do(request{method: http.MethodPost, path: "/api/v3/disbursements/quote", body: p.json(), apiKey: e.m.apiKey,
			sign: e.m.signingSecret, headers: headers}).expect(t, http.StatusOK, "")
		headers["Idempotency-Key"] = fmt.Sprintf("stamped-%d", i)
		r := e.do(request{method: http.MethodPost, path: "/api/v3/disbursements", body: p.json(), apiKey: e.m.apiKey,
			sign: e.m.signingSecret, headers: headers})
		r.created(t, models.StatusSuccess)
	}
	e.wantWallet(e.wallet, 700_000, 0)
}
