package searchhost_test

import (
	"context"
	"testing"

	"github.com/meilisearch/meilisearch-go"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
	"github.com/lendgraph/lendgraph-go/searchhost"
)

// BenchmarkSearch runs one query at a time on the fake host three ways, the
// host's work the same in each: the SDK's typed SearchHost.Search, and the
// Meilisearch client through package searchhost, decoding the answer into
// its SearchResponse or keeping it raw (SearchRaw).
func BenchmarkSearch(b *testing.B) {
	srv := lendgraphtest.NewServer(b, lendgraphtest.WithDefaultRows(2000))
	c := srv.Client()
	ctx := context.Background()
	ms, err := searchhost.New(ctx, c)
	if err != nil {
		b.Fatal(err)
	}
	h := c.Search.Host()
	for _, bc := range []struct {
		name string
		run  func() error
	}{
		{"SearchHost.Search", func() error {
			_, err := h.Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo", Limit: 20})
			return err
		}},
		{"searchhost/Search", func() error {
			_, err := ms.Index("agents").Search(ctx, "jo", &meilisearch.SearchRequest{Limit: 20})
			return err
		}},
		{"searchhost/SearchRaw", func() error {
			_, err := ms.Index("agents").SearchRaw(ctx, "jo", &meilisearch.SearchRequest{Limit: 20})
			return err
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
