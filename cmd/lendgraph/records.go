package main

import (
	"context"
	"iter"
	"slices"
	"strings"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// resourceNames lists the resources list and get accept.
var resourceNames = []string{"agents", "originators", "companies", "loans", "properties", "branches", "sales", "market"}

// records is the untyped view of one resource service the CLI needs: every
// record comes back as a value that marshals to the server's JSON.
type records struct {
	all func(ctx context.Context, req *lendgraph.ListRequest) iter.Seq2[any, error]
	get func(ctx context.Context, id string) (any, error)
}

func resourceOf(c *lendgraph.Client, name string) (records, error) {
	switch name {
	case "agents":
		return recordsOf[lendgraph.Agent](c.Agents), nil
	case "originators":
		return recordsOf[lendgraph.Originator](c.Originators.ResourceService), nil
	case "companies":
		return recordsOf[lendgraph.Company](c.Companies.ResourceService), nil
	case "loans":
		return recordsOf[lendgraph.Loan](c.Loans), nil
	case "properties":
		return recordsOf[lendgraph.Property](c.Properties.ResourceService), nil
	case "branches":
		return recordsOf[lendgraph.Branch](c.Branches), nil
	case "sales":
		return recordsOf[lendgraph.Sale](c.Sales), nil
	case "market":
		return recordsOf[lendgraph.MarketRecord](c.Market.ResourceService), nil
	}
	return records{}, usagef("unknown resource %q (one of %s)", name, strings.Join(resourceNames, ", "))
}

func recordsOf[T any](s *lendgraph.ResourceService[T]) records {
	return records{
		all: func(ctx context.Context, req *lendgraph.ListRequest) iter.Seq2[any, error] {
			return func(yield func(any, error) bool) {
				for r, err := range s.All(ctx, req) {
					if !yield(r, err) {
						return
					}
				}
			}
		},
		get: func(ctx context.Context, id string) (any, error) { return s.Get(ctx, id) },
	}
}

func checkResource(name string) error {
	if !slices.Contains(resourceNames, name) {
		return usagef("unknown resource %q (one of %s)", name, strings.Join(resourceNames, ", "))
	}
	return nil
}
