package lendgraph

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
)

// Parallel ranged downloads. Object stores cap the speed of each
// connection, so a large file comes down in parts of c.part bytes, each
// fetched with its own ranged request, over up to c.conns connections at
// once (aws s3 cp and s5cmd do the same). Each part resumes and re-signs on
// its own (fetch); the parts share one linkSource, so an expired link is
// refreshed once for all of them. Two ways to put the parts together:
// rangedStream (here) hands the bytes over in order from a bounded window
// of part buffers (Download to an io.Writer, Rows); fill (download_file.go)
// writes each part in place into a file (DownloadFile, the parquet temp
// file of Rows).

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
	head int           // the part being read
	pos  int64         // bytes handed over
	rest io.ReadCloser // the single-connection remainder once Range proved ignored
	// closed and rest are also touched by Close, which a loop's break calls
	// while the decoder's goroutine may be inside Read.
	closed atomic.Bool
	restMu sync.Mutex
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
	opFrom(ctx).connections(workers)
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
		rest := s.c.openSequential(s.parent, s.src, s.obj, s.pos)
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
