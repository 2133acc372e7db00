package lendgraph

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// linkFunc fetches a freshly signed link (a job status fetch: the reference
// re-signs resultsUrl on every one).
type linkFunc func(ctx context.Context) (SignedURL, error)

// maxStalls is how many attempts in a row may fail without a single new
// byte before a download gives up.
const maxStalls = 5

// linkSource hands out the current signed link of one download to all its
// ranges. A range that finds the link expired (or refused) reports it with
// expire; the next get fetches a fresh one, once for every range that saw
// the same link fail (single flight), not once per range.
type linkSource struct {
	fetch  linkFunc
	op     *opState // the download's, told of each fresh link
	mu     sync.Mutex
	cur    SignedURL
	gen    uint64       // counts the links handed out; identifies cur
	flight *linkRefresh // the refresh in progress, nil when none
}

type linkRefresh struct {
	done chan struct{}
	err  error
}

func newLinkSource(first SignedURL, fetch linkFunc, op *opState) *linkSource {
	return &linkSource{fetch: fetch, op: op, cur: first, gen: 1}
}

// get returns the current link and its generation, fetching a fresh one
// when the last was expired (or there was none).
func (s *linkSource) get(ctx context.Context) (SignedURL, uint64, error) {
	s.mu.Lock()
	for {
		if s.cur != "" {
			l, g := s.cur, s.gen
			s.mu.Unlock()
			return l, g, nil
		}
		if f := s.flight; f != nil {
			s.mu.Unlock()
			select {
			case <-f.done:
			case <-ctx.Done():
				return "", 0, ctx.Err()
			}
			if f.err != nil {
				return "", 0, f.err
			}
			s.mu.Lock()
			continue
		}
		f := &linkRefresh{done: make(chan struct{})}
		s.flight = f
		s.mu.Unlock()
		l, err := s.fetch(ctx)
		if err == nil && l == "" {
			err = errors.New("the job has no results link")
		} else if err != nil {
			err = fmt.Errorf("fetching a fresh link: %w", err)
		}
		s.mu.Lock()
		s.flight = nil
		if err == nil {
			s.cur, s.gen = l, s.gen+1
			s.op.resigned()
		}
		f.err = err
		close(f.done)
		if err != nil {
			s.mu.Unlock()
			return "", 0, err
		}
	}
}

// expire reports that link generation gen was refused: the next get
// fetches a fresh link unless another range already did.
func (s *linkSource) expire(gen uint64) {
	s.mu.Lock()
	if s.gen == gen {
		s.cur = ""
	}
	s.mu.Unlock()
}

// objectCheck is what a download knows about the object behind the link:
// its size and the validators (ETag, Last-Modified) the storage host sent
// first. Every response of the download, whatever its range, must describe
// the same object, so bytes of two versions are never mixed.
type objectCheck struct {
	mu       sync.Mutex
	size     int64 // -1 until known
	etag     string
	modified string
	seen     bool   // etag and modified come from a response (or a partial file)
	partial  string // the partial file the validators came from, "" when none
}

func newObjectCheck(size int64) *objectCheck { return &objectCheck{size: size} }

// validators returns what the storage host sent to identify the object.
func (o *objectCheck) validators() (size int64, etag, modified string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.size, o.etag, o.modified
}

// check compares one response with what the download knows.
func (o *objectCheck) check(total int64, h http.Header) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	etag, modified := h.Get("ETag"), h.Get("Last-Modified")
	if total >= 0 && o.size >= 0 && total != o.size {
		if o.partial != "" {
			return &permanentError{fmt.Errorf("%s holds part of another file (%d bytes; the storage host now announces %d): %w",
				o.partial, o.size, total, ErrPartialMismatch)}
		}
		// Not the file the job wrote: a proxy's or portal's page, most likely.
		return &permanentError{fmt.Errorf("storage host announced %d bytes (%s) for a file of %d bytes",
			total, h.Get("Content-Type"), o.size)}
	}
	if total >= 0 {
		o.size = total
	}
	if !o.seen {
		o.etag, o.modified, o.seen = etag, modified, true
		return nil
	}
	changed := ""
	switch {
	case o.etag != "" && etag != "":
		if etag != o.etag {
			changed = fmt.Sprintf("ETag %s, now %s", o.etag, etag)
		}
	case o.modified != "" && modified != "":
		if modified != o.modified {
			changed = fmt.Sprintf("Last-Modified %s, now %s", o.modified, modified)
		}
	}
	if changed == "" {
		return nil
	}
	if o.partial != "" {
		return &permanentError{fmt.Errorf("%s holds part of another version of the file (%s): %w", o.partial, changed, ErrPartialMismatch)}
	}
	return &permanentError{fmt.Errorf("the file changed on the storage host during the download (%s)", changed)}
}

