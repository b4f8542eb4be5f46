package api

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/gin-gonic/gin"

	"github.com/payoutd/payoutd/internal/conformance"
	"github.com/payoutd/payoutd/models"
)

// Every answer the package's tests get from a server setup built is checked
// against api/openapi.yaml by kin-openapi (internal/conformance): its status
// must be one the operation lists, its content type and headers as
// documented, its body valid against the schema. A test whose request got
// an answer the document does not describe fails, so no answer can drift
// from the document. Requests are not checked: tests send bad ones on
// purpose.

// openAPI is the embedded document, loaded and validated once.
var openAPI = sync.OnceValues(func() (*openapi3.T, error) { return conformance.Load(openAPIDocument) })

// openAPIChecker checks answers against openAPI.
var openAPIChecker = sync.OnceValues(func() (*conformance.Checker, error) {
	doc, err := openAPI()
	if err != nil {
		return nil, err
	}
	return conformance.New(doc, undocumentedRoute)
})

// undocumentedRoute lists the served routes api/openapi.yaml leaves out on
// purpose; the answers to every other request are checked, those of the
// merchant API (/api/v3, /api/v1) without exception.
func undocumentedRoute(r *http.Request) bool {
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/api/"):
		return false
	// The queue dashboard (asynqmon's pages and its JSON API, and the
	// fonts its pages load) and the Go profiler are operators' tools
	// documented in docs/operations-reference.md, not API.
	case p == dashboardPath || strings.HasPrefix(p, dashboardPath+"/"):
		return true
	case strings.HasPrefix(p, "/ops"+dashboardFontsPath+"/"):
		return true
	case p == profilerPath || strings.HasPrefix(p, profilerPath+"/"):
		return true
	}
	return false
}

// checkAnswers makes srv's Handler check every answer against the document,
// failing t (or the test do names) on one it does not describe.
func checkAnswers(t testing.TB, srv *Server) {
	t.Helper()
	c, err := openAPIChecker()
	if err != nil {
		t.Fatalf("api/openapi.yaml: %v", err)
	}
	srv.handler = c.Wrap(t, srv.engine)
}

// TestConformanceSkipsOnlyUndocumentedRoutes: the answers left unchecked
// are exactly those of the served routes api/openapi.yaml does not have
// (the dashboard's and the profiler's), so no documented route, and no
// /api route at all, can slip out of the check.
func TestConformanceSkipsOnlyUndocumentedRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOptions{env: models.Staging, dashboard: true})
	documented := map[string]bool{}
	for _, o := range operations(openAPIDoc(t)) {
		documented[o.method+" "+o.path] = true
	}
	param := regexp.MustCompile(`[:*]([A-Za-z0-9_]+)`)
	skipped := 0
	for _, r := range b.server.engine.Routes() {
		route := r.Method + " " + param.ReplaceAllString(r.Path, "{$1}")
		req := httptest.NewRequest(r.Method, param.ReplaceAllString(r.Path, "x"), nil)
		switch skip := undocumentedRoute(req); {
		case skip && documented[route]:
			t.Errorf("%s is documented, yet its answers are not checked", route)
		case skip && strings.HasPrefix(r.Path, "/api/"):
			t.Errorf("%s: no /api route may be left unchecked", route)
		case !skip && !documented[route]:
			t.Errorf("%s is served and not documented: document it (or, for an operators' tool, list it in undocumentedRoute)", route)
		case skip:
			skipped++
		}
	}
	if skipped == 0 {
		t.Error("no route skipped: the dashboard and the profiler were expected")
	}
}

// The servers setup builds answer through the check, not the bare engine.
func TestSetupChecksAnswers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if h, ok := b.server.Handler().(*gin.Engine); ok && h == b.server.engine {
		t.Fatal("setup's server serves the bare engine: its answers are not checked against api/openapi.yaml")
	}
}
