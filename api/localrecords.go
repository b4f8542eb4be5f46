package api

import (
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/payoutd/payoutd/internal/ratelimit"
	"github.com/payoutd/payoutd/models"
)

// localSignatures remembers, in this process, the quote signatures it
// accepted while Redis could not answer, for signatureMemory like Redis's
// record. A quote is an account inquiry that names the account holder:
// without this record a captured signed quote could be sent again and
// again while Redis is down. Each signature is accepted once, even for the
// very same request: the merchant signs a retried quote afresh, which its
// client does for every request anyway. Another instance knows nothing of
// this record, so the same signature may pass once per instance, within
// each instance's own quote limit.
//
// Its memory is bounded in total and per client, so that one client
// sending fresh signatures at full speed fills only its own share: a
// signature beyond either bound is refused with errReplayCheckUnavailable
// (503), never accepted unrecorded.
type localSignatures struct {
	mu   sync.Mutex
	used map[string]struct{}
	// order holds the records by expiry (one lifetime for all, so the
	// order they were made in), from head on.
	order     []localSignature
	head      int
	perClient map[uuid.UUID]int
	now       func() time.Time
	down      ratelimit.DownWarning
}

type localSignature struct {
	key     string
	client  uuid.UUID
	expires time.Time
}

// A client quoting at QUOTE_RATE_LIMIT's default makes 900 quotes in
// signatureMemory; its share leaves room for ten times that.
const maxLocalSignatures, maxLocalSignaturesPerClient = 200_000, 10_000

func newLocalSignatures() *localSignatures {
	return &localSignatures{used: map[string]struct{}{}, perClient: map[uuid.UUID]int{}, now: time.Now}
}

// record remembers key for client; false when it was remembered already.
func (l *localSignatures) record(client uuid.UUID, key string) (bool, error) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.forgetExpired(now)
	if _, ok := l.used[key]; ok {
		return false, nil
	}
	if len(l.used) >= maxLocalSignatures || l.perClient[client] >= maxLocalSignaturesPerClient {
		return false, errReplayCheckUnavailable
	}
	l.used[key] = struct{}{}
	l.perClient[client]++
	l.order = append(l.order, localSignature{key: key, client: client, expires: now.Add(signatureMemory)})
	return true, nil
}

func (l *localSignatures) forgetExpired(now time.Time) {
	for l.head < len(l.order) && !now.Before(l.order[l.head].expires) {
		r := l.order[l.head]
		l.order[l.head] = localSignature{}
		l.head++
		delete(l.used, r.key)
		if l.perClient[r.client]--; l.perClient[r.client] <= 0 {
			delete(l.perClient, r.client)
		}
	}
	// Give the forgotten front back once it is most of the slice.
	if l.head > 1024 && l.head > len(l.order)/2 {
		l.order = append([]localSignature(nil), l.order[l.head:]...)
		l.head = 0
	}
}

// rememberQuoteLocally is rememberSignature's answer for a quote when Redis
// could not answer (redisErr): the signature is checked against and
// recorded in localSignatures.
func (s *Server) rememberQuoteLocally(c *gin.Context, clientID uuid.UUID, key string, redisErr error) error {
	ctx := c.Request.Context()
	first, err := s.localSignatures.record(clientID, key)
	switch {
	case err != nil:
		slog.ErrorContext(ctx, "signature replay check unavailable and this process's record of quote signatures is full; quote refused",
			slog.String("client_id", clientID.String()), slog.Any("error", redisErr))
		return err
	case !first:
		return models.ErrSignatureReused
	}
	s.localSignatures.down.Log(ctx, "signature replay check unavailable; quote signature recorded in this process", redisErr)
	return nil
}

// isQuote reports whether the request is the disbursement quote.
func isQuote(c *gin.Context) bool {
	return c.Request.Method == http.MethodPost && c.FullPath() == createRoute+"/quote"
}
