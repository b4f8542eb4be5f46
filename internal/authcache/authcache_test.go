package authcache_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payoutd/payoutd/internal/authcache"
	"github.com/payoutd/payoutd/internal/testenv"
	"github.com/payoutd/payoutd/models"
)

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// loader counts the loads of a principal of client id named name.
type loader struct {
	id    uuid.UUID
	name  string
	loads int
	err   error
}

func (l *loader) load() (*models.Principal, error) {
	l.loads++
	if l.err != nil {
		return nil, l.err
	}
	return &models.Principal{Client: models.Client{ID: l.id, Name: l.name}}, nil
}

func TestPrincipalIsLoadedOncePerTTL(t *testing.T) {
	clk := &clock{t: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)}
	c := authcache.New(2*time.Second, clk.now)
	l := &loader{id: uuid.New(), name: "Toko"}
	for i := 0; i < 3; i++ {
		p, err := c.Principal("hash-a", l.load)
		if err != nil || p.Client.Name != "Toko" {
			t.Fatalf("lookup %d: %+v, %v", i, p, err)
		}
	}
	if l.loads != 1 {
		t.Fatalf("loads within the TTL = %d, want 1", l.loads)
	}
	clk.add(2 * time.Second)
	if _, err := c.Principal("hash-a", l.load); err != nil {
		t.Fatal(err)
	}
	if l.loads != 2 {
		t.Fatalf("loads after the TTL = %d, want 2", l.loads)
	}
}

func TestErrorsAreNeverCached(t *testing.T) {
	c := authcache.New(time.Minute, nil)
	l := &loader{id: uuid.New(), err: errors.New("database unavailable")}
	for i := 0; i < 2; i++ {
		if _, err := c.Principal("h", l.load); err == nil {
			t.Fatalf("lookup %d: no error", i)
		}
	}
	if l.loads != 2 || c.Len() != 0 {
		t.Fatalf("a failed lookup must be tried again: loads %d, entries %d", l.loads, c.Len())
	}
}

// An unknown key is looked up once per MissTTL, whatever the TTL of
// callers: a caller repeating a revoked or made-up key costs the database
// nothing meanwhile.
func TestUnknownKeyIsRememberedForMissTTL(t *testing.T) {
	clk := &clock{t: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)}
	c := authcache.New(2*time.Second, clk.now)
	l := &loader{id: uuid.New(), err: fmt.Errorf("lookup: %w", models.ErrInvalidAPIKey)}
	for i := 0; i < 3; i++ {
		if _, err := c.Principal("unknown", l.load); !errors.Is(err, models.ErrInvalidAPIKey) {
			t.Fatalf("lookup %d: %v", i, err)
		}
		clk.add(5 * time.Second)
	}
	if l.loads != 1 || c.Len() != 0 {
		t.Fatalf("loads %d, entries %d; want 1 load and no caller", l.loads, c.Len())
	}
	clk.add(authcache.MissTTL)
	c.Principal("unknown", l.load)
	if l.loads != 2 {
		t.Fatalf("loads after MissTTL = %d, want 2", l.loads)
	}
}

// Any change forgets every unknown key, the announced client's or not: the
// change may be the creation of that very key.
func TestForgetDropsUnknownKeys(t *testing.T) {
	for name, forget := range map[string]func(*authcache.Cache){
		"Forget":    func(c *authcache.Cache) { c.Forget(uuid.New()) },
		"ForgetAll": func(c *authcache.Cache) { c.ForgetAll() },
	} {
		c := authcache.New(time.Minute, nil)
		l := &loader{id: uuid.New(), err: models.ErrInvalidAPIKey}
		c.Principal("h", l.load)
		forget(c)
		l.err = nil
		if p, err := c.Principal("h", l.load); err != nil || p.Client.ID != l.id || l.loads != 2 {
			t.Fatalf("%s: %v, %v after %d loads; want the new caller", name, p, err, l.loads)
		}
	}
}

// A lookup that found a key unknown while a change was announced may have
// read before the key was created: it is not remembered.
func TestMissOverlappingAForgetIsNotKept(t *testing.T) {
	c := authcache.New(time.Minute, nil)
	loads := 0
	racing := func() (*models.Principal, error) {
		loads++
		if loads == 1 {
			c.Forget(uuid.New())
		}
		return nil, models.ErrInvalidAPIKey
	}
	c.Principal("h", racing)
	c.Principal("h", racing)
	if loads != 2 {
		t.Fatalf("loads = %d: the overlapping miss was kept", loads)
	}
}

