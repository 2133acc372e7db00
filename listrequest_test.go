package lendgraph_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// TestListRequest_SortOrder: Asc and Desc sort at the server; any other
// order is an *InvalidArgumentError naming the two, and nothing is sent.
func TestListRequest_SortOrder(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(40))
	c := srv.Client()
	ctx := context.Background()
	counts := func(o lendgraph.SortOrder) []int64 {
		page, err := c.Agents.List(ctx, &lendgraph.ListRequest{Sort: []lendgraph.Sort{{Field: "transactionCount", Order: o}}})
		if err != nil {
			t.Fatalf("%q: %v", o, err)
		}
		var out []int64
		for _, a := range page.Data {
			out = append(out, a.TransactionCount)
		}
		return out
	}
	asc, desc := counts(lendgraph.Asc), counts(lendgraph.Desc)
	if len(asc) < 2 || !slices.IsSorted(asc) || asc[0] == asc[len(asc)-1] {
		t.Errorf("asc: %v", asc)
	}
	if slices.Reverse(desc); !slices.IsSorted(desc) {
		t.Errorf("desc: %v", desc)
	}

	srv.ResetRequests()
	_, err := c.Agents.List(ctx, &lendgraph.ListRequest{Sort: []lendgraph.Sort{{Field: "state"}, {Field: "city", Order: "sideways"}}})
	var ia *lendgraph.InvalidArgumentError
	if !errors.As(err, &ia) || ia.Arg != "Sort[1].Order" || !strings.Contains(ia.Problem, "lendgraph.Asc") {
		t.Errorf("sideways: %v", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests sent for an invalid sort", n)
	}
}
