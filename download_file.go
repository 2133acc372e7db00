package lendgraph

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lendgraph/lendgraph-go/internal/safefile"
)

// Downloads to a path, resumable across restarts. The bytes go to
// PATH.part, written in place (several ranges at once for a large file);
// PATH.part.meta, beside it, records what the part file holds: the job,
// the file's size and the validators the storage host sent (ETag,
// Last-Modified), and the byte spans already on disk. The part file is
// fsynced before each record is written, and the record is replaced
// atomically (written aside, fsynced, renamed), so after a crash or a kill
// every span it names is on disk. The next download to the same path
// continues from those spans, once the host's answer shows the same file.
//
// No name is written through a symbolic link, and no file the download did
// not create is truncated (internal/safefile): a new part file is created
// exclusively, 0600 until it becomes the output; a part file continued is
// checked to be a regular file of this user; the record goes to a new
// temporary file renamed over it. Before the part file grows, the size the
// API declared is checked against WithMaxDownloadBytes and the space free
// where it goes.

// partialVersion is the layout of PATH.part.meta.
const partialVersion = 1

// partialMeta is the content of PATH.part.meta.
type partialMeta struct {
	Version      int        `json:"version"`
	Job          string     `json:"job"`
	Size         int64      `json:"size"` // -1: unknown
	ETag         string     `json:"etag,omitempty"`
	LastModified string     `json:"lastModified,omitempty"`
	Done         [][2]int64 `json:"done,omitempty"` // spans [start, end) on disk
}

// partial is a download to a path: its part file, its record, and what an
// earlier download left there.
type partial struct {
	path, part, meta string
	job              string
	prev             *partialMeta // the record an earlier download left; nil for none
}

// openPartial looks at what an earlier download to path left. A record of
// another job is refused at once; one that cannot be read (or a part file
// without a record) is a fresh start.
func openPartial(path, job string) (*partial, error) {
	if path == "" {
		return nil, invalidArg("path", "is empty; name the file to write")
	}
	if fi, err := os.Lstat(path); err == nil && fi.IsDir() {
		// Refused before anything is downloaded: the rename into place at
		// the end would fail.
		return nil, invalidArg("path", "%s is a directory; name the file to write in it", path)
	}
	p := &partial{path: path, part: path + ".part", meta: path + ".part.meta", job: job}
	b, err := safefile.ReadFile(p.meta)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, safefile.ErrUnsafe) {
		return p, nil // no record this user wrote: start over
	}
	if err != nil {
		return nil, fmt.Errorf("lendgraph: reading %s: %w", p.meta, err)
	}
	var m partialMeta
	if unmarshal(b, &m) != nil || m.Version != partialVersion {
		return p, nil // not a record this version wrote: start over
	}
	if m.Job != job {
		return nil, fmt.Errorf("lendgraph: %s is a partial download of delivery job %s, not %s; finish it with that job, or remove it to download from the start: %w",
			p.part, m.Job, job, ErrPartialMismatch)
	}
	p.prev = &m
	return p, nil
}

// resumeFrom returns the spans an earlier download left that this one can
// continue from, and the object check seeded with that download's
// validators. A record of another size is refused; one without a
// validator, or whose part file is shorter than it says, is a fresh start.
func (p *partial) resumeFrom(size int64) ([]span, *objectCheck, error) {
	obj := newObjectCheck(size)
	m := p.prev
	if m == nil || len(m.Done) == 0 {
		return nil, obj, nil
	}
	if size >= 0 && m.Size >= 0 && m.Size != size {
		return nil, nil, fmt.Errorf("lendgraph: %s holds part of a file of %d bytes, but the delivered file has %d; remove it to download from the start: %w",
			p.part, m.Size, size, ErrPartialMismatch)
	}
	if m.ETag == "" && m.LastModified == "" {
		return nil, obj, nil // nothing to tell the file by: start over
	}
	fi, err := os.Stat(p.part)
	if err != nil {
		return nil, obj, nil
	}
	var done []span
	for _, d := range m.Done {
		if d[0] < 0 || d[1] <= d[0] || d[1] > fi.Size() || (m.Size >= 0 && d[1] > m.Size) {
			return nil, obj, nil // not what this download wrote: start over
		}
		done = append(done, span{d[0], d[1]})
	}
	if size < 0 {
		size = m.Size
	}
	obj.size, obj.etag, obj.modified, obj.seen, obj.partial = size, m.ETag, m.LastModified, true, p.part
	return done, obj, nil
}

