package lendgraph_test

import (
	"context"
	"errors"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// A filter nested past the limit, or In with no values, is refused before
// any request, at once.
func TestFilter_ValidateBounds(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(10))
	deep := lendgraph.Eq("state", "TX")
	for range 10000 {
		deep = lendgraph.Not(deep)
	}
	start := time.Now()
	for name, f := range map[string]*lendgraph.Filter{"deep": deep, "empty in": lendgraph.In("city")} {
		_, err := srv.Client().Agents.List(context.Background(), &lendgraph.ListRequest{AdvancedFilters: f})
		var ia *lendgraph.InvalidArgumentError
		if !errors.As(err, &ia) {
			t.Errorf("%s: %v, want *InvalidArgumentError", name, err)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("refusing took %s", d)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
	ok := lendgraph.Eq("state", "TX")
	for range 60 {
		ok = lendgraph.Not(ok)
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("60 levels: %v", err)
	}
}
