package main

import (
	"fmt"
	"strings"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// tourSearch runs an instant search for a name prefix ("s") over the API route,
// then queries the search host directly with a minted search token.
func tourSearch(t tour) error {
	fmt.Fprintln(t.out, "\n== Instant search ==")
	res, err := t.c.Search.Instant(t.ctx, &lendgraph.InstantSearchRequest{Query: "s", Limit: 3})
	if err != nil {
		return fmt.Errorf("instant search: %w", err)
	}
	names := func(xs []string) string {
		if len(xs) == 0 {
			return "(no match)"
		}
		return strings.Join(xs, ", ")
	}
	var originators, agents, companies, offices []string
	for _, o := range res.Originators {
		originators = append(originators, o.FirstName+" "+o.LastName+" ("+o.State+")")
	}
	for _, a := range res.Agents {
		agents = append(agents, a.FirstName+" "+a.LastName+" ("+a.State+")")
	}
	for _, co := range res.Companies {
		companies = append(companies, co.Name)
	}
	for _, o := range res.Offices {
		offices = append(offices, o.Name)
	}
	fmt.Fprintf(t.out, "\"s\" originators: %s\n", names(originators))
	fmt.Fprintf(t.out, "\"s\" agents:      %s\n", names(agents))
	fmt.Fprintf(t.out, "\"s\" companies:   %s\n", names(companies))
	fmt.Fprintf(t.out, "\"s\" offices:     %s\n", names(offices))

	// A search token: short-lived, read-only, for the search host only (the
	// API key never goes there). The source caches it and mints the next
	// one halfway through its lifetime.
	tok, err := t.c.Search.TokenSource().Token(t.ctx)
	if err != nil {
		return fmt.Errorf("search token: %w", err)
	}
	fmt.Fprintf(t.out, "search token for %v, valid for about %s (printed: %v)\n",
		tok.Indexes, time.Until(tok.ExpiresAt).Round(time.Minute), tok)

	hr, err := t.c.Search.Host().Search(t.ctx, lendgraph.IndexOriginators,
		&lendgraph.HostSearchRequest{Q: "smith", Limit: 3, Filter: `states = "TX"`})
	if err != nil {
		return fmt.Errorf("search host: %w", err)
	}
	hits, err := hr.OriginatorHits()
	if err != nil {
		return err
	}
	fmt.Fprintf(t.out, "host: \"smith\" in TX: about %d matches; first %d:\n", hr.EstimatedTotalHits, len(hits))
	for _, h := range hits {
		fmt.Fprintf(t.out, "  %s %s %s %v\n", h.ID, h.FirstName, h.LastName, h.Cities)
	}
	return nil
}
