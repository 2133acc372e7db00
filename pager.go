package lendgraph

import (
	"bytes"
	"context"
	"fmt"
	"iter"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// Pager walks a cursor-paginated list one page at a time. Every cursor list
// of the API (resource lists, breakdowns, branches, charts, enrichments) is
// read through a Pager. The zero value is not usable; services return ready
// pagers.
//
// A Pager is one cursor: its position moves as NextPage returns pages and
// as an All loop yields rows. A loop that stops in the middle of a page
// (break, a panic in the loop body, an error) leaves the pager on that
// page, so the next NextPage or All reads it again from its first row: no
// row is skipped. Cursor, NextCursor and More may be called from any
// goroutine; NextPage and All loops of one pager do not run at the same
// time (a second one gets an error; use one pager per goroutine).
//
// A long export can be stopped and resumed in another process: save Cursor
// (the cursor that fetched the page being read) and start a new pager from
// it; the page is read again from its first row.
type Pager[T any] struct {
	fetch pageFetch[T]
	// open starts the operation a NextPage call or an All range is (the
	// SDK's pagers; nil for NewPager's).
	open func(ctx context.Context) (context.Context, *operation, error)

	mu      sync.Mutex
	busy    bool   // a NextPage call or an All loop is running
	cursor  string // fetched the current page ("" = first page)
	next    string // fetches the page after the current one
	done    bool   // no page after the current one
	partial bool   // the current page was not read to its end: it comes again
	seen    map[string]struct{}
}

// pageFetch fetches the page cursor names in operation o (nil for a
// pager of NewPager). early, when not nil, may be called with the cursor
// of the page after it as soon as the page's answer names it, before its
// rows are decoded (see peekCursor); the cursor returned is the one that
// counts.
type pageFetch[T any] func(ctx context.Context, o *operation, cursor string, early func(next string)) ([]T, string, error)

// newPager returns a pager whose first page is fetched with start (empty for
// the beginning of the list); open starts the operation of each NextPage
// call and All range (nil: none).
func newPager[T any](start string, open func(context.Context) (context.Context, *operation, error), fetch pageFetch[T]) *Pager[T] {
	return &Pager[T]{fetch: fetch, open: open, next: start, seen: map[string]struct{}{}}
}

// begin starts the operation of a NextPage call or an All range.
func (p *Pager[T]) begin(ctx context.Context) (context.Context, *operation, error) {
	if p.open == nil {
		return ctx, nil, nil
	}
	return p.open(ctx)
}

// position is where a pager stands: the cursor of the next page to fetch,
// and whether the list is exhausted.
type position struct {
	cursor string
	done   bool
}

// positionLocked is the page NextPage or All reads next: the current page
// again when a loop left it unfinished, else the page after it.
func (p *Pager[T]) positionLocked() position {
	if p.partial {
		return position{cursor: p.cursor}
	}
	return position{cursor: p.next, done: p.done}
}

// More reports whether NextPage has another page to return.
func (p *Pager[T]) More() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.positionLocked().done
}

// Cursor returns the cursor that fetched the page last returned by NextPage
// (or being iterated by All): resuming from it reads that page again.
// It is empty on the first page.
func (p *Pager[T]) Cursor() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cursor
}

// NextCursor returns the cursor of the page NextPage or All reads next,
// empty when the list is exhausted. After a loop stopped in the middle of
// a page, that is the same page (Cursor).
func (p *Pager[T]) NextCursor() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	pos := p.positionLocked()
	if pos.done {
		return ""
	}
	return pos.cursor
}

// acquire marks the pager busy, refusing when another NextPage call or All
// loop holds it.
func (p *Pager[T]) acquire() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.busy {
		return errConcurrentRange
	}
	p.busy = true
	return nil
}

func (p *Pager[T]) release() {
	p.mu.Lock()
	p.busy = false
	p.mu.Unlock()
}

// NextPage fetches the next page. After the last page More reports false and
// NextPage returns nil, nil. After an All loop stopped in the middle of a
// page, NextPage returns that page whole.
func (p *Pager[T]) NextPage(ctx context.Context) (_ []T, err error) {
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	if err := p.acquire(); err != nil {
		return nil, err
	}
	defer p.release()
	p.mu.Lock()
	pos := p.positionLocked()
	p.mu.Unlock()
	if pos.done {
		return nil, nil
	}
	ctx, o, err := p.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { o.end(err) }()
	items, next, err := p.fetch(ctx, o, pos.cursor, nil)
	if err != nil {
		return nil, err
	}
	return items, p.advance(pos.cursor, next)
}

// advance records that the page fetched with cursor arrived, naming next as
// the page after it. A cursor that comes back a second time in one walk is
// an error, not an endless loop.
func (p *Pager[T]) advance(cursor, next string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cursor, p.next, p.partial = cursor, next, false
	seen := p.seen
	seen[cursor] = struct{}{}
	if next == "" {
		p.done = true
		return nil
	}
	p.done = false
	if _, dup := seen[next]; dup {
		p.done = true
		return fmt.Errorf("lendgraph: the server returned cursor %q a second time; stopping instead of looping", next)
	}
	return nil
}

type pageResult[T any] struct {
	items []T
	next  string
	err   error
}

// pageRun is the fetch of one page by a walk, in a goroutine of its own.
type pageRun[T any] struct {
	cursor string
	cancel context.CancelFunc
	early  chan string // the next page's cursor, as soon as the answer names it
	done   chan pageResult[T]
	ended  bool // done was received
}

// start fetches the page cursor names in a goroutine; the walk receives
// its result from done, exactly once.
func (p *Pager[T]) start(ctx context.Context, o *operation, cursor string) *pageRun[T] {
	ctx, cancel := context.WithCancel(ctx)
	f := &pageRun[T]{cursor: cursor, cancel: cancel, early: make(chan string, 1), done: make(chan pageResult[T], 1)}
	go func() {
		items, next, err := p.fetch(ctx, o, cursor, func(next string) {
			select {
			case f.early <- next:
			default: // a retried attempt names it again
			}
		})
		f.done <- pageResult[T]{items, next, err}
	}()
	return f
}

// wait receives f's result. Meanwhile, as soon as f's answer names the
// page after it, it starts that page's fetch (*nxt) unless one runs.
func (p *Pager[T]) wait(ctx context.Context, o *operation, f *pageRun[T], nxt **pageRun[T]) pageResult[T] {
	for {
		select {
		case next := <-f.early:
			if *nxt == nil && p.unseen(f.cursor, next) {
				*nxt = p.start(ctx, o, next)
			}
		case r := <-f.done:
			f.ended = true
			return r
		}
	}
}

// unseen reports whether next may be fetched after the page cursor
// fetched: a cursor of its own that this walk has not read.
func (p *Pager[T]) unseen(cursor, next string) bool {
	if next == "" || next == cursor {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, dup := p.seen[next]
	return !dup
}

// drop stops f and waits for its goroutine.
func (f *pageRun[T]) drop() {
	f.cancel()
	if !f.ended {
		<-f.done
		f.ended = true
	}
}

// All yields every item from the pager's position on: the page after the
// last one NextPage returned, or the first row of a page an earlier loop
// left unfinished. While the caller works through one page, the next one
// is already being fetched, so a consumer that does real work per item
// rarely waits for the network; for the SDK's own lists the next page's
// request leaves as soon as an answer names its cursor, before the
// answer's rows are decoded, so even a loop that does nothing overlaps
// its decoding with the server's work. At most two pages are fetched at
// once. So a loop that breaks early may already have sent the next page's
// request (cancelled when it breaks): a server counting requests sees one
// more; read one page with List or NextPage to send exactly one.
//
// The sequence follows the package's iterator contract: each range starts
// again from the position the pager had when All was called (and moves the
// pager along); break, a panic in the loop body or a cancelled ctx stops
// the prefetch and returns with no goroutine left behind, leaving the
// pager on the page being read; cancelling ctx ends the sequence with an
// error matching ctx's error and cause. Two loops over one pager at the
// same time are refused: the second gets an error. An error is yielded
// once, as the last element.
func (p *Pager[T]) All(ctx context.Context) iter.Seq2[T, error] {
	if err := checkCtx(ctx); err != nil {
		return errSeq[T](err)
	}
	p.mu.Lock()
	start := p.positionLocked()
	p.mu.Unlock()
	return func(yield func(T, error) bool) {
		var zero T
		if err := p.acquire(); err != nil {
			yield(zero, err)
			return
		}
		defer p.release()
		p.mu.Lock()
		p.next, p.done, p.partial = start.cursor, start.done, false
		p.seen = map[string]struct{}{} // a new walk from start
		p.mu.Unlock()
		if start.done {
			return
		}
		ctx, o, err := p.begin(ctx)
		if err != nil {
			yield(zero, err)
			return
		}
		o.watch().pagedList()
		var rows int64
		var failed error
		defer func() {
			o.watch().update(func(s *Summary) { s.Rows = rows })
			o.end(failed)
		}()
		p.walk(ctx, o, start.cursor, func(v T, err error) bool {
			if err != nil {
				failed = err
			} else {
				rows++
			}
			return yield(v, err)
		})
	}
}

// walk yields the rows of the pages from cursor on. The page after the
// one being read is fetched meanwhile: its request leaves as soon as the
// answer of the page before it names its cursor, before that page's rows
// are decoded (peekCursor), or else once they are. At most two pages are
// fetched at once: one decoding, the next on its way.
func (p *Pager[T]) walk(ctx context.Context, o *operation, cursor string, yield func(T, error) bool) {
	var zero T
	ctx, cancel := context.WithCancel(ctx)
	var cur, nxt *pageRun[T] // the page being fetched (nil: the first), the one after it
	// A loop that leaves before the page's last row was yielded and
	// returned (break, a panic, cancellation) leaves the pager on that
	// page: the next loop reads it again rather than skip its rest.
	inPage := false
	defer func() {
		cancel()
		// The fetches return promptly once ctx is cancelled.
		if cur != nil {
			cur.drop()
		}
		if nxt != nil {
			nxt.drop()
		}
		if inPage {
			p.mu.Lock()
			p.partial = true
			p.mu.Unlock()
		}
	}()
	done := ctx.Done()
	stopped := func() bool {
		select {
		case <-done:
			yield(zero, fmt.Errorf("lendgraph: listing stopped: %w", ctxErr(ctx)))
			return true
		default:
			return false
		}
	}
	// The first page is fetched on the caller's goroutine; the hook that
	// hears its successor's cursor runs there too.
	items, next, err := p.fetch(ctx, o, cursor, func(next string) {
		if nxt == nil && p.unseen(cursor, next) {
			nxt = p.start(ctx, o, next)
		}
	})
	for {
		if err == nil {
			err = p.advance(cursor, next)
		}
		if nxt != nil && (err != nil || nxt.cursor != next) {
			// Started for a cursor the decoded page does not name (or
			// for a page that failed): not the page that comes next.
			nxt.drop()
			nxt = nil
		}
		if err != nil && len(items) == 0 {
			if !stopped() {
				yield(zero, err)
			}
			return
		}
		if nxt == nil && next != "" && err == nil {
			nxt = p.start(ctx, o, next)
		}
		inPage = true
		for _, it := range items {
			if stopped() || !yield(it, nil) {
				return
			}
		}
		inPage = false
		if err != nil {
			// The page that carried a repeated cursor was yielded; now the error.
			yield(zero, err)
			return
		}
		if nxt == nil {
			return
		}
		cur, nxt = nxt, nil
		cursor = cur.cursor
		r := p.wait(ctx, o, cur, &nxt)
		items, next, err = r.items, r.next, r.err
	}
}

// peekCursor returns the hook of a page's request that hands early the
// cursor of the next page (the string member name at the top level of
// the answer) before the page is decoded, so that the next page's
// request leaves while this one's rows are decoded. The API and the fake
// send the cursor first, ahead of the rows; a member found only after an
// array or an object is not looked for (the rows are not scanned twice),
// and that page's successor leaves once the page is decoded. nil when
// early is.
func peekCursor(name string, early func(string)) func(body []byte) {
	if early == nil {
		return nil
	}
	return func(body []byte) {
		if next, ok := cursorAtHead(body, name); ok {
			early(next)
		}
	}
}

// cursorAtHead returns the string member name of the JSON object body
// when it comes before any member whose value is an array or an object.
func cursorAtHead(body []byte, name string) (string, bool) {
	d := jsontext.NewDecoder(bytes.NewBuffer(body), jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return "", false
	}
	for d.PeekKind() == '"' {
		tok, err := d.ReadToken()
		if err != nil {
			return "", false
		}
		switch k := d.PeekKind(); {
		case tok.String() == name:
			v, err := d.ReadToken()
			if err != nil || v.Kind() != '"' {
				return "", false
			}
			return v.String(), true
		case k == '[' || k == '{':
			return "", false
		}
		if err := d.SkipValue(); err != nil {
			return "", false
		}
	}
	return "", false
}

// opener returns the function a pager of client c starts its operations
// with: each is called name and runs with the call's options, checked
// here, before any request.
func (c *Client) opener(name string, opts []Option) (func(context.Context) (context.Context, *operation, error), error) {
	if err := c.ready(context.Background()); err != nil {
		return nil, err
	}
	cfg, err := forCall(&c.defaults, name, opts)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (context.Context, *operation, error) {
		if err := c.ready(ctx); err != nil {
			return ctx, nil, err
		}
		ctx, o := c.open(ctx, name, cfg)
		return ctx, o, nil
	}, nil
}

// listPager builds a pager of client c, named name, over a POST list whose
// cursor travels in pagination.cursor.
func listPager[T any](c *Client, name string, opts []Option, req *ListRequest, page func(ctx context.Context, o *operation, body *ListRequest, early func(string)) ([]T, string, error)) (*Pager[T], error) {
	body, err := req.prepared()
	if err != nil {
		return nil, err
	}
	open, err := c.opener(name, opts)
	if err != nil {
		return nil, err
	}
	start := ""
	if body.Pagination != nil {
		start = body.Pagination.Cursor
	}
	return newPager(start, open, func(ctx context.Context, o *operation, cursor string, early func(string)) ([]T, string, error) {
		b := *body
		p := Pagination{Cursor: cursor}
		if body.Pagination != nil {
			p.Size = body.Pagination.Size
		}
		b.Pagination = &p
		return page(ctx, o, &b, early)
	}), nil
}

// pagedAll is the sequence behind every All method of a service, over a
// pager just built (or the error building it, yielded as the only
// element). Each range walks a pager of its own from p's start, so every
// range starts from the request's first page and ranges in several
// goroutines are independent.
func pagedAll[T any](ctx context.Context, p *Pager[T], err error) iter.Seq2[T, error] {
	if err == nil {
		err = checkCtx(ctx)
	}
	if err != nil {
		return errSeq[T](err)
	}
	start := p.next
	return func(yield func(T, error) bool) {
		newPager(start, p.open, p.fetch).All(ctx)(yield)
	}
}

// errSeq yields err as its only element.
func errSeq[T any](err error) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		yield(zero, err)
	}
}

// PageFunc fetches the page that cursor names (empty: the first page) and
// returns its items and the cursor of the next page (empty after the last).
type PageFunc[T any] func(ctx context.Context, cursor string) (items []T, next string, err error)

// NewPager returns a pager over the pages fetch returns, starting at start
// (empty for the first page). The SDK's services build their pagers this
// way; a test double builds one over pages of its own (lendgraphtest.Pages
// does it from a slice of pages).
func NewPager[T any](start string, fetch PageFunc[T]) *Pager[T] {
	if fetch == nil {
		panic("lendgraph.NewPager: fetch is nil; pass the function that fetches one page")
	}
	return newPager(start, nil, func(ctx context.Context, _ *operation, cursor string, _ func(string)) ([]T, string, error) {
		return fetch(ctx, cursor)
	})
}
