package lendgraph_test

import (
	"context"
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

func TestAnalyticsService_EveryMethod(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(200))
	c := srv.Client()
	ctx := context.Background()
	sum, err := c.Loans.Summary(ctx, &lendgraph.ListRequest{FlatFilters: map[string]any{"state": "TX"}})
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Data struct {
			Count int64 `json:"count"`
		} `json:"data"`
	}
	if err := sum.Decode(&s); err != nil || s.Data.Count == 0 {
		t.Fatalf("%v %s", err, sum.Raw)
	}
	for _, f := range []func() (*lendgraph.AnalyticsResult, error){
		func() (*lendgraph.AnalyticsResult, error) { return c.Agents.TimeSeries(ctx, nil) },
		func() (*lendgraph.AnalyticsResult, error) { return c.Originators.Summary(ctx, nil) },
		func() (*lendgraph.AnalyticsResult, error) { return c.Market.Summary(ctx, nil) },
	} {
		if r, err := f(); err != nil || len(r.Raw) == 0 {
			t.Fatal(err)
		}
	}
	// A chart has its shape, the same for every resource.
	ch, err := c.Sales.Chart(ctx, &lendgraph.ChartRequest{Slice: "city"})
	if err != nil || len(ch.Data) == 0 || ch.Slice != "city" {
		t.Fatalf("sales chart: %+v, %v", ch, err)
	}
}

// AnalyticsResult.Decode takes a struct of the caller's that keeps unknown
// members in a Fields, as the records do.
func TestAnalyticsResult_DecodeKeepsUnknownMembers(t *testing.T) {
	r := &lendgraph.AnalyticsResult{Raw: []byte(`{"total":3,"byState":{"TX":2},"total2":1}`)}
	var out struct {
		Total int              `json:"total"`
		Extra lendgraph.Fields `json:",unknown"`
	}
	if err := r.Decode(&out); err != nil || out.Total != 3 || member(out.Extra, "byState") != `{"TX":2}` || out.Extra.Len() != 2 {
		t.Fatalf("%+v, %v", out, err)
	}
}
