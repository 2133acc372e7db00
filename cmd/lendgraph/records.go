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
	// total is the list total of one page of req.
	total func(ctx context.Context, req *lendgraph.ListRequest) (int64, error)
	// first is the first record of one page of req (nil when there is
	// none): one request, where all may already ask for the next page.
	first func(ctx context.Context, req *lendgraph.ListRequest) (any, error)
	// deliver and attach are nil for resources without bulk delivery.
	deliver func(ctx context.Context, req *lendgraph.DeliveryRequest) (*lendgraph.DeliveryJob[lendgraph.Row], error)
	attach  func(id string) *lendgraph.DeliveryJob[lendgraph.Row]
}

// deliverable lists the resources with bulk delivery.
var deliverable = []string{"agents", "originators", "companies", "loans", "properties", "branches"}

func resourceOf(c *lendgraph.Client, name string) (records, error) {
	switch name {
	case "agents":
		return withDelivery(recordsOf(c.Agents), c.Agents), nil
	case "originators":
		return withDelivery(recordsOf(c.Originators), c.Originators), nil
	case "companies":
		return withDelivery(recordsOf(c.Companies), c.Companies), nil
	case "loans":
		return withDelivery(recordsOf(c.Loans), c.Loans), nil
	case "properties":
		return withDelivery(recordsOf(c.Properties), c.Properties), nil
	case "branches":
		return withDelivery(recordsOf(c.Branches), c.Branches), nil
	case "sales":
		return recordsOf(c.Sales), nil
	case "market":
		return recordsOf(c.Market), nil
	}
	return records{}, usagef("unknown resource %q (one of %s)", name, strings.Join(resourceNames, ", "))
}

func recordsOf[T any](s lendgraph.ResourceAPI[T]) records {
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
		total: func(ctx context.Context, req *lendgraph.ListRequest) (int64, error) {
			p, err := s.List(ctx, req)
			if err != nil {
				return 0, err
			}
			return p.Total, nil
		},
		first: func(ctx context.Context, req *lendgraph.ListRequest) (any, error) {
			p, err := s.List(ctx, req)
			if err != nil || len(p.Data) == 0 {
				return nil, err
			}
			return p.Data[0], nil
		},
	}
}

// withDelivery adds the bulk delivery of s to r, as jobs of untyped rows
// (the CLI only downloads the files).
func withDelivery[T any](r records, s lendgraph.DelivererAPI[T]) records {
	r.deliver = func(ctx context.Context, req *lendgraph.DeliveryRequest) (*lendgraph.DeliveryJob[lendgraph.Row], error) {
		j, err := s.Deliver(ctx, req)
		if err != nil {
			return nil, err
		}
		return lendgraph.DeliveryJobAs[lendgraph.Row](j), nil
	}
	r.attach = func(id string) *lendgraph.DeliveryJob[lendgraph.Row] {
		return lendgraph.DeliveryJobAs[lendgraph.Row](s.DeliveryJob(id))
	}
	return r
}

func checkResource(name string) error {
	if !slices.Contains(resourceNames, name) {
		return usagef("unknown resource %q (one of %s)", name, strings.Join(resourceNames, ", "))
	}
	return nil
}
