package lendgraph_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

func TestPropertiesService_Chart(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(500))
	c := srv.Client()
	ctx := context.Background()
	ch, err := c.Properties.Chart(ctx, &lendgraph.ChartRequest{Slice: "state", Segment: "propertyType",
		ListRequest: lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 5}}})
	if err != nil {
		t.Fatal(err)
	}
	if ch.Slice != "state" || ch.Measure != "count" || ch.Segment != "propertyType" || len(ch.Data) != 5 || ch.NextCursor == "" || ch.Total != 500 || ch.Completeness.Through == "" {
		t.Fatalf("%+v", ch)
	}
	r := ch.Data[0]
	if len(r.Segments) != 3 || r.SegmentsOmittedCount != 2 || r.Value != float64(r.Count) {
		t.Fatalf("row %+v", r)
	}
	var total int64
	rows := 0
	for r, err := range c.Properties.AllChart(ctx, &lendgraph.ChartRequest{Slice: "state", ListRequest: lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 5}}}) {
		if err != nil {
			t.Fatal(err)
		}
		total += r.Count
		rows++
	}
	// One row a state the 500 properties are in, plus one for those without.
	buckets := map[string]bool{}
	for i := range 500 {
		st, _ := srv.Dataset().Summary("properties", i)["state"].(string)
		buckets[st] = true
	}
	if total != 500 || rows != len(buckets) || rows < 20 {
		t.Fatalf("paged chart: %d rows, %d records; want %d rows", rows, total, len(buckets))
	}
	srv.ResetRequests()
	_, err = c.Properties.Chart(ctx, &lendgraph.ChartRequest{})
	wantInvalid(t, srv, err, "Slice")
}

func TestPropertiesService_Related(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(100), lendgraphtest.WithRows("loans", 350), lendgraphtest.WithRows("sales", 250))
	c := srv.Client()
	ctx := context.Background()
	loans, err := c.Properties.Related(ctx, "prop_0000007", lendgraph.RelatedLoans, 0)
	if err != nil {
		t.Fatal(err)
	}
	if loans.Total != 4 || len(loans.Data) != 4 || loans.LinkQuality != lendgraph.LinkPrimary || loans.From != "prop_0000007" || loans.To != lendgraph.RelatedLoans {
		t.Fatalf("%+v", loans)
	}
	if !strings.Contains(srv.Requests()[0].Query, "to=loans") || strings.Contains(srv.Requests()[0].Query, "limit") {
		t.Fatalf("query %q", srv.Requests()[0].Query)
	}
	one, err := c.Properties.Related(ctx, "prop_0000007", lendgraph.RelatedSales, 1)
	if err != nil || len(one.Data) != 1 || one.Total != 3 {
		t.Fatalf("%v %+v", err, one)
	}
	orig, err := c.Properties.Related(ctx, "prop_0000007", lendgraph.RelatedOriginators, 200)
	if err != nil || orig.LinkQuality != lendgraph.LinkSecondary || orig.Total == 0 {
		t.Fatalf("%v %+v", err, orig)
	}
	srv.ResetRequests()
	_, err = c.Properties.Related(ctx, "prop_0000007", "agents", 0)
	wantInvalid(t, srv, err, "to")
	_, err = c.Properties.Related(ctx, "prop_0000007", lendgraph.RelatedLoans, 201)
	wantInvalid(t, srv, err, "limit")
	_, err = c.Properties.Related(ctx, "", lendgraph.RelatedLoans, 0)
	wantInvalid(t, srv, err, "id")
	err = c.Do(ctx, http.MethodGet, "/v1/properties/prop_0000007/related?to=loans&limit=0", nil, nil)
	wantStatus(t, err, http.StatusBadRequest)
}
