package main

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/payoutd/payoutd/models"
)

const (
	readyTimeout = 30 * time.Second
	stopTimeout  = 20 * time.Second
)

// payoutdBinary is cmd/payoutd built into a temporary folder, shared by the
// api and the worker a run starts.
type payoutdBinary struct {
	path string
	dir  string
	// revision is the commit the binary was built from, with "+dirty"
	// when the working tree had changes; "" when unknown.
	revision string
}

// buildPayoutd builds cmd/payoutd into a temporary folder; remove deletes it.
func buildPayoutd(ctx context.Context) (*payoutdBinary, error) {
	return buildPayoutdWith(ctx, false)
}

// buildPayoutdWith builds cmd/payoutd, with workerPprof adding the file of
// workerPprofSource through go build -overlay (the repository is not
// changed): a process started with LOADTEST_PPROF_ADDR serves
// net/http/pprof there, which is how -evidence profiles the worker (only
// the api serves /debug/pprof of its own).
func buildPayoutdWith(ctx context.Context, workerPprof bool) (*payoutdBinary, error) {
	dir, err := os.MkdirTemp("", "payoutd-loadtest-")
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "payoutd")
	args := []string{"build", "-buildvcs=auto", "-o", bin}
	if workerPprof {
		overlay, err := writePprofOverlay(ctx, dir)
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		args = append(args, "-overlay", overlay)
	}
	build := exec.CommandContext(ctx, "go", append(args, "github.com/payoutd/payoutd/cmd/payoutd")...)
	if out, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("go build ./cmd/payoutd (run the tool from the payoutd module: go run ./cmd/loadtest): %w\n%s", err, out)
	}
	return &payoutdBinary{path: bin, dir: dir, revision: buildRevision(bin)}, nil
}

func (b *payoutdBinary) remove() { os.RemoveAll(b.dir) }

// serverProcess is `payoutd api` or `payoutd worker` running as a child
// process.
type serverProcess struct {
	command string // "api" or "worker"
	cmd     *exec.Cmd
	base    string        // the api's base URL; "" for the worker
	exited  chan struct{} // closed when the process has exited
	err     error         // its exit status; read after exited is closed
}

// serverConfig is what the started server is told through its environment.
type serverConfig struct {
	databaseURL string
	redisURL    string
	env         models.Environment
	secretsKey  []byte
	extraEnv    []string // KEY=VALUE, applied last
	// railEnv points the api and worker at a simulated rail (-rail); it
	// holds secrets and is never printed. Applied before extraEnv.
	railEnv []string
	// apiAddr is where the api listens; "" for a free port of 127.0.0.1.
	// A simulated rail calls back to it, so it is chosen before either
	// starts.
	apiAddr string
}

// environ is the child's whole environment: a clean one, so nothing of the
// caller's (a stray TRUSTED_PROXIES or ADMIN_PASSWORD) reaches the server
// unless passed with -server-env.
func (c serverConfig) environ(httpAddr string) []string {
	env := append(inheritedEnv(),
		"DATABASE_URL="+c.databaseURL,
		"REDIS_URL="+c.redisURL,
		"APP_ENV="+string(c.env),
		"SECRETS_KEY="+hex.EncodeToString(c.secretsKey),
		"LOG_LEVEL=warn",
		// The capacity is measured, not the per-client rate limits or the
		// in-flight bound; -server-env sets them back for a run of its own.
		"CLIENT_WRITE_RATE_LIMIT=0", "CLIENT_READ_RATE_LIMIT=0", "MAX_IN_FLIGHT=0",
	)
	if httpAddr != "" {
		env = append(env, "HTTP_ADDR="+httpAddr)
	}
	env = append(env, c.railEnv...)
	return append(env, c.extraEnv...)
}

// inheritedEnv is what every child process keeps of the tool's own
// environment: PATH and HOME, nothing else.
func inheritedEnv() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
}

