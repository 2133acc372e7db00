package lendgraph

import (
	"cmp"
	"context"
	"errors"
	"io"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Parallel ranged downloads. Object stores cap the speed of each
// connection, so a large file comes down in parts of c.part bytes, each
// fetched with its own ranged request, over up to c.conns connections at
// once (aws s3 cp and s5cmd do the same). Each part resumes and re-signs on
// its own (fetch); the parts share one linkSource, so an expired link is
// refreshed once for all of them. Two ways to put the parts together:
// rangedStream hands the bytes over in order from a bounded window of part
// buffers (Download to an io.Writer, Rows), fill writes each part in place
// into a file (DownloadFile, the parquet temp file of Rows).

const (
	// DefaultDownloadConnections is how many connections one download of a
	// large file opens at once unless WithDownloadConnections says otherwise.
	DefaultDownloadConnections = 4
	// maxDownloadConnections bounds WithDownloadConnections.
	maxDownloadConnections = 64
	// defaultPartSize is the span one ranged request of a parallel download
	// to a file asks for: aws s3 cp's default part size. Files of at least
	// two parts come down in parallel. A download read in order (a
	// rangedStream) asks for half as much: it holds up to conns parts in
	// memory.
	defaultPartSize = 8 << 20
)

// parallel reports whether a file of size bytes (-1: unknown) comes down
// over several connections.
func (c *Client) parallel(size int64) bool {
	return c.conns > 1 && size >= 2*c.part
}

// streamPart is the part size of a rangedStream.
func (c *Client) streamPart() int64 { return max(c.part/2, 1) }

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

// rangedStream is a parallel download read in order. Workers (at most
// c.conns) fetch the parts (c.streamPart() bytes each) into a window of as
// many part buffers; the reader takes the bytes in file order, the first
// part's as they arrive, and a part read to its end frees its buffer for
// the next part. (A spare buffer made no measurable difference, so the
// window holds conns parts: 16 MiB with the defaults.) A worker takes a free buffer before it takes the next part, so
// the parts being fetched are always the first ones not yet read and the
// window cannot deadlock. When the host turns out to ignore Range, the
// rest of the file comes over one connection (openSequential).
type rangedStream struct {
	c      *Client
	parent context.Context
	ctx    context.Context // the workers'; cancelled by Close or a failure
	cancel context.CancelFunc
	src    *linkSource
	obj    *objectCheck
	size   int64
	parts  []*streamPart
	slots  chan []byte // the window: free buffers (nil: not allocated yet)
	next   atomic.Int64
	wg     sync.WaitGroup

	errMu sync.Mutex
	err   error // the first failure of a worker

	// The reader's side.
	head   int           // the part being read
	pos    int64         // bytes handed over
	rest   io.ReadCloser // the single-connection remainder once Range proved ignored
	closed bool
}

// streamPart is one part of a rangedStream: the worker appends to buf, the
// reader consumes it.
type streamPart struct {
	span
	mu     sync.Mutex
	buf    []byte // nil until a worker takes the part
	filled int
	read   int
	done   bool
	err    error
	notify chan struct{} // signalled (without blocking) on every change
}

func (c *Client) newRangedStream(ctx context.Context, src *linkSource, obj *objectCheck) *rangedStream {
	size, _, _ := obj.validators()
	wctx, cancel := context.WithCancel(ctx)
	s := &rangedStream{c: c, parent: ctx, ctx: wctx, cancel: cancel, src: src, obj: obj, size: size}
	for _, sp := range parts(0, size, c.streamPart()) {
		s.parts = append(s.parts, &streamPart{span: sp, notify: make(chan struct{}, 1)})
	}
	workers := min(c.conns, len(s.parts))
	s.slots = make(chan []byte, min(workers, len(s.parts)))
	for range cap(s.slots) {
		s.slots <- nil
	}
	s.wg.Add(workers)
	for range workers {
		go s.work()
	}
	return s
}

func (s *rangedStream) work() {
	defer s.wg.Done()
	for {
		var buf []byte
		select {
		case buf = <-s.slots:
		case <-s.ctx.Done():
			return
		}
		i := s.next.Add(1) - 1
		if i >= int64(len(s.parts)) {
			s.slots <- buf
			return
		}
		p := s.parts[i]
		if buf == nil {
			buf = make([]byte, s.c.streamPart())
		}
		p.mu.Lock()
		p.buf = buf[:p.end-p.off]
		p.mu.Unlock()
		_, err := s.c.fetch(s.ctx, s.src, s.obj, p.off, p.end, p)
		if err != nil {
			s.fail(err) // before the reader can see the part fail
		}
		p.mu.Lock()
		p.done, p.err = true, err
		p.mu.Unlock()
		p.signal()
		if err != nil {
			return
		}
	}
}

func (p *streamPart) signal() {
	select {
	case p.notify <- struct{}{}:
	default:
	}
}

// Write appends the part's next bytes. Only the part's worker writes, so
// the bytes past filled are its own until it publishes them.
func (p *streamPart) Write(b []byte) (int, error) {
	if p.filled+len(b) > len(p.buf) {
		return 0, errors.New("the storage host sent more bytes than the range holds")
	}
	copy(p.buf[p.filled:], b)
	p.mu.Lock()
	p.filled += len(b)
	p.mu.Unlock()
	p.signal()
	return len(b), nil
}

// readFrom reads the part's next bytes from src straight into its buffer
// (copyTo's way for a part: no copy buffer), until src ends or fails.
func (p *streamPart) readFrom(src io.Reader) (int64, error) {
	var n int64
	for {
		if p.filled == len(p.buf) {
			var one [1]byte
			if k, _ := src.Read(one[:]); k > 0 {
				return n, &writeError{errors.New("the storage host sent more bytes than the range holds")}
			}
			return n, nil
		}
		k, err := src.Read(p.buf[p.filled:])
		if k > 0 {
			p.mu.Lock()
			p.filled += k
			p.mu.Unlock()
			p.signal()
			n += int64(k)
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
	for s.head < len(s.parts) {
		p := s.parts[s.head]
		p.mu.Lock()
		avail := p.buf[p.read:p.filled]
		done, err := p.done, p.err
		p.mu.Unlock()
		switch {
		case len(avail) > 0:
			return avail, nil
		case err != nil:
			return nil, s.failure()
		case done:
			// Read to its end: the buffer goes back to the window.
			p.mu.Lock()
			buf := p.buf[:cap(p.buf)]
			p.buf = nil
			p.mu.Unlock()
			s.slots <- buf
			s.head++
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
	p := s.parts[s.head]
	p.mu.Lock()
	p.read += n
	p.mu.Unlock()
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
	if s.closed {
		return 0, errStreamClosed
	}
	if s.rest != nil {
		return s.rest.Read(b)
	}
	avail, err := s.peek()
	if errors.Is(err, errRangeIgnored) {
		s.stop()
		s.rest = s.c.openSequential(s.parent, s.src, s.obj, s.pos)
		return s.rest.Read(b)
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
			n, err := s.c.fetch(s.parent, s.src, s.obj, s.pos, -1, w)
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
	if s.closed {
		return nil
	}
	s.closed = true
	s.stop()
	if s.rest != nil {
		return s.rest.Close()
	}
	return nil
}

// fill downloads the object's missing spans into a file, each written in
// place at its offset, over up to c.conns connections when the file is
// large enough (one otherwise). The progress it keeps (and, for
// DownloadFile, checkpoints beside the file) is in st.
type fill struct {
	c    *Client
	src  *linkSource
	obj  *objectCheck
	f    io.WriterAt
	st   *fillState
	todo []span // set by run
	next atomic.Int64
	open bool // one connection: a span ending at the end of the object is requested open-ended

	errMu sync.Mutex
	err   error
}

// run fetches every span st misses and returns the first failure. When the
// host proves to ignore Range it fetches the rest over one connection.
func (fl *fill) run(ctx context.Context) error {
	size := fl.st.size
	workers, part := 1, int64(math.MaxInt64)
	if fl.c.parallel(size) {
		part = fl.c.part
	}
	fl.todo = fl.st.missing(part)
	if fl.c.parallel(size) {
		workers = min(fl.c.conns, len(fl.todo))
	}
	fl.open = workers == 1
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(workers)
	for range workers {
		go func() {
			defer wg.Done()
			fl.work(wctx, cancel)
		}()
	}
	wg.Wait()
	err := fl.err
	if errors.Is(err, errRangeIgnored) && ctx.Err() == nil {
		off := fl.st.firstMissing()
		a := fl.st.begin(off)
		_, err = fl.c.fetch(ctx, fl.src, fl.obj, off, -1, &spanWriter{f: fl.f, a: a, st: fl.st})
		fl.st.end(a)
	}
	if err == nil {
		err = ctx.Err() // a worker may have stopped between spans
	}
	return err
}

func (fl *fill) work(ctx context.Context, cancel context.CancelFunc) {
	for {
		i := fl.next.Add(1) - 1
		if i >= int64(len(fl.todo)) || ctx.Err() != nil {
			return
		}
		sp := fl.todo[i]
		end := sp.end
		if fl.open && end == fl.st.size {
			end = -1 // one connection: the tail as one request, which a host ignoring Range also serves
		}
		a := fl.st.begin(sp.off)
		_, err := fl.c.fetch(ctx, fl.src, fl.obj, sp.off, end, &spanWriter{f: fl.f, a: a, st: fl.st})
		fl.st.end(a)
		if err != nil {
			fl.errMu.Lock()
			if fl.err == nil {
				fl.err = err
			}
			fl.errMu.Unlock()
			cancel()
			return
		}
	}
}

// spanWriter writes a span's bytes in place, in order, and counts them.
type spanWriter struct {
	f  io.WriterAt
	a  *activeSpan
	st *fillState
}

func (w *spanWriter) Write(b []byte) (int, error) {
	n, err := w.f.WriteAt(b, w.a.off+w.a.n.Load())
	w.a.n.Add(int64(n))
	w.st.wrote(int64(n))
	return n, err
}

// fillState is what a file download has on disk: the spans complete, the
// spans being written, the bytes in all of them. checkpoint, when set, is
// called (one call at a time) after a span ends and at most every
// checkpointEvery while bytes arrive.
type fillState struct {
	mu     sync.Mutex
	done   []span // complete, sorted, merged
	active map[*activeSpan]struct{}
	have   atomic.Int64 // bytes written, counting those on disk at the start
	size   int64        // -1: unknown

	progress   func(done, total int64)
	progressMu sync.Mutex

	checkpoint func()
	ckMu       sync.Mutex
	lastCk     atomic.Int64 // unix nanoseconds of the last checkpoint
}

// checkpointEvery is how often a file download records its progress
// while bytes arrive.
const checkpointEvery = time.Second

// activeSpan is a span being written: its first n bytes from off are on disk.
type activeSpan struct {
	off int64
	n   atomic.Int64
}

func newFillState(size int64, done []span) *fillState {
	st := &fillState{size: size, active: map[*activeSpan]struct{}{}}
	st.done = mergeSpans(done)
	var n int64
	for _, d := range st.done {
		n += d.end - d.off
	}
	st.have.Store(n)
	st.lastCk.Store(time.Now().UnixNano())
	return st
}

// mergeSpans sorts spans and merges those that touch or overlap.
func mergeSpans(in []span) []span {
	s := slices.Clone(in)
	s = slices.DeleteFunc(s, func(sp span) bool { return sp.end <= sp.off })
	slices.SortFunc(s, func(a, b span) int { return cmp.Compare(a.off, b.off) })
	var out []span
	for _, sp := range s {
		if k := len(out) - 1; k >= 0 && sp.off <= out[k].end {
			out[k].end = max(out[k].end, sp.end)
			continue
		}
		out = append(out, sp)
	}
	return out
}

// missing returns the spans of [0, size) not yet on disk, split into parts
// of at most part bytes. With the size unknown, it is what follows the
// span from byte 0, to the end (-1).
func (st *fillState) missing(part int64) []span {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.size < 0 {
		return []span{{st.firstMissingLocked(), -1}}
	}
	var out []span
	off := int64(0)
	for _, d := range st.done {
		out = append(out, parts(off, d.off, part)...)
		off = d.end
	}
	return append(out, parts(off, st.size, part)...)
}

// firstMissing is the first byte not on disk.
func (st *fillState) firstMissing() int64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.firstMissingLocked()
}

func (st *fillState) firstMissingLocked() int64 {
	if len(st.done) > 0 && st.done[0].off == 0 {
		return st.done[0].end
	}
	return 0
}

func (st *fillState) begin(off int64) *activeSpan {
	a := &activeSpan{off: off}
	st.mu.Lock()
	st.active[a] = struct{}{}
	st.mu.Unlock()
	return a
}

// end retires an active span, complete or not: the bytes it wrote are on
// disk either way. Then it checkpoints.
func (st *fillState) end(a *activeSpan) {
	st.mu.Lock()
	delete(st.active, a)
	st.done = mergeSpans(append(st.done, span{a.off, a.off + a.n.Load()}))
	st.mu.Unlock()
	if st.checkpoint != nil {
		st.ckMu.Lock()
		st.checkpoint()
		st.lastCk.Store(time.Now().UnixNano())
		st.ckMu.Unlock()
	}
}

// snapshot returns the spans written so far: the complete ones and the
// written heads of the active ones, merged. Every byte it names was
// written before it was taken.
func (st *fillState) snapshot() []span {
	st.mu.Lock()
	defer st.mu.Unlock()
	all := slices.Clone(st.done)
	for a := range st.active {
		all = append(all, span{a.off, a.off + a.n.Load()})
	}
	return mergeSpans(all)
}

func (st *fillState) wrote(n int64) {
	have := st.have.Add(n)
	if st.progress != nil {
		if st.size >= 0 {
			have = min(have, st.size) // a fallback re-writes bytes it had
		}
		st.progressMu.Lock()
		st.progress(have, st.size)
		st.progressMu.Unlock()
	}
	if st.checkpoint != nil && time.Since(time.Unix(0, st.lastCk.Load())) >= checkpointEvery && st.ckMu.TryLock() {
		st.checkpoint()
		st.lastCk.Store(time.Now().UnixNano())
		st.ckMu.Unlock()
	}
}