// download writes the object behind a signed link to w. The link's host
// gets no API credential and no Authorization header. When the connection
// drops it resumes with a Range request from the bytes already written;
// when the link has expired (or the host refuses it) it asks link for a
// freshly signed one. A server that ignores Range is read from the start
// with the bytes already written skipped. The final length is checked
// against the size the server announced.
func (o *operation) download(ctx context.Context, first SignedURL, link linkFunc, w io.Writer, progress func(*DownloadProgress)) (int64, error) {
	return o.downloadSized(ctx, first, link, w, -1, progress)
}

// openDownload streams the object behind a signed link (see
// downloadSized): a file of parallelMin bytes or more comes down over
// several ranged connections (see rangedStream), a smaller one (or one of
// unknown size) in a goroutine writing into a pipe that the caller reads.
// Closing the stream cancels the download and waits for its goroutines, so
// none outlives it; a failed download is the read error after the bytes
// that did arrive.
func (o *operation) openDownload(ctx context.Context, first SignedURL, link linkFunc, size int64) io.ReadCloser {
	src, obj := newLinkSource(first, link, o.obs), newObjectCheck(size)
	if o.parallel(size) {
		return o.newRangedStream(ctx, src, obj, true)
	}
	return o.openSequential(ctx, src, obj, 0)
}

// openSequential streams the object from byte off over one connection at
// a time, in a goroutine writing into a pipe.
func (o *operation) openSequential(ctx context.Context, src *linkSource, obj *objectCheck, off int64) io.ReadCloser {
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	done := make(chan struct{})
	o.obs.connections(1)
	size, _, _ := obj.validators() // declared: nothing fetched yet
	w := o.capped(pw, size)
	go func() {
		defer close(done)
		n, err := o.fetch(ctx, src, obj, off, -1, w)
		if err != nil {
			size, _, _ := obj.validators()
			err = &DownloadError{Written: off + n, Size: size, Err: err}
		}
		pw.CloseWithError(err) // nil: the reader sees io.EOF
	}()
	return &downloadStream{PipeReader: pr, cancel: cancel, done: done}
}

// downloadStream is the reading end of openSequential.
type downloadStream struct {
	*io.PipeReader
	cancel context.CancelFunc
	done   chan struct{}
}

var errStreamClosed = errors.New("lendgraph: download stream closed")

// Close stops the download and waits for it to end.
func (d *downloadStream) Close() error {
	d.cancel()
	_ = d.PipeReader.CloseWithError(errStreamClosed)
	<-d.done
	return nil
}

