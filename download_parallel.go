package lendgraph

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
)

// Parallel ranged downloads. Object stores cap the speed of each
// connection, so a large file comes down in parts of at most o.c.part bytes
// (and at least one a connection), each fetched with its own ranged
// request, over o.cfg.downloadConns connections at once (aws s3 cp and s5cmd do the
// same); a connection that runs out of parts takes over half of another's
// remainder (download_sched.go). Each part resumes and re-signs on
// its own (fetch); the parts share one linkSource, so an expired link is
// refreshed once for all of them. Two ways to put the parts together:
// rangedStream (here) hands the bytes over in order from a bounded window
// of part buffers (Download to an io.Writer, Rows); fill (download_file.go)
// writes each part in place into a file (DownloadFile, the parquet temp
// file of Rows).

const (
	// DefaultDownloadConnections is how many connections one download of a
	// large file opens at once unless WithDownloadConnections says
	// otherwise. Chosen by measurement (BENCHMARKS.md): against MinIO
	// behind a per-connection cap, 8 connections download twice as fast as
	// 4 (16 twice again, with a 64 MiB window); uncapped on loopback, 4, 8
	// and 16 were alike.
	DefaultDownloadConnections = 8
	// maxDownloadConnections bounds WithDownloadConnections.
	maxDownloadConnections = 64
	// defaultPartSize is the most one ranged request of a parallel
	// download to a file asks for: aws s3 cp's default part size. Files of
	// at least two parts come down in parallel. A download read in order (a
	// rangedStream) asks for at most half as much: it holds up to conns
	// parts in memory.
	defaultPartSize = 8 << 20
)

// parallel reports whether a file of size bytes (-1: unknown) comes down
// over several connections.
func (o *operation) parallel(size int64) bool {
	return o.cfg.downloadConns > 1 && size >= 2*o.c.part
}

// partFor is the size of the spans a parallel download of todo bytes
// starts with: at most max, and as many as a whole number of rounds of one
// a connection. A file of 16 MiB is four spans of 4 MiB on four
// connections, not two of 8 MiB; 43.6 MB is 16 spans of 2.7 MB on eight,
// not 11 of 4 MiB: a last round of fewer spans than connections leaves the
// others to steal from it in small pieces, a request each, while it
// streams.
func (o *operation) partFor(todo, max int64) int64 {
	n := int64(o.cfg.downloadConns)
	return ceilDiv(todo, ceilDiv(todo, max*n)*n)
}

// streamPart is the largest part of a rangedStream.
func (o *operation) streamPart() int64 { return max(o.c.part/2, 1) }

// stealMin is the least a connection takes over from another: 256 KiB
// with the default part size.
func (o *operation) stealMin() int64 { return max(o.c.part/32, 1) }

// span is the object's bytes [off, end).
type span struct{ off, end int64 }

// parts splits [off, end) into spans of at most size bytes.
func parts(off, end, size int64) []span {
	var out []span
	for off < end {
		e := end
		if end-off > size {
			e = off + size
		}
		out = append(out, span{off, e})
		off = e
	}
	return out
}

// rangedStream is a parallel download read in order. Workers (o.cfg.downloadConns
// streaming at once, and as many on their way to their next part: relay in
// download_sched.go) fetch the parts (at most o.streamPart() bytes each, and at least
// one a connection) into a window of as many part buffers as there are
// workers; the reader takes the bytes in file order, each part's as they
// arrive, and a part read to its end frees its buffer for the next part. (A
// spare buffer made no measurable difference, so the window holds conns
// parts: 32 MiB with the defaults.) When a decoder reads the stream (Rows),
// the parts are smaller (decodePart: about four a connection, at most
// 1 MiB) and the window has as many more buffers, the same 32 MiB. A
// worker takes a free buffer before it takes the next part, so the parts
// being fetched are always the first ones not yet read and the window
// cannot deadlock. A worker that finds no
// part left steals (download_sched.go): it fetches the second half of the
// remainder of the part with the most bytes to come straight into that
// part's buffer, as a part of its own that follows it in the reading order.
// When the host turns out to ignore Range, the rest of the file comes over
// one connection (openSequential).
type rangedStream struct {
	o      *operation
	parent context.Context
	ctx    context.Context // the workers'; cancelled by Close or a failure
	cancel context.CancelFunc
	src    *linkSource
	obj    *objectCheck
	size   int64
	parts  []*streamPart // the parts the file was cut into, in order
	sched  *sched[*streamPart]
	slots  chan []byte // the window: free buffers (nil: not allocated yet)
	wg     sync.WaitGroup

	errMu sync.Mutex
	err   error // the first failure of a worker

	// The reader's side.
	head *streamPart   // the part being read; nil after the last
	pos  int64         // bytes handed over
	rest io.ReadCloser // the single-connection remainder once Range proved ignored
	// closed and rest are also touched by Close, which a loop's break calls
	// while the decoder's goroutine may be inside Read.
	closed atomic.Bool
	restMu sync.Mutex
}