// startServer runs `payoutd api` of bin on c.apiAddr, or a free port of
// 127.0.0.1, until stop is called. It returns once /readyz answers 200.
func startServer(ctx context.Context, bin *payoutdBinary, c serverConfig, logs io.Writer) (*serverProcess, error) {
	addr := c.apiAddr
	if addr == "" {
		var err error
		if addr, err = freeLoopbackAddr(); err != nil {
			return nil, err
		}
	}
	s, err := startProcess(bin, "api", c.environ(addr), logs)
	if err != nil {
		return nil, err
	}
	s.base = "http://" + addr
	if err := s.waitReady(ctx); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// startWorker runs `payoutd worker` of bin until stop is called. The
// worker has no readiness endpoint: it is running once started.
func startWorker(bin *payoutdBinary, c serverConfig, logs io.Writer) (*serverProcess, error) {
	return startProcess(bin, "worker", c.environ(""), logs)
}

func startProcess(bin *payoutdBinary, command string, environ []string, logs io.Writer) (*serverProcess, error) {
	return startProcessArgs(bin, command, []string{command}, environ, logs)
}

// startProcessArgs runs bin with args (args[0] is the command, named
// command in errors and before each line of its output in logs).
func startProcessArgs(bin *payoutdBinary, command string, args, environ []string, logs io.Writer) (*serverProcess, error) {
	s := &serverProcess{command: command, exited: make(chan struct{})}
	s.cmd = exec.Command(bin.path, args...)
	s.cmd.Env = environ
	out := &prefixWriter{w: logs, prefix: []byte(command + ": ")}
	s.cmd.Stdout, s.cmd.Stderr = out, out
	s.cmd.SysProcAttr = childProcAttr()
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start payoutd %s: %w", command, err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	return s, nil
}

// waitReady polls /readyz until it answers 200.
func (s *serverProcess) waitReady(ctx context.Context) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(readyTimeout)
	for {
		resp, err := client.Get(s.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("payoutd api at %s not ready after %s", s.base, readyTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.exited:
			return fmt.Errorf("payoutd api exited before it was ready: %v", s.err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// pid is the server's process id.
func (s *serverProcess) pid() int { return s.cmd.Process.Pid }

// stop sends SIGTERM and waits for a graceful exit, killing the process
// when it takes longer than stopTimeout. It is safe to call more than once.
func (s *serverProcess) stop() error {
	select {
	case <-s.exited:
		return s.exitError()
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		return s.exitError()
	case <-time.After(stopTimeout):
		s.cmd.Process.Kill()
		<-s.exited
		return fmt.Errorf("payoutd %s did not stop within %s after SIGTERM; killed", s.command, stopTimeout)
	}
}

func (s *serverProcess) exitError() error {
	if s.err != nil {
		return fmt.Errorf("payoutd %s: %w", s.command, s.err)
	}
	return nil
}

// stopLogged stops p, reporting a failure to stop as a warning.
func stopLogged(p *serverProcess, stderr io.Writer) {
	if err := p.stop(); err != nil {
		progress(stderr, "warning: %v", err)
	}
}

// buildRevision reads the VCS stamp go build put in the binary.
func buildRevision(bin string) string {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return ""
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value[:min(12, len(s.Value))]
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "+dirty"
		}
	}
	if rev == "" {
		return ""
	}
	return rev + dirty
}

// freeLoopbackAddr returns 127.0.0.1:<a port free right now>.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return "127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), nil
}

// prefixWriter writes each complete line with a prefix, so the server's log
// lines stand out from the tool's output.
type prefixWriter struct {
	mu      sync.Mutex
	w       io.Writer
	prefix  []byte
	partial []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.partial = append(p.partial, b...)
	for {
		i := bytes.IndexByte(p.partial, '\n')
		if i < 0 {
			break
		}
		line := append(append([]byte{}, p.prefix...), p.partial[:i+1]...)
		if _, err := p.w.Write(line); err != nil {
			return 0, err
		}
		p.partial = p.partial[i+1:]
	}
	return len(b), nil
}

// levelFilter passes on the lines of a JSON log except those at INFO or
// DEBUG: a simulator logs every payout at info, which would bury the
// tool's own output.
type levelFilter struct{ w io.Writer }

func (f *levelFilter) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte(`"level":"INFO"`)) || bytes.Contains(b, []byte(`"level":"DEBUG"`)) {
		return len(b), nil
	}
	return f.w.Write(b)
}