// downloadSized is download for a file whose size the caller knows (a
// delivery's status record says it): when the host announces no length (a
// close-delimited body), a connection cut short is still told from the end
// of the file. size is -1 when unknown. A file of parallelMin bytes or
// more comes down over several ranged connections (see rangedStream).
func (o *operation) downloadSized(ctx context.Context, first SignedURL, link linkFunc, w io.Writer, size int64, progress func(*DownloadProgress)) (int64, error) {
	src, obj := newLinkSource(first, link, o.obs), newObjectCheck(size)
	tw, decoding := w.(tailFirstWriter)
	if err := o.overCap(size); err != nil {
		return 0, err
	}
	w = o.capped(w, size)
	if progress != nil {
		w = &progressWriter{w: w, total: size, progress: progress}
	}
	if decoding && size > 0 {
		if k := tw.TailFirst(size); k > 0 && k < size {
			tctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() {
				defer close(done)
				// Its failure is the main download's to report: the
				// bytes come again in order.
				_, _ = o.fetch(tctx, src, obj, size-k, size, io.NewOffsetWriter(tw, size-k))
			}()
			defer func() { cancel(); <-done }()
		}
	}
	if o.parallel(size) {
		// A decoder reads what lands: the parts it reads (decodePart).
		rs := o.newRangedStream(ctx, src, obj, decoding)
		defer rs.Close()
		return rs.WriteTo(w)
	}
	o.obs.connections(1)
	n, err := o.fetch(ctx, src, obj, 0, -1, w)
	if err != nil {
		size, _, _ = obj.validators()
		return n, &DownloadError{Written: n, Size: size, Err: err}
	}
	return n, nil
}

// overCap is the *DownloadSpaceError of a download declaring size bytes,
// above WithMaxDownloadBytes; nil when there is no cap, or the size is
// within it or unknown (-1: capped ends that download at the cap).
func (o *operation) overCap(size int64) error {
	limit := o.cfg.maxDownloadBytes
	if limit <= 0 || size <= limit {
		return nil
	}
	return &DownloadSpaceError{Size: size, MaxBytes: limit, Free: -1}
}

// capped is w for a download of size bytes, cut at WithMaxDownloadBytes
// when the size is unknown (-1): a declared size is refused before
// (overCap) and checked against the file (objectCheck).
func (o *operation) capped(w io.Writer, size int64) io.Writer {
	limit := o.cfg.maxDownloadBytes
	if limit <= 0 || size >= 0 {
		return w
	}
	return &capWriter{w: w, left: limit, tooLarge: &DownloadSpaceError{Size: -1, MaxBytes: limit, Free: -1}}
}

// capWriter writes at most left bytes to w, then fails with tooLarge: the
// writing side of capReader, for a download of unknown size.
type capWriter struct {
	w        io.Writer
	left     int64
	tooLarge error
}

func (c *capWriter) Write(p []byte) (int, error) {
	if int64(len(p)) <= c.left {
		n, err := c.w.Write(p)
		c.left -= int64(n)
		return n, err
	}
	n, err := c.w.Write(p[:c.left])
	c.left -= int64(n)
	if err == nil {
		err = c.tooLarge
	}
	return n, err
}

// progressWriter tells a download's progress callback of every write.
type progressWriter struct {
	w        io.Writer
	done     int64
	total    int64
	progress func(*DownloadProgress)
}

func (p *progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.done += int64(n)
	p.progress(&DownloadProgress{Done: p.done, Total: p.total})
	return n, err
}

// tailFirstWriter is a destination that wants the last TailFirst(size)
// bytes of the file before the rest: package parquet's landing file, whose
// decoding starts from the footer at the end of the file while the rest
// comes down. downloadSized fetches that tail on a connection of its own,
// written in place with WriteAt, while the whole file is written to the
// destination in order (the tail's bytes again, with the same ETag check),
// in the small parts of a stream a decoder reads (decodePart), so that the
// bytes land nearly in file order; the tail's failure is left to the main
// download.
type tailFirstWriter interface {
	io.WriterAt
	TailFirst(size int64) int64
}

