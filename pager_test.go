package lendgraph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// TestPager_ResumesAtThePageItLeft is the case: breaking at row 10
// of a 100-row page and ranging Pager.All again must not skip rows 10-99.
func TestPager_ResumesAtThePageItLeft(t *testing.T) {
	noLeaks(t)
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithRows("agents", 250))
	c := srv.Client()
	ctx := context.Background()
	req := &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 100}}
	want := ids(collect(t, c.Agents.All(ctx, req)), agentID)
	p, err := c.Agents.Pager(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := rangeUntil(keyed(p.All(ctx), agentID), 10)
	if err != nil || len(got) != 10 {
		t.Fatal(got, err)
	}
	if p.Cursor() != "" || p.NextCursor() != "" || !p.More() {
		t.Fatalf("after a break on page 1: Cursor %q NextCursor %q More %v", p.Cursor(), p.NextCursor(), p.More())
	}
	// A new loop over the same pager reads page 1 again from its first row.
	rest, err := rangeUntil(keyed(p.All(ctx), agentID), 110)
	if err != nil || !slices.Equal(rest, want[:110]) {
		t.Fatalf("resumed: %d rows, %v; want rows 0..109", len(rest), err)
	}
	page2 := p.Cursor()
	if page2 == "" || p.NextCursor() != page2 {
		t.Fatalf("after a break on page 2: Cursor %q NextCursor %q", page2, p.NextCursor())
	}
	// NextPage returns the unfinished page whole, then moves on.
	items, err := p.NextPage(ctx)
	if err != nil || len(items) != 100 || items[0].ID != want[100] || p.Cursor() != page2 {
		t.Fatalf("NextPage after a break: %d items, %v", len(items), err)
	}
	tail := ids(collect(t, p.All(ctx)), agentID)
	if !slices.Equal(tail, want[200:]) || p.More() {
		t.Fatalf("tail: %d rows, More %v", len(tail), p.More())
	}
	// The pager is exhausted; a new loop yields nothing (More says so).
	if n := len(collect(t, p.All(ctx))); n != 0 {
		t.Fatalf("%d rows from an exhausted pager", n)
	}
	// A panic in the loop body leaves the pager on its page too.
	p, _ = c.Agents.Pager(req)
	func() {
		defer func() { _ = recover() }()
		for a, err := range p.All(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			if a.ID == want[150] {
				panic("boom")
			}
		}
	}()
	if got := ids(collect(t, p.All(ctx)), agentID); !slices.Equal(got, want[100:]) {
		t.Fatalf("after a panic at row 150: %d rows from %q", len(got), got[0])
	}
}

func TestPager_ResumeFromCursor(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithRows("agents", 250))
	c := srv.Client()
	ctx := context.Background()
	req := &lendgraph.ListRequest{FlatFilters: map[string]any{"isTeamLead": false},
		Sort: []lendgraph.Sort{{Field: "city"}, {Field: "id", Order: lendgraph.Desc}}, Pagination: &lendgraph.Pagination{Size: 40}}
	want := ids(collect(t, c.Agents.All(ctx, req)), agentID)

	// First process: stops in the middle of the third page.
	p, err := c.Agents.Pager(req)
	if err != nil {
		t.Fatal(err)
	}
	var first []string
	for a, err := range p.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		first = append(first, a.ID)
		if len(first) == 95 {
			break
		}
	}
	saved := p.Cursor()
	if saved == "" {
		t.Fatal("no cursor to resume from")
	}
	// Second process: a new client, the same request, the saved cursor.
	resume := *req
	resume.Pagination = &lendgraph.Pagination{Size: 40, Cursor: saved}
	rest := ids(collect(t, srv.Client().Agents.All(ctx, &resume)), agentID)
	// The page being read is read again: 80 rows done, the rest follows.
	got := append(first[:80:80], rest...)
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("resumed listing differs: %s", d)
	}
}

// pageServer is a loopback server of the test's own that answers POST
// /v1/agents with pages[cursor] (pagination.cursor of the request body),
// its X-Request-Id "req-" + the cursor ("req-" for the first page); its
// client records the cursors of the requests it sends, as they leave.
type pageServer struct {
	c    *lendgraph.Client
	mu   sync.Mutex
	sent []string
}

// pageCursor is the cursor of a list request's body.
func pageCursor(body []byte) string {
	var b struct {
		Pagination struct {
			Cursor string `json:"cursor"`
		} `json:"pagination"`
	}
	_ = json.Unmarshal(body, &b)
	return b.Pagination.Cursor
}

