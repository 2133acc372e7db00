package lendgraphtest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// The code under test depends on the SDK's interfaces, not on *Client, and
// each test hands it a double: a struct of the test's own that embeds the
// interface (methods it does not define panic if called) and defines the
// methods the code uses. No server, no HTTP.

// agentsDouble stands in for c.Agents.
type agentsDouble struct{ lendgraph.AgentsAPI }

func (agentsDouble) All(ctx context.Context, req *lendgraph.ListRequest, opts ...lendgraph.Option) iter.Seq2[lendgraph.Agent, error] {
	return lendgraphtest.Pages(nil, []lendgraph.Agent{{ID: "agt_1", TransactionCount: 7}}, []lendgraph.Agent{{ID: "agt_2", TransactionCount: 3}}).All(ctx)
}

func (agentsDouble) Get(ctx context.Context, id string, opts ...lendgraph.Option) (*lendgraph.Agent, error) {
	if id != "agt_1" {
		return nil, &lendgraph.APIError{StatusCode: 404} // errors.Is(err, lendgraph.ErrNotFound)
	}
	return &lendgraph.Agent{ID: id, FullName: "Ada Byron"}, nil
}

func (agentsDouble) Deliver(ctx context.Context, req *lendgraph.DeliveryRequest, opts ...lendgraph.Option) (*lendgraph.DeliveryJob[lendgraph.Agent], error) {
	rows := []lendgraph.Agent{{ID: "agt_1", State: "CA"}, {ID: "agt_2", State: "TX"}}
	return lendgraphtest.NewDeliveryJob("ddel_1", req.Format, rows,
		lendgraph.DeliveryStatus{Status: lendgraph.JobRunning, Processed: 1, EstimatedTotal: 2},
		lendgraph.DeliveryStatus{Status: lendgraph.JobCompleted, Processed: 2, EstimatedTotal: 2})
}

// Listing every match and fetching one record, stubbed.
func Example_stubListAndGet() {
	ctx := context.Background()
	var agents lendgraph.AgentsAPI = agentsDouble{}
	total := int64(0)
	for a, err := range agents.All(ctx, nil) {
		if err != nil {
			panic(err)
		}
		total += a.TransactionCount
	}
	a, _ := agents.Get(ctx, "agt_1")
	_, err := agents.Get(ctx, "agt_9")
	fmt.Println(total, a.FullName, errorsIs(err, lendgraph.ErrNotFound))
	// Output: 10 Ada Byron true
}

// A bulk delivery, stubbed: Wait with progress, then the typed rows, then
// the file as delivered.
func Example_stubDelivery() {
	ctx := context.Background()
	var agents lendgraph.AgentsAPI = agentsDouble{}
	job, _ := agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV})
	st, _ := job.Wait(ctx, lendgraph.WithPollInterval(1, 1), lendgraph.WithProgress(func(s *lendgraph.DeliveryStatus) {
		fmt.Printf("%s %d/%d\n", s.Status, s.Processed, s.EstimatedTotal)
	}))
	for a, err := range job.Rows(ctx) {
		fmt.Println(a.ID, a.State, err)
	}
	var file bytes.Buffer
	n, _ := job.Download(ctx, &file)
	fmt.Println(st.Status, n == int64(file.Len()), file.String()[:8])
	// Output:
	// running 1/2
	// completed 2/2
	// agt_1 CA <nil>
	// agt_2 TX <nil>
	// completed true id,state
}

// propertiesDouble stands in for c.Properties.
type propertiesDouble struct{ lendgraph.PropertiesAPI }

func (propertiesDouble) Enrich(ctx context.Context, id string, req *lendgraph.EnrichRequest, opts ...lendgraph.Option) (*lendgraph.EnrichResult, error) {
	return &lendgraph.EnrichResult{Charged: true, Reason: lendgraph.ReasonFreshSkipTrace}, nil
}

func (propertiesDouble) EnrichBulk(ctx context.Context, ids []string, req *lendgraph.EnrichBulkRequest, opts ...lendgraph.Option) (*lendgraph.EnrichJob, error) {
	results := make([]lendgraph.EnrichmentResultEntry, len(ids))
	for i, id := range ids {
		results[i] = lendgraph.EnrichmentResultEntry{PropertyID: id, Persons: []lendgraph.Person{{}}}
	}
	return lendgraphtest.NewEnrichJob("ejob_1", results), nil
}

