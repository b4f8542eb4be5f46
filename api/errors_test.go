package api

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/payoutd/payoutd/models"
	"github.com/payoutd/payoutd/vendors"
)

// declaredError is one declared error (models.Errorf) with the answer it
// gets. merchant: answered on the merchant API, so api/openapi.yaml shows
// it (TestOpenAPIShowsEveryErrorMessage); operators' and internal errors
// are not.
type declaredError struct {
	name     string
	err      *models.Error
	status   int
	merchant bool
}

// declaredErrors is every error declared with a code, in models, vendors
// and this package, and its answer. TestDeclaredErrorsAreListed keeps it
// whole: a new declared error fails until it is listed here with its
// status, which is how a status is chosen deliberately.
var declaredErrors = []declaredError{
	// models: authentication and authorisation.
	{"models.ErrInvalidAPIKey", models.ErrInvalidAPIKey, http.StatusUnauthorized, true},
	{"models.ErrLegacyAPIKey", models.ErrLegacyAPIKey, http.StatusUnauthorized, true},
	{"models.ErrWrongEnvironmentKey", models.ErrWrongEnvironmentKey, http.StatusUnauthorized, true},
	{"models.ErrWithdrawalsSuspended", models.ErrWithdrawalsSuspended, http.StatusForbidden, true},
	{"models.ErrSignatureReused", models.ErrSignatureReused, http.StatusUnauthorized, true},
	// models: resources.
	{"models.ErrNotFound", models.ErrNotFound, http.StatusNotFound, true},
	{"models.ErrWalletNotFound", models.ErrWalletNotFound, http.StatusNotFound, true},
	{"models.ErrClientNotFound", models.ErrClientNotFound, http.StatusNotFound, true},
	// models: never a client's to act on.
	{"models.ErrConflict", models.ErrConflict, http.StatusInternalServerError, false},
	{"models.ErrAmountOverflow", models.ErrAmountOverflow, http.StatusInternalServerError, false},
	{"models.ErrBalanceLimit", models.ErrBalanceLimit, http.StatusInternalServerError, false},
	{"models.ErrTransitionRefused", models.ErrTransitionRefused, http.StatusInternalServerError, false},
	{"models.ErrStaleStatus", models.ErrStaleStatus, http.StatusInternalServerError, false},
	{"models.ErrSettlementRefused", models.ErrSettlementRefused, http.StatusInternalServerError, false},
	// models: disbursements.
	{"models.ErrDisbursementNotFound", models.ErrDisbursementNotFound, http.StatusNotFound, true},
	{"models.ErrInsufficientBalance", models.ErrInsufficientBalance, http.StatusPaymentRequired, true},
	{"models.ErrVendorPayoutFailed", models.ErrVendorPayoutFailed, http.StatusServiceUnavailable, true},
	{"models.ErrGatewayUnavailable", models.ErrGatewayUnavailable, http.StatusServiceUnavailable, true},
	{"models.ErrLockExpired", models.ErrLockExpired, http.StatusGone, true},
	{"models.ErrDisbursementCancelled", models.ErrDisbursementCancelled, http.StatusConflict, true},
	{"models.ErrIdempotencyInFlight", models.ErrIdempotencyInFlight, http.StatusConflict, true},
	{"models.ErrIdempotencyMismatch", models.ErrIdempotencyMismatch, http.StatusUnprocessableEntity, true},
	{"models.ErrUnsupportedBank", models.ErrUnsupportedBank, http.StatusUnprocessableEntity, true},
	{"models.ErrAccountInactive", models.ErrAccountInactive, http.StatusUnprocessableEntity, true},
	{"models.ErrAccountNotResolved", models.ErrAccountNotResolved, http.StatusUnprocessableEntity, true},
	{"models.ErrHolderNameRequired", models.ErrHolderNameRequired, http.StatusUnprocessableEntity, true},
	// models: operators' (the admin CLI), on no HTTP route.
	{"models.ErrLateResultNotFound", models.ErrLateResultNotFound, http.StatusNotFound, false},
	{"models.ErrLateResultResolved", models.ErrLateResultResolved, http.StatusConflict, false},
	// models: payments.
	{"models.ErrPaymentNotFound", models.ErrPaymentNotFound, http.StatusNotFound, true},
	{"models.ErrNoDefaultWallet", models.ErrNoDefaultWallet, http.StatusUnprocessableEntity, true},
	{"models.ErrPaymentNotPending", models.ErrPaymentNotPending, http.StatusConflict, true},
	{"models.ErrCheckoutToken", models.ErrCheckoutToken, http.StatusForbidden, true},
	// vendors.
	{"vendors.ErrInvalidCallback", vendors.ErrInvalidCallback, http.StatusUnauthorized, true},
	// api: the HTTP layer's.
	{"api.errMissingAPIKey", errMissingAPIKey, http.StatusUnauthorized, true},
	{"api.errHoldingClient", errHoldingClient, http.StatusForbidden, true},
	{"api.errIPNotAllowed", errIPNotAllowed, http.StatusForbidden, true},
	{"api.errTimestampWindow", errTimestampWindow, http.StatusBadRequest, true},
	{"api.errSignatureOutsideWindow", errSignatureOutsideWindow, http.StatusUnauthorized, true},
	{"api.errMissingSignature", errMissingSignature, http.StatusUnauthorized, true},
	{"api.errInvalidSignature", errInvalidSignature, http.StatusUnauthorized, true},
	{"api.errNoSigningSecret", errNoSigningSecret, http.StatusUnauthorized, true},
	{"api.errSigningSecretUnusable", errSigningSecretUnusable, http.StatusUnauthorized, true},
	{"api.errReplayCheckUnavailable", errReplayCheckUnavailable, http.StatusServiceUnavailable, true},
	{"api.errContentEncoding", errContentEncoding, http.StatusUnsupportedMediaType, true},
	{"api.errBodyTooLarge", errBodyTooLarge, http.StatusRequestEntityTooLarge, true},
	{"models.ErrRateLimited", models.ErrRateLimited, http.StatusTooManyRequests, true},
	{"api.errServerBusy", errServerBusy, http.StatusServiceUnavailable, true},
	{"api.errRequestTimeout", errRequestTimeout, http.StatusServiceUnavailable, true},
	{"api.errMethodNotAllowed", errMethodNotAllowed, http.StatusMethodNotAllowed, true},
	{"api.errNotReady", errNotReady, http.StatusServiceUnavailable, true},
	{"api.errDatabaseUnavailable", errDatabaseUnavailable, http.StatusServiceUnavailable, false},
	// api: the operators' routes.
	{"api.errAdminRequired", errAdminRequired, http.StatusUnauthorized, false},
	{"api.errAdminThrottled", errAdminThrottled, http.StatusTooManyRequests, false},
	{"api.errCrossOrigin", errCrossOrigin, http.StatusForbidden, false},
	{"api.errOpsReadOnly", errOpsReadOnly, http.StatusForbidden, false},
	{"api.errProfiling", errProfiling, http.StatusConflict, false},
}

