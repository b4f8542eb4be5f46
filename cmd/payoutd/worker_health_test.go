package main

import (
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/tasks"
)

// A worker with METRICS_ADDR answers /healthz and /readyz to anyone (so
// that `payoutd healthcheck --worker`, the compose health check, passes),
// and its /metrics, behind the operators' credentials, counts each task it
// ran by type and outcome.
func TestWorkerHealthAndTaskMetrics(t *testing.T) {
	_, dbURL := testenv.DBWithURL(t)
	redisURL := testenv.RedisDatabase(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	env := map[string]string{"DATABASE_URL": dbURL, "REDIS_URL": redisURL, "SECRETS_KEY": hex.EncodeToString(make([]byte, 32)),
		"APP_ENV": "staging", "LOG_LEVEL": "warn", "METRICS_ADDR": addr, "ADMIN_USER": "ops", "ADMIN_PASSWORD": "correct-horse-battery"}
	getenv := func(k string) string { return env[k] }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"worker"}, io.Discard, io.Discard, getenv) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("the worker did not stop")
		}
	})

	get := func(path string, auth bool) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		if auth {
			req.SetBasicAuth("ops", "correct-horse-battery")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	deadline := time.Now().Add(20 * time.Second)
	for code, _ := get("/readyz", false); code != http.StatusOK; code, _ = get("/readyz", false) {
		if time.Now().After(deadline) {
			t.Fatalf("the worker's /readyz never answered 200 (last %d)", code)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, body := get("/healthz", false); code != http.StatusOK || body != `{"status":"ok"}` {
		t.Fatalf("/healthz: %d %s", code, body)
	}
	if code := run(context.Background(), []string{"healthcheck", "--worker"}, io.Discard, io.Discard, getenv); code != 0 {
		t.Fatalf("payoutd healthcheck --worker: exit %d", code)
	}
	if code, _ := get("/metrics", false); code != http.StatusUnauthorized {
		t.Fatalf("/metrics without credentials: %d", code)
	}

	// A task for the worker: it runs (and fails: there is no such payment),
	// and /metrics counts it by type and outcome.
	opt, err := asynq.ParseRedisURI(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	queue := tasks.NewClient(opt)
	defer queue.Close()
	if err := queue.EnqueuePaymentExpire(context.Background(), uuid.New(), time.Now()); err != nil {
		t.Fatal(err)
	}
	want := `payoutd_tasks_processed_total{outcome="error",type="payment:expire"} 1`
	deadline = time.Now().Add(20 * time.Second)
	for {
		_, body := get("/metrics", true)
		if strings.Contains(body, want) && strings.Contains(body, `payoutd_task_duration_seconds_count{type="payment:expire"} 1`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics never showed %s:\n%s", want, grepLines(body, "payoutd_task"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
