package lendgraph_test

import (
	"context"
	"slices"
	"testing"

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
