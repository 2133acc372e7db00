package lendgraph

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

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
// returns none. Breaking out of the loop stops it. Use Pager to keep track of
// the cursor for resuming in another process.
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

// ListRequest is the common list request: filters, period, sort and page.
type ListRequest struct {
	// FlatFilters maps a field to a value (or a list of values, any of
	// which matches), e.g. {"state": "CA", "transactionType": "purchase"}.
	FlatFilters map[string]any `json:"flatFilters,omitempty"`
	// AdvancedFilters is a boolean tree, the alternative to FlatFilters.
	// Build it with And, Or, Not and the field conditions (Eq, In, Gte, ...).
	AdvancedFilters *Filter `json:"advancedFilters,omitempty"`
	// Period scopes the list in time: PeriodLast12Months, PeriodYear(2024)...
	Period Period `json:"period,omitempty"`
	// Sort orders the records by one or more fields.
	Sort []Sort `json:"sort,omitempty"`
	// Pagination sets the page size (at most 100) and the cursor to resume from.
	Pagination *Pagination `json:"pagination,omitempty"`
}

// Pagination is the page size and the cursor of the page to fetch.
type Pagination struct {
	// Size is the number of records per page, 1 to 100; 0 lets the server choose.
	Size int `json:"size,omitempty"`
	// Cursor resumes a listing from a saved cursor.
	Cursor string `json:"cursor,omitempty"`
}

// SortOrder is a sort direction. The reference shows "desc"; other values
// are sent as given.
type SortOrder string

// Sort directions.
const (
	Desc SortOrder = "desc"
	Asc  SortOrder = "asc"
)

// Sort orders a list by one field.
type Sort struct {
	Field string    `json:"field"`
	Order SortOrder `json:"order,omitempty"`
}

// Period is a time-window scope: a year ("2024") or a named window. Any
// string the API accepts can be used.
type Period string

// Periods shown by the reference.
const (
	PeriodLast12Months Period = "last12Months"
	PeriodYearToDate   Period = "yearToDate"
	PeriodAllTime      Period = "allTime"
)

// PeriodYear scopes to one calendar year.
func PeriodYear(year int) Period { return Period(strconv.Itoa(year)) }

// prepared validates the request and returns a copy safe to modify.
func (r *ListRequest) prepared() (*ListRequest, error) {
	var out ListRequest
	if r != nil {
		out = *r
	}
	if err := out.validate(); err != nil {
		return nil, err
	}
	if out.Pagination != nil {
		p := *out.Pagination
		out.Pagination = &p
	}
	return &out, nil
}