// streamPart is one part of a rangedStream: its worker writes into buf, the
// reader consumes it. Its cursor's mutex guards the fields below it.
type streamPart struct {
	span         // where the part starts (off), and where it ended when it started
	chunk  int64 // the most one read claims (the steal minimum): a stalled read holds no more
	c      cursor
	base   []byte // the window buffer buf is a slice of
	buf    []byte // buf[i] is the object's byte off+i; nil until a worker takes the part
	read   int64  // bytes of the part handed over
	done   bool
	err    error
	frees  bool          // the last part in buf's window buffer: reading it to its end frees the buffer
	next   *streamPart   // the next part in file order
	notify chan struct{} // signalled (without blocking) on every change
}

func (p *streamPart) cur() *cursor { return &p.c }

func newStreamPart(sp span, chunk int64) *streamPart {
	return &streamPart{span: sp, c: newCursor(sp.off, sp.end), chunk: chunk, notify: make(chan struct{}, 1)}
}

// decodePart is the part size of a rangedStream that a decoder reads:
// about four parts a connection, between stealMin and streamPart/4
// (256 KiB and 1 MiB with the defaults). The decoder takes the bytes in
// file order, so while the part it reads streams in at one connection's
// speed, the parts after it wait in the window: when the last byte
// arrives, what the other connections fetched of the last round is still
// to decode (with eight connections, seven parts). Smaller parts keep that
// tail small, at the cost of a request each, whose wait the relay hides
// (download_sched.go); with the relay, four a connection did better than
// two, three, six or eight (BENCHMARKS.md), and tapered cuts the last
// round smaller still. The parts come in whole rounds
// of one a connection (partFor: a 36.9 MB file is 40 parts of 922 KB on 8
// connections, not 36 of 1 MiB).
func (o *operation) decodePart(size int64) int64 {
	return o.partFor(size, max(min(max(ceilDiv(size, 4*int64(o.cfg.downloadConns)), o.stealMin()), o.streamPart()/4), 1))
}

// tailPart is the least part the last round of a decoded download is cut
// down to (tapered): half the steal minimum, 128 KiB with the defaults.
func (o *operation) tailPart() int64 { return max(o.stealMin()/2, 1) }

// tapered cuts [0, size) into the spans a decoder reads: parts of part
// bytes, but the last round's bytes (n parts) go in rounds of n parts each
// half as large as the round before, down to least. The reader takes the
// bytes in file order, so what the other connections fetched of the last
// round lands at once with the last byte, still to decode: seven parts of
// up to 1 MiB with eight connections. Tapered, it is seven parts of 128 to
// 256 KiB, for n more requests a halving (whose wait the relay hides).
// Parquet of 22 MB (24 MiB as csv) on eight connections took 1.04–1.09×
// the time of a download to discard, and 1.005–1.033× tapered
// (BENCHMARKS.md).
func tapered(size, part, n, least int64) []span {
	tail := min(size, part*n)
	out := parts(0, size-tail, part)
	off, q := size-tail, part
	for q/2 >= least && size-off > n*(q/2) {
		q /= 2
		out = append(out, parts(off, off+n*q, q)...)
		off += n * q
	}
	return append(out, parts(off, size, ceilDiv(size-off, n))...)
}

