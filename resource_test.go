package lendgraph_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// Every resource service satisfies the interface a test harness stubs.
var (
	_ lendgraph.ResourceAPI[lendgraph.Agent]        = (*lendgraph.AgentsService)(nil)
	_ lendgraph.ResourceAPI[lendgraph.Originator]   = (*lendgraph.OriginatorsService)(nil)
	_ lendgraph.ResourceAPI[lendgraph.Company]      = (*lendgraph.CompaniesService)(nil)
	_ lendgraph.ResourceAPI[lendgraph.Loan]         = (*lendgraph.LoansService)(nil)
	_ lendgraph.ResourceAPI[lendgraph.Property]     = (*lendgraph.PropertiesService)(nil)
	_ lendgraph.ResourceAPI[lendgraph.Branch]       = (*lendgraph.BranchesService)(nil)
	_ lendgraph.ResourceAPI[lendgraph.Sale]         = (*lendgraph.SalesService)(nil)
	_ lendgraph.ResourceAPI[lendgraph.MarketRecord] = (*lendgraph.MarketService)(nil)
)

func TestResourceService_All(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithRows("agents", 250))
	c := srv.Client()
	ctx := context.Background()
	req := &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 100},
		Sort: []lendgraph.Sort{{Field: "transactionCount", Order: lendgraph.Desc}, {Field: "id"}}}
	all := collect(t, c.Agents.All(ctx, req))
	if len(all) != 250 {
		t.Fatalf("%d agents, want 250", len(all))
	}
	if n := srv.CountRequests("POST", "/v1/agents"); n != 3 {
		t.Fatalf("%d requests, want 3 pages", n)
	}
	for i := 1; i < len(all); i++ {
		if all[i-1].TransactionCount < all[i].TransactionCount {
			t.Fatalf("not sorted desc at %d", i)
		}
	}
	// NextPage walks the same pages.
	p, err := c.Agents.Pager(req)
	if err != nil {
		t.Fatal(err)
	}
	var paged []lendgraph.Agent
	for p.More() {
		items, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, items...)
	}
	if d := cmp.Diff(ids(all, agentID), ids(paged, agentID)); d != "" {
		t.Fatalf("NextPage differs from All: %s", d)
	}
	if items, err := p.NextPage(ctx); items != nil || err != nil {
		t.Fatal("NextPage after the last page")
	}
	// The request was not modified by paging.
	if req.Pagination.Cursor != "" {
		t.Fatal("All wrote into the caller's request")
	}
	// The body the server received.
	body := string(srv.Requests()[0].Body)
	if body != `{"sort":[{"field":"transactionCount","order":"desc"},{"field":"id"}],"pagination":{"size":100}}` {
		t.Fatalf("body %s", body)
	}
}

func TestResourceService_List(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithRows("agents", 250))
	page, err := srv.Client().Agents.List(context.Background(), &lendgraph.ListRequest{
		FlatFilters: map[string]any{"state": []string{"CA", "TX"}}, Period: lendgraph.PeriodAllTime,
		Pagination: &lendgraph.Pagination{Size: 7}})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 7 || page.Total < 7 || page.Cursor == "" {
		t.Fatalf("page: %d rows, total %d, cursor %q", len(page.Data), page.Total, page.Cursor)
	}
	for _, a := range page.Data {
		if a.State != "CA" && a.State != "TX" {
			t.Fatalf("state %s", a.State)
		}
	}
}