// Single and bulk enrichment with results, stubbed.
func Example_stubEnrichment() {
	ctx := context.Background()
	var props lendgraph.PropertiesAPI = propertiesDouble{}
	r, _ := props.Enrich(ctx, "prop_1", nil)
	fmt.Println(r.Charged, r.Reason)
	job, _ := props.EnrichBulk(ctx, []string{"prop_1", "prop_2"}, nil)
	st, _ := job.Wait(ctx)
	fmt.Println(st.Status, st.Succeeded+st.FromCache+st.Failed, "of", st.Total)
	for e, err := range job.ResultRows(ctx) {
		fmt.Println(e.PropertyID, len(e.Persons), err)
	}
	// Output:
	// true fresh_skip_trace
	// completed 2 of 2
	// prop_1 1 <nil>
	// prop_2 1 <nil>
}

// searchDouble stands in for c.Search; marketDouble for c.Market;
// integrationsDouble for c.Integrations.
type (
	searchDouble       struct{ lendgraph.SearchAPI }
	marketDouble       struct{ lendgraph.MarketAPI }
	integrationsDouble struct {
		lendgraph.IntegrationsAPI
		pushed []string
	}
)

func (searchDouble) Instant(ctx context.Context, req *lendgraph.InstantSearchRequest, opts ...lendgraph.Option) (*lendgraph.InstantSearchResult, error) {
	return &lendgraph.InstantSearchResult{Agents: []lendgraph.PersonMatch{{ID: "agt_1", LastName: req.Query + "th"}}}, nil
}

func (marketDouble) MostGained(ctx context.Context, p *lendgraph.MostGainedRequest, opts ...lendgraph.MostGainedOption) (*lendgraph.MostGainedResult, error) {
	return &lendgraph.MostGainedResult{Data: []lendgraph.MarketMovementRow{{CompanyName: "Acme Lending", Gained: 12, Lost: 2, Net: 10}}}, nil
}

func (d *integrationsDouble) PushCRM(ctx context.Context, req *lendgraph.PushCRMRequest, opts ...lendgraph.Option) (*lendgraph.PushCRMResult, error) {
	d.pushed = append(d.pushed, req.IDs...)
	return &lendgraph.PushCRMResult{Summary: lendgraph.CRMPushSummary{Created: int64(len(req.IDs))}}, nil
}

// Instant search, market movement and a CRM push, stubbed.
func Example_stubSearchMarketAndCRM() {
	ctx := context.Background()
	res, _ := searchDouble{}.Instant(ctx, &lendgraph.InstantSearchRequest{Query: "smi"})
	fmt.Println(res.Agents[0].LastName)
	mv, _ := marketDouble{}.MostGained(ctx, &lendgraph.MostGainedRequest{DateRange: "last_12_months"})
	fmt.Println(mv.Data[0].CompanyName, mv.Data[0].Net)
	crm := &integrationsDouble{}
	var api lendgraph.IntegrationsAPI = crm
	out, _ := api.PushCRM(ctx, &lendgraph.PushCRMRequest{Entity: lendgraph.CRMEntityAgent, IDs: []string{"agt_1", "agt_2"}})
	fmt.Println(out.Summary.Created, crm.pushed)
	// Output:
	// smith
	// Acme Lending 10
	// 2 [agt_1 agt_2]
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// searchHostDouble stands in for c.Search.Host().
type searchHostDouble struct{}

func (searchHostDouble) Search(ctx context.Context, index lendgraph.SearchIndex, req *lendgraph.HostSearchRequest, opts ...lendgraph.Option) (*lendgraph.HostSearchResult, error) {
	return lendgraphtest.HostResult(lendgraph.OriginatorHit{ID: "org_1", FirstName: "Ada", LastName: req.Q + "th"})
}

// A search-host query, stubbed: typed hits in, typed hits out.
func Example_stubSearchHost() {
	var host lendgraph.SearchHostAPI = searchHostDouble{}
	res, _ := host.Search(context.Background(), lendgraph.IndexOriginators, &lendgraph.HostSearchRequest{Q: "smi"})
	hits, err := res.OriginatorHits()
	fmt.Println(len(hits), hits[0].FirstName, hits[0].LastName, err)
	// Output: 1 Ada smith <nil>
}