// newRangedStream starts a parallel download read in order. decoding says
// that a decoder reads it (Rows): the parts are then smaller (decodePart),
// and the window holds as many bytes as with full parts, in more buffers.
func (o *operation) newRangedStream(ctx context.Context, src *linkSource, obj *objectCheck, decoding bool) *rangedStream {
	size, _, _ := obj.validators()
	wctx, cancel := context.WithCancel(ctx)
	s := &rangedStream{o: o, parent: ctx, ctx: wctx, cancel: cancel, src: src, obj: obj, size: size}
	part := o.partFor(size, o.streamPart())
	spans := parts(0, size, part)
	window := int64(o.cfg.downloadConns) // buffers
	if decoding {
		part = min(part, o.decodePart(size))
		spans = tapered(size, part, int64(o.cfg.downloadConns), o.tailPart())
		window = int64(o.cfg.downloadConns) * o.streamPart() / part
	}
	for _, sp := range spans {
		p := newStreamPart(sp, o.stealMin())
		if n := len(s.parts); n > 0 {
			s.parts[n-1].next = p
		}
		s.parts = append(s.parts, p)
	}
	if len(s.parts) > 0 {
		s.head = s.parts[0]
	}
	s.sched = newSched[*streamPart](len(s.parts), o.stealMin(), o.cfg.downloadConns, o.c.idleHook)
	o.obs.connections(o.cfg.downloadConns)
	workers := 2 * o.cfg.downloadConns // half of them on their way to the next part (relay)
	s.slots = make(chan []byte, min(window, int64(len(s.parts))))
	for range cap(s.slots) {
		s.slots <- nil
	}
	s.wg.Add(workers)
	for range workers {
		go s.work(part)
	}
	return s
}

func (s *rangedStream) work(part int64) {
	defer s.wg.Done()
	relay := s.sched.relay
	var t *turn
	for {
		var ok bool
		if t, ok = relay.wait(s.ctx); !ok {
			return
		}
		var buf []byte
		select {
		case buf = <-s.slots:
			if buf == nil {
				buf = make([]byte, part)
			}
		case <-s.sched.drained:
			// No part left to start: steal rather than wait for a buffer
			// that a reader stuck on a slow part cannot free.
		case <-s.ctx.Done():
			return
		}
		// The part gets its buffer before take makes it active: from then
		// on another connection may steal its tail into that buffer.
		p, ok := s.sched.take(func(i int) *streamPart {
			p := s.parts[i]
			p.c.mu.Lock()
			p.base, p.buf, p.frees = buf, buf[:p.end-p.off], true
			p.c.mu.Unlock()
			return p
		})
		if !ok {
			if buf != nil {
				s.slots <- buf
			}
			break // to steal, in the turn just taken
		}
		if !s.fetch(p, t) {
			return
		}
	}
	for {
		p, ok := s.sched.steal(split)
		if !ok {
			relay.pass()
			return
		}
		if !s.fetch(p, t) {
			return
		}
		if t, ok = relay.wait(s.ctx); !ok {
			return
		}
	}
}

// split makes the part [mid, end) out of the tail of v's buffer, next after
// v in the reading order; v's cursor is locked.
func split(v *streamPart, mid, end int64) *streamPart {
	p := newStreamPart(span{mid, end}, v.chunk)
	p.base, p.buf = v.base, v.buf[mid-v.off:end-v.off]
	p.frees, v.frees = v.frees, false
	p.next, v.next = v.next, p
	return p
}

// fetch fetches part p (an active part of s.sched) in turn t and reports
// whether it succeeded.
func (s *rangedStream) fetch(p *streamPart, t *turn) bool {
	p.c.take(t)
	_, err := s.o.fetch(s.ctx, s.src, s.obj, p.off, p.end, p)
	p.c.handOn()
	s.sched.finish(p)
	if err != nil {
		s.fail(err) // before the reader can see the part fail
	}
	p.c.mu.Lock()
	p.done, p.err = true, err
	p.c.mu.Unlock()
	p.signal()
	return err == nil
}

func (p *streamPart) signal() {
	select {
	case p.notify <- struct{}{}:
	default:
	}
}

// bound is where the part ends now: a steal may have cut it short.
func (p *streamPart) bound() int64 { return p.c.bound() }

// Write appends the part's next bytes (copyTo reads straight into the
// buffer instead; see readFrom).
func (p *streamPart) Write(b []byte) (int, error) {
	at, k := p.c.claim(int64(len(b)))
	copy(p.buf[at-p.off:], b[:k])
	p.c.commit(k)
	p.signal()
	if int(k) < len(b) {
		return int(k), p.overrun()
	}
	return len(b), nil
}

// overrun is the error for bytes past the part's end: the rest went to
// another connection, or the host sent more than the range holds.
func (p *streamPart) overrun() error {
	if _, cut := p.c.finished(); cut {
		return errSpanTaken
	}
	return errors.New("the storage host sent more bytes than the range holds")
}

