package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
	"github.com/hibiken/asynq"

	"github.com/payoutd/payoutd/internal/config"
	"github.com/payoutd/payoutd/internal/testenv"
)

// An operator opens /ops/queues with the operators'
// credentials and, after a short load, the dashboard's Metrics page draws
// the queue's graphs from a real Prometheus that scrapes the API's
// /metrics (asynq_* series) every second, while a worker processes tasks.
func TestDashboardGraphsInBrowser(t *testing.T) {
	requireChromium(t)
	prometheus := requirePrometheus(t)
	promAddr := freeLoopbackAddr(t)
	b := setup(t, setupOptions{dashboard: true, now: time.Now, configure: func(c *config.Config) {
		withOperators(c)
		c.PrometheusURL = "http://" + promAddr
	}})
	queueRedis, prefix := testenv.Queue(t, b.dashRedis)
	// The queue gauges, as `payoutd api` registers them beside the dashboard.
	closeQueues, err := b.metrics.CollectQueues(queueRedis)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeQueues() })
	ts := httptest.NewServer(b.server.Handler())
	t.Cleanup(ts.Close)
	queue := prefix + "default"
	runQueueActivity(t, queueRedis, queue)

	prom := startPrometheus(t, prometheus, promAddr, ts.Listener.Addr().String(), "ops", testAdminPassword)
	prom.waitScraped(t, 10*time.Second)

	ctx, problems := browser(t, chromedp.WindowSize(1280, 900))
	logInWithBasicAuth(t, ctx, "ops", testAdminPassword)
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+dashboardPath)); err != nil {
		t.Fatalf("open %s: %v", dashboardPath, err)
	}
	// The dashboard lists the queue: the credentials were taken.
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](
		fmt.Sprintf(`document.body.innerText.includes(%q)`, queue), chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("the dashboard did not list queue %s: %v\npage: %q", queue, err, pageText(ctx))
	}
	// asynqmon shows its Metrics page only when it knows a Prometheus.
	metricsLink := fmt.Sprintf(`a[href=%q]`, dashboardPath+"/q/metrics")
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](
		fmt.Sprintf(`document.querySelector(%q) !== null`, metricsLink), chromedp.WithPollingTimeout(5*time.Second))); err != nil {
		t.Fatalf("the dashboard has no Metrics link (asynqmon's PrometheusAddress, PROMETHEUS_URL, not set?): %v\npage: %q", err, pageText(ctx))
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(metricsLink))); err != nil {
		t.Fatalf("click Metrics: %v", err)
	}

	// The page asks for the last hour at 10 s steps once when it loads: a
	// line needs two steps of samples, so the operator reloads until then.
	// Every chart draws the queue's line: each is one of asynqmon's queries
	// of the asynq_* series.
	want := []string{"Tasks Processed", "Tasks Failed", "Error Rate", "Queue Size", "Queue Latency",
		"Queue Memory Usage (approx)", "Pending Tasks", "Retry Tasks", "Archived Tasks"}
	check := fmt.Sprintf(`(() => { const charts = %s; return %s.every(t => charts.some(c => c.title === t && c.drawn && c.legend.includes(%q))); })()`,
		dashboardChartsJS, mustJSON(t, want), queue)
	deadline := time.Now().Add(graphWait)
	for {
		_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](check, chromedp.WithPollingTimeout(3*time.Second)))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			charts, _ := chromedp.Run(ctx, chromedp.Evaluate[[]dashboardChart](dashboardChartsJS))
			t.Fatalf("within %s not every chart of %v drew a line for queue %s (%v)\ncharts:\n%s\nPrometheus has: %s",
				graphWait, want, queue, err, describeCharts(charts), prom.query(t, `asynq_queue_size`))
		}
		if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
			t.Fatalf("reload the Metrics page: %v", err)
		}
	}
	var pr []string
	for _, p := range problems() {
		// Chromium fetches a page's web app manifest without credentials
		// (the manifest spec's default), so behind basic auth asynqmon's
		// manifest.json answers 401; nothing on the page needs it.
		if !strings.Contains(p, dashboardPath+"/manifest.json") {
			pr = append(pr, p)
		}
	}
	if len(pr) > 0 {
		t.Errorf("the dashboard logged problems:\n%s", strings.Join(pr, "\n"))
	}
}