// The unknown keys kept are bounded: beyond, the oldest is forgotten.
func TestUnknownKeysAreBounded(t *testing.T) {
	c := authcache.New(time.Minute, nil)
	l := &loader{err: models.ErrInvalidAPIKey}
	for i := 0; i <= authcache.MaxMisses; i++ {
		c.Principal(fmt.Sprint("h", i), l.load)
	}
	if got := authcache.Misses(c); got != authcache.MaxMisses {
		t.Fatalf("%d unknown keys kept, want %d", got, authcache.MaxMisses)
	}
	loads := l.loads
	c.Principal("h0", l.load)
	c.Principal(fmt.Sprint("h", authcache.MaxMisses), l.load)
	if l.loads != loads+1 {
		t.Fatalf("loads %d, want only the oldest (h0) looked up again", l.loads-loads)
	}
}

func TestEachCallerGetsItsOwnCopy(t *testing.T) {
	c := authcache.New(time.Minute, nil)
	l := &loader{id: uuid.New(), name: "Toko"}
	p, _ := c.Principal("h", l.load)
	p.Client.Name = "changed by a handler"
	again, _ := c.Principal("h", l.load)
	if again.Client.Name != "Toko" {
		t.Fatalf("a caller's change leaked into the cache: %q", again.Client.Name)
	}
}

func TestForgetDropsOnlyThatClient(t *testing.T) {
	c := authcache.New(time.Minute, nil)
	a := &loader{id: uuid.New(), name: "A"}
	b := &loader{id: uuid.New(), name: "B"}
	c.Principal("key-a1", a.load)
	c.Principal("key-a2", a.load) // a client may have had two keys cached
	c.Principal("key-b", b.load)
	c.Forget(a.id)
	c.Principal("key-a1", a.load)
	c.Principal("key-a2", a.load)
	c.Principal("key-b", b.load)
	if a.loads != 4 || b.loads != 1 {
		t.Fatalf("loads after forgetting A: A %d (want 4), B %d (want 1)", a.loads, b.loads)
	}
}

// A load that started before a change was announced may have read the
// client as it was: it answers its own request but is not kept.
func TestLoadOverlappingAForgetIsNotKept(t *testing.T) {
	c := authcache.New(time.Minute, nil)
	id := uuid.New()
	loads := 0
	stale := func() (*models.Principal, error) {
		loads++
		if loads == 1 {
			c.Forget(id) // the change commits while the first load runs
		}
		return &models.Principal{Client: models.Client{ID: id}}, nil
	}
	c.Principal("h", stale)
	c.Principal("h", stale)
	if loads != 2 {
		t.Fatalf("loads = %d: the overlapping load was kept", loads)
	}
}

func TestNilCacheAlwaysLoads(t *testing.T) {
	c := authcache.New(0, nil)
	if c != nil {
		t.Fatal("a zero TTL must turn caching off")
	}
	l := &loader{id: uuid.New()}
	c.Principal("h", l.load)
	c.Principal("h", l.load)
	c.Forget(l.id)
	if l.loads != 2 {
		t.Fatalf("loads = %d, want 2", l.loads)
	}
}

// An announcement on Redis reaches a listening cache: the client is looked
// up again on its next request, others stay cached.
func TestAnnouncedChangeIsForgotten(t *testing.T) {
	rdb, _ := testenv.Redis(t)
	c := authcache.New(time.Hour, nil)
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan struct{})
	go func() { defer close(done); c.Listen(ctx, rdb, ready) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-ready:
	case <-time.After(5 * time.Second):
		t.Fatal("the subscription was not confirmed")
	}

	changed := &loader{id: uuid.New()}
	other := &loader{id: uuid.New()}
	c.Principal("changed", changed.load)
	c.Principal("other", other.load)
	if err := authcache.Announce(ctx, rdb, changed.id); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for c.Len() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the announced client is still cached (%d entries)", c.Len())
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.Principal("changed", changed.load)
	c.Principal("other", other.load)
	if changed.loads != 2 || other.loads != 1 {
		t.Fatalf("loads: changed %d (want 2), other %d (want 1)", changed.loads, other.loads)
	}
}
