package lendgraph

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The schedule of a parallel download: every connection busy to the end.
// The file is cut into at least as many spans as there are connections,
// each connection taking the next span not yet started; one that finds
// none left takes over the second half of what remains of the span with
// the most bytes still to come (work stealing). The connection that was
// fetching that span stops at the cut: its request asked for more, so it
// drops that response (and its connection) once it reaches the cut. A
// connection gives up only when no span has two steals' worth
// (2 × stealMin) left, so the last bytes of a download arrive on all its
// connections at once instead of on the one that drew the last span.

// errSpanTaken is a sink's answer once it has received every byte of its
// span and another connection took over the rest of what the request
// asked for: the fetch is complete.
var errSpanTaken = errors.New("the rest of this range went to another connection")

// cursor is the progress of one span: the bytes before pos are written, a
// write covering [pos, resv) may be in progress, and the span ends at end
// (-1: at the end of the object, for a single connection). A steal lowers
// end to a point at or past resv, so no byte is written twice.
type cursor struct {
	mu   sync.Mutex
	pos  int64
	resv int64
	end  int64
	cut  bool  // end was lowered by a steal
	turn *turn // the turn its request streams in; nil once handed on
}

func newCursor(off, end int64) cursor { return cursor{pos: off, resv: off, end: end} }

// claim reserves the next bytes, at most n, for one write; it returns
// where they start and how many there are (0: the span is complete).
func (c *cursor) claim(n int64) (at, k int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k = n
	if c.end >= 0 {
		k = min(n, c.end-c.pos)
	}
	c.resv = c.pos + k
	return c.pos, k
}

// commit records k bytes of the claimed ones as written, and hands the
// span's turn on once the rest is due within the store's latency (relay).
func (c *cursor) commit(k int64) {
	c.mu.Lock()
	c.pos += k
	c.resv = c.pos
	if t := c.turn; t != nil && k > 0 && t.due(c.pos, c.end) {
		c.turn = nil
		t.r.pass()
	}
	c.mu.Unlock()
}

// take starts the span's request in turn t.
func (c *cursor) take(t *turn) {
	c.mu.Lock()
	t.start, t.startPos = time.Now(), c.pos
	c.turn = t
	c.mu.Unlock()
}

// handOn passes the span's turn on if it still holds it: its request
// ended.
func (c *cursor) handOn() {
	c.mu.Lock()
	t := c.turn
	c.turn = nil
	c.mu.Unlock()
	if t != nil {
		t.r.pass()
	}
}

// bound is where the span ends now (-1: at the end of the object).
func (c *cursor) bound() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.end
}

// finished reports whether every byte of the span is written and whether
// a steal cut it short.
func (c *cursor) finished() (complete, cut bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.end >= 0 && c.pos >= c.end, c.cut
}

// left is how many bytes of the span no write has claimed yet; c.mu held.
func (c *cursor) left() int64 {
	if c.end < 0 {
		return 0 // an open-ended span (one connection) is never split
	}
	return c.end - c.resv
}

// A relay keeps every connection of a parallel download streaming from one
// request to the next. A download streams at most n requests at once, each
// in one of n turns. A request hands its turn on once its remaining bytes
// are due within the store's latency (the time from a request until its
// bytes flow, less the time they take to arrive), so the next request is
// on its way while the last bytes of this one arrive, and its bytes flow
// as they end. Without it, every request leaves its connection idle for
// that latency: a download read by a decoder makes about four requests a
// connection (decodePart), and a local store on two cores shared with the
// decoder took 3-30 ms to answer each (BENCHMARKS.md). A download so holds
// up to 2n connections open, of which about n stream at any moment.
type relay struct {
	turns chan struct{}
	// guess is the median of the latest n requests' latencies, in
	// nanoseconds: the next request's bytes then begin about as often a
	// moment before the last one's end as a moment after it, so that
	// about n stream, and one slow answer (a first byte after seconds)
	// does not send the next n requests that much early. (The least of
	// them erred towards a moment idle every time: a decoder's download
	// of 16.8 MB, four requests a connection, took 1.05-1.07 times as long
	// as one of a request a connection; 0.99-1.02 times with the median,
	// as with the mean; no download ran faster than n connections at
	// their cap carry.) Read on every commit, so kept here rather than
	// found in recent each time.
	guess  atomic.Int64
	mu     sync.Mutex
	recent []time.Duration // the latencies of the latest requests, a ring
	sorted []time.Duration // recent, sorted: the median's scratch
	next   int
}

func (r *relay) latency() time.Duration { return time.Duration(r.guess.Load()) }

// measured records the latency of one request.
func (r *relay) measured(d time.Duration) {
	r.mu.Lock()
	if len(r.recent) < cap(r.recent) {
		r.recent = append(r.recent, d)
	} else {
		r.recent[r.next] = d
		r.next = (r.next + 1) % len(r.recent)
	}
	r.sorted = append(r.sorted[:0], r.recent...)
	slices.Sort(r.sorted)
	r.guess.Store(int64(r.sorted[len(r.sorted)/2]))
	r.mu.Unlock()
}