func TestResourceService_AllEmpty(t *testing.T) {
	srv := smallServer(t)
	c := srv.Client()
	n := 0
	for _, err := range c.Agents.All(context.Background(), &lendgraph.ListRequest{FlatFilters: map[string]any{"state": "ZZ"}}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 0 || srv.CountRequests("POST", "/v1/agents") != 1 {
		t.Fatalf("%d rows, %d requests", n, srv.CountRequests("POST", "/v1/agents"))
	}
	page, err := c.Agents.List(context.Background(), &lendgraph.ListRequest{FlatFilters: map[string]any{"state": "ZZ"}})
	if err != nil || page.Total != 0 || len(page.Data) != 0 || page.Cursor != "" {
		t.Fatalf("%+v %v", page, err)
	}
}

func TestResourceService_AllRepeatedCursor(t *testing.T) {
	noLeaks(t)
	srv := smallServer(t)
	srv.InjectFault("POST", "/v1/agents", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 200,
		Body: `{"data":[{"id":"a"},{"id":"b"}],"total":99,"cursor":"c1"}`, Times: -1})
	var got []string
	var gotErr error
	for a, err := range srv.Client().Agents.All(context.Background(), nil) {
		if err != nil {
			gotErr = err
			break
		}
		got = append(got, a.ID)
	}
	if gotErr == nil || !strings.Contains(gotErr.Error(), "second time") {
		t.Fatalf("err = %v, want a repeated-cursor error", gotErr)
	}
	if n := srv.CountRequests("POST", "/v1/agents"); n != 2 {
		t.Fatalf("%d requests: the pager looped", n)
	}
	if len(got) != 4 {
		t.Fatalf("yielded %v", got)
	}
}

func TestResourceService_AllBreakEarly(t *testing.T) {
	noLeaks(t)
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithRows("agents", 1000))
	n := 0
	for _, err := range srv.Client().Agents.All(context.Background(), &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 100}}) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 150 {
			break
		}
	}
	// Page 1, page 2, and at most the prefetch of page 3.
	if r := srv.CountRequests("POST", "/v1/agents"); r > 3 {
		t.Fatalf("%d requests after breaking in page 2", r)
	}
}

func TestResourceService_AllCancel(t *testing.T) {
	noLeaks(t)
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithRows("agents", 1000))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	var gotErr error
	for _, err := range srv.Client().Agents.All(ctx, &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 100}}) {
		if err != nil {
			gotErr = err
			break
		}
		if n++; n == 150 {
			cancel()
		}
	}
	if !errors.Is(gotErr, context.Canceled) {
		t.Fatalf("err = %v after %d rows, want context.Canceled", gotErr, n)
	}
	if n >= 1000 {
		t.Fatal("iteration went on after cancel")
	}
}

// A method exists only where the endpoint does: analytics on agents,
// originators, loans, sales and market; bulk delivery on agents,
// originators, companies, loans, properties and branches (API.md).
func TestResource_CapabilitiesInTheTypes(t *testing.T) {
	c, err := lendgraph.NewClient(lendgraph.WithAPIKey("k"))
	if err != nil {
		t.Fatal(err)
	}
	services := map[string]struct {
		svc                 any
		analytics, delivery bool
	}{
		"Agents":      {c.Agents, true, true},
		"Originators": {c.Originators, true, true},
		"Companies":   {c.Companies, false, true},
		"Loans":       {c.Loans, true, true},
		"Properties":  {c.Properties, false, true},
		"Branches":    {c.Branches, false, true},
		"Sales":       {c.Sales, true, false},
		"Market":      {c.Market, true, false},
	}
	for name, s := range services {
		typ := reflect.TypeOf(s.svc)
		has := func(m string) bool { _, ok := typ.MethodByName(m); return ok }
		for _, m := range []string{"List", "All", "Pager", "Get"} {
			if !has(m) {
				t.Errorf("%s has no %s", name, m)
			}
		}
		for _, m := range []string{"Summary", "TimeSeries"} {
			if has(m) != s.analytics {
				t.Errorf("%s.%s exists: %v, want %v", name, m, has(m), s.analytics)
			}
		}
		for _, m := range []string{"Deliver", "DeliveryJob"} {
			if has(m) != s.delivery {
				t.Errorf("%s.%s exists: %v, want %v", name, m, has(m), s.delivery)
			}
		}
	}
	// Properties have their own typed chart, not the analytics one.
	if m, ok := reflect.TypeOf(c.Properties).MethodByName("Chart"); !ok || m.Type.Out(0) != reflect.TypeFor[*lendgraph.ChartResult]() {
		t.Errorf("Properties.Chart: %v", m.Type)
	}
}
