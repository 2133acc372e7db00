package lendgraph

import (
	"errors"
	"sync"
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
	cut  bool // end was lowered by a steal
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

// commit records k bytes of the claimed ones as written.
func (c *cursor) commit(k int64) {
	c.mu.Lock()
	c.pos += k
	c.resv = c.pos
	c.mu.Unlock()
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
}

func newSched[P piece](n int, stealMin int64, idle func(int64)) *sched[P] {
	s := &sched[P]{n: n, drained: make(chan struct{}), active: map[P]struct{}{}, stealMin: max(stealMin, 1), idle: idle}
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
