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

// ResourceAPI is what every resource service offers: the interface a test
// harness stubs instead of starting a server.
type ResourceAPI[T any] interface {
	List(ctx context.Context, req *ListRequest) (*Page[T], error)
	All(ctx context.Context, req *ListRequest) iter.Seq2[T, error]
	Pager(req *ListRequest) (*Pager[T], error)
	Get(ctx context.Context, id string) (*T, error)
}

var _ ResourceAPI[Agent] = (*ResourceService[Agent])(nil)

// ResourceService serves what every resource offers: list pages, iterate
// every match, fetch one complete record. Each resource's service embeds
// one, and embeds AnalyticsService and DeliveryService only where the API
// offers analytics and bulk delivery on that resource, so a call the API
// does not have does not compile.
type ResourceService[T any] struct {
	client *Client
	name   string // the path segment: "agents"
}

func newResource[T any](c *Client, name string) *ResourceService[T] {
	return &ResourceService[T]{client: c, name: name}
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
	return call[Page[T]](ctx, s.client, request{op: opName(s.name, "List"), method: http.MethodPost, path: "/v1/" + s.name, body: body, kind: retry.Idempotent})
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
	return observeSeq(ctx, s.client, opName(s.name, "All"), true, func(ctx context.Context) iter.Seq2[T, error] { return pagedAll(ctx, p, err) })
}

// Get returns the complete record with nested data.
func (s *ResourceService[T]) Get(ctx context.Context, id string) (*T, error) {
	if id == "" {
		return nil, invalidArg("id", "must not be empty")
	}
	return call[T](ctx, s.client, request{op: opName(s.name, "Get"), method: http.MethodGet, path: "/v1/" + s.name + "/" + url.PathEscape(id), kind: retry.Idempotent})
}

// LoansAPI is what c.Loans offers.
type LoansAPI interface {
	ResourceAPI[Loan]
	AnalyticsAPI
	DelivererAPI[Loan]
}

// LoansService serves loans: records, analytics and bulk delivery.
type LoansService struct {
	*ResourceService[Loan]
	*AnalyticsService
	*DeliveryService[Loan]
}

// BranchesAPI is what c.Branches offers.
type BranchesAPI interface {
	ResourceAPI[Branch]
	DelivererAPI[Branch]
}

// BranchesService serves branches: records and bulk delivery (the API has
// no branch analytics).
type BranchesService struct {
	*ResourceService[Branch]
	*DeliveryService[Branch]
}

// SalesAPI is what c.Sales offers.
type SalesAPI interface {
	ResourceAPI[Sale]
	AnalyticsAPI
}

// SalesService serves sales: records and analytics (the API has no bulk
// delivery of sales).
type SalesService struct {
	*ResourceService[Sale]
	*AnalyticsService
}

var (
	_ LoansAPI    = (*LoansService)(nil)
	_ BranchesAPI = (*BranchesService)(nil)
	_ SalesAPI    = (*SalesService)(nil)
)