// Every declared error is answered with its status and exactly
// {"error": <its message>} (the generic message for an internal one),
// through fail (gin) and writeError (plain net/http) alike, wrapped or
// not; a hint rides beside a client's message, never beside the generic.
func TestDeclaredErrorAnswers(t *testing.T) {
	t.Parallel()
	gin.SetMode(gin.TestMode)
	for _, d := range declaredErrors {
		want := errorResponse{Error: d.err.Message}
		if d.status == http.StatusInternalServerError {
			want.Error = models.InternalMessage
		}
		for _, err := range []error{d.err, fmt.Errorf("context for the log: %w", d.err)} {
			rec := httptest.NewRecorder()
			c, _ := gin.CreateTestContext(rec)
			c.Request = httptest.NewRequest(http.MethodGet, "/", nil)
			fail(c, err)
			checkAnswer(t, d.name+" via fail", rec, d.status, want)

			rec = httptest.NewRecorder()
			writeError(rec, err)
			checkAnswer(t, d.name+" via writeError", rec, d.status, want)
		}
		hinted := want
		if d.status != http.StatusInternalServerError {
			hinted.Hint = "what exactly was wrong"
		}
		rec := httptest.NewRecorder()
		c, _ := gin.CreateTestContext(rec)
		c.Request = httptest.NewRequest(http.MethodGet, "/", nil)
		fail(c, models.WithHint(d.err, "what exactly was wrong"))
		checkAnswer(t, d.name+" with a hint", rec, d.status, hinted)
	}
}

func checkAnswer(t *testing.T, name string, rec *httptest.ResponseRecorder, status int, want errorResponse) {
	t.Helper()
	var got errorResponse
	dec := json.NewDecoder(rec.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Errorf("%s: body is not {error, hint}: %v", name, err)
	}
	if rec.Code != status || got != want {
		t.Errorf("%s: answered %d %+v, want %d %+v", name, rec.Code, got, status, want)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s: Content-Type %q", name, ct)
	}
}

// Every code has a status, and the ones a client may be told about are
// error statuses.
func TestEveryCodeHasAStatus(t *testing.T) {
	t.Parallel()
	codes := []string{models.EINVALID, models.EUNAUTHORIZED, models.EFORBIDDEN, models.ENOTFOUND, models.ECONFLICT,
		models.EEXPIRED, models.EINSUFFICIENT, models.EUNPROCESSABLE, models.EUNAVAILABLE, models.EINTERNAL,
		models.ERATELIMITED, eMethodNotAllowed, eBodyTooLarge, eEncoding}
	for _, code := range codes {
		if s, ok := codeStatuses[code]; !ok || s < 400 {
			t.Errorf("code %q: status %d", code, s)
		}
	}
	if len(codeStatuses) != len(codes) {
		t.Errorf("codeStatuses has %d codes, this test knows %d: list the new one", len(codeStatuses), len(codes))
	}
	// A code nobody mapped is an internal error, not a status of its own.
	if s, msg, known := statusOf(models.Errorf("unmapped", "a message")); s != http.StatusInternalServerError || msg != models.InternalMessage || known {
		t.Errorf("an unmapped code answers %d %q (known %v)", s, msg, known)
	}
}

