package lendgraph_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// startFake starts the fake API for an example (closed by the caller).
// MostGained waits through 202 computing answers on its own.
func ExampleMarketService_MostGained() {
	srv := startFake(lendgraphtest.WithDefaultRows(500))
	defer srv.Close()
	c := srv.Client()
	computing := false
	res, err := c.Market.MostGained(context.Background(), &lendgraph.MostGainedRequest{
		DateRange: lendgraph.LastNMonths(24), State: "TX", RankBy: lendgraph.RankByNet, Limit: 3,
	}, lendgraph.WithProgress(func(*lendgraph.MovementProgress) { computing = true }))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("waited for the computation:", computing)
	fmt.Println("rows:", len(res.Data), "months:", res.Window.Months)
	r := res.Data[0]
	fmt.Println("net is gained minus lost:", r.Net == r.Gained-r.Lost)
	// Output:
	// waited for the computation: true
	// rows: 3 months: 24
	// net is gained minus lost: true
}

// Bad parameters fail before any request.
func ExampleMostGainedRequest_Validate() {
	err := (&lendgraph.MostGainedRequest{City: "Austin"}).Validate()
	fmt.Println(err)
	// Output:
	// lendgraph: invalid City: set State too: the API matches City within a state (the reference says to pair them)
}

func ExampleOriginatorsService_AllTitleCompanies() {
	srv := startFake(lendgraphtest.WithDefaultRows(500), lendgraphtest.WithRows("originators", 2), lendgraphtest.WithRows("loans", 400))
	defer srv.Close()
	c := srv.Client()
	for row, err := range c.Originators.AllTitleCompanies(context.Background(), "1000000", nil) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if row.ID == "fidelity national" {
			fmt.Println(row.ID, "groups every spelling; shares of all loans:", row.PctUnits < 100)
		}
	}
	// Output:
	// fidelity national groups every spelling; shares of all loans: true
}

func ExampleLocationsService_Suggest() {
	srv := startFake(lendgraphtest.WithDefaultRows(500))
	defer srv.Close()
	c := srv.Client()
	sug, err := c.Locations.Suggest(context.Background(), "Ft Wo", 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sug[0].ID, sug[0].PlaceFormatted, sug[0].Source)
	// Output:
	// city_tx_fort-worth Fort Worth, TX dictionary
}

// A dry run shows what a push would write, without writing or charging.
func ExampleIntegrationsService_PushCRM() {
	srv := startFake(lendgraphtest.WithDefaultRows(500))
	defer srv.Close()
	c := srv.Client()
	res, err := c.Integrations.PushCRM(context.Background(), &lendgraph.PushCRMRequest{
		Entity: lendgraph.CRMEntityAgent, Object: lendgraph.CRMObjectContact,
		IDs: []string{"agt_0000001", "agt_0000002", "agt_9999999"}, DryRun: true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range res.Results {
		fmt.Println(strings.TrimSpace(fmt.Sprint(r.ID, " ", r.Status, " ", r.Reason)))
	}
	fmt.Println("charged:", res.Billing.Charged)
	// Output:
	// agt_0000001 created
	// agt_0000002 created
	// agt_9999999 skipped not_found
	// charged: 0
}

// PushCRMBatched reports what was written when credits run out.
func ExampleIntegrationsService_PushCRMBatched() {
	srv := startFake(lendgraphtest.WithDefaultRows(500), lendgraphtest.WithCredits(120))
	defer srv.Close()
	c := srv.Client()
	ids := make([]string, 250)
	for i := range ids {
		ids[i] = fmt.Sprintf("agt_%07d", i)
	}
	_, err := c.Integrations.PushCRMBatched(context.Background(), &lendgraph.PushCRMRequest{
		Entity: lendgraph.CRMEntityAgent, Object: lendgraph.CRMObjectContact, IDs: ids,
	})
	var pe *lendgraph.PushIncompleteError
	var ic *lendgraph.InsufficientCreditsError
	if errors.As(err, &pe) && errors.As(err, &ic) {
		fmt.Printf("written %d, not sent %d; balance %g, next batch costs %g\n", pe.Done.Summary.Created, len(pe.NotSent), ic.Balance, ic.Cost)
	}
	// Output:
	// written 100, not sent 150; balance 20, next batch costs 100
}

func ExampleSavedFiltersService_Create() {
	srv := startFake(lendgraphtest.WithDefaultRows(500))
	defer srv.Close()
	c := srv.Client()
	f, err := c.SavedFilters.Create(context.Background(), &lendgraph.CreateSavedFilterRequest{
		Name: "Texas loan officers", Target: "originators",
		Query: &lendgraph.ListRequest{FlatFilters: map[string]any{"state": "TX"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(f.Name, f.Kind, f.QueryVersion, f.Stale)
	_, err = c.SavedFilters.Delete(context.Background(), "not a valid id")
	fmt.Println(err)
	// Output:
	// Texas loan officers filter 1 false
	// lendgraph: invalid id: "not a valid id": a saved-filter id is 1 to 32 letters, digits, _ or -
}
