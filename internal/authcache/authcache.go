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
//
// Unknown keys are remembered too, for MissTTL: a caller sending a revoked
// or made-up key again and again would otherwise cost a database lookup
// each time. Any announced change (a client created, its key rotated)
// forgets them all, so a new key works at once on every instance.
package authcache

import (
	"context"
	"errors"
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
	// misses are the key hashes found unknown, until when; missOrder the
	// same by expiry (one lifetime for all: the order they were found in),
	// from missHead on.
	misses    map[string]time.Time
	missOrder []miss
	missHead  int
	// generation counts forgets; a load that overlapped one is not kept,
	// since it may have read the client before the change committed.
	generation uint64
}

type miss struct {
	keyHash string
	expires time.Time
}

// MissTTL is how long an unknown key hash is answered from memory. An
// announced change forgets every miss at once; the TTL bounds a lost
// announcement (a key created while Redis was down).
const MissTTL = 30 * time.Second

// maxMisses bounds the unknown key hashes kept: beyond it the oldest is
// forgotten first.
const maxMisses = 10_000

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
	return &Cache{ttl: ttl, now: now, entries: map[string]entry{}, misses: map[string]time.Time{}}
}

// Principal returns the caller of keyHash from memory or from load, which
// is remembered unless a change was announced while it ran. An unknown key
// (load's models.ErrInvalidAPIKey) is remembered likewise, for MissTTL;
// other errors of load are returned and never remembered. Each call gets
// its own copy, so a handler cannot alter what others see.
func (c *Cache) Principal(keyHash string, load func() (*models.Principal, error)) (*models.Principal, error) {
	if c == nil {
		return load()
	}
	now := c.now()
	c.mu.Lock()
	e, ok := c.entries[keyHash]
	missed, known := c.misses[keyHash]
	generation := c.generation
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		p := e.principal
		return &p, nil
	}
	if known && now.Before(missed) {
		return nil, models.ErrInvalidAPIKey
	}
	p, err := load()
	if errors.Is(err, models.ErrInvalidAPIKey) {
		c.mu.Lock()
		if c.generation == generation {
			c.rememberMiss(keyHash, c.now())
		}
		c.mu.Unlock()
	}
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

// rememberMiss keeps keyHash as unknown until now+MissTTL. Called with mu
// held.
func (c *Cache) rememberMiss(keyHash string, now time.Time) {
	for c.missHead < len(c.missOrder) {
		m := c.missOrder[c.missHead]
		if now.Before(m.expires) && len(c.misses) < maxMisses {
			break
		}
		c.missOrder[c.missHead] = miss{}
		c.missHead++
		// A hash found unknown again since has a later entry of its own.
		if c.misses[m.keyHash].Equal(m.expires) {
			delete(c.misses, m.keyHash)
		}
	}
	if c.missHead > 1024 && c.missHead > len(c.missOrder)/2 {
		c.missOrder = append([]miss(nil), c.missOrder[c.missHead:]...)
		c.missHead = 0
	}
	expires := now.Add(MissTTL)
	c.misses[keyHash] = expires
	c.missOrder = append(c.missOrder, miss{keyHash: keyHash, expires: expires})
}

// forgetMisses drops every unknown key hash: any change may have made one
// known (a client created, a key rotated). Called with mu held.
func (c *Cache) forgetMisses() {
	clear(c.misses)
	c.missOrder, c.missHead = nil, 0
}

// Forget drops every entry of the client, and every unknown key.
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
	c.forgetMisses()
}

// ForgetAll drops every entry and every unknown key.
func (c *Cache) ForgetAll() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.generation++
	clear(c.entries)
	c.forgetMisses()
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
