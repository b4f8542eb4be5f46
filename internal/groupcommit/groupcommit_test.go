package groupcommit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A lone request runs at once, in a group of its own.
func TestLoneRequestRunsAtOnce(t *testing.T) {
	var sizes []int
	g := &Group[int]{MaxLeaders: 1, Next: First[int](8), Run: func(group []*Request[int]) {
		sizes = append(sizes, len(group))
		for _, r := range group {
			r.Answer(nil)
		}
	}}
	if err := g.Do(1); err != nil {
		t.Fatal(err)
	}
	if len(sizes) != 1 || sizes[0] != 1 {
		t.Fatalf("groups %v, want one of one", sizes)
	}
}

// Requests that queue while a group runs go together in the next one, in
// the order they came, each answered with its own answer, and never more
// than MaxLeaders groups run at once.
func TestRequestsQueuedMeanwhileShareAGroup(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	var running, most atomic.Int32
	var mu sync.Mutex
	var groups [][]int
	g := &Group[int]{MaxLeaders: 1, Next: First[int](100), Run: func(group []*Request[int]) {
		if n := running.Add(1); n > most.Load() {
			most.Store(n)
		}
		defer running.Add(-1)
		items := itemsOf(group)
		mu.Lock()
		groups = append(groups, items)
		mu.Unlock()
		select {
		case started <- struct{}{}:
		default:
		}
		if items[0] == 0 {
			<-release // hold the first group until the rest have queued
		}
		for _, r := range group {
			if r.Item%2 == 1 {
				r.Answer(errors.New("odd"))
			} else {
				r.Answer(nil)
			}
		}
	}}
	first := g.Start(0)
	<-started
	answers := make([]<-chan error, 10)
	for i := 1; i <= 9; i++ {
		answers[i] = g.Start(i)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 9; i++ {
		err := <-answers[i]
		if (i%2 == 1) != (err != nil) {
			t.Errorf("request %d answered %v", i, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(groups) != 2 || len(groups[1]) != 9 {
		t.Fatalf("groups %v, want the first alone and the nine queued meanwhile together", groups)
	}
	for i, item := range groups[1] {
		if item != i+1 {
			t.Fatalf("second group %v, want the order the requests came in", groups[1])
		}
	}
	if most.Load() != 1 {
		t.Errorf("%d groups ran at once, MaxLeaders is 1", most.Load())
	}
}

// Next decides what shares a group: the others stay queued, in order.
func TestFirstTakesAtMostMax(t *testing.T) {
	queue := []*Request[int]{NewRequest(1), NewRequest(2), NewRequest(3)}
	group, rest := First[int](2)(queue)
	if len(group) != 2 || group[0].Item != 1 || group[1].Item != 2 || len(rest) != 1 || rest[0].Item != 3 {
		t.Fatalf("group %d, rest %d", len(group), len(rest))
	}
	// The group's capacity ends at its length: appending to it must not
	// overwrite the queued rest.
	_ = append(group, NewRequest(9))
	if rest[0].Item != 3 {
		t.Fatal("appending to a group overwrote the queue")
	}
}

// A run that panics answers every request it had not answered, so that
// none waits for ever, and the group goes on serving.
func TestPanickingRunAnswersTheRest(t *testing.T) {
	calls := 0
	g := &Group[int]{MaxLeaders: 1, Next: First[int](8), Run: func(group []*Request[int]) {
		calls++
		if calls == 1 {
			group[0].Answer(nil)
			panic("boom")
		}
		for _, r := range group {
			r.Answer(nil)
		}
	}}
	if err := g.Do(1); err != nil {
		t.Fatalf("answered before the panic: got %v, want that answer (nil)", err)
	}
	if err := g.Do(2); err != nil {
		t.Fatalf("after a panic the group still serves: %v", err)
	}
	g2 := &Group[int]{MaxLeaders: 1, Next: First[int](8), Run: func([]*Request[int]) { panic("boom") }}
	if err := g2.Do(1); err == nil {
		t.Fatal("a request its run panicked on was answered nil")
	}
}

// Only the first answer counts.
func TestOnlyTheFirstAnswerCounts(t *testing.T) {
	r := NewRequest(1)
	r.Answer(nil)
	r.Answer(errors.New("late"))
	if err := <-r.Done(); err != nil {
		t.Fatalf("answer %v, want the first (nil)", err)
	}
}

// A caller that stops waiting gets its context's error; the group still
// runs its item.
func TestDoContextStopsWaitingWhenTheContextEnds(t *testing.T) {
	release := make(chan struct{})
	ran := make(chan int, 1)
	g := &Group[int]{MaxLeaders: 1, Next: First[int](8), Run: func(group []*Request[int]) {
		<-release
		for _, r := range group {
			ran <- r.Item
			r.Answer(nil)
		}
	}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.DoContext(ctx, 7); !errors.Is(err, context.Canceled) {
		t.Fatalf("DoContext with an ended context: %v, want context.Canceled", err)
	}
	close(release)
	if got := <-ran; got != 7 {
		t.Fatalf("the group ran %d, want the abandoned item 7", got)
	}
	if err := g.DoContext(context.Background(), 8); err != nil {
		t.Fatal(err)
	}
}

// With BusyAt, a second leader joins only once that many requests are
// queued: below it the one leader gathers them into one group; at it a
// second group runs beside the first.
func TestBusyAtHoldsBackTheSecondLeaderUntilABacklog(t *testing.T) {
	release := make(chan struct{})
	started := make(chan int, 8)
	var mu sync.Mutex
	var groups [][]int
	g := &Group[int]{MaxLeaders: 2, BusyAt: 3, Next: First[int](2), Run: func(group []*Request[int]) {
		items := itemsOf(group)
		mu.Lock()
		groups = append(groups, items)
		mu.Unlock()
		started <- items[0]
		if items[0] == 0 {
			<-release
		}
		for _, r := range group {
			r.Answer(nil)
		}
	}}
	first := g.Start(0)
	<-started
	second, third := g.Start(1), g.Start(2)
	select {
	case item := <-started:
		t.Fatalf("a group starting with %d ran with 2 requests queued, BusyAt is 3", item)
	case <-time.After(50 * time.Millisecond):
	}
	fourth := g.Start(3) // the third queued: a second leader joins
	if item := <-started; item != 1 {
		t.Fatalf("the second leader's group starts with %d, want 1 (the oldest queued)", item)
	}
	close(release)
	for i, ch := range []<-chan error{first, second, third, fourth} {
		if err := <-ch; err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(groups) != 3 || len(groups[1]) != 2 || len(groups[2]) != 1 {
		t.Fatalf("groups %v, want [0] [1 2] [3]", groups)
	}
}

// itemsOf is a group's items, in order.
func itemsOf(group []*Request[int]) []int {
	items := make([]int, len(group))
	for i, r := range group {
		items[i] = r.Item
	}
	return items
}

// With BusyAfter, a request queued behind a slow run gets a leader of its
// own once it has waited that long, with no backlog of BusyAt; with every
// leader busy it waits for the first to finish.
func TestBusyAfterStartsALeaderForARequestThatWaited(t *testing.T) {
	release := make(chan struct{})
	started := make(chan int, 8)
	g := &Group[int]{MaxLeaders: 2, BusyAt: 100, BusyAfter: 20 * time.Millisecond, Next: First[int](10),
		Run: func(group []*Request[int]) {
			started <- group[0].Item
			if group[0].Item < 2 {
				<-release // a vendor that does not answer yet
			}
			for _, r := range group {
				r.Answer(nil)
			}
		}}
	first := g.Start(0)
	<-started
	second := g.Start(1)
	select {
	case item := <-started:
		if item != 1 {
			t.Fatalf("a group starting with %d ran, want 1", item)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the request queued behind a slow run waited for it: no second leader started")
	}
	third := g.Start(2) // both leaders busy: it waits for one of them
	select {
	case item := <-started:
		t.Fatalf("a group starting with %d ran beyond MaxLeaders", item)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	for i, ch := range []<-chan error{first, second, third} {
		if err := <-ch; err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if item := <-started; item != 2 {
		t.Fatalf("the last group starts with %d, want 2", item)
	}
}
