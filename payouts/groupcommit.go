package payouts

import (
	"fmt"
	"log/slog"
	"sync"
)

// groupCommit is group commit without a background loop, for writes that
// many goroutines make at the same moment (creates, a busy wallet's
// finalisations): one statement or transaction, one round trip and one
// commit, for a group of them instead of one each. A request that queues
// while fewer than maxLeaders leaders run starts one; a leader takes
// groups off the queue (next) and writes them (write), until nothing is
// left, and then stops. An idle service therefore writes a lone request at
// once, and while one group waits for the database the next is already on
// its way.
type groupCommit[T any] struct {
	maxLeaders int
	// next takes from the queue, in order, the requests that can share a
	// write; the others stay queued, in order.
	next func(queue []*groupRequest[T]) (group, rest []*groupRequest[T])
	// write writes a group and answers each of its requests exactly once.
	write func(group []*groupRequest[T])

	mu      sync.Mutex
	queue   []*groupRequest[T]
	leaders int // running
}

// groupRequest is one write waiting for its group.
type groupRequest[T any] struct {
	item T
	done chan error // buffered: the leader never waits for the requester
}

func newGroupRequest[T any](item T) *groupRequest[T] {
	return &groupRequest[T]{item: item, done: make(chan error, 1)}
}

// do queues item and returns its answer once its group is written.
func (g *groupCommit[T]) do(item T) error {
	// Wait for the answer even if the requester's context ends: the write
	// may be committed, and the requester must know.
	return <-g.start(item)
}

// start queues item and returns the channel its answer will come on, for
// a requester that waits for other things too.
func (g *groupCommit[T]) start(item T) <-chan error {
	req := newGroupRequest(item)
	g.mu.Lock()
	g.queue = append(g.queue, req)
	if g.leaders < g.maxLeaders {
		g.leaders++
		go g.lead()
	}
	g.mu.Unlock()
	return req.done
}

// firstGroup takes the first max requests of queue, in order.
func firstGroup[T any](max int) func(queue []*groupRequest[T]) (group, rest []*groupRequest[T]) {
	return func(queue []*groupRequest[T]) (group, rest []*groupRequest[T]) {
		n := min(len(queue), max)
		return queue[:n:n], queue[n:]
	}
}

// lead writes the queued requests, group by group, until the queue is
// empty.
func (g *groupCommit[T]) lead() {
	for {
		g.mu.Lock()
		if len(g.queue) == 0 {
			g.leaders--
			g.mu.Unlock()
			return
		}
		group, rest := g.next(g.queue)
		g.queue = rest
		g.mu.Unlock()
		g.writeSafely(group)
	}
}

// writeSafely writes a group; should write panic, every request it has not
// answered is answered with an error, so that none waits for ever.
func (g *groupCommit[T]) writeSafely(group []*groupRequest[T]) {
	defer func() {
		if r := recover(); r != nil {
			slog.Error("group write panicked", slog.Any("panic", r))
			for _, req := range group {
				select {
				case req.done <- fmt.Errorf("payouts: writing a group: %v", r):
				default: // answered before the panic
				}
			}
		}
	}()
	g.write(group)
}
