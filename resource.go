package lendgraph

import (
	"context"
	"iter"
	"net/http"
	"net/url"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

//go:generate go run ./internal/gen/services

// MaxPageSize is the largest page the API serves.
const MaxPageSize = 100

// ResourceAPI is what every resource service offers (List, All, Pager,
// Get), for code generic over resources; each service's own interface
// (AgentsAPI, ...) lists all of its methods.
type ResourceAPI[T any] interface {
	List(ctx context.Context, req *ListRequest, opts ...Option) (*Page[T], error)
	All(ctx context.Context, req *ListRequest, opts ...Option) iter.Seq2[T, error]
	Pager(req *ListRequest, opts ...Option) (*Pager[T], error)
	Get(ctx context.Context, id string, opts ...Option) (*T, error)
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

// resource is the machinery behind every resource service: its methods
// are the services' methods (services_gen.go), once for every resource.
type resource[T any] struct {
	c    *Client
	path string // the path segment: "agents"
	name string // the service's name in operation names: "Agents"
	// getOp and listOp are the names of the operations called most,
	// made once: "Agents.Get", "Agents.List".
	getOp, listOp string
}

func newResource[T any](c *Client, path, name string) resource[T] {
	return resource[T]{c: c, path: path, name: name, getOp: name + ".Get", listOp: name + ".List"}
}

// op names an operation of the service: "Agents.List".
func (r resource[T]) op(method string) string { return r.name + "." + method }

func (r resource[T]) list(ctx context.Context, req *ListRequest, opts []Option) (*Page[T], error) {
	body, err := req.prepared()
	if err != nil {
		return nil, err
	}
	return call[Page[T]](ctx, r.c, r.listOp, opts, r.listRequest(body))
}

func (r resource[T]) listRequest(body *ListRequest) request {
	return request{method: http.MethodPost, path: "/v1/" + r.path, body: body, kind: retry.Idempotent}
}

// pager is Pager, whose operations are called name ("Agents.Pager", or
// "Agents.All" for the pager behind All).
func (r resource[T]) pager(req *ListRequest, name string, opts []Option) (*Pager[T], error) {
	return listPager(r.c, name, opts, req, func(ctx context.Context, o *operation, body *ListRequest, early func(string)) ([]T, string, error) {
		lr := r.listRequest(body)
		lr.peek = peekCursor("cursor", early)
		page, err := sendFor[Page[T]](ctx, o, lr)
		if err != nil {
			return nil, "", err
		}
		return page.Data, page.Cursor, nil
	})
}

func (r resource[T]) all(ctx context.Context, req *ListRequest, opts []Option) iter.Seq2[T, error] {
	p, err := r.pager(req, r.op("All"), opts)
	return pagedAll(ctx, p, err)
}

func (r resource[T]) get(ctx context.Context, id string, opts []Option) (*T, error) {
	if id == "" {
		return nil, invalidArg("id", "must not be empty")
	}
	return call[T](ctx, r.c, r.getOp, opts, request{method: http.MethodGet, path: "/v1/" + r.path + "/" + url.PathEscape(id), kind: retry.Idempotent})
}

// analytics posts an analytics query (POST /v1/<resource>/analytics/<kind>).
// It is a read: safe to retry.
func (r resource[T]) analytics(ctx context.Context, method, kind string, req *ListRequest, opts []Option) (*AnalyticsResult, error) {
	body, err := req.prepared()
	if err != nil {
		return nil, err
	}
	ctx, o, err := r.c.begin(ctx, r.op(method), opts)
	if err != nil {
		return nil, err
	}
	var out AnalyticsResult
	_, err = o.send(ctx, request{method: http.MethodPost, path: "/v1/" + r.path + "/analytics/" + kind, body: body, kind: retry.Idempotent}, &out.Raw)
	o.end(err)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

func (r resource[T]) chartRequest(body *ChartRequest) request {
	return request{method: http.MethodPost, path: "/v1/" + r.path + "/analytics/chart", body: body, kind: retry.Idempotent}
}

func (r resource[T]) chart(ctx context.Context, req *ChartRequest, opts []Option) (*ChartResult, error) {
	body, err := r.preparedChart(req)
	if err != nil {
		return nil, err
	}
	return call[ChartResult](ctx, r.c, r.op("Chart"), opts, r.chartRequest(body))
}

// preparedChart checks a chart request: a property chart must name its
// slice, which the other resources' charts may leave to the server.
func (r resource[T]) preparedChart(req *ChartRequest) (*ChartRequest, error) {
	body, err := req.prepared()
	if err != nil {
		return nil, err
	}
	if r.path == "properties" && body.Slice == "" {
		return nil, invalidArg("Slice", "must name the field to slice by, e.g. \"city\"")
	}
	return body, nil
}

func (r resource[T]) chartPager(req *ChartRequest, name string, opts []Option) (*Pager[ChartRow], error) {
	body, err := r.preparedChart(req)
	if err != nil {
		return nil, err
	}
	return listPager(r.c, name, opts, &body.ListRequest, func(ctx context.Context, o *operation, lr *ListRequest, _ func(string)) ([]ChartRow, string, error) {
		b := *body
		b.ListRequest = *lr
		page, err := sendFor[ChartResult](ctx, o, r.chartRequest(&b))
		if err != nil {
			return nil, "", err
		}
		return page.Data, page.NextCursor, nil
	})
}

func (r resource[T]) allChart(ctx context.Context, req *ChartRequest, opts []Option) iter.Seq2[ChartRow, error] {
	p, err := r.chartPager(req, r.op("AllChart"), opts)
	return pagedAll(ctx, p, err)
}

// LoansService serves loans: records, analytics and bulk delivery.
type LoansService struct {
	r resource[Loan]
}

// BranchesService serves branches: records and bulk delivery (the API has
// no branch analytics).
type BranchesService struct {
	r resource[Branch]
}

// SalesService serves sales: records and analytics (the API has no bulk
// delivery of sales).
type SalesService struct {
	r resource[Sale]
}
