package railcheck

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"

	"github.com/payoutd/payoutd/internal/safeurl"
)

// unreachable says why err is a failure to reach the provider at all (no
// name, no connection, no TLS session, no answer in time, a connection
// dropped before an answer); "" when err is an answer of the provider's.
func unreachable(err error) string {
	var (
		dns      *net.DNSError
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		record   tls.RecordHeaderError
		netErr   net.Error
		op       *net.OpError
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &dns):
		return "the host name does not resolve (" + dns.Err + ")"
	case errors.As(err, &unknown), errors.As(err, &hostname), errors.As(err, &invalid), errors.As(err, &verify):
		return "its TLS certificate is refused: " + errText(err)
	case errors.As(err, &record), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return "it does not speak TLS (an http server behind an https URL?)"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused (nothing listens there)"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "no answer in time"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
		return "the connection was closed before an answer"
	case errors.As(err, &op) && op.Op == "dial":
		return errText(op.Err)
	}
	return ""
}

// errText is err's innermost message worth showing: a transport error's
// cause without the URL and method *url.Error puts before it.
func errText(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// hostPort is the host:port of a base URL, with the scheme's default port.
func hostPort(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return safeurl.Display(raw)
	}
	if u.Port() != "" {
		return u.Host
	}
	port := "443"
	if u.Scheme == "http" {
		port = "80"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// reachFix is the fix of a provider out of reach for why (unreachable's
// sentence).
func reachFix(urlVar, raw, hp, why string) string {
	setting := safeurl.Setting(urlVar, raw)
	switch {
	case strings.HasPrefix(why, "its TLS certificate"):
		return "check the host of " + setting + "; a proxy that intercepts TLS on the way to " + hp + " needs its CA among this machine's trusted roots"
	case strings.HasPrefix(why, "it does not speak TLS"):
		return "check the scheme and port of " + setting
	}
	return "check " + setting + " (the provider's API, or a simulator that runs) and that this machine may connect out to " +
		hp + " (firewall egress rules, HTTPS_PROXY, DNS)"
}
