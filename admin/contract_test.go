package admin_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/admin"
)

// kind is the JSON type of a field, as docs/design.md fixes it: amounts are
// decimal strings (balances with 4 fraction digits), timestamps RFC 3339
// UTC with a Z, ids UUID strings, counts numbers.
type kind string

const (
	kString        kind = "string"
	kStringOrNull  kind = "string or null"
	kUUID          kind = "UUID string"
	kAmount        kind = "decimal string"
	kAmountOrNull  kind = "decimal string or null"
	kBalance       kind = "decimal string with 4 fraction digits"
	kTime          kind = "RFC 3339 UTC string"
	kTimeOrNull    kind = "RFC 3339 UTC string or null"
	kInt           kind = "integer"
	kIntOrNull     kind = "integer or null"
	kBool          kind = "boolean"
	kStrings       kind = "array of strings"
	kObjects       kind = "array of objects"
	kObject        kind = "object"
	kObjectOrNull  kind = "object or null"
	kBalanceByName kind = "object of decimal strings with 4 fraction digits"
)

// contract is what one command prints on success.
type contract struct {
	// doc says where the fields are written down.
	doc string
	// fields are the required fields and their types.
	fields map[string]kind
	// exhaustive: no other field may appear (docs/design.md lists them all).
	exhaustive bool
	// nested is the contract of an object field, or of each element of an
	// array-of-objects field.
	nested map[string]*contract
	// forbidden fields never appear (secrets).
	forbidden []string
}

// issuedCredentials: docs/design.md, Admin CLI contract:
// {"client_id","api_key","signing_secret","callback_secret"}; signing_secret
// is null for a client created with --no-signing-secret.
var issuedCredentials = &contract{doc: "docs/design.md, Admin CLI contract (client create)", exhaustive: true, fields: map[string]kind{
	"client_id": kUUID, "api_key": kString, "signing_secret": kStringOrNull, "callback_secret": kString}}

// rotatedCredentials: the same fields, all three rotated.
var rotatedCredentials = &contract{doc: "docs/design.md, Admin CLI contract (client rotate-credentials)", exhaustive: true, fields: map[string]kind{
	"client_id": kUUID, "api_key": kString, "signing_secret": kString, "callback_secret": kString}}

// secretFields are what no command but create and rotate-credentials may
// print (the values themselves are checked by the harness too).
var secretFields = []string{"api_key", "api_key_hash", "signing_secret", "callback_secret",
	"signing_secret_enc", "callback_secret_enc", "payout_webhook_url_enc", "payment_webhook_url_enc"}

// clientRecord: client update and client show: every setting client
// update takes is shown, amounts as decimal strings, the fee in basis
// points a number.
var clientRecord = &contract{doc: "docs/design.md, Admin CLI contract (client update, client show)", forbidden: secretFields, fields: map[string]kind{
	"client_id": kUUID, "name": kString, "kind": kString, "allowed_ips": kStrings,
	"payout_webhook_url": kString, "payment_webhook_url": kString, "withdrawals": kString,
	"review_threshold": kAmountOrNull, "bifast_fee": kAmount, "rtol_fee": kAmount,
	"bifast_min_net": kAmount, "rtol_min_net": kAmount, "payment_fee_bps": kInt, "refund_fee_on_return": kBool,
	"require_signature_v2": kBool, "write_rate_limit": kIntOrNull, "read_rate_limit": kIntOrNull}}

// disbursementRecord: what disbursement approve|cancel and sandbox
// complete print, the fields of GET /api/v3/disbursements/{id}
// (api/openapi.yaml) with returned_at. reference_id is present when
// supplied: the fixtures always supply one.
var disbursementRecord = &contract{doc: "docs/design.md, Admin CLI contract (disbursement record)", fields: map[string]kind{
	"id": kUUID, "client_id": kUUID, "wallet_id": kUUID, "status": kString,
	"amount": kAmount, "platform_fee": kAmount, "net_amount": kAmount, "currency": kString,
	"bank_code": kString, "bank_name": kString, "account_no": kString, "account_holder_name": kString,
	"memo": kStringOrNull, "reference_id": kString, "failed_reason": kStringOrNull,
	"requested_at": kTimeOrNull, "completed_at": kTimeOrNull, "returned_at": kTimeOrNull}}

// lateResult: a vendor result that contradicts a final status.
var lateResult = &contract{doc: "docs/design.md, Admin CLI contract (disbursement late-results)", fields: map[string]kind{
	"id": kInt, "disbursement_id": kUUID, "vendor": kString, "vendor_reference": kString,
	"stored_status": kString, "reported_status": kString, "reason": kString, "source": kString,
	"first_seen_at": kTime, "last_seen_at": kTime, "seen_count": kInt,
	"resolved_at": kTimeOrNull, "resolved_by": kStringOrNull, "note": kStringOrNull}}

