package lendgraph

import (
	"context"
	"iter"
	"net/http"
	"net/url"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// MaxPageSize is the largest page the API serves.
const MaxPageSize = 100

// resource describes one resource path and what the API offers on it.
type resource struct {
	name      string // path segment: "agents"
	analytics bool   // offers /analytics/summary, /time-series, /chart
	delivery  bool   // offers /bulk-delivery
}

var (
	resAgents      = resource{name: "agents", analytics: true, delivery: true}
	resOriginators = resource{name: "originators", analytics: true, delivery: true}
	resCompanies   = resource{name: "companies", delivery: true}
	resLoans       = resource{name: "loans", analytics: true, delivery: true}
	resProperties  = resource{name: "properties", delivery: true}
	resBranches    = resource{name: "branches", delivery: true}
	resSales       = resource{name: "sales", analytics: true}
	resMarket      = resource{name: "market", analytics: true}
)

// ResourceAPI is what every resource service offers: the interface a test
// harness stubs instead of starting a server.
type ResourceAPI[T any] interface {
	List(ctx context.Context, req *ListRequest) (*Page[T], error)
	All(ctx context.Context, req *ListRequest) iter.Seq2[T, error]
	Pager(req *ListRequest) (*Pager[T], error)
	Get(ctx context.Context, id string) (*T, error)
}

var _ ResourceAPI[Agent] = (*ResourceService[Agent])(nil)

// ResourceService serves one resource: list pages, iterate every match,
// fetch one complete record. c.Agents, c.Loans, c.Branches and c.Sales are
// ResourceServices; the other resources embed one and add their own calls.
type ResourceService[T any] struct {
	client *Client
	res    resource
}

func newResource[T any](c *Client, r resource) *ResourceService[T] {
	return &ResourceService[T]{client: c, res: r}
}

// Page is one page of a list.
type Page[T any] struct {
	// Data holds the page's records (summary records; Get returns the full one).
	Data []T `json:"data"`
	// Total is the number of records matching the query.
	Total int64 `json:"total"`
	// Cursor fetches the next page; empty on the last page.
	Cursor string `json:"cursor"`
}

// List returns one page of records matching req (nil lists everything).
// Set req.Pagination.Cursor to continue from a previous page.
func (s *ResourceService[T]) List(ctx context.Context, req *ListRequest) (*Page[T], error) {
	body, err := req.prepared()
	if err != nil {
		return nil, err
	}
	return s.list(ctx, body)
}

func (s *ResourceService[T]) list(ctx context.Context, body *ListRequest) (*Page[T], error) {
	var page Page[T]
	_, err := s.client.send(ctx, request{method: http.MethodPost, path: "/v1/" + s.res.name, body: body, kind: retry.Idempotent}, &page)
	if err != nil {
		return nil, err
	}
	return &page, nil
}

// Pager returns a pager over every record matching req, starting at
// req.Pagination.Cursor when set.
func (s *ResourceService[T]) Pager(req *ListRequest) (*Pager[T], error) {
	return listPager(req, func(ctx context.Context, body *ListRequest) ([]T, string, error) {
		page, err := s.list(ctx, body)
		if err != nil {
			return nil, "", err
		}
		return page.Data, page.Cursor, nil
	})
}

// All yields every record matching req, following cursors until the server
// returns none. The sequence follows the package's iterator contract:
// every range starts again from req's first page (or its
// Pagination.Cursor), ranges in several goroutines are independent, and
// break, a panic or a cancelled ctx stop it at once with nothing left
// behind. Use Pager to keep track of the cursor for resuming in another
// process.
func (s *ResourceService[T]) All(ctx context.Context, req *ListRequest) iter.Seq2[T, error] {
	p, err := s.Pager(req)
	return pagedAll(ctx, p, err)
}

// Get returns the complete record with nested data.
func (s *ResourceService[T]) Get(ctx context.Context, id string) (*T, error) {
	if id == "" {
		return nil, invalidArg("id", "must not be empty")
	}
	var out T
	_, err := s.client.send(ctx, request{method: http.MethodGet, path: "/v1/" + s.res.name + "/" + url.PathEscape(id), kind: retry.Idempotent}, &out)
	if err != nil {
		return nil, err
	}
	return &out, nil
}
