// Package authcache keeps the API callers authenticated recently in memory,
// so that a request does not read its credential and client rows again, and
// forgets a client as soon as an operator changes it.
//
// Every request is authenticated by its API key; reading the credential and
// its client from PostgreSQL was half of the database work of a balance
// read. A change to a client (credentials rotated, allow-list, withdrawals,
// fees or webhook URLs updated) is announced on a Redis channel by the
// process that committed it, and every API instance listening drops that
// client at once. Entries also expire after a TTL (AUTH_CACHE_TTL), which
// bounds how long a lost announcement can leave a changed client in memory.
package authcache

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/payoutd/payoutd/models"
)

// Channel is the Redis channel on which client changes are announced; the
// message is the client id.
const Channel = "payoutd:clients:changed"

// Cache maps API key hashes to the callers they authenticate. A nil *Cache
// caches nothing: every lookup loads.
type Cache struct {
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	entries map[string]entry
	// generation counts forgets; a load that overlapped one is not kept,
	// since it may have read the client before the change committed.
	generation uint64
}

type entry struct {
	principal models.Principal
	expires   time.Time
}

// New returns a cache keeping callers for ttl; nil when ttl is not
// positive (caching off). now is the clock; nil means time.Now.
func New(ttl time.Duration, now func() time.Time) *Cache {
	if ttl <= 0 {
		return nil
	}
	if now == nil {
		now = time.Now
	}
	return &Cache{ttl: ttl, now: now, entries: map[string]entry{}}
}

// Principal returns the caller of keyHash from memory or from load, which
// is remembered unless a change was announced while it ran. Errors of load
// (an unknown key among them) are returned and never remembered. Each call
// gets its own copy, so a handler cannot alter what others see.
func (c *Cache) Principal(keyHash string, load func() (*models.Principal, error)) (*models.Principal, error) {
	if c == nil {
		return load()
	}
	c.mu.Lock()
	e, ok := c.entries[keyHash]
	generation := c.generation
	c.mu.Unlock()
	if ok && c.now().Before(e.expires) {
		p := e.principal
		return &p, nil
	}
	p, err := load()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.generation == generation {
		c.entries[keyHash] = entry{principal: *p, expires: c.now().Add(c.ttl)}
	}
	c.mu.Unlock()
	return p, nil
}

// Forget drops every entry of the client.
func (c *Cache) Forget(clientID uuid.UUID) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.generation++
	for hash, e := range c.entries {
		if e.principal.Client.ID == clientID {
			delete(c.entries, hash)
		}
	}
}

// ForgetAll drops every entry.
func (c *Cache) ForgetAll() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.generation++
	clear(c.entries)
}

// Len is the number of entries held, expired ones included.
func (c *Cache) Len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// Listen applies the changes announced on Channel until ctx ends. Whenever
// the subscription is (re)established everything is forgotten:
// announcements made while it was down were lost. go-redis reconnects and
// resubscribes by itself. ready, when not nil, is closed once the first
// subscription is confirmed.
func (c *Cache) Listen(ctx context.Context, rdb *redis.Client, ready chan<- struct{}) {
	if c == nil {
		return
	}
	sub := rdb.Subscribe(ctx, Channel)
	defer sub.Close()
	// The channel, unlike Receive, stops with Close and so with ctx.
	messages := sub.ChannelWithSubscriptions()
	for {
		select {
		case <-ctx.Done():
			return
		case msg, ok := <-messages:
			if !ok {
				return
			}
			switch m := msg.(type) {
			case *redis.Subscription:
				c.ForgetAll()
				if ready != nil && m.Kind == "subscribe" {
					close(ready)
					ready = nil
				}
			case *redis.Message:
				id, err := uuid.Parse(m.Payload)
				if err != nil {
					slog.WarnContext(ctx, "malformed client change announcement; cached callers forgotten",
						slog.String("channel", Channel))
					c.ForgetAll()
					continue
				}
				c.Forget(id)
			}
		}
	}
}

// Announce tells every listening API instance that the client changed.
// Call it after the change committed.
func Announce(ctx context.Context, rdb *redis.Client, clientID uuid.UUID) error {
	return rdb.Publish(ctx, Channel, clientID.String()).Err()
}
