package lendgraph

import (
	"context"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// SearchAPI is instant search as a test harness stubs it. The search host
// and the token source have their own interfaces, SearchHostAPI and
// SearchTokenProvider.
type SearchAPI interface {
	Instant(ctx context.Context, req *InstantSearchRequest, opts ...Option) (*InstantSearchResult, error)
	Token(ctx context.Context, opts ...Option) (*SearchToken, error)
}

var _ SearchAPI = (*SearchService)(nil)

// SearchService is instant search: the API route (Instant), the search
// token (Token, TokenSource, TokenHandler), and direct queries on the search
// host (Host).
type SearchService struct {
	client *Client
	now    func() time.Time // the token source's clock; tests replace it

	once   sync.Once
	tokens *SearchTokenSource
	host   *SearchHost
}

// SearchEntity is an entity type instant search covers. Unknown values sent
// by the server are kept as sent.
type SearchEntity string

// The entity types of instant search.
const (
	EntityOriginators SearchEntity = "originators"
	EntityCompanies   SearchEntity = "companies"
	EntityAgents      SearchEntity = "agents"
	EntityOffices     SearchEntity = "offices"
)

// allEntities lists every entity type, the default of InstantSearchRequest.Entities.
var allEntities = []SearchEntity{EntityOriginators, EntityCompanies, EntityAgents, EntityOffices}

// Instant search limits per entity type.
const (
	DefaultInstantLimit = 5
	MaxInstantLimit     = 50
)

// InstantSearchRequest is a typeahead query over the API route. The route
// needs the API key, so it is for server-side use; a browser queries the
// search host with a search token instead (see TokenHandler).
type InstantSearchRequest struct {
	// Query is the text typed so far; at least one character.
	Query string `json:"query"`
	// Entities limits the search to these entity types (default: all).
	Entities []SearchEntity `json:"entities,omitempty"`
	// Limit is the number of results per entity type, 1 to 50 (0 means the
	// default, 5).
	Limit int `json:"limit,omitempty"`
	// Filters maps an entity type to a filter string, e.g. "state = TX";
	// every key must be one of the searched entity types.
	Filters map[SearchEntity]string `json:"filters,omitempty"`
}

func (r *InstantSearchRequest) prepared() (*InstantSearchRequest, error) {
	if r == nil || r.Query == "" {
		return nil, invalidArg("Query", "is empty; instant search needs at least one character")
	}
	if strings.TrimSpace(r.Query) == "" {
		return nil, invalidArg("Query", "is only white space; type at least one letter or digit")
	}
	if r.Limit < 0 || r.Limit > MaxInstantLimit {
		return nil, invalidArg("Limit", "%d is outside 1..%d (0 uses the default, %d)", r.Limit, MaxInstantLimit, DefaultInstantLimit)
	}
	out := *r
	if out.Limit == 0 {
		out.Limit = DefaultInstantLimit
	}
	searched := r.Entities
	if len(searched) == 0 {
		searched = allEntities
	}
	for i, e := range r.Entities {
		if !slices.Contains(allEntities, e) {
			return nil, invalidArg("Entities", "%q is not an entity type; use EntityOriginators, EntityCompanies, EntityAgents or EntityOffices", e)
		}
		if slices.Contains(r.Entities[:i], e) {
			return nil, invalidArg("Entities", "%q is listed twice", e)
		}
	}
	keys := make([]string, 0, len(r.Filters))
	for e := range r.Filters {
		keys = append(keys, string(e))
	}
	sort.Strings(keys) // report the same key first every time
	for _, k := range keys {
		e := SearchEntity(k)
		if !slices.Contains(searched, e) {
			return nil, invalidArg("Filters", "key %q is not among the searched entity types %v; add it to Entities or drop the filter", e, searched)
		}
		if strings.TrimSpace(r.Filters[e]) == "" {
			return nil, invalidArg("Filters", "the filter for %q is empty; drop the key or write a filter such as \"state = TX\"", e)
		}
	}
	return &out, nil
}

// InstantSearchResult holds the matches per entity type. An entity type with
// no match (or not searched) is an empty slice, never nil.
type InstantSearchResult struct {
	Originators []PersonMatch       `json:"originators"`
	Companies   []OrganizationMatch `json:"companies"`
	Agents      []PersonMatch       `json:"agents"`
	Offices     []OrganizationMatch `json:"offices"`
	// Extra holds entity types and members the SDK has no field for.
	Extra Fields `json:",unknown"`
}

// PersonMatch is an originator or an agent found by instant search.
type PersonMatch struct {
	ID        string `json:"id"`
	FirstName string `json:"firstName"`
	LastName  string `json:"lastName"`
	City      string `json:"city,omitempty"`
	State     string `json:"state,omitempty"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// OrganizationMatch is a company or an office (branch) found by instant search.
type OrganizationMatch struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	City  string `json:"city,omitempty"`
	State string `json:"state,omitempty"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// fill replaces nil slices with empty ones.
func (r *InstantSearchResult) fill() {
	r.Originators = nonNil(r.Originators)
	r.Companies = nonNil(r.Companies)
	r.Agents = nonNil(r.Agents)
	r.Offices = nonNil(r.Offices)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Instant runs a typeahead query over the API route (POST /v1/instant-search).
// A 503 (backend not configured or unavailable) is retried like any read and
// then matches ErrUnavailable; a 400 is an *APIError.
func (s *SearchService) Instant(ctx context.Context, req *InstantSearchRequest, opts ...Option) (*InstantSearchResult, error) {
	body, err := req.prepared()
	if err != nil {
		return nil, err
	}
	out, err := call[struct {
		Results InstantSearchResult `json:"results"`
	}](ctx, s.client, "Search.Instant", opts, request{method: http.MethodPost, path: "/v1/instant-search", body: body, kind: retry.Idempotent})
	if err != nil {
		return nil, err
	}
	out.Results.fill()
	return &out.Results, nil
}

// clock returns the time the token source judges expiry by.
func (s *SearchService) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

func (s *SearchService) init() {
	s.once.Do(func() {
		s.tokens = &SearchTokenSource{mint: s.token, now: s.clock, maxWait: s.client.defaults.maxServerWait}
		s.host = newSearchHost(s.client, s.tokens)
	})
}

// TokenSource returns the client's shared search token source: it caches
// the token and mints a new one once half of its lifetime has passed.
func (s *SearchService) TokenSource() *SearchTokenSource {
	s.init()
	return s.tokens
}

// Host returns the client's search-host client, which queries the search
// host directly with tokens from TokenSource.
func (s *SearchService) Host() *SearchHost {
	s.init()
	return s.host
}
