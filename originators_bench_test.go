package lendgraph_test

import (
	"context"
	"testing"

	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// BenchmarkTitleCompaniesRoundTrip is one breakdown page against the fake
// (request, breakdown of 400 loans, decode).
func BenchmarkTitleCompaniesRoundTrip(b *testing.B) {
	srv := lendgraphtest.NewServer(b, lendgraphtest.WithDefaultRows(100), lendgraphtest.WithRows("originators", 2), lendgraphtest.WithRows("loans", 800))
	c := srv.Client()
	ctx := context.Background()
	for b.Loop() {
		if _, err := c.Originators.TitleCompanies(ctx, "1000000", nil); err != nil {
			b.Fatal(err)
		}
	}
}