// graphWait bounds the wait for the graphs once the Metrics page is open:
// a line needs samples ten seconds apart.
const graphWait = 20 * time.Second

// dashboardChart is one of the charts of asynqmon's Metrics page.
type dashboardChart struct {
	Title string `json:"title"`
	// Note is what the chart's header says besides its title (asynqmon's
	// "Failed to get metrics data: ..." when Prometheus refused the query).
	Note string `json:"note"`
	// Legend names the chart's series: one per queue.
	Legend []string `json:"legend"`
	// Lines are the d attributes of the series' paths.
	Lines []string `json:"lines"`
	// Drawn: a series has at least two points, a line one can see (a
	// single point draws nothing: asynqmon hides the dots).
	Drawn bool `json:"drawn"`
}

// dashboardChartsJS reads the charts of asynqmon's Metrics page: each is a
// recharts container after a header with the chart's title.
const dashboardChartsJS = `[...document.querySelectorAll('.recharts-responsive-container')].map(chart => {
	const header = chart.previousElementSibling;
	const title = header && header.querySelector('p') ? header.querySelector('p').textContent : '';
	const lines = [...chart.querySelectorAll('path.recharts-line-curve')].map(p => p.getAttribute('d') || '');
	return {
		title,
		note: header ? header.textContent.slice(title.length) : '',
		legend: [...chart.querySelectorAll('.recharts-legend-item-text')].map(e => e.textContent),
		lines,
		drawn: lines.some(d => /^M.*[LC]/.test(d)),
	};
})`