// relayWindow is the least time a request's speed is measured over before
// its turn can be handed on (the first reads drain what piled up while the
// request was on its way).
const relayWindow = 10 * time.Millisecond

func newRelay(n int) *relay {
	r := &relay{turns: make(chan struct{}, n), recent: make([]time.Duration, 0, n)}
	for range n {
		r.turns <- struct{}{}
	}
	return r
}

// wait takes a turn; it reports false once ctx is done.
func (r *relay) wait(ctx context.Context) (*turn, bool) {
	select {
	case <-r.turns:
		return &turn{r: r}, true
	case <-ctx.Done():
		return nil, false
	}
}

func (r *relay) pass() { r.turns <- struct{}{} }

// turn is one request's turn: when it was sent and from where, and when
// its first bytes came and where they ended.
type turn struct {
	r        *relay
	start    time.Time
	startPos int64
	first    time.Time
	firstPos int64
	measured bool
}

// due reports whether a request's bytes up to end arrive within the
// store's latency at the request's speed so far; pos bytes are in.
func (t *turn) due(pos, end int64) bool {
	if end < 0 {
		return false // open-ended: one connection, nothing to hand on to
	}
	now := time.Now()
	if t.first.IsZero() {
		t.first, t.firstPos = now, pos
		return false
	}
	ttfb, elapsed := t.first.Sub(t.start), now.Sub(t.first)
	if elapsed < max(ttfb, relayWindow) || pos <= t.firstPos {
		return false
	}
	rate := float64(pos-t.firstPos) / float64(elapsed) // bytes a nanosecond
	if !t.measured {
		t.measured = true
		// The bytes in would have taken this long at that speed: the
		// rest of the time since the request is the store's latency.
		lat := max(now.Sub(t.start)-time.Duration(float64(pos-t.startPos)/rate), 0)
		t.r.measured(lat)
	}
	return float64(end-pos) <= rate*float64(t.r.latency())
}

// piece is what a scheduler steals from: a span being fetched.
type piece interface {
	comparable
	cur() *cursor
}

// sched hands out the n spans a download starts with, in order, and keeps
// the spans being fetched, to steal from. stealMin is the least a steal
// takes; idle, when set (tests), is told how many bytes were left on the
// busiest span each time a connection gives up.
type sched[P piece] struct {
	mu       sync.Mutex
	n, next  int           // spans to start with, and the next to hand out
	drained  chan struct{} // closed once every one of the n was handed out
	active   map[P]struct{}
	stealMin int64
	idle     func(left int64)
	relay    *relay
}

func newSched[P piece](n int, stealMin int64, conns int, idle func(int64)) *sched[P] {
	s := &sched[P]{n: n, drained: make(chan struct{}), active: map[P]struct{}{}, stealMin: max(stealMin, 1), idle: idle, relay: newRelay(conns)}
	if n == 0 {
		close(s.drained)
	}
	return s
}

// take hands out the next span not yet started, made by mk from its index,
// and adds it to the active spans at once (so no connection gives up while
// a span is between the two). It reports false when every span was handed
// out.
func (s *sched[P]) take(mk func(i int) P) (P, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next >= s.n {
		var zero P
		return zero, false
	}
	p := mk(s.next)
	s.next++
	if s.next == s.n {
		close(s.drained)
	}
	s.active[p] = struct{}{}
	return p, true
}

// finish removes a span, complete or not.
func (s *sched[P]) finish(p P) {
	s.mu.Lock()
	delete(s.active, p)
	s.mu.Unlock()
}

// steal takes over the second half of the unclaimed bytes of the span with
// the most of them: it lowers that span's end and calls split, with the
// victim's cursor locked, to make the span [mid, end) that the caller then
// fetches (already added to the active spans). It reports false when no
// span has 2 × stealMin bytes left: the caller's connection is done.
func (s *sched[P]) steal(split func(victim P, mid, end int64) P) (P, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		var victim P
		var most int64
		found := false
		for p := range s.active {
			c := p.cur()
			c.mu.Lock()
			if l := c.left(); l > most {
				victim, most, found = p, l, true
			}
			c.mu.Unlock()
		}
		if !found || most < 2*s.stealMin {
			if s.idle != nil {
				s.idle(most)
			}
			var zero P
			return zero, false
		}
		c := victim.cur()
		c.mu.Lock()
		l := c.left()
		if l < 2*s.stealMin { // its writer claimed more meanwhile: look again
			c.mu.Unlock()
			continue
		}
		mid, end := c.resv+l/2, c.end
		c.end, c.cut = mid, true
		p := split(victim, mid, end)
		c.mu.Unlock()
		s.active[p] = struct{}{}
		return p, true
	}
}

// ceilDiv is a/b rounded up, for a, b > 0.
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }
