package lendgraph

import (
	"context"
	"fmt"
	"iter"
)

// Pager walks a cursor-paginated list one page at a time. Every cursor list
// of the API (resource lists, breakdowns, branches, charts, enrichments) is
// read through a Pager. The zero value is not usable; services return ready
// pagers.
//
// A long export can be stopped and resumed in another process: save Cursor
// (the cursor that fetched the page being read) and start a new pager from
// it; the page is read again from its first row.
type Pager[T any] struct {
	fetch   func(ctx context.Context, cursor string) ([]T, string, error)
	cursor  string // fetched the current page ("" = first page)
	next    string // fetches the page after the current one
	started bool
	done    bool
	seen    map[string]struct{}
}

// newPager returns a pager whose first page is fetched with start (empty for
// the beginning of the list).
func newPager[T any](start string, fetch func(ctx context.Context, cursor string) ([]T, string, error)) *Pager[T] {
	return &Pager[T]{fetch: fetch, next: start, seen: map[string]struct{}{}}
}

// More reports whether NextPage has another page to return.
func (p *Pager[T]) More() bool { return !p.done }

// Cursor returns the cursor that fetched the page last returned by NextPage
// (or being iterated by All): resuming from it reads that page again.
// It is empty on the first page.
func (p *Pager[T]) Cursor() string { return p.cursor }

// NextCursor returns the cursor of the page after the current one, empty
// when the list is exhausted.
func (p *Pager[T]) NextCursor() string {
	if p.done {
		return ""
	}
	return p.next
}

// NextPage fetches the next page. After the last page More reports false and
// NextPage returns nil, nil.
func (p *Pager[T]) NextPage(ctx context.Context) ([]T, error) {
	if p.done {
		return nil, nil
	}
	items, next, err := p.fetch(ctx, p.next)
	if err != nil {
		return nil, err
	}
	return items, p.advance(next)
}

// advance records that the page fetched with p.next arrived, naming next as
// the page after it. A cursor that comes back a second time is an error,
// not an endless loop.
func (p *Pager[T]) advance(next string) error {
	p.started = true
	p.cursor = p.next
	p.seen[p.cursor] = struct{}{}
	p.next = next
	if next == "" {
		p.done = true
		return nil
	}
	if _, dup := p.seen[next]; dup {
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

// All yields every item of the remaining pages in order. While the caller
// works through one page, the next one is already being fetched, so a
// consumer that does real work per item rarely waits for the network.
// Breaking out of the loop or cancelling ctx stops the prefetch and returns
// with no goroutine left behind. An error is yielded once, as the last
// element.
func (p *Pager[T]) All(ctx context.Context) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		if p.done {
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		items, err := p.NextPage(ctx)
		for {
			if err != nil {
				yield(zero, err)
				return
			}
			var prefetch chan pageResult[T]
			if !p.done {
				prefetch = make(chan pageResult[T], 1)
				go func(cursor string) {
					items, next, err := p.fetch(ctx, cursor)
					prefetch <- pageResult[T]{items, next, err}
				}(p.next)
			}
			for _, it := range items {
				if !yield(it, nil) {
					if prefetch != nil {
						cancel()
						<-prefetch
					}
					return
				}
			}
			if prefetch == nil {
				return
			}
			r := <-prefetch
			if r.err != nil {
				err = r.err
				continue
			}
			items, err = r.items, p.advance(r.next)
			if err != nil && len(items) > 0 {
				// Yield the page that carried the repeated cursor, then stop.
				for _, it := range items {
					if !yield(it, nil) {
						return
					}
				}
			}
		}
	}
}

// listPager builds a pager over a POST list whose cursor travels in
// pagination.cursor.
func listPager[T any](req *ListRequest, page func(ctx context.Context, body *ListRequest) ([]T, string, error)) (*Pager[T], error) {
	body, err := req.prepared()
	if err != nil {
		return nil, err
	}
	start := ""
	if body.Pagination != nil {
		start = body.Pagination.Cursor
	}
	return newPager(start, func(ctx context.Context, cursor string) ([]T, string, error) {
		b := *body
		p := Pagination{Cursor: cursor}
		if body.Pagination != nil {
			p.Size = body.Pagination.Size
		}
		b.Pagination = &p
		return page(ctx, &b)
	}), nil
}

// pagedAll is Pager.All for a pager that may have failed to build: the
// construction error is yielded as the only element.
func pagedAll[T any](ctx context.Context, p *Pager[T], err error) iter.Seq2[T, error] {
	if err != nil {
		return errSeq[T](err)
	}
	return p.All(ctx)
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
	return newPager(start, fetch)
}
