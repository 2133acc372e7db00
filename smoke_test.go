package lendgraph_test

import (
	"context"
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

func TestSmokeListAndIterate(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithRows("agents", 250))
	c := srv.Client()
	ctx := context.Background()
	page, err := c.Agents.List(ctx, &lendgraph.ListRequest{
		FlatFilters: map[string]any{"state": "CA"},
		Sort:        []lendgraph.Sort{{Field: "transactionCount", Order: lendgraph.Desc}},
		Pagination:  &lendgraph.Pagination{Size: 10},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) == 0 || page.Data[0].State != "CA" || page.Data[0].Extra["email"] == nil {
		t.Fatalf("page: %+v", page)
	}
	n := 0
	for a, err := range c.Agents.All(ctx, &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 100}}) {
		if err != nil {
			t.Fatal(err)
		}
		if a.ID == "" {
			t.Fatal("empty id")
		}
		n++
	}
	if n != 250 {
		t.Fatalf("iterated %d", n)
	}
	a, err := c.Agents.Get(ctx, page.Data[0].ID)
	if err != nil || !a.Extra.Has("recentTransactions") {
		t.Fatalf("get: %v %+v", err, a)
	}
	b, _ := a.MarshalJSON()
	t.Logf("%s", b[:120])
}
