package api

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"runtime/debug"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/payoutd/payoutd/internal/logging"
	"github.com/payoutd/payoutd/internal/metrics"
)

// A caller's X-Request-Id is kept when it is short and plain; otherwise
// the service makes its own.
var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{8,64}$`)

// requestContext gives every request an id (echoed in X-Request-Id and
// attached to every log line of the request) and writes one access log line.
func requestContext() gin.HandlerFunc {
	return func(c *gin.Context) {
		id := c.GetHeader("X-Request-Id")
		if !requestIDPattern.MatchString(id) {
			id = newRequestID()
		}
		c.Header("X-Request-Id", id)
		ctx := logging.WithRequestID(c.Request.Context(), id)
		c.Request = c.Request.WithContext(ctx)
		start := time.Now()
		c.Next()
		attrs := []any{
			slog.String("method", c.Request.Method),
			slog.String("route", c.FullPath()),
			slog.Int("status", c.Writer.Status()),
			slog.Duration("latency", time.Since(start)),
			slog.String("ip", c.ClientIP()),
		}
		if p, ok := c.Get(principalKey); ok {
			attrs = append(attrs, slog.String("client_id", p.(*principal).Client.ID.String()))
		}
		slog.InfoContext(ctx, "request", attrs...)
	}
}

// observe counts every request by its route pattern (gin's FullPath, so
// that /disbursements/:id is one series) in m; a nil m counts nothing.
func observe(m *metrics.Metrics) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		m.HTTPRequest(c.Request.Method, c.FullPath(), c.Writer.Status(), time.Since(start))
	}
}

func newRequestID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// recoverPanics turns a panic into a logged 500 with the usual error body.
// It is a last resort: no input should reach it.
func recoverPanics() gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				slog.ErrorContext(c.Request.Context(), "panic while serving request",
					slog.Any("panic", r), slog.String("stack", string(debug.Stack())))
				failLogged(c, fmt.Errorf("panic: %v", r))
			}
		}()
		c.Next()
	}
}