// declaredErrorNames lists the package-level variables initialised with
// models.Errorf (or Errorf inside models) in the non-test files of dir.
func declaredErrorNames(t *testing.T, dir, pkg string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.VAR {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, v := range vs.Values {
					call, ok := v.(*ast.CallExpr)
					if !ok {
						continue
					}
					switch fn := call.Fun.(type) {
					case *ast.Ident:
						ok = fn.Name == "Errorf" && pkg == "models"
					case *ast.SelectorExpr:
						x, isIdent := fn.X.(*ast.Ident)
						ok = isIdent && x.Name == "models" && fn.Sel.Name == "Errorf"
					default:
						ok = false
					}
					if ok {
						names = append(names, pkg+"."+vs.Names[i].Name)
					}
				}
			}
		}
	}
	return names
}

// TestDeclaredErrorsAreListed: declaredErrors names every error declared
// with a code in models, vendors and api, so each one's status is tested.
func TestDeclaredErrorsAreListed(t *testing.T) {
	t.Parallel()
	var declared []string
	declared = append(declared, declaredErrorNames(t, "../models", "models")...)
	declared = append(declared, declaredErrorNames(t, "../vendors", "vendors")...)
	declared = append(declared, declaredErrorNames(t, ".", "api")...)
	if len(declared) < 40 {
		t.Fatalf("found only %d declared errors: the parse is broken", len(declared))
	}
	var listed []string
	for _, d := range declaredErrors {
		listed = append(listed, d.name)
	}
	for _, name := range declared {
		if !slices.Contains(listed, name) {
			t.Errorf("%s is declared but not in declaredErrors: list it with its status", name)
		}
	}
	for _, name := range listed {
		if !slices.Contains(declared, name) {
			t.Errorf("declaredErrors lists %s, which is not declared with models.Errorf", name)
		}
	}
}

// TestErrorStatusesOnlyFromTheTable is a lint over this package's code:
// outside errors.go no handler names an error status (an http.Status
// constant or a number of 400 or above), aborts with a status of its own,
// or builds an error body. Every error answer goes through fail or
// writeError, so its status comes from codeStatuses.
func TestErrorStatusesOnlyFromTheTable(t *testing.T) {
	t.Parallel()
	// The http names that are not error statuses; any other http.Status…
	// name outside errors.go is one.
	notErrors := []string{"StatusText", "StatusContinue", "StatusOK", "StatusCreated", "StatusAccepted",
		"StatusNoContent", "StatusPartialContent", "StatusMovedPermanently", "StatusFound", "StatusSeeOther",
		"StatusNotModified", "StatusTemporaryRedirect", "StatusPermanentRedirect"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") || path == "errors.go" {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				x, ok := n.X.(*ast.Ident)
				if !ok || x.Name != "http" || !strings.HasPrefix(n.Sel.Name, "Status") {
					break
				}
				if !slices.Contains(notErrors, n.Sel.Name) {
					t.Errorf("%s: http.%s: an error status outside errors.go; answer a declared error with fail", fset.Position(n.Pos()), n.Sel.Name)
				}
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
					switch sel.Sel.Name {
					case "AbortWithStatus", "AbortWithStatusJSON", "AbortWithStatusPureJSON", "AbortWithError":
						t.Errorf("%s: %s outside errors.go; answer a declared error with fail", fset.Position(n.Pos()), sel.Sel.Name)
					case "Error":
						if x, ok := sel.X.(*ast.Ident); ok && x.Name == "http" {
							t.Errorf("%s: http.Error outside errors.go; answer a declared error with writeError", fset.Position(n.Pos()))
						}
					}
				}
				for _, arg := range n.Args {
					lit, ok := arg.(*ast.BasicLit)
					if !ok || lit.Kind != token.INT {
						continue
					}
					if v, err := strconv.Atoi(lit.Value); err == nil && v >= 400 && v < 600 {
						t.Errorf("%s: status-like number %d passed to a call outside errors.go", fset.Position(n.Pos()), v)
					}
				}
			case *ast.CompositeLit:
				if id, ok := n.Type.(*ast.Ident); ok && id.Name == "errorResponse" {
					t.Errorf("%s: an error body built outside errors.go", fset.Position(n.Pos()))
				}
			}
			return true
		})
	}
	if checked < 10 {
		t.Fatalf("checked only %d files", checked)
	}
}