func newPageServer(t *testing.T, pages map[string]string, opts ...lendgraph.Option) *pageServer {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		cursor := pageCursor(b)
		page, ok := pages[cursor]
		if !ok {
			http.Error(w, `{"error":"unknown cursor"}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req-"+cursor)
		_, _ = io.WriteString(w, page)
	}))
	t.Cleanup(srv.Close)
	s := &pageServer{}
	base := []lendgraph.Option{lendgraph.WithAPIKey("lg_test_pages"), lendgraph.WithBaseURL(srv.URL), lendgraph.WithMaxRetries(0),
		lendgraph.WithMiddleware(func(req *http.Request, next lendgraph.MiddlewareNext) (*http.Response, error) {
			b, _ := io.ReadAll(req.Body)
			req.Body = io.NopCloser(bytes.NewReader(b))
			s.mu.Lock()
			s.sent = append(s.sent, pageCursor(b))
			s.mu.Unlock()
			return next(req)
		})}
	c, err := lendgraph.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s.c = c
	return s
}

// cursors are the cursors of the requests sent, in order.
func (s *pageServer) cursors() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sent)
}

// TestPager_NextPageLeavesBeforeTheRowsAreDecoded: the request of the
// next page leaves as soon as the page's answer names its cursor, before
// the page's rows are decoded. A page whose rows then fail to decode shows
// it: its successor was asked for already, and is dropped (the loop yields
// the page's error, no row of the next page, and leaves no goroutine).
func TestPager_NextPageLeavesBeforeTheRowsAreDecoded(t *testing.T) {
	noLeaks(t)
	s := newPageServer(t, map[string]string{
		"":   `{"cursor":"p2","data":[{"id":"a1"},{"id":"a2","transactionCount":"twelve"}],"total":3}`,
		"p2": `{"data":[{"id":"a3"}],"total":3}`,
	})
	var got []string
	var err error
	for a, e := range s.c.Agents.All(context.Background(), nil) {
		if e != nil {
			err = e
			break
		}
		got = append(got, a.ID)
	}
	var de *lendgraph.DecodeError
	if len(got) != 0 || !errors.As(err, &de) {
		t.Fatalf("rows %v, error %v; want no row and the first page's *DecodeError", got, err)
	}
	// The request for p2 left before page 1 was decoded (then was
	// dropped, whether or not it reached the server).
	if c := s.cursors(); !slices.Equal(c, []string{"", "p2"}) {
		t.Fatalf("cursors sent: %q, want the first page's and p2", c)
	}
}

// TestPager_EarlyCursorIsCheckedAgainstTheDecodedPage: the next page is
// sent for as soon as the answer's head names a cursor, but the page that
// follows is the one the decoded answer names (here a second "cursor"
// member, the one decoding keeps): the early fetch is dropped.
func TestPager_EarlyCursorIsCheckedAgainstTheDecodedPage(t *testing.T) {
	noLeaks(t)
	s := newPageServer(t, map[string]string{
		"":   `{"cursor":"p2","data":[{"id":"a1"}],"cursor":"p3","total":2}`,
		"p2": `{"data":[{"id":"wrong"}],"total":2}`,
		"p3": `{"data":[{"id":"a3"}],"total":2}`,
	})
	got := ids(collect(t, s.c.Agents.All(context.Background(), nil)), agentID)
	if !slices.Equal(got, []string{"a1", "a3"}) {
		t.Fatalf("rows %q, want a1, a3", got)
	}
}

// TestPager_CursorAfterTheRows: an answer that names its cursor after the
// rows is read as before: the next page is sent for once the page is
// decoded.
func TestPager_CursorAfterTheRows(t *testing.T) {
	noLeaks(t)
	s := newPageServer(t, map[string]string{
		"":   `{"data":[{"id":"a1"},{"id":"a2"}],"total":3,"cursor":"p2"}`,
		"p2": `{"total":3,"data":[{"id":"a3"}]}`,
	})
	got := ids(collect(t, s.c.Agents.All(context.Background(), nil)), agentID)
	if !slices.Equal(got, []string{"a1", "a2", "a3"}) || !slices.Equal(s.cursors(), []string{"", "p2"}) {
		t.Fatalf("rows %q, cursors %q", got, s.cursors())
	}
}

// closeGate holds the close of the first page's body (which the SDK
// closes once the page is decoded) until the second page's body is
// closed: the second page's request ends before the first's.
type closeGate struct {
	rt     http.RoundTripper
	second chan struct{}
}

func (g *closeGate) RoundTrip(req *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(req.Body)
	first := !strings.Contains(string(body), `"cursor":"p`)
	req.Body = io.NopCloser(strings.NewReader(string(body)))
	resp, err := g.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if first {
		resp.Body = &closeGatedBody{ReadCloser: resp.Body, wait: g.second}
	} else {
		resp.Body = &closeGatedBody{ReadCloser: resp.Body, done: g.second}
	}
	return resp, nil
}

type closeGatedBody struct {
	io.ReadCloser
	wait, done chan struct{}
	once       sync.Once
}

func (b *closeGatedBody) Close() error {
	b.once.Do(func() {
		if b.done != nil {
			close(b.done)
		}
		if b.wait != nil {
			select {
			case <-b.wait:
				time.Sleep(20 * time.Millisecond) // the second page's answer is written by now
			case <-time.After(5 * time.Second): // the second page waits for this one: no early request
			}
		}
	})
	return b.ReadCloser.Close()
}

// TestPager_ResponseMetaHoldsTheLastPage: with the next page on its way
// while a page decodes, the last page's request can end before the page
// before it; WithResponseInto still holds the last page's answer.
func TestPager_ResponseMetaHoldsTheLastPage(t *testing.T) {
	noLeaks(t)
	gate := &closeGate{rt: http.DefaultTransport.(*http.Transport).Clone(), second: make(chan struct{})}
	s := newPageServer(t, map[string]string{
		"":   `{"cursor":"p2","data":[{"id":"a1"}],"total":2}`,
		"p2": `{"data":[{"id":"a2"}],"total":2}`,
	}, lendgraph.WithHTTPClient(&http.Client{Transport: gate}))
	var meta lendgraph.ResponseMeta
	got := ids(collect(t, s.c.Agents.All(context.Background(), nil, lendgraph.WithResponseInto(&meta))), agentID)
	if !slices.Equal(got, []string{"a1", "a2"}) || meta.RequestID != "req-p2" {
		t.Fatalf("rows %q, ResponseMeta.RequestID %q; want the last page's, req-p2", got, meta.RequestID)
	}
}
