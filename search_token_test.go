package lendgraph_test

import (
	"context"
	"sync"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// TestSearchTokenUnderClockSkew (item 8): the token's lifetime is the
// server's (expiresAt against the response's Date), so a machine whose
// clock is ten minutes ahead does not mint on every call, and one ten
// minutes behind replaces the token before the server ends it.
func TestSearchTokenUnderClockSkew(t *testing.T) {
	noLeaks(t)
	t.Run("ahead", func(t *testing.T) {
		srv := searchServer(t)
		c := srv.Client()
		lendgraph.SetSearchClock(c, func() time.Time { return srv.Now().Add(10 * time.Minute) })
		ts := c.Search.TokenSource()
		stop := time.Now().Add(time.Second)
		var wg sync.WaitGroup
		var calls sync.Map
		for g := range 200 {
			wg.Go(func() {
				n := 0
				for time.Now().Before(stop) {
					if _, err := ts.Token(context.Background()); err != nil {
						t.Error(err)
						return
					}
					n++
				}
				calls.Store(g, n)
			})
		}
		wg.Wait()
		total := 0
		calls.Range(func(_, v any) bool { total += v.(int); return true })
		if m := srv.SearchTokenMints(); m != 1 {
			t.Fatalf("%d mints for %d calls in a second with the clock 10 minutes ahead, want 1", m, total)
		}
		if _, err := c.Search.Host().Search(context.Background(), lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("behind", func(t *testing.T) {
		srv := searchServer(t)
		srv.SetSearchTokenTTL(time.Minute) // margin 6s: replaced 54s after the mint
		c := srv.Client()
		lendgraph.SetSearchClock(c, func() time.Time { return srv.Now().Add(-10 * time.Minute) })
		ts := c.Search.TokenSource()
		ctx := context.Background()
		t1, err := ts.Token(ctx)
		if err != nil {
			t.Fatal(err)
		}
		srv.Advance(50 * time.Second)
		if t2, _ := ts.Token(ctx); t2 != t1 || srv.SearchTokenMints() != 1 {
			t.Fatal("token replaced before its margin")
		}
		srv.Advance(6 * time.Second) // 4s left by the server's clock
		t3, err := ts.Token(ctx)
		if err != nil || t3 == t1 || srv.SearchTokenMints() != 2 {
			t.Fatalf("with the clock 10 minutes behind, the token was kept into its last seconds: %v, %d mints", err, srv.SearchTokenMints())
		}
		srv.ResetRequests()
		if _, err := c.Search.Host().Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"}); err != nil {
			t.Fatal(err)
		}
		if n := len(srv.Requests()); n != 1 {
			t.Fatalf("%d requests: the host refused the token", n)
		}
	})
}
