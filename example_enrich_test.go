package lendgraph_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

func ExamplePropertiesService_Enrich() {
	srv, _ := lendgraphtest.Start()
	defer srv.Close()
	c, ctx := srv.Client(), context.Background()

	for range 2 {
		r, err := c.Properties.Enrich(ctx, "prop_0000000", nil)
		var ice *lendgraph.InsufficientCreditsError
		if errors.As(err, &ice) {
			fmt.Printf("top up: balance %v, cost %v\n", ice.Balance, ice.Cost)
			return
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s charged=%v persons=%d\n", r.Reason, r.Charged, len(r.Data.Persons))
	}
	// Output:
	// fresh_skip_trace charged=true persons=2
	// member_cache_hit charged=false persons=2
}

func ExamplePropertiesService_EnrichBulk() {
	srv, _ := lendgraphtest.Start()
	defer srv.Close()
	c, ctx := srv.Client(), context.Background()

	ids := []string{"prop_0000000", "prop_0000001", "prop_0000002", "prop_0000003"}
	job, err := c.Properties.EnrichBulk(ctx, ids, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("worst case %d credits\n", job.EstimatedCost)
	st, err := job.Wait(ctx, lendgraph.WithProgress(func(s *lendgraph.EnrichJobStatus) {
		// s.Succeeded+s.Failed of s.Total handled so far
	}))
	if err != nil { // errors.Is(err, lendgraph.ErrJobFailed) or ErrJobCancelled
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: %d charged\n", st.Status, st.ChargedCount)
	for e, err := range job.ResultRows(ctx) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(e.PropertyID, e.Reason, len(e.Persons))
	}
	// Output:
	// worst case 4 credits
	// completed: 4 charged
	// prop_0000000 fresh_skip_trace 2
	// prop_0000001 fresh_skip_trace 2
	// prop_0000002 fresh_skip_trace 2
	// prop_0000003 fresh_skip_trace 2
}

func ExampleDecodeEnrichmentResults() {
	file := `{"propertyId":"prop_1","persons":[{"name":{"full":"Ann Lee"},"litigator":"N"}]}
{"propertyId":"prop_2","persons":[]}
`
	for e, err := range lendgraph.DecodeEnrichmentResults(strings.NewReader(file)) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(e.PropertyID, len(e.Persons))
	}
	// Output:
	// prop_1 1
	// prop_2 0
}

func ExampleParseEnrichmentEvent() {
	body := []byte(`{"name":"enrichment.bulk.completed","payload":{"jobId":"ejob_1","status":"completed","chargedCount":42}}`)
	ev, err := lendgraph.ParseEnrichmentEvent(body)
	if err != nil {
		fmt.Println(err)
		return
	}
	st, _ := ev.Job()
	fmt.Println(ev.Name, st.JobID, st.Status, st.ChargedCount)
	// Output: enrichment.bulk.completed ejob_1 completed 42
}