// describeCharts says, one line per chart, what it shows.
func describeCharts(charts []dashboardChart) string {
	if len(charts) == 0 {
		return "  (none)"
	}
	var b strings.Builder
	for _, c := range charts {
		fmt.Fprintf(&b, "  %q: %d series %q, a line drawn %v %s\n", c.Title, len(c.Lines), c.Legend, c.Drawn, c.Note)
	}
	return b.String()
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// pageText is the visible text of the page, for failure messages.
func pageText(ctx context.Context) string {
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ''`))
	if err != nil {
		return err.Error()
	}
	return s
}

// logInWithBasicAuth answers the browser's basic-auth prompts with user and
// password, as an operator types them into the dialog Chromium shows.
func logInWithBasicAuth(t *testing.T, ctx context.Context, user, password string) {
	t.Helper()
	// Answering the prompt needs the Fetch domain, which pauses every
	// request until it is let through.
	listen, stop := context.WithCancel(ctx)
	paused := chromedp.Events(listen, fetch.RequestPaused)
	prompts := chromedp.Events(listen, fetch.AuthRequired)
	var wg sync.WaitGroup
	t.Cleanup(func() { stop(); wg.Wait() })
	wg.Go(func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			chromedp.Call(listen, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
		}
	})
	wg.Go(func() {
		for ev, err := range prompts {
			if err != nil {
				return
			}
			chromedp.Call(listen, fetch.ContinueWithAuth, fetch.ContinueWithAuthParams{RequestID: ev.RequestID,
				AuthChallengeResponse: &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseProvideCredentials,
					Username: user, Password: password}})
		}
	})
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{HandleAuthRequests: new(true)}); err != nil {
		t.Fatalf("enable answering basic-auth prompts: %v", err)
	}
}

// runQueueActivity runs a worker on queue and keeps giving it tasks until
// the test ends, some of which fail, so that the queue's size, processed
// and failed counts move while Prometheus scrapes them.
func runQueueActivity(t *testing.T, opt asynq.RedisConnOpt, queue string) {
	t.Helper()
	srv := asynq.NewServer(opt, asynq.Config{Queues: map[string]int{queue: 1}, Concurrency: 2, LogLevel: asynq.FatalLevel})
	if err := srv.Start(asynq.HandlerFunc(func(_ context.Context, task *asynq.Task) error {
		if task.Type() == "test:fail" {
			return errors.New("this task fails")
		}
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	client := asynq.NewClient(opt)
	inspector := asynq.NewInspector(opt)
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			typ := "test:ok"
			if i%4 == 3 {
				typ = "test:fail"
			}
			// Failed tasks are archived at once, and every tenth waits an
			// hour: the queue holds tasks at every scrape.
			opts := []asynq.Option{asynq.Queue(queue), asynq.MaxRetry(0)}
			if i%10 == 0 {
				opts = append(opts, asynq.ProcessIn(time.Hour))
			}
			client.Enqueue(asynq.NewTask(typ, nil), opts...)
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-stopped
		srv.Shutdown()
		client.Close()
		inspector.DeleteQueue(queue, true)
		inspector.Close()
	})
}

// requirePrometheus returns the path of Prometheus's server, which Debian's
// prometheus package installs beside promtool (.ci/run installs it). It
// skips the test without it, except in CI, which must run it.
func requirePrometheus(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("prometheus is missing (CI=true): .ci/run installs the prometheus package")
		}
		t.Skip("prometheus is missing: install Debian's prometheus package to run the dashboard's graph test")
	}
	return path
}

// freeLoopbackAddr is a loopback address no one listens on now, for a
// server that cannot report the port it picked (Prometheus).
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// prometheusServer is a Prometheus process of the test's own.
type prometheusServer struct {
	base string
	logs *testenv.SyncBuffer
	done chan struct{} // closed when the process has exited
}

// startPrometheus starts Prometheus on addr, with its data in a temporary
// folder, scraping target's /metrics every second with the operators'
// basic credentials; the test's end stops it. It returns once Prometheus is
// ready.
func startPrometheus(t *testing.T, bin, addr, target, user, password string) *prometheusServer {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: payoutd-api
    metrics_path: /metrics
    basic_auth:
      username: %q
      password: %q
    static_configs:
      - targets: [%q]
`, user, password, target)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &prometheusServer{base: "http://" + addr, logs: &testenv.SyncBuffer{}, done: make(chan struct{})}
	cmd := exec.Command(bin, "--config.file="+cfgPath, "--web.listen-address="+addr,
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--log.level=warn")
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	go func() { cmd.Wait(); close(p.done) }()
	// Registered after t.TempDir's removal, so it runs before it.
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("prometheus output:\n%s", p.logs.String())
		}
	})
	p.waitFor(t, "Prometheus ready at "+p.base, 10*time.Second, func() (bool, string) {
		resp, err := http.Get(p.base + "/-/ready")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	return p
}

// waitScraped waits until Prometheus has scraped the target successfully
// twice (a rate needs two samples); failing, it says what the scrapes got.
func (p *prometheusServer) waitScraped(t *testing.T, within time.Duration) {
	t.Helper()
	p.waitFor(t, "two successful scrapes of the API's /metrics", within, func() (bool, string) {
		// up is 1 for each successful scrape, 0 for a failed one.
		n, ok := p.instant(t, `sum_over_time(up{job="payoutd-api"}[1m])`)
		return ok && n >= 2, fmt.Sprintf("%v successful scrapes; targets: %s", n, p.get(t, "/api/v1/targets"))
	})
}

// instant is the value of promQL's first sample now; false when it has none.
func (p *prometheusServer) instant(t *testing.T, promQL string) (float64, bool) {
	t.Helper()
	var answer struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(p.query(t, promQL)), &answer); err != nil || len(answer.Data.Result) == 0 {
		return 0, false
	}
	s, _ := answer.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil
}

// waitFor polls ready every 200 ms until it holds, failing the test after
// within with what the last poll said, or at once when Prometheus exits.
func (p *prometheusServer) waitFor(t *testing.T, what string, within time.Duration, ready func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, last := ready()
		if ok {
			return
		}
		select {
		case <-p.done:
			t.Fatalf("prometheus exited while waiting for %s:\n%s", what, p.logs.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s; last: %s", what, within, last)
		}
	}
}

// query is Prometheus's answer to an instant query, as JSON text.
func (p *prometheusServer) query(t *testing.T, promQL string) string {
	return p.get(t, "/api/v1/query?query="+url.QueryEscape(promQL))
}

func (p *prometheusServer) get(t *testing.T, path string) string {
	t.Helper()
	resp, err := http.Get(p.base + path)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}