// paymentRecord: payment show prints the payment with settlement_error,
// paid_at_reported, reported_amount and hold_reason, besides the payment
// record's own fields.
var paymentRecord = &contract{doc: "docs/design.md, Admin CLI contract (payment show, payment settle)", fields: map[string]kind{
	"payment_id": kUUID, "client_id": kUUID, "status": kString,
	"amount": kAmount, "platform_fee": kAmount, "net_amount": kAmount,
	"paid_at": kTimeOrNull, "settled_at": kTimeOrNull, "retrieval_reference_no": kStringOrNull, "created_at": kTime,
	"settlement_error": kStringOrNull, "paid_at_reported": kTimeOrNull, "reported_amount": kAmountOrNull, "hold_reason": kStringOrNull}}

// webhookAttempt and webhookEvent: webhook list and redeliver.
var webhookAttempt = &contract{doc: "docs/design.md, Admin CLI contract (webhook list, redeliver)", fields: map[string]kind{
	"attempt": kInt, "at": kTime, "url": kString, "status_code": kIntOrNull, "latency_ms": kInt,
	"error": kStringOrNull, "next_attempt_at": kTimeOrNull}}

func webhookEvent(lastAttempt kind) *contract {
	return &contract{doc: "docs/design.md, Admin CLI contract (webhook list, redeliver)", fields: map[string]kind{
		"event_id": kUUID, "event": kString, "subject_id": kUUID, "state": kString, "attempts": kInt,
		"created_at": kTime, "delivered_at": kTimeOrNull, "next_attempt_at": kTimeOrNull, "last_attempt": lastAttempt},
		nested: map[string]*contract{"last_attempt": webhookAttempt}}
}

// contracts are the success output of every command of admin/cli.go.
var contracts = map[string]*contract{
	"client create":             issuedCredentials,
	"client rotate-credentials": rotatedCredentials,
	"client update":             clientRecord,
	"client show":               clientRecord,
	"wallet create": {doc: "docs/design.md, Admin CLI contract (wallet create)", exhaustive: true, fields: map[string]kind{
		"wallet_id": kUUID, "name": kString, "vendor": kString}},
	"wallet activate": {doc: "docs/design.md, Admin CLI contract (wallet activate: the wallet, now usable)", fields: map[string]kind{
		"wallet_id": kUUID, "name": kString, "vendor": kString, "state": kString}},
	"wallet adjust": {doc: "docs/design.md, Admin CLI contract (wallet adjust)", exhaustive: true, fields: map[string]kind{
		"wallet_id": kUUID, "balance": kBalance}},
	"disbursement approve": disbursementRecord,
	"disbursement cancel":  disbursementRecord,
	"disbursement late-results": {doc: "docs/design.md, Admin CLI contract (disbursement late-results)", fields: map[string]kind{
		"late_results": kObjects, "total_count": kInt}, nested: map[string]*contract{"late_results": lateResult}},
	"disbursement resolve-late-result": lateResult,
	"disbursement list": {doc: "docs/design.md, Admin CLI contract (disbursement list)", exhaustive: true, fields: map[string]kind{
		"data": kObjects, "has_more": kBool, "next_cursor": kStringOrNull}, nested: map[string]*contract{"data": disbursementRecord}},
	"payment list": {doc: "docs/design.md, Admin CLI contract (payment list)", exhaustive: true, fields: map[string]kind{
		"data": kObjects, "has_more": kBool, "next_cursor": kStringOrNull}, nested: map[string]*contract{"data": paymentRecord}},
	"sandbox complete": disbursementRecord,
	"payment simulate": {doc: "docs/design.md, Admin CLI contract (payment simulate)", fields: map[string]kind{
		"payment_id": kUUID, "result": kString, "status": kString, "paid_at": kTimeOrNull,
		"retrieval_reference_no": kStringOrNull, "settle_at": kTimeOrNull}},
	"payment show":   paymentRecord,
	"payment settle": paymentRecord,
	"webhook list": {doc: "docs/design.md, Admin CLI contract (webhook list)", fields: map[string]kind{"client_id": kUUID, "events": kObjects},
		nested: map[string]*contract{"events": webhookEvent(kObjectOrNull)}},
	"webhook redeliver": webhookEvent(kObject),
	"secrets rotate-key": {doc: "docs/design.md, Admin CLI contract (secrets rotate-key)", fields: map[string]kind{
		"key_id": kString, "checked": kInt, "resealed": kInt, "already_current": kInt, "legacy": kInt,
		"unreadable": kInt, "unreadable_values": kStrings}},
	"rail check": {doc: "docs/design.md, Admin CLI contract (rail check)", fields: map[string]kind{"vendor": kString, "ok": kBool, "steps": kObjects},
		nested: map[string]*contract{"steps": {doc: "docs/design.md, Admin CLI contract (rail check steps)", fields: map[string]kind{
			"step": kString, "ok": kBool, "status": kString, "elapsed_ms": kInt}}}},
	"reconcile": {doc: "docs/design.md, Admin CLI contract (reconcile)", fields: map[string]kind{
		"ok": kBool, "checked_at": kTime, "wallets_checked": kInt, "transactions_checked": kInt,
		"system_accounts": kBalanceByName, "problems": kStrings, "warnings": kStrings}},
}

