package main

import (
	"fmt"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// tourResources lists, iterates and fetches agents. It uses only the API,
// so it runs the same against the fake and the real service.
func tourResources(t tour) error {
	fmt.Fprintln(t.out, "\n== Resources: list, iterate, fetch ==")

	// One page: agents in California, most transactions first.
	page, err := t.c.Agents.List(t.ctx, &lendgraph.ListRequest{
		FlatFilters: map[string]any{"state": "CA"},
		Sort:        []lendgraph.Sort{{Field: "transactionCount", Order: lendgraph.Desc}},
		Pagination:  &lendgraph.Pagination{Size: 5},
	})
	if err != nil {
		return fmt.Errorf("listing agents: %w", err)
	}
	fmt.Fprintf(t.out, "Top agents in CA by transactions (%d match):\n", page.Total)
	for _, a := range page.Data {
		fmt.Fprintf(t.out, "  %-24s %-14s %4d transactions\n", a.FullName, a.City, a.TransactionCount)
	}

	// Iterate 250 agents: All follows the cursors, 100 a page, fetching
	// the next page while this loop works through the current one.
	pager, err := t.c.Agents.Pager(&lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 100}})
	if err != nil {
		return err
	}
	n, pages, lastCursor := 0, 0, "-"
	for _, err := range pager.All(t.ctx) {
		if err != nil {
			return fmt.Errorf("iterating agents: %w", err)
		}
		if c := pager.Cursor(); n == 0 || c != lastCursor {
			pages++
			lastCursor = c
		}
		if n++; n == 250 {
			break
		}
	}
	fmt.Fprintf(t.out, "Iterated %d agents across %d pages (resume later from pager.Cursor())\n", n, pages)

	// One record in full: typed fields plus every other member the server sent.
	if len(page.Data) == 0 {
		return nil
	}
	a, err := t.c.Agents.Get(t.ctx, page.Data[0].ID)
	if err != nil {
		return fmt.Errorf("fetching agent %s: %w", page.Data[0].ID, err)
	}
	fmt.Fprintf(t.out, "Agent %s: %s, %s %s\n", a.ID, a.FullName, a.City, a.State)
	fmt.Fprintf(t.out, "  members beyond the typed fields: %v\n", a.Extra.Names())
	var recent []struct {
		Date  string  `json:"date"`
		Price float64 `json:"price"`
	}
	if err := a.Extra.Decode("recentTransactions", &recent); err == nil && len(recent) > 0 {
		fmt.Fprintf(t.out, "  latest of %d recent transactions: %s for $%.0f\n", len(recent), recent[0].Date, recent[0].Price)
	}
	return nil
}
