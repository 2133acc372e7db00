package lendgraph_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// startFake starts the in-process fake API for the examples; a test would
// use lendgraphtest.NewServer(t).
// startFake starts the fake API for an example; examples print the fake's
// deterministic data.
func startFake(opts ...lendgraphtest.Option) *lendgraphtest.Server {
	srv, err := lendgraphtest.Start(opts...)
	if err != nil {
		log.Fatal(err)
	}
	return srv
}

func ExampleNewClient() {
	srv := startFake(lendgraphtest.WithRows("agents", 1000))
	defer srv.Close()

	// Against the real API: lendgraph.NewClient() reads $LENDGRAPH_API_KEY.
	c, err := lendgraph.NewClient(
		lendgraph.WithAPIKey(srv.DefaultCaller().Key),
		lendgraph.WithBaseURL(srv.URL),
		lendgraph.WithMaxRetries(2),
	)
	if err != nil {
		log.Fatal(err)
	}
	page, err := c.Agents.List(context.Background(), nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("agents:", page.Total)
	// Output: agents: 1000
}

func ExampleAgentsService_List() {
	srv := startFake(lendgraphtest.WithRows("agents", 1000))
	defer srv.Close()
	c := srv.Client()

	page, err := c.Agents.List(context.Background(), &lendgraph.ListRequest{
		FlatFilters: map[string]any{"state": "TX", "city": []string{"Austin", "Dallas"}},
		Sort:        []lendgraph.Sort{{Field: "transactionCount", Order: lendgraph.Desc}},
		Pagination:  &lendgraph.Pagination{Size: 3},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("matches:", page.Total)
	for _, a := range page.Data {
		fmt.Printf("%s (%s) %d\n", a.FullName, a.City, a.TransactionCount)
	}
	fmt.Println("more pages:", page.Cursor != "")
	// Output:
	// matches: 38
	// Carlos Young (Austin) 109
	// Joseph Thompson (Austin) 104
	// Joseph Anderson (Austin) 101
	// more pages: true
}

func ExampleAgentsService_All() {
	srv := startFake(lendgraphtest.WithRows("agents", 1000))
	defer srv.Close()
	c := srv.Client()

	n := 0
	req := &lendgraph.ListRequest{AdvancedFilters: lendgraph.And(
		lendgraph.Eq("state", "CA"),
		lendgraph.Gte("transactionCount", 100),
	), Pagination: &lendgraph.Pagination{Size: 100}}
	for a, err := range c.Agents.All(context.Background(), req) {
		if err != nil {
			log.Fatal(err)
		}
		if a.State != "CA" || a.TransactionCount < 100 {
			log.Fatalf("unexpected %+v", a)
		}
		n++
	}
	fmt.Println(n > 0)
	// Output: true
}

func ExamplePager_Cursor() {
	srv := startFake(lendgraphtest.WithRows("agents", 1000))
	defer srv.Close()
	c := srv.Client()
	ctx := context.Background()
	req := &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 100}}

	p, err := c.Agents.Pager(req)
	if err != nil {
		log.Fatal(err)
	}
	read := 0
	for _, err := range p.All(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		if read++; read == 250 {
			break // stop in the middle of the third page
		}
	}
	saved := p.Cursor() // store it; the page it names is read again on resume

	resumed := 0
	for _, err := range c.Agents.All(ctx, &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 100, Cursor: saved}}) {
		if err != nil {
			log.Fatal(err)
		}
		resumed++
	}
	fmt.Println("resumed rows:", resumed)
	// Output: resumed rows: 800
}

func ExampleAgentsService_Get() {
	srv := startFake(lendgraphtest.WithRows("agents", 1000))
	defer srv.Close()
	c := srv.Client()

	a, err := c.Agents.Get(context.Background(), "agt_0000007")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(a.ID, a.Extra.Has("recentTransactions"))
	// Output: agt_0000007 true
}

func ExampleAPIError() {
	srv := startFake(lendgraphtest.WithRows("agents", 1000))
	defer srv.Close()
	c := srv.Client()
	ctx := context.Background()

	_, err := c.Agents.Get(ctx, "agt_9999999")
	fmt.Println(errors.Is(err, lendgraph.ErrNotFound))

	var apiErr *lendgraph.APIError
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.StatusCode, apiErr.Message)
	}

	_, err = c.Agents.List(ctx, &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 500}})
	var invalid *lendgraph.InvalidArgumentError
	fmt.Println(errors.As(err, &invalid), invalid.Arg)
	// Output:
	// true
	// 404 agents record not found
	// true Pagination.Size
}

func ExampleInsufficientCreditsError() {
	srv := startFake(lendgraphtest.WithRows("agents", 1000))
	defer srv.Close()
	srv.InjectFault("POST", "/v1/integrations/crm/push", lendgraphtest.Fault{Status: 402,
		Body: `{"error":"insufficient credits","balance":2,"cost":10}`})

	err := srv.Client().Do(context.Background(), "POST", "/v1/integrations/crm/push", map[string]any{"ids": []string{"x"}}, nil)
	var credits *lendgraph.InsufficientCreditsError
	if errors.As(err, &credits) {
		fmt.Printf("balance %v, cost %v: top up before retrying\n", credits.Balance, credits.Cost)
	}
	// Output: balance 2, cost 10: top up before retrying
}
