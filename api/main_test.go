package api

import (
	"log/slog"
	"os"
	"testing"

	"github.com/payoutd/payoutd/internal/logging"
)

func TestMain(m *testing.M) {
	// Access logs of hundreds of requests drown a failure; keep warnings.
	slog.SetDefault(logging.New(os.Stderr, slog.LevelWarn))
	os.Exit(m.Run())
}