// downloadFile downloads the object behind a signed link to p.path through
// p.part, continuing from what an earlier download left when it is the
// same file, and returns the file's size. On failure the part file and its
// record stay for the next call.
func (o *operation) downloadFile(ctx context.Context, p *partial, first SignedURL, link linkFunc, size int64, progress func(*DownloadProgress)) (int64, error) {
	done, obj, err := p.resumeFrom(size)
	if err != nil {
		return 0, err
	}
	if obj.size >= 0 {
		size = obj.size
	}
	limit, over, err := spaceFor(p.path, size, done, o.cfg.maxDownloadBytes)
	if err != nil {
		return 0, err
	}
	var f *os.File
	if len(done) == 0 {
		f, err = safefile.Recreate(p.part)
	} else {
		f, err = safefile.Open(p.part)
	}
	if err != nil {
		return 0, fmt.Errorf("lendgraph: %w", err)
	}
	closeFile := func() error {
		if f == nil {
			return nil
		}
		err := f.Close()
		f = nil
		return err
	}
	defer closeFile()
	if size >= 0 {
		if err := f.Truncate(size); err != nil {
			return 0, fmt.Errorf("lendgraph: %w", err)
		}
	}
	st := newFillState(size, done)
	st.progress = progress
	st.limit, st.over = limit, over
	record := func() error {
		spans := st.snapshot() // before the sync: every span named is written
		if err := f.Sync(); err != nil {
			return err
		}
		sz, etag, modified := obj.validators()
		m := partialMeta{Version: partialVersion, Job: p.job, Size: sz, ETag: etag, LastModified: modified}
		for _, s := range spans {
			m.Done = append(m.Done, [2]int64{s.off, s.end})
		}
		return writeFileSynced(p.meta, m)
	}
	if err := record(); err != nil {
		return 0, fmt.Errorf("lendgraph: recording the download in %s: %w", p.meta, err)
	}
	// A record that cannot be written costs only the resume; the download
	// goes on.
	st.checkpoint = func() { _ = record() }
	if progress != nil {
		progress(&DownloadProgress{Done: st.have.Load(), Total: size})
	}
	fl := &fill{o: o, src: newLinkSource(first, link, o.obs), obj: obj, f: f, st: st}
	if err := fl.run(ctx); err != nil {
		st.ckMu.Lock()
		_ = record()
		st.ckMu.Unlock()
		var have int64
		for _, s := range st.snapshot() {
			have += s.end - s.off
		}
		sz, _, _ := obj.validators()
		return 0, &DownloadError{Written: have, Size: sz, Err: err}
	}
	n := fl.st.firstMissing()
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("lendgraph: %w", err)
	}
	if err := safefile.Publish(f, p.part, p.path); err != nil {
		return 0, fmt.Errorf("lendgraph: %w", err)
	}
	if err := closeFile(); err != nil {
		return 0, fmt.Errorf("lendgraph: %w", err)
	}
	_ = os.Remove(p.meta)
	safefile.SyncDir(filepath.Dir(p.path))
	return n, nil
}

// spaceFor checks that a file of size bytes (-1: unknown), of which the
// spans done are on disk, may be written at path: within maxBytes (0: no
// cap) and the space free on its file system. For a file of unknown size
// it returns the offset writes must stay below (0: no bound) and the error
// a write past it fails with.
func spaceFor(path string, size int64, done []span, maxBytes int64) (limit int64, over error, err error) {
	var have int64
	for _, d := range done {
		have += d.end - d.off
	}
	free, known := safefile.Free(filepath.Dir(path))
	if !known {
		free = -1
	}
	if size >= 0 {
		if maxBytes > 0 && size > maxBytes {
			return 0, nil, &DownloadSpaceError{Path: path, Size: size, MaxBytes: maxBytes, Free: free}
		}
		if known && size-have > free {
			return 0, nil, &DownloadSpaceError{Path: path, Size: size, Free: free}
		}
		return 0, nil, nil
	}
	if known && (maxBytes == 0 || have+free < maxBytes) {
		return max(have+free, 1), &DownloadSpaceError{Path: path, Size: -1, Free: free}, nil
	}
	if maxBytes > 0 {
		return maxBytes, &DownloadSpaceError{Path: path, Size: -1, MaxBytes: maxBytes, Free: free}, nil
	}
	return 0, nil, nil
}

// downloadTo downloads the object into f in place (a temporary file: no
// record, no resume) and returns its size.
func (o *operation) downloadTo(ctx context.Context, f *os.File, first SignedURL, link linkFunc, size int64) (int64, error) {
	obj := newObjectCheck(size)
	st := newFillState(size, nil)
	fl := &fill{o: o, src: newLinkSource(first, link, o.obs), obj: obj, f: f, st: st}
	if err := fl.run(ctx); err != nil {
		sz, _, _ := obj.validators()
		return 0, &DownloadError{Written: st.firstMissing(), Size: sz, Err: err}
	}
	return st.firstMissing(), nil
}