func (r *ListRequest) validate() error {
	if r.Pagination != nil && (r.Pagination.Size < 0 || r.Pagination.Size > MaxPageSize) {
		return invalidArg("Pagination.Size", "%d is outside 1..%d; the API serves at most %d records a page", r.Pagination.Size, MaxPageSize, MaxPageSize)
	}
	if r.FlatFilters != nil && r.AdvancedFilters != nil {
		return invalidArg("ListRequest", "set FlatFilters or AdvancedFilters, not both")
	}
	for i, s := range r.Sort {
		if s.Field == "" {
			return invalidArg(fmt.Sprintf("Sort[%d].Field", i), "must name a field")
		}
	}
	if r.AdvancedFilters != nil {
		if err := r.AdvancedFilters.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// FilterOp is the comparison of a field condition.
type FilterOp string

// Field comparisons of advanced filters.
const (
	OpEq  FilterOp = "eq"
	OpNe  FilterOp = "ne"
	OpGt  FilterOp = "gt"
	OpGte FilterOp = "gte"
	OpLt  FilterOp = "lt"
	OpLte FilterOp = "lte"
	OpIn  FilterOp = "in"
)

// Filter is a node of an advanced filter tree: exactly one of And, Or, Not,
// or a field condition (Field, Op, Value). It marshals to
// {"and":[...]}, {"or":[...]}, {"not":{...}} or {"field":..,"op":..,"value":..}.
type Filter struct {
	And   []*Filter
	Or    []*Filter
	Not   *Filter
	Field string
	Op    FilterOp
	Value any
}

// And matches when every condition matches.
func And(conds ...*Filter) *Filter { return &Filter{And: conds} }

// Or matches when any condition matches.
func Or(conds ...*Filter) *Filter { return &Filter{Or: conds} }

// Not matches when cond does not.
func Not(cond *Filter) *Filter { return &Filter{Not: cond} }

// Eq matches records whose field equals v.
func Eq(field string, v any) *Filter { return &Filter{Field: field, Op: OpEq, Value: v} }

// Ne matches records whose field differs from v.
func Ne(field string, v any) *Filter { return &Filter{Field: field, Op: OpNe, Value: v} }

// Gt matches records whose field is greater than v.
func Gt(field string, v any) *Filter { return &Filter{Field: field, Op: OpGt, Value: v} }

// Gte matches records whose field is at least v.
func Gte(field string, v any) *Filter { return &Filter{Field: field, Op: OpGte, Value: v} }

// Lt matches records whose field is less than v.
func Lt(field string, v any) *Filter { return &Filter{Field: field, Op: OpLt, Value: v} }

// Lte matches records whose field is at most v.
func Lte(field string, v any) *Filter { return &Filter{Field: field, Op: OpLte, Value: v} }

// In matches records whose field equals any of vs.
func In(field string, vs ...any) *Filter { return &Filter{Field: field, Op: OpIn, Value: vs} }

// Validate checks that every node is exactly one of and, or, not, or a field
// condition with a field name and an operator.
func (f *Filter) Validate() error { return f.validate("AdvancedFilters") }

func (f *Filter) validate(at string) error {
	if f == nil {
		return invalidArg(at, "is nil")
	}
	n := 0
	if f.And != nil {
		n++
	}
	if f.Or != nil {
		n++
	}
	if f.Not != nil {
		n++
	}
	if f.Field != "" || f.Op != "" {
		n++
	}
	if n != 1 {
		return invalidArg(at, "a filter node must be exactly one of And, Or, Not or a field condition; this one has %d", n)
	}
	for i, c := range f.And {
		if err := c.validate(fmt.Sprintf("%s.And[%d]", at, i)); err != nil {
			return err
		}
	}
	for i, c := range f.Or {
		if err := c.validate(fmt.Sprintf("%s.Or[%d]", at, i)); err != nil {
			return err
		}
	}
	if f.Not != nil {
		return f.Not.validate(at + ".Not")
	}
	if f.Field != "" || f.Op != "" {
		if f.Field == "" || f.Op == "" {
			return invalidArg(at, "a field condition needs both Field and Op")
		}
		if f.Op == OpIn {
			if _, ok := f.Value.([]any); !ok {
				return invalidArg(at, "op in needs a list of values")
			}
		}
	}
	return nil
}

type filterJSON struct {
	And   []*Filter `json:"and,omitempty"`
	Or    []*Filter `json:"or,omitempty"`
	Not   *Filter   `json:"not,omitempty"`
	Field string    `json:"field,omitempty"`
	Op    FilterOp  `json:"op,omitempty"`
	Value *any      `json:"value,omitempty"`
}

// MarshalJSON writes the node; a condition's value is written even when it
// is false, 0 or null.
func (f Filter) MarshalJSON() ([]byte, error) {
	j := filterJSON{And: f.And, Or: f.Or, Not: f.Not, Field: f.Field, Op: f.Op}
	if f.Field != "" {
		v := f.Value
		j.Value = &v
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads a node written by MarshalJSON.
func (f *Filter) UnmarshalJSON(b []byte) error {
	var j filterJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*f = Filter{And: j.And, Or: j.Or, Not: j.Not, Field: j.Field, Op: j.Op}
	if j.Value != nil {
		f.Value = *j.Value
	}
	return nil
}

// Agent is an agent summary or complete record.
type Agent struct {
	ID               string `json:"id"`
	FullName         string `json:"fullName,omitempty"`
	City             string `json:"city,omitempty"`
	State            string `json:"state,omitempty"`
	TransactionCount int64  `json:"transactionCount,omitempty"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// Originator is a loan originator (loan officer) record.
type Originator struct {
	ID        string `json:"id"`
	NMLSID    string `json:"nmlsId,omitempty"`
	FirstName string `json:"firstName,omitempty"`
	LastName  string `json:"lastName,omitempty"`
	City      string `json:"city,omitempty"`
	State     string `json:"state,omitempty"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// Company is a lender or brokerage company record.
type Company struct {
	ID     string `json:"id"`
	Name   string `json:"name,omitempty"`
	NMLSID string `json:"nmlsId,omitempty"`
	City   string `json:"city,omitempty"`
	State  string `json:"state,omitempty"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// TransactionType is a loan's transaction type; the reference shows
// "purchase", other values are kept as sent.
type TransactionType string

// TransactionPurchase is the purchase transaction type.
const TransactionPurchase TransactionType = "purchase"

// Loan is a loan (recorded deed) record.
type Loan struct {
	ID              string          `json:"id"`
	State           string          `json:"state,omitempty"`
	MortgageAmount  float64         `json:"mortgageAmount,omitempty"`
	MortgageDate    string          `json:"mortgageDate,omitempty"`
	TransactionType TransactionType `json:"transactionType,omitempty"`
	InterestRate    float64         `json:"interestRate,omitempty"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// Property is a parcel.
type Property struct {
	ID    string `json:"id"`
	City  string `json:"city,omitempty"`
	State string `json:"state,omitempty"`
	Zip   string `json:"zip,omitempty"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// GeoPoint is a latitude and longitude.
type GeoPoint struct {
	Lat float64 `json:"lat"`
	Lon float64 `json:"lon"`
}

// Branch is a company branch office.
type Branch struct {
	ID             string    `json:"id"`
	BranchNMLSID   string    `json:"branchNmlsId,omitempty"`
	Name           string    `json:"name,omitempty"`
	CompanyName    string    `json:"companyName,omitempty"`
	CompanyNMLSID  string    `json:"companyNmlsId,omitempty"`
	Street         string    `json:"street,omitempty"`
	City           string    `json:"city,omitempty"`
	State          string    `json:"state,omitempty"`
	PostalCode     string    `json:"postalCode,omitempty"`
	IsAuthorized   bool      `json:"isAuthorized,omitempty"`
	LicensedStates []string  `json:"licensedStates,omitempty"`
	Location       *GeoPoint `json:"location,omitempty"`
	TradeNames     []string  `json:"tradeNames,omitempty"`
	// Managers is kept as sent: its shape is not shown by the reference.
	Managers jsontext.Value `json:"managers,omitempty"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// Sale is a property sale record.
type Sale struct {
	ID string `json:"id"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// MarketRecord is a market data record.
type MarketRecord struct {
	ID string `json:"id"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}