// Every command of the table in admin/cli.go has a contract here, and no
// contract names a command that does not exist.
func TestEveryCommandHasAContract(t *testing.T) {
	var listed []string
	for _, line := range strings.Split(admin.Usage(), "\n") {
		if !strings.HasPrefix(line, "  ") {
			continue
		}
		words := strings.Fields(line)
		name := words[0]
		if len(words) > 1 && !strings.HasPrefix(words[1], "-") && !strings.HasPrefix(words[1], "[") && !strings.HasPrefix(words[1], "(") {
			name += " " + words[1]
		}
		listed = append(listed, name)
	}
	var known []string
	for name := range contracts {
		known = append(known, name)
	}
	slices.Sort(listed)
	slices.Sort(known)
	if !slices.Equal(listed, known) || len(listed) != 22 {
		t.Fatalf("admin.Usage() lists %v;\ncontracts cover %v", listed, known)
	}
}

// checkContract fails the test unless out meets the command's contract.
func checkContract(t *testing.T, command string, out map[string]any) {
	t.Helper()
	problems := contracts[command].check(out)
	for _, problem := range problems {
		t.Errorf("admin %s: %s", command, problem)
	}
	if len(problems) > 0 {
		t.FailNow()
	}
}

func (c *contract) check(out map[string]any) []string {
	var problems []string
	for name, k := range c.fields {
		v, present := out[name]
		if !present {
			problems = append(problems, fmt.Sprintf("field %q missing (%s), got %v", name, c.doc, out))
			continue
		}
		if why := k.mismatch(v); why != "" {
			problems = append(problems, fmt.Sprintf("field %q = %#v: want %s (%s)", name, v, k, why))
			continue
		}
		if n := c.nested[name]; n != nil {
			problems = append(problems, n.checkValue(name, v)...)
		}
	}
	for name := range out {
		if slices.Contains(c.forbidden, name) {
			problems = append(problems, fmt.Sprintf("field %q must never be printed by this command", name))
		} else if _, known := c.fields[name]; c.exhaustive && !known {
			problems = append(problems, fmt.Sprintf("unexpected field %q: %s lists the fields exhaustively", name, c.doc))
		}
	}
	slices.Sort(problems)
	return problems
}

// checkValue checks a nested object, or each object of an array.
func (c *contract) checkValue(name string, v any) []string {
	var problems []string
	switch x := v.(type) {
	case map[string]any:
		for _, p := range c.check(x) {
			problems = append(problems, name+": "+p)
		}
	case []any:
		for i, e := range x {
			for _, p := range c.check(e.(map[string]any)) {
				problems = append(problems, fmt.Sprintf("%s[%d]: %s", name, i, p))
			}
		}
	}
	return problems
}

var (
	decimalText = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)
	balanceText = regexp.MustCompile(`^-?[0-9]+\.[0-9]{4}$`)
)

// mismatch says why v is not of kind k, or "" when it is.
func (k kind) mismatch(v any) string {
	if v == nil {
		switch k {
		case kStringOrNull, kAmountOrNull, kTimeOrNull, kIntOrNull, kObjectOrNull:
			return ""
		}
		return "null"
	}
	switch k {
	case kStringOrNull:
		k = kString
	case kAmountOrNull:
		k = kAmount
	case kTimeOrNull:
		k = kTime
	case kIntOrNull:
		k = kInt
	case kObjectOrNull:
		k = kObject
	}
	s, isString := v.(string)
	switch k {
	case kString:
		return ifNot(isString, "not a string")
	case kUUID:
		if _, err := uuid.Parse(s); !isString || err != nil {
			return "not a UUID"
		}
	case kAmount:
		return ifNot(isString && decimalText.MatchString(s), "not a decimal string")
	case kBalance:
		return ifNot(isString && balanceText.MatchString(s), "not a decimal string with 4 fraction digits")
	case kTime:
		t, err := time.Parse(time.RFC3339Nano, s)
		return ifNot(isString && err == nil && strings.HasSuffix(s, "Z") && t.Location() == time.UTC, "not RFC 3339 UTC with Z")
	case kInt:
		f, isNumber := v.(float64)
		return ifNot(isNumber && f == float64(int64(f)), "not an integer number")
	case kBool:
		_, isBool := v.(bool)
		return ifNot(isBool, "not a boolean")
	case kStrings:
		a, isArray := v.([]any)
		if !isArray {
			return "not an array"
		}
		for _, e := range a {
			if _, ok := e.(string); !ok {
				return "an element is not a string"
			}
		}
	case kObjects:
		a, isArray := v.([]any)
		if !isArray {
			return "not an array"
		}
		for _, e := range a {
			if _, ok := e.(map[string]any); !ok {
				return "an element is not an object"
			}
		}
	case kObject:
		_, isObject := v.(map[string]any)
		return ifNot(isObject, "not an object")
	case kBalanceByName:
		m, isObject := v.(map[string]any)
		if !isObject {
			return "not an object"
		}
		for _, e := range m {
			if s, ok := e.(string); !ok || !balanceText.MatchString(s) {
				return "a value is not a decimal string with 4 fraction digits"
			}
		}
	default:
		return "unknown kind"
	}
	return ""
}

func ifNot(ok bool, why string) string {
	if ok {
		return ""
	}
	return why
}
