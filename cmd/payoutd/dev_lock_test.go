package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A second dev on a data folder is refused with the holder's pid and the
// folder, whether it is a second start in this process or a whole second
// `payoutd dev`; once the first lets go, a start succeeds. A lock file a
// crashed dev left behind is not held, and a start that fails lets go.
func TestDevRefusesASecondDevOnItsDataFolder(t *testing.T) {
	dir := t.TempDir()
	getenv := func(k string) string { return map[string]string{"DEV_DATA_DIR": dir}[k] }
	first, err := startDevBackends(getenv)
	if err != nil {
		t.Fatal(err)
	}
	pid := "pid " + strconv.Itoa(os.Getpid())
	if second, err := startDevBackends(getenv); err == nil {
		second.close()
		t.Error("a second start on the folder succeeded")
	} else if !strings.Contains(err.Error(), "DEV_DATA_DIR "+dir+" is in use by another payoutd dev ("+pid) {
		t.Errorf("the second start: %v; want the folder and the holder's %s", err, pid)
	}
	first.close()
	again, err := startDevBackends(getenv)
	if err != nil {
		t.Fatalf("a start after the first let go: %v", err)
	}
	again.close()

	// A lock file with a dead pid, as a crash leaves it, is no lock.
	if err := os.WriteFile(filepath.Join(dir, "dev.lock"), []byte("999999999\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HTTP_ADDR": "127.0.0.1:0", "DEV_DATA_DIR": dir, "LOG_LEVEL": "warn"}
	_, stop := runDevUntil(t, env)

	// A second payoutd dev on the folder stops at once with the reason.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stderr strings.Builder
	if code := run(ctx, []string{"dev"}, io.Discard, &stderr, func(k string) string { return env[k] }); code != 1 ||
		!strings.Contains(stderr.String(), "is in use by another payoutd dev ("+pid) || ctx.Err() != nil {
		t.Fatalf("a second payoutd dev on %s: exit %d, %s", dir, code, stderr.String())
	}
	stop()

	// A start that fails after taking the lock lets it go.
	state, err := os.ReadFile(filepath.Join(dir, devStateFile))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, devStateFile), []byte("{"), 0o600)
	stderr.Reset()
	if code := run(context.Background(), []string{"dev"}, io.Discard, &stderr, func(k string) string { return env[k] }); code != 1 ||
		!strings.Contains(stderr.String(), devStateFile) {
		t.Fatalf("dev on a broken %s: exit %d, %s", devStateFile, code, stderr.String())
	}
	os.WriteFile(filepath.Join(dir, devStateFile), state, 0o600)
	if banner, _ := runDevUntil(t, env); !strings.Contains(banner, "resumed") {
		t.Fatalf("dev after a failed start:\n%s", banner)
	}
}
