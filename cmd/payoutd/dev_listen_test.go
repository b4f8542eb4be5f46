package main

import (
	"net"
	"testing"
)

// dev prints its operator password and serves the webhook inbox without a
// login: unless HTTP_ADDR says otherwise, only this machine may reach it.
func TestDevListensOnLoopbackUnlessToldOtherwise(t *testing.T) {
	for _, tc := range []struct {
		env      string // HTTP_ADDR; "" unset
		want     string
		loopback bool
	}{
		{env: "", want: "127.0.0.1:8080", loopback: true},
		{env: ":9000", want: ":9000"},
		{env: "127.0.0.1:0", want: "127.0.0.1:0", loopback: true},
	} {
		cfg, err := devConfig(func(k string) string {
			if k == "HTTP_ADDR" {
				return tc.env
			}
			return ""
		})
		if err != nil {
			t.Fatal(err)
		}
		if cfg.HTTPAddr != tc.want {
			t.Errorf("HTTP_ADDR %q: dev listens on %q, want %q", tc.env, cfg.HTTPAddr, tc.want)
		}
		if !tc.loopback {
			continue
		}
		// Where Go actually listens for that address: every IP it
		// resolves to for a listener must be a loopback one.
		addr, err := net.ResolveTCPAddr("tcp", cfg.HTTPAddr)
		if err != nil {
			t.Fatal(err)
		}
		if !addr.IP.IsLoopback() {
			t.Errorf("HTTP_ADDR %q: dev listens on %s, reachable from other machines", tc.env, addr)
		}
	}
}
