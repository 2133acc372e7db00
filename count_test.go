package lendgraph_test

import (
	"context"
	"net/http"
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

func TestCount_PropertiesAndLenders(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(300))
	c := srv.Client()
	ctx := context.Background()
	p, err := c.Properties.Count(ctx, &lendgraph.ListRequest{FlatFilters: map[string]any{"state": "CA"}})
	if err != nil {
		t.Fatal(err)
	}
	list, _ := c.Properties.List(ctx, &lendgraph.ListRequest{FlatFilters: map[string]any{"state": "CA"}})
	if p.Total != list.Total || p.Total == 0 {
		t.Fatalf("count %d, list total %d", p.Total, list.Total)
	}
	l, err := c.Companies.LenderCount(ctx, nil)
	if err != nil || l.Total != 300 {
		t.Fatalf("%v %+v", err, l)
	}
	if srv.CountRequests(http.MethodPost, "/v1/lenders/count") != 1 || srv.CountRequests(http.MethodPost, "/v1/properties/count") != 1 {
		t.Fatal("paths")
	}
}
