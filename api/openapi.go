package api

import (
	_ "embed"
	"net/http"

	"github.com/gin-gonic/gin"
)

// openAPIDocument describes the API for merchant engineers; it is served
// at GET /openapi.yaml and kept in step with the routes by a test.
//
//go:embed openapi.yaml
var openAPIDocument []byte

func (s *Server) handleOpenAPI(c *gin.Context) {
	c.Data(http.StatusOK, "application/yaml; charset=utf-8", openAPIDocument)
}