// fetch writes the object's bytes from off up to end (exclusive; -1: to
// the end of the object) to w and returns how many it wrote. When the
// connection drops it resumes with a Range request from the bytes already
// written; when the link has expired it asks src for a fresh one. It gives
// up after maxStalls attempts in a row without a new byte, when w fails,
// or on an answer that repeating cannot change. A w with a bound method
// (a span of a parallel download, see download_sched.go) may end sooner
// than end: each attempt asks up to its bound, and the fetch is complete
// when w answers errSpanTaken.
func (o *operation) fetch(ctx context.Context, src *linkSource, obj *objectCheck, off, end int64, w io.Writer) (int64, error) {
	var written int64
	stalls := 0
	var lastErr error
	op := o.obs
	for first := true; ; first = false {
		if stalls >= maxStalls {
			return written, lastErr
		}
		if !first {
			op.resumed(off + written)
		}
		if stalls > 0 {
			if retry.Wait(ctx, retry.Jitter(o.cfg.retryBase, o.cfg.retryMax, stalls-1)) != nil {
				return written, ctxErr(ctx)
			}
		}
		if b, ok := w.(interface{ bound() int64 }); ok {
			// A span another connection took part of ends sooner.
			if end = b.bound(); end >= 0 && off+written >= end {
				return written, nil
			}
		}
		link, gen, err := src.get(ctx)
		if err != nil {
			// The status fetch has had its own retries.
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return written, err
		}
		n, done, refresh, err := o.downloadOnce(ctx, link, off+written, end, w, obj)
		if n > 0 {
			stalls = 0
			op.update(func(s *Summary) { s.Bytes += n })
		}
		written += n
		if done || errors.Is(err, errSpanTaken) {
			return written, nil
		}
		var werr *writeError
		if errors.As(err, &werr) || ctx.Err() != nil {
			if cerr := ctxErr(ctx); cerr != nil {
				err = cerr
			}
			return written, err
		}
		var perm *permanentError
		if errors.As(err, &perm) {
			return written, perm.err
		}
		if errors.Is(err, errRangeIgnored) {
			return written, err
		}
		if refresh {
			src.expire(gen)
		}
		lastErr = err
		stalls++
	}
}

type writeError struct{ err error }

