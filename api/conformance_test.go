package api

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/payoutd/payoutd/internal/conformance"
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
	// documented in the README, not API.
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
