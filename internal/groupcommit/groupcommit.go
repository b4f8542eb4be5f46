// Package groupcommit is group commit without a background loop, for work
// that many goroutines ask for at the same moment and that costs less
// done together: creates and a busy wallet's finalisations written in one
// statement or transaction, signature records sent to Redis in one
// pipeline, reads answered by one query. One round trip, one commit, for a
// group of requests instead of one each.
//
// A request that queues while fewer than MaxLeaders leaders run starts
// one (beyond the first, only once BusyAt requests are queued); a leader
// takes groups off the queue (Next) and runs them (Run), until nothing is
// left, and then stops. An idle service therefore runs a
// lone request at once, and while one group waits for its round trip the
// next is already being gathered. Nothing waits on a timer; a group with
// BusyAfter only starts another leader sooner with one.
package groupcommit

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Group gathers requests of type T into groups. Its zero value is not
// usable: MaxLeaders, Next and Run must be set.
type Group[T any] struct {
	// MaxLeaders is how many groups may be under way at once.
	MaxLeaders int
	// BusyAt, when set, holds back the leaders beyond the first until at
	// least this many requests are queued: one leader gathers the largest
	// groups (the fewest round trips per request) while it keeps up, and
	// the others join only when a backlog shows it does not (a slow
	// round trip, such as a vendor's).
	BusyAt int
	// BusyAfter, when set, also starts a leader beyond the first once the
	// oldest queued request has waited this long behind the running ones:
	// a slow run (a vendor's answer) then brings in another leader without
	// a backlog of BusyAt, so that a request waits at most about this long
	// for its run to start rather than for the whole run before it.
	BusyAfter time.Duration
	// Next takes from the queue, in order, the requests that can share a
	// run; the others stay queued, in order.
	Next func(queue []*Request[T]) (group, rest []*Request[T])
	// Run runs a group and answers each of its requests exactly once.
	Run func(group []*Request[T])
	// Observe, when set, is told each group's size and how long its Run
	// took (the service's metrics: whether requests do share round trips,
	// and how long a group holds them).
	Observe func(size int, took time.Duration)

	mu      sync.Mutex
	queue   []*Request[T]
	leaders int  // running
	armed   bool // a BusyAfter timer is set
}

// Request is one piece of work waiting for its group.
type Request[T any] struct {
	Item   T
	done   chan error // buffered: the leader never waits for the requester
	queued time.Time  // when it was queued, with BusyAfter
}

// NewRequest returns a request for item (tests build queues with it).
func NewRequest[T any](item T) *Request[T] {
	return &Request[T]{Item: item, done: make(chan error, 1)}
}

// Answer gives the request its answer. Only the first answer counts, so
// a run that panics half-way can still answer the rest.
func (r *Request[T]) Answer(err error) {
	select {
	case r.done <- err:
	default:
	}
}

// Done is the channel the answer comes on.
func (r *Request[T]) Done() <-chan error { return r.done }

// Do queues item and returns its answer once its group has run. It waits
// even if the caller's context ends: the group may commit the item, and
// the caller must know.
func (g *Group[T]) Do(item T) error {
	return <-g.Start(item)
}

// DoContext is Do for a caller that stops waiting when ctx ends: it then
// returns ctx's error, while the item's group may still run it (as a lone
// round trip cut off after sending could have). For reads and records
// whose answer is the caller's only.
func (g *Group[T]) DoContext(ctx context.Context, item T) error {
	select {
	case err := <-g.Start(item):
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Start queues item and returns the channel its answer will come on, for
// a requester that waits for other things too.
func (g *Group[T]) Start(item T) <-chan error {
	req := NewRequest(item)
	if g.BusyAfter > 0 {
		req.queued = time.Now()
	}
	g.mu.Lock()
	g.queue = append(g.queue, req)
	switch {
	case g.leaders < g.MaxLeaders && (g.leaders == 0 || len(g.queue) >= g.BusyAt):
		g.leaders++
		go g.lead()
	case g.BusyAfter > 0 && !g.armed && g.leaders < g.MaxLeaders:
		g.armed = true
		time.AfterFunc(g.BusyAfter, g.leadIfWaitedLong)
	}
	g.mu.Unlock()
	return req.done
}

// leadIfWaitedLong is the BusyAfter timer: another leader starts when the
// oldest queued request has waited BusyAfter and a leader may still
// start; when the running leaders have taken the queue meanwhile, the
// timer is set again for what is queued now, if anything.
func (g *Group[T]) leadIfWaitedLong() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed = false
	if len(g.queue) == 0 || g.leaders >= g.MaxLeaders {
		return // the next request to queue sets it again
	}
	if wait := g.BusyAfter - time.Since(g.queue[0].queued); wait > 0 {
		g.armed = true
		time.AfterFunc(wait, g.leadIfWaitedLong)
		return
	}
	g.leaders++
	go g.lead()
}

// First is a Next that takes the first max requests of the queue, in
// order.
func First[T any](max int) func(queue []*Request[T]) (group, rest []*Request[T]) {
	return func(queue []*Request[T]) (group, rest []*Request[T]) {
		n := min(len(queue), max)
		return queue[:n:n], queue[n:]
	}
}

// lead runs the queued requests, group by group, until the queue is
// empty.
func (g *Group[T]) lead() {
	for {
		g.mu.Lock()
		if len(g.queue) == 0 {
			g.leaders--
			g.mu.Unlock()
			return
		}
		group, rest := g.Next(g.queue)
		g.queue = rest
		g.mu.Unlock()
		start := time.Now()
		g.runSafely(group)
		if g.Observe != nil {
			g.Observe(len(group), time.Since(start))
		}
	}
}

// runSafely runs a group; should Run panic, every request it has not
// answered is answered with an error, so that none waits for ever.
func (g *Group[T]) runSafely(group []*Request[T]) {
	defer func() {
		if r := recover(); r != nil {
			slog.Error("group run panicked", slog.Any("panic", r))
			for _, req := range group {
				req.Answer(fmt.Errorf("groupcommit: running a group: %v", r))
			}
		}
	}()
	g.Run(group)
}
