package api

import (
	"context"
	"crypto/subtle"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/payoutd/payoutd/internal/config"
)

// adminChallenge asks a browser for the operator's credentials. The
// operators' error answers are declared with the others (errors.go).
const adminChallenge = `Basic realm="payoutd operations", charset="UTF-8"`

// adminLoginLimit is how many failed operator logins one client address
// may make: 10 a minute, then one more every 6 s.
var adminLoginLimit = redis_rate.PerMinute(10)

// requireAdmin checks HTTP basic credentials in constant time, after the
// client address's failed logins (gin's ClientIP, so TRUSTED_PROXIES
// decides whose address counts) allowed one more try.
func (s *Server) requireAdmin(c *gin.Context) {
	if err := s.logins.check(c.Writer, c.Request, s.cfg, c.ClientIP()); err != nil {
		fail(c, err)
		return
	}
	c.Next()
}

// refuseCrossOrigin refuses a state-changing request that a browser marks
// as coming from another site (Sec-Fetch-Site, or Origin against Host):
// the browser would attach the operator's basic credentials by itself.
// Safe methods pass, and so do scripts, which send neither header.
func (s *Server) refuseCrossOrigin(c *gin.Context) {
	if err := s.crossOrigin.Check(c.Request); err != nil {
		fail(c, errCrossOrigin)
		return
	}
	c.Next()
}

// refuseWrites keeps a read-only dashboard read-only with a JSON answer
// (asynqmon's own refusal is plain text).
func refuseWrites(c *gin.Context) {
	if c.Request.Method != http.MethodGet && c.Request.Method != http.MethodHead {
		fail(c, errOpsReadOnly)
		return
	}
	c.Next()
}

// newCrossOriginProtection is Go's protection against cross-site requests,
// answering a refusal in JSON.
func newCrossOriginProtection() *http.CrossOriginProtection {
	p := http.NewCrossOriginProtection()
	p.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, errCrossOrigin)
	}))
	return p
}

// AdminOnly serves h to operators only, as requireAdmin does, for servers
// not run by the gin engine (the worker's METRICS_ADDR): cross-site state
// changes refused, failed logins throttled per peer address (counted in
// rdb, in the process when rdb is nil or down), credentials compared in
// constant time.
func AdminOnly(cfg config.Config, rdb *redis.Client, h http.Handler) http.Handler {
	logins := newLoginThrottle(rdb)
	return newCrossOriginProtection().Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ip, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			ip = r.RemoteAddr
		}
		if err := logins.check(w, r, cfg, ip); err != nil {
			writeError(w, err)
			return
		}
		h.ServeHTTP(w, r)
	}))
}

// isAdmin reports whether r carries ADMIN_USER and ADMIN_PASSWORD, both
// configured, compared in constant time.
func isAdmin(cfg config.Config, r *http.Request) bool {
	user, pass, ok := r.BasicAuth()
	configured := cfg.AdminUser != "" && cfg.AdminPassword != ""
	userOK := subtle.ConstantTimeCompare([]byte(user), []byte(cfg.AdminUser)) == 1
	passOK := subtle.ConstantTimeCompare([]byte(pass), []byte(cfg.AdminPassword)) == 1
	return ok && configured && userOK && passOK
}

// loginThrottle counts failed operator logins per client address in Redis
// (GCRA, shared by every instance), or in the process while Redis does
// not answer: a guess at the password costs the guesser, and a Redis
// outage neither locks operators out nor lifts the limit.
type loginThrottle struct {
	limiter *redis_rate.Limiter // nil: in the process only
	local   localFailures
}

func newLoginThrottle(rdb *redis.Client) *loginThrottle {
	t := &loginThrottle{local: localFailures{byIP: map[string]*failureWindow{}}}
	if rdb != nil {
		t.limiter = redis_rate.NewLimiter(rdb)
	}
	return t
}

// check answers a request for an operator route: nil when its credentials
// are right, else the error to answer (errAdminThrottled while the address
// is throttled, before the password is compared; errAdminRequired
// otherwise, counting the failure when credentials were presented: a
// browser's first request without them is how it learns to ask).
func (t *loginThrottle) check(w http.ResponseWriter, r *http.Request, cfg config.Config, ip string) error {
	ctx := r.Context()
	if wait := t.blocked(ctx, ip); wait > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
		return errAdminThrottled
	}
	if isAdmin(cfg, r) {
		return nil
	}
	if _, _, presented := r.BasicAuth(); presented {
		t.failed(ctx, ip)
	}
	w.Header().Set("WWW-Authenticate", adminChallenge)
	return errAdminRequired
}

func loginKey(ip string) string { return "admin-login-failures:" + ip }

// blocked reports how long ip must wait before its next login attempt; 0
// when it may try now.
func (t *loginThrottle) blocked(ctx context.Context, ip string) time.Duration {
	if t.limiter != nil {
		// Cost 0 reads the count without adding to it.
		res, err := t.limiter.AllowAtMost(ctx, loginKey(ip), adminLoginLimit, 0)
		if err == nil {
			return max(res.RetryAfter, 0)
		}
		slog.WarnContext(ctx, "operator login throttle: Redis unavailable; counting in this process", slog.Any("error", err))
	}
	return t.local.blocked(ip, time.Now())
}

// failed counts one failed login of ip.
func (t *loginThrottle) failed(ctx context.Context, ip string) {
	if t.limiter != nil {
		if _, err := t.limiter.Allow(ctx, loginKey(ip), adminLoginLimit); err == nil {
			return
		}
	}
	t.local.failed(ip, time.Now())
}

// localFailures is the in-process count: a fixed one-minute window per
// address, at most maxLocalAddresses of them (beyond that, addresses not
// yet counted are not, rather than memory growing without bound).
type localFailures struct {
	mu   sync.Mutex
	byIP map[string]*failureWindow
}

type failureWindow struct {
	n     int
	until time.Time
}

const maxLocalAddresses = 10000

func (l *localFailures) blocked(ip string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.byIP[ip]
	if w == nil || !now.Before(w.until) || w.n < adminLoginLimit.Burst {
		return 0
	}
	return w.until.Sub(now)
}

func (l *localFailures) failed(ip string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.byIP[ip]
	if w == nil || !now.Before(w.until) {
		if len(l.byIP) >= maxLocalAddresses {
			for k, v := range l.byIP {
				if !now.Before(v.until) {
					delete(l.byIP, k)
				}
			}
			if len(l.byIP) >= maxLocalAddresses {
				return
			}
		}
		w = &failureWindow{until: now.Add(adminLoginLimit.Period)}
		l.byIP[ip] = w
	}
	w.n++
}