func (e *writeError) Error() string { return "writing: " + e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// errRangeIgnored is a bounded range request answered with the whole
// object: the host does not do Range, so a parallel download falls back to
// one connection.
var errRangeIgnored = errors.New("the storage host ignores Range requests")

// downloadOnce makes one GET of the object from byte offset up to end
// (exclusive; -1: to the end). It is the one place a signed link is
// opened. It reports the bytes written, whether the span is complete, and
// whether the link needs re-signing before the next attempt.
func (o *operation) downloadOnce(ctx context.Context, link SignedURL, offset, end int64, w io.Writer, obj *objectCheck) (n int64, done, refresh bool, err error) {
	r := request{method: http.MethodGet, link: link, kind: retry.Idempotent}
	asked := "bytes=" + strconv.FormatInt(offset, 10) + "-"
	if end >= 0 {
		asked += strconv.FormatInt(end-1, 10)
	}
	if offset > 0 || end >= 0 {
		r.header = http.Header{"Range": {asked}}
		o.obs.update(func(s *Summary) { s.Ranges++ })
	}
	resp, err := o.stream(ctx, r)
	if err != nil {
		var le *linkError
		if errors.As(err, &le) {
			return 0, false, false, &permanentError{err}
		}
		return 0, false, false, err
	}
	defer resp.Body.Close()
	if d, ok := retry.RetryAfter(resp.Header, o.c.now()); ok && resp.StatusCode >= 300 {
		base := &APIError{StatusCode: resp.StatusCode, Method: http.MethodGet, Path: resp.Request.URL.Path, Message: "storage host"}
		if rl := o.cfg.refuseWait(base, d); rl != nil {
			return 0, false, false, &permanentError{rl}
		}
	}
	total := int64(-1)
	skip := int64(0)
	short := int64(0) // the end of a range the host sent shorter than asked
	switch {
	case resp.StatusCode == http.StatusOK:
		if end >= 0 {
			if err := obj.check(resp.ContentLength, resp.Header); err != nil {
				return 0, false, false, err
			}
			return 0, false, false, errRangeIgnored
		}
		total = resp.ContentLength
		skip = offset // the host ignored Range: start over, skipping what we have
	case resp.StatusCode == http.StatusPartialContent:
		start, last, t, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || start != offset || last < start || (end >= 0 && last >= end) {
			return 0, false, false, fmt.Errorf("storage host answered range %q to a request for %s", resp.Header.Get("Content-Range"), asked)
		}
		total = t
		if end >= 0 && last+1 < end {
			// A host that caps the length of a range: take what it sent,
			// then ask for the rest.
			short = last + 1
		}
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		_, _, t, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if ok && t == offset && end < 0 {
			if err := obj.check(t, resp.Header); err != nil {
				return 0, false, false, err
			}
			return 0, true, false, nil
		}
		return 0, false, true, fmt.Errorf("storage host refused range from byte %d", offset)
	case resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusUnauthorized:
		// Expired or refused signature: ask for a freshly signed link.
		b, _ := readCapped(resp.Body, 4<<10)
		return 0, false, true, fmt.Errorf("storage host answered %d (link expired or refused)%s", resp.StatusCode, redact(storageCode(b), link.secrets()...))
	case resp.StatusCode == http.StatusNotFound:
		return 0, false, false, &permanentError{fmt.Errorf("storage host answered 404: the file is gone (past the 30-day retention?): %w", ErrNotFound)}
	default:
		return 0, false, false, fmt.Errorf("storage host answered %d", resp.StatusCode)
	}
	if err := obj.check(total, resp.Header); err != nil {
		return 0, false, false, err
	}
	if skip > 0 {
		if _, err := io.CopyN(io.Discard, resp.Body, skip); err != nil {
			return 0, false, false, fmt.Errorf("re-reading the first %d bytes: %w", skip, redactError(err))
		}
	}
	want := end
	if want < 0 {
		want, _, _ = obj.validators()
	}
	if short > 0 {
		want = short
	}
	var body io.Reader = resp.Body
	if want >= 0 {
		body = io.LimitReader(resp.Body, want-offset)
	}
	n, err = copyTo(w, body)
	if err != nil {
		return n, false, false, attemptTimeout(err)
	}
	if want >= 0 && offset+n != want {
		return n, false, false, fmt.Errorf("connection closed at byte %d of %d", offset+n, want)
	}
	if short > 0 {
		return n, false, false, fmt.Errorf("storage host sent bytes %d-%d of %d-%d", offset, short-1, offset, end-1)
	}
	return n, true, false, nil
}

// copyTo copies src to dst, telling write failures (the caller's) from
// read failures (the network's).
func copyTo(dst io.Writer, src io.Reader) (int64, error) {
	if p, ok := dst.(*streamPart); ok {
		return p.readFrom(src)
	}
	buf := make([]byte, 256<<10)
	var n int64
	for {
		k, rerr := src.Read(buf)
		if k > 0 {
			wk, werr := dst.Write(buf[:k])
			n += int64(wk)
			if werr != nil {
				return n, &writeError{werr}
			}
			if wk < k {
				return n, &writeError{io.ErrShortWrite}
			}
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, redactError(rerr)
		}
	}
}

// storageCode names the error code of an S3-style XML error body. Only the
// code, and only when it is one (letters and digits, such as
// AccessDenied or ExpiredToken): such bodies can echo the request's
// signature (SignatureProvided, StringToSign), which must not reach an
// error text, and a hostile host can put anything between the tags.
func storageCode(body []byte) string {
	_, rest, ok := strings.Cut(string(body), "<Code>")
	code, _, ok2 := strings.Cut(rest, "</Code>")
	if !ok || !ok2 || code == "" || len(code) > 64 || strings.TrimFunc(code, isAlnum) != "" {
		return ""
	}
	return ": " + code
}

// isAlnum reports whether r is an ASCII letter or digit.
func isAlnum(r rune) bool { return r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r)) }

// parseContentRange reads "bytes start-last/total" (or "bytes */total",
// where start and last are -1).
func parseContentRange(h string) (start, last, total int64, ok bool) {
	rest, found := strings.CutPrefix(h, "bytes ")
	if !found {
		return 0, 0, 0, false
	}
	rng, tot, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, 0, false
	}
	t, err := strconv.ParseInt(tot, 10, 64)
	if err != nil {
		return 0, 0, 0, false
	}
	if rng == "*" {
		return -1, -1, t, true
	}
	s, l, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, 0, false
	}
	st, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, 0, 0, false
	}
	la, err := strconv.ParseInt(l, 10, 64)
	if err != nil {
		return 0, 0, 0, false
	}
	return st, la, t, true
}
