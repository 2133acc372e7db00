package lendgraph_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// Instant search over the API route: a few matches per entity type.
func ExampleSearchService_Instant() {
	srv, err := lendgraphtest.Start(lendgraphtest.WithDefaultRows(2000))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c := srv.Client()

	res, err := c.Search.Instant(context.Background(), &lendgraph.InstantSearchRequest{
		Query:    "smi",
		Entities: []lendgraph.SearchEntity{lendgraph.EntityOriginators, lendgraph.EntityCompanies},
		Limit:    2,
		Filters:  map[lendgraph.SearchEntity]string{lendgraph.EntityOriginators: "state = TX"},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, o := range res.Originators {
		fmt.Println(o.FirstName, o.LastName)
	}
	fmt.Println("companies:", len(res.Companies))
	// Output:
	// Joshua Smithson
	// Lisa Smith
	// companies: 0
}

// Direct queries on the search host: tokens are minted, cached, refreshed
// before they expire, and re-minted if the host refuses one.
func ExampleSearchHost_Search() {
	srv, err := lendgraphtest.Start(lendgraphtest.WithDefaultRows(2000))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c := srv.Client()

	res, err := c.Search.Host().Search(context.Background(), lendgraph.IndexOriginators,
		&lendgraph.HostSearchRequest{Q: "smith", Limit: 3, Filter: `states = "CA"`})
	if err != nil {
		log.Fatal(err)
	}
	hits, err := res.OriginatorHits()
	if err != nil {
		log.Fatal(err)
	}
	for _, h := range hits {
		fmt.Println(h.FirstName, h.LastName, h.States)
	}
	fmt.Println("about", res.EstimatedTotalHits, "matches")
	// Output:
	// Jennifer Smith [VA CA]
	// Maria Smith [NJ CA]
	// Richard Smithson [CA NY]
	// about 20 matches
}

// Page pagination with exact totals, facet counts, sorting and ranking
// scores, as the search host (Meilisearch) offers them.
func ExampleSearchHost_Search_pagesAndFacets() {
	srv, err := lendgraphtest.Start(lendgraphtest.WithDefaultRows(2000))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c := srv.Client()

	res, err := c.Search.Host().Search(context.Background(), lendgraph.IndexOriginators, &lendgraph.HostSearchRequest{
		Q: "smith", Page: 1, HitsPerPage: 3, Sort: []string{"firstName:asc"},
		Facets: []string{"states"}, ShowRankingScore: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	hits, err := res.OriginatorHits()
	if err != nil {
		log.Fatal(err)
	}
	for _, h := range hits {
		fmt.Println(h.FirstName, h.LastName, h.RankingScore)
	}
	fmt.Println(res.TotalHits, "matches on", res.TotalPages, "pages;", res.FacetDistribution["states"]["TX"], "in TX")
	// Output:
	// Andrew Smith 1
	// Andrew Smith 1
	// Anthony Smithson 1
	// 94 matches on 32 pages; 18 in TX
}

// A backend hands search tokens to its browser clients, keeping the API key
// to itself.
func ExampleSearchService_TokenHandler() {
	srv, err := lendgraphtest.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c := srv.Client()

	mux := http.NewServeMux()
	mux.Handle("GET /search-token", c.Search.TokenHandler()) // behind your own session check
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/search-token", nil))
	fmt.Println(rec.Code, rec.Header().Get("Cache-Control"))
	// Output: 200 no-store
}
