package main

import (
	"net/http"
	"net/url"
	"testing"
)

// loopbackHost and crossSite, case by case.
func TestDevInboxGuardRules(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.0.0.1:8080": true, "[::1]:8080": true, "[::1]": true, "localhost": true, "LocalHost:1": true,
		"127.0.0.2:8080": true, "": false, "attacker.example": false, "attacker.example:8080": false, "localhost.attacker.example": false,
		"192.168.1.10:8080": false, "0.0.0.0:8080": false, "[::]:8080": false, "127.0.0.1.nip.io:8080": false,
		"localhost:8080@attacker.example": false, "localhost:": false,
	} {
		if got := loopbackHost(host); got != want {
			t.Errorf("loopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
	for _, c := range []struct {
		site, origin string
		refused      bool
	}{
		{"", "", false}, {"none", "", false}, {"same-origin", "http://127.0.0.1:8080", false},
		{"cross-site", "", true}, {"same-site", "", true}, {"whatever", "", true},
		{"", "http://127.0.0.1:8080", false}, {"", "http://localhost:8080", true}, {"", "http://127.0.0.1:9090", true},
		{"", "http://evil.example", true}, {"", "null", true}, {"", "file://", true},
	} {
		r := &http.Request{Method: http.MethodPost, Host: "127.0.0.1:8080", Header: http.Header{}, URL: &url.URL{Path: "/dev/inbox/mode"}}
		if c.site != "" {
			r.Header.Set("Sec-Fetch-Site", c.site)
		}
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		if got := crossSite(r) != ""; got != c.refused {
			t.Errorf("Sec-Fetch-Site %q, Origin %q: refused %v, want %v (%s)", c.site, c.origin, got, c.refused, crossSite(r))
		}
	}
}
