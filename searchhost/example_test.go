package searchhost_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/meilisearch/meilisearch-go"

	"github.com/lendgraph/lendgraph-go/lendgraphtest"
	"github.com/lendgraph/lendgraph-go/searchhost"
)

// The official Meilisearch client on the search host: a multi-search over
// two indexes with facet counts, through the client's search tokens.
func ExampleNew() {
	srv, err := lendgraphtest.Start(lendgraphtest.WithDefaultRows(2000))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	c := srv.Client()

	ctx := context.Background()
	ms, err := searchhost.New(ctx, c)
	if err != nil {
		log.Fatal(err)
	}
	res, err := ms.MultiSearch(ctx, &meilisearch.MultiSearchRequest{Queries: []*meilisearch.SearchRequest{
		{IndexUID: "originators", Query: "smith", Limit: 2, Filter: `states = "CA"`, Facets: []string{"states"}},
		{IndexUID: "companies", Query: "sum", Limit: 1},
	}})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range res.Results {
		var hits []struct {
			FirstName string `json:"firstName"`
			LastName  string `json:"lastName"`
			Name      string `json:"name"`
		}
		if err := r.Hits.DecodeInto(&hits); err != nil {
			log.Fatal(err)
		}
		fmt.Println(r.IndexUID, r.EstimatedTotalHits, hits)
	}
	var facets map[string]map[string]int
	if err := json.Unmarshal(res.Results[0].FacetDistribution, &facets); err != nil {
		log.Fatal(err)
	}
	fmt.Println("originators in CA:", facets["states"]["CA"])
	// Output:
	// originators 20 [{Jennifer Smith } {Maria Smith }]
	// companies 198 [{  Summit Credit Union}]
	// originators in CA: 20
}