// readFrom reads the part's next bytes from src straight into its buffer
// (copyTo's way for a part: no copy buffer), until src ends or fails, or
// the part is complete.
func (p *streamPart) readFrom(src io.Reader) (int64, error) {
	var n int64
	for {
		at, k := p.c.claim(p.chunk)
		if k == 0 {
			if _, cut := p.c.finished(); cut {
				return n, &writeError{errSpanTaken}
			}
			var one [1]byte
			if k, _ := src.Read(one[:]); k > 0 {
				return n, &writeError{errors.New("the storage host sent more bytes than the range holds")}
			}
			return n, nil
		}
		r, err := src.Read(p.buf[at-p.off : at-p.off+k])
		p.c.commit(int64(r))
		if r > 0 {
			p.signal()
			n += int64(r)
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, redactError(err)
		}
	}
}

// fail records a worker's failure and stops the others.
func (s *rangedStream) fail(err error) {
	s.errMu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.errMu.Unlock()
	s.cancel()
}

// failure is the error the reader reports: the first worker failure, or
// the context's.
func (s *rangedStream) failure() error {
	s.errMu.Lock()
	err := s.err
	s.errMu.Unlock()
	if s.parent.Err() != nil {
		err = s.parent.Err()
	}
	if err == nil {
		err = s.ctx.Err()
	}
	return err
}

// peek waits for the next bytes in file order and returns them; they stay
// valid until advance. It returns io.EOF after the last part.
func (s *rangedStream) peek() ([]byte, error) {
	for s.head != nil {
		p := s.head
		p.c.mu.Lock()
		avail := p.buf[p.read : p.c.pos-p.off]
		done, err, next := p.done, p.err, p.next
		p.c.mu.Unlock()
		switch {
		case len(avail) > 0:
			return avail, nil
		case err != nil:
			return nil, s.failure()
		case done:
			// Read to its end: the buffer goes back to the window once no
			// later part shares it.
			p.c.mu.Lock()
			base, frees := p.base, p.frees
			p.buf, p.base = nil, nil
			p.c.mu.Unlock()
			if frees {
				s.slots <- base[:cap(base)]
			}
			s.head = next
			continue
		}
		select {
		case <-p.notify:
		case <-s.ctx.Done():
			return nil, s.failure()
		}
	}
	return nil, io.EOF
}

func (s *rangedStream) advance(n int) {
	p := s.head
	p.c.mu.Lock()
	p.read += int64(n)
	p.c.mu.Unlock()
	s.pos += int64(n)
}

// stop ends the workers and waits for them.
func (s *rangedStream) stop() {
	s.cancel()
	s.wg.Wait()
}

func (s *rangedStream) downloadError(err error) error {
	return &DownloadError{Written: s.pos, Size: s.size, Err: err}
}

// Read implements io.Reader.
func (s *rangedStream) Read(b []byte) (int, error) {
	if s.closed.Load() {
		return 0, errStreamClosed
	}
	s.restMu.Lock()
	rest := s.rest
	s.restMu.Unlock()
	if rest != nil {
		return rest.Read(b)
	}
	avail, err := s.peek()
	if errors.Is(err, errRangeIgnored) {
		s.stop()
		rest := s.o.openSequential(s.parent, s.src, s.obj, s.pos)
		s.restMu.Lock()
		if s.closed.Load() {
			s.restMu.Unlock()
			_ = rest.Close()
			return 0, errStreamClosed
		}
		s.rest = rest
		s.restMu.Unlock()
		return rest.Read(b)
	}
	if err == io.EOF {
		return 0, io.EOF
	}
	if err != nil {
		return 0, s.downloadError(err)
	}
	n := copy(b, avail)
	s.advance(n)
	return n, nil
}

// WriteTo writes the rest of the file to w in order and returns the bytes
// written.
func (s *rangedStream) WriteTo(w io.Writer) (int64, error) {
	start := s.pos
	for {
		avail, err := s.peek()
		if err == io.EOF {
			return s.pos - start, nil
		}
		if errors.Is(err, errRangeIgnored) {
			s.stop()
			n, err := s.o.fetch(s.parent, s.src, s.obj, s.pos, -1, w)
			s.pos += n
			if err != nil {
				return s.pos - start, s.downloadError(err)
			}
			return s.pos - start, nil
		}
		if err != nil {
			return s.pos - start, s.downloadError(err)
		}
		k, werr := w.Write(avail)
		s.advance(k)
		if werr == nil && k < len(avail) {
			werr = io.ErrShortWrite
		}
		if werr != nil {
			return s.pos - start, s.downloadError(&writeError{werr})
		}
	}
}

// Close stops the download and waits for its goroutines.
func (s *rangedStream) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.stop()
	s.restMu.Lock()
	rest := s.rest
	s.restMu.Unlock()
	if rest != nil {
		return rest.Close()
	}
	return nil
}
