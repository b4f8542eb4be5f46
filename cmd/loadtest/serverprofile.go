package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"time"
)

// serverProfile fetches a CPU profile of the started `payoutd api` over
// the measured window from its /debug/pprof/profile, with operator
// credentials the tool made up for the run, and writes it to a file: what
// the real process spends, HTTP and TCP included (-inprocess-profile
// leaves both out).
type serverProfile struct {
	path     string
	base     string // the api's base URL, set once it runs
	user     string
	password string
	window   time.Duration
	done     chan struct{}
	err      error
}

func newServerProfile(path string, window time.Duration) (*serverProfile, error) {
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	return &serverProfile{path: path, user: "loadtest", password: hex.EncodeToString(secret), window: window}, nil
}

// env is what the server needs to answer the profile request.
func (p *serverProfile) env() []string {
	return []string{"ADMIN_USER=" + p.user, "ADMIN_PASSWORD=" + p.password}
}

func (p *serverProfile) opened() {
	p.done = make(chan struct{})
	go func() {
		defer close(p.done)
		p.err = p.fetch()
	}()
}

// closed waits for the profile, which the server ends after the window's
// whole seconds.
func (p *serverProfile) closed() {
	if p.done != nil {
		<-p.done
	}
}

func (p *serverProfile) fetch() error {
	seconds := int(math.Ceil(p.window.Seconds()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds)*time.Second+30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", p.base, seconds), nil)
	if err != nil {
		return err
	}
	if p.user != "" { // the worker's pprof listener (concurrent_evidence.go) takes none
		req.SetBasicAuth(p.user, p.password)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET /debug/pprof/profile: %s: %s", resp.Status, body)
	}
	f, err := os.Create(p.path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