// fill downloads the object's missing spans into a file, each written in
// place at its offset, over o.cfg.downloadConns connections when the file is large
// enough (one otherwise): at most o.c.part bytes a span, and at least one
// span a connection. A connection that finds no span left takes over half
// of the remainder of another (download_sched.go). The progress it keeps
// (and, for DownloadFile, checkpoints beside the file) is in st.
type fill struct {
	o     *operation
	src   *linkSource
	obj   *objectCheck
	f     io.WriterAt
	st    *fillState
	todo  []span // set by run
	open  bool   // one connection: a span ending at the end of the object is requested open-ended
	sched *sched[*activeSpan]

	errMu sync.Mutex
	err   error
}

// run fetches every span st misses and returns the first failure. When the
// host proves to ignore Range it fetches the rest over one connection.
func (fl *fill) run(ctx context.Context) error {
	size := fl.st.size
	workers := 1
	fl.todo = fl.st.missing(math.MaxInt64)
	if fl.o.parallel(size) {
		var todo int64
		for _, sp := range fl.todo {
			todo += sp.end - sp.off
		}
		workers = fl.o.cfg.downloadConns
		fl.todo = fl.st.missing(fl.o.partFor(max(todo, 1), fl.o.c.part))
	}
	fl.open = workers == 1
	fl.sched = newSched[*activeSpan](len(fl.todo), fl.o.stealMin(), workers, fl.o.c.idleHook)
	fl.o.obs.connections(workers)
	if workers > 1 {
		workers *= 2 // half of them on their way to the next span (relay)
	}
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
		a := fl.st.begin(off, -1)
		_, err = fl.o.fetch(ctx, fl.src, fl.obj, off, -1, &spanWriter{f: fl.f, a: a, st: fl.st})
		fl.st.end(a)
	}
	if err == nil {
		err = ctx.Err() // a worker may have stopped between spans
	}
	return err
}

func (fl *fill) work(ctx context.Context, cancel context.CancelFunc) {
	relay := fl.sched.relay
	for {
		t, ok := relay.wait(ctx)
		if !ok {
			return
		}
		a, ok := fl.sched.take(func(i int) *activeSpan {
			sp := fl.todo[i]
			end := sp.end
			if fl.open && end == fl.st.size {
				end = -1 // one connection: the tail as one request, which a host ignoring Range also serves
			}
			return fl.st.begin(sp.off, end)
		})
		if !ok {
			a, ok = fl.sched.steal(func(_ *activeSpan, mid, end int64) *activeSpan { return fl.st.begin(mid, end) })
		}
		if !ok {
			relay.pass()
			return
		}
		a.c.take(t)
		_, err := fl.o.fetch(ctx, fl.src, fl.obj, a.off, a.c.bound(), &spanWriter{f: fl.f, a: a, st: fl.st})
		a.c.handOn()
		fl.sched.finish(a)
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
	at, k := w.a.c.claim(int64(len(b)))
	if lim := w.st.limit; lim > 0 && at+k > lim {
		w.a.c.commit(0)
		return 0, &writeError{w.st.over}
	}
	n, err := w.f.WriteAt(b[:k], at)
	w.a.c.commit(int64(n))
	w.a.n.Add(int64(n))
	w.st.wrote(int64(n))
	if err == nil && n < len(b) {
		err = errSpanTaken // k < len(b): the span ends here
	}
	return n, err
}

// bound is where the span ends now: a steal may have cut it short.
func (w *spanWriter) bound() int64 { return w.a.c.bound() }

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
	limit  int64        // writes stay below this offset (0: no bound): the cap and the free space, for a file of unknown size
	over   error        // what a write past limit fails with

	progress   func(*DownloadProgress)
	progressMu sync.Mutex

	checkpoint func()
	ckMu       sync.Mutex
	lastCk     atomic.Int64 // unix nanoseconds of the last checkpoint
}

// checkpointEvery is how often a file download records its progress
// while bytes arrive.
const checkpointEvery = time.Second

// activeSpan is a span being written: its first n bytes from off are on
// disk; c is where its writes stand and where it ends.
type activeSpan struct {
	off int64
	n   atomic.Int64
	c   cursor
}

func (a *activeSpan) cur() *cursor { return &a.c }

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

// begin adds the span [off, end) (end -1: to the end of the object) as
// being written.
func (st *fillState) begin(off, end int64) *activeSpan {
	a := &activeSpan{off: off, c: newCursor(off, end)}
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
		st.progress(&DownloadProgress{Done: have, Total: st.size})
		st.progressMu.Unlock()
	}
	if st.checkpoint != nil && time.Since(time.Unix(0, st.lastCk.Load())) >= checkpointEvery && st.ckMu.TryLock() {
		st.checkpoint()
		st.lastCk.Store(time.Now().UnixNano())
		st.ckMu.Unlock()
	}
}

// writeFileSynced replaces path with v as JSON: written to a new temporary
// file beside it, fsynced, renamed over path, and the directory fsynced.
func writeFileSynced(path string, v any) error {
	b, err := marshal(v)
	if err != nil {
		return err
	}
	return safefile.WriteAtomic(path, b)
}
