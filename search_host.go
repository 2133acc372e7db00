package lendgraph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// SearchHostAPI is the search host as a test harness stubs it.
type SearchHostAPI interface {
	Search(ctx context.Context, index SearchIndex, req *HostSearchRequest) (*HostSearchResult, error)
}

var _ SearchHostAPI = (*SearchHost)(nil)

// SearchHost queries the search host (a Meilisearch-compatible server)
// directly, with search tokens from the client's SearchTokenSource. Each
// query is one POST /indexes/{index}/search to the host named by the
// current token (following it when a new token names another host), sent
// through the client's credential-free pipeline with
// "Authorization: Bearer <search token>" and never the API key. A query the
// host refuses with 401 or 403 is retried once with a newly minted token;
// transient failures (5xx, 429, dropped connections, a body cut short) are
// retried like any read. It is safe for concurrent use; tokens rotate while
// queries are in flight, each query keeping the token it started with.
type SearchHost struct {
	client *Client
	tokens *SearchTokenSource
}

func newSearchHost(c *Client, tokens *SearchTokenSource) *SearchHost {
	return &SearchHost{client: c, tokens: tokens}
}

// HostSearchRequest is one query on one index of the search host. The zero
// value is a placeholder search (every document, the host's first page).
//
// Pagination comes in two modes, as on Meilisearch: Limit and Offset (the
// result carries EstimatedTotalHits), or Page and HitsPerPage (the result
// carries exact TotalHits and TotalPages). A request uses one or the other.
type HostSearchRequest struct {
	// Q is the query text; empty matches every document.
	Q string
	// Limit is the maximum number of hits (0: the host's default, 20).
	Limit int
	// Offset skips that many hits.
	Offset int
	// Page is the 1-based page to return with HitsPerPage hits a page
	// (0: not paged by page; with HitsPerPage set, the first page).
	Page int
	// HitsPerPage is the page size of Page (0: the host's default, 20,
	// when Page is set).
	HitsPerPage int
	// Filter restricts the hits, in the host's filter syntax, e.g.
	// `states = "TX" AND (cities = "Austin" OR cities = "Dallas")`.
	Filter string
	// Sort orders the hits by sortable attributes, each "attribute:asc" or
	// "attribute:desc", the first the most significant, e.g.
	// []string{"lastName:asc"}. With a query, relevancy ranks first and
	// Sort orders the hits relevancy does not tell apart.
	Sort []string
	// Facets asks for the number of matching documents per value of these
	// filterable attributes (FacetDistribution); "*" means all of them.
	Facets []string
	// AttributesToSearchOn limits matching to these attributes.
	AttributesToSearchOn []string
	// AttributesToRetrieve limits the members of each hit (default: all).
	AttributesToRetrieve []string
	// AttributesToHighlight adds a _formatted member with the matches marked.
	AttributesToHighlight []string
	// ShowRankingScore adds each hit's relevancy, from 0 to 1, as its
	// _rankingScore member (OriginatorHit.RankingScore).
	ShowRankingScore bool
}

// hostSearchBody is a HostSearchRequest as the host takes it.
type hostSearchBody struct {
	Q                     string   `json:"q"`
	Limit                 int      `json:"limit,omitempty"`
	Offset                int      `json:"offset,omitempty"`
	Page                  int      `json:"page,omitempty"`
	HitsPerPage           int      `json:"hitsPerPage,omitempty"`
	Filter                string   `json:"filter,omitempty"`
	Sort                  []string `json:"sort,omitempty"`
	Facets                []string `json:"facets,omitempty"`
	AttributesToSearchOn  []string `json:"attributesToSearchOn,omitempty"`
	AttributesToRetrieve  []string `json:"attributesToRetrieve,omitempty"`
	AttributesToHighlight []string `json:"attributesToHighlight,omitempty"`
	ShowRankingScore      bool     `json:"showRankingScore,omitempty"`
}

func (r *HostSearchRequest) prepared(index SearchIndex) (*hostSearchBody, error) {
	if index == "" || strings.ContainsAny(string(index), "/?#% ") {
		return nil, invalidArg("index", "%q is not an index name; use IndexOriginators, IndexCompanies, IndexAgents or IndexOffices", index)
	}
	if r == nil {
		r = &HostSearchRequest{}
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"Limit", r.Limit}, {"Offset", r.Offset}, {"Page", r.Page}, {"HitsPerPage", r.HitsPerPage}} {
		if n.v < 0 {
			return nil, invalidArg(n.name, "%d is negative; use 0 for the host's default", n.v)
		}
	}
	if (r.Page > 0 || r.HitsPerPage > 0) && (r.Limit > 0 || r.Offset > 0) {
		return nil, invalidArg("Page", "Page/HitsPerPage and Limit/Offset are two pagination modes; set one pair (the host ignores Limit and Offset when Page or HitsPerPage is set)")
	}
	for _, s := range r.Sort {
		attr, ok := strings.CutSuffix(s, ":asc")
		if !ok {
			attr, ok = strings.CutSuffix(s, ":desc")
		}
		if !ok || attr == "" {
			return nil, invalidArg("Sort", "%q must be an attribute followed by :asc or :desc, e.g. \"lastName:asc\"", s)
		}
	}
	for _, lists := range []struct {
		name string
		v    []string
	}{{"Facets", r.Facets}, {"AttributesToSearchOn", r.AttributesToSearchOn},
		{"AttributesToRetrieve", r.AttributesToRetrieve}, {"AttributesToHighlight", r.AttributesToHighlight}} {
		if slices.Contains(lists.v, "") {
			return nil, invalidArg(lists.name, "holds an empty attribute name")
		}
	}
	return &hostSearchBody{
		Q:                     r.Q,
		Limit:                 r.Limit,
		Offset:                r.Offset,
		Page:                  r.Page,
		HitsPerPage:           r.HitsPerPage,
		Filter:                r.Filter,
		Sort:                  r.Sort,
		Facets:                r.Facets,
		AttributesToSearchOn:  r.AttributesToSearchOn,
		AttributesToRetrieve:  r.AttributesToRetrieve,
		AttributesToHighlight: r.AttributesToHighlight,
		ShowRankingScore:      r.ShowRankingScore,
	}, nil
}

// HostSearchResult is the search host's answer to one query.
type HostSearchResult struct {
	// Hits are the matching documents as sent, one JSON object each;
	// decode them with DecodeHits (or OriginatorHits for the originators
	// index).
	Hits []json.RawMessage `json:"hits"`
	// Query is the query text the host answered.
	Query string `json:"query"`
	// Limit and Offset are the page the host answered (offset pagination).
	Limit  int `json:"limit"`
	Offset int `json:"offset"`
	// EstimatedTotalHits is the host's estimate of all matches (offset
	// pagination).
	EstimatedTotalHits int64 `json:"estimatedTotalHits"`
	// Page and HitsPerPage are the page the host answered (page
	// pagination: HostSearchRequest.Page or HitsPerPage set).
	Page        int `json:"page"`
	HitsPerPage int `json:"hitsPerPage"`
	// TotalHits and TotalPages are the exact number of matches and of pages
	// (page pagination).
	TotalHits  int64 `json:"totalHits"`
	TotalPages int64 `json:"totalPages"`
	// FacetDistribution maps each requested facet to the number of matching
	// documents per value (HostSearchRequest.Facets).
	FacetDistribution map[string]map[string]int64 `json:"facetDistribution"`
	// FacetStats holds the lowest and highest value of each requested facet
	// with numeric values.
	FacetStats map[string]FacetStats `json:"facetStats"`
	// ProcessingTimeMs is the host's time spent on the query.
	ProcessingTimeMs int64 `json:"processingTimeMs"`
	// Extra holds members the SDK has no field for.
	Extra Fields `json:",unknown"`
}

// FacetStats is the range of a numeric facet's values among the matches.
type FacetStats struct {
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

// OriginatorHit is a hit of the originators index.
type OriginatorHit struct {
	ID        string   `json:"id"`
	FirstName string   `json:"firstName"`
	LastName  string   `json:"lastName"`
	States    []string `json:"states"`
	Cities    []string `json:"cities"`
	// RankingScore is the hit's relevancy from 0 to 1, sent when the query
	// set ShowRankingScore (0 otherwise).
	RankingScore float64 `json:"_rankingScore,omitempty"`
	// Extra holds every other member (_formatted among them, when asked for).
	Extra Fields `json:",unknown"`
}

// DecodeHits decodes every hit of r into a T. A hit's ranking score, when
// asked for, is its _rankingScore member:
//
//	type hit struct {
//		ID    string  `json:"id"`
//		Name  string  `json:"name"`
//		Score float64 `json:"_rankingScore"`
//	}
//	hits, err := lendgraph.DecodeHits[hit](res)
func DecodeHits[T any](r *HostSearchResult) ([]T, error) {
	out := make([]T, len(r.Hits))
	for i, h := range r.Hits {
		if err := unmarshal(h, &out[i]); err != nil {
			return nil, fmt.Errorf("lendgraph: search hit %d: %w", i, err)
		}
	}
	return out, nil
}

// OriginatorHits decodes the hits of an originators query.
func (r *HostSearchResult) OriginatorHits() ([]OriginatorHit, error) {
	return DecodeHits[OriginatorHit](r)
}

// Search runs one query on one index of the search host.
func (h *SearchHost) Search(ctx context.Context, index SearchIndex, req *HostSearchRequest) (_ *HostSearchResult, err error) {
	body, err := req.prepared(index)
	if err != nil {
		return nil, err
	}
	ctx, op := h.client.startOp(ctx, "SearchHost.Search")
	defer func() { op.end(err) }()
	tok, err := h.tokens.Token(ctx)
	if err != nil {
		return nil, err
	}
	res, err := h.query(ctx, tok, index, body)
	var he *SearchHostError
	if errors.As(err, &he) && (he.StatusCode == http.StatusUnauthorized || he.StatusCode == http.StatusForbidden) {
		// Expired or revoked: mint a new token (unless another query
		// already did) and try once more.
		old := tok
		if tok, err = h.tokens.renew(ctx, tok); err != nil {
			return nil, err
		}
		res, err = h.query(ctx, tok, index, body)
		if errors.As(err, &he) {
			he.redact(old.Token)
		}
	}
	return res, err
}

func (h *SearchHost) query(ctx context.Context, tok *SearchToken, index SearchIndex, body *hostSearchBody) (*HostSearchResult, error) {
	if !slices.Contains(tok.Indexes, index) {
		return nil, invalidArg("index", "%q is not among the search token's indexes %v", index, tok.Indexes)
	}
	base, err := url.Parse(strings.TrimRight(tok.Host, "/"))
	if err != nil {
		return nil, fmt.Errorf("lendgraph: search host %q: %w", tok.Host, err)
	}
	var res HostSearchResult
	_, err = h.client.send(ctx, request{
		op:     "SearchHost.Search",
		method: http.MethodPost, path: searchPath(index), body: body, kind: retry.Idempotent,
		host: &otherHost{base: base, bearer: tok.Token, parseError: func(status int, hdr http.Header, b []byte, truncated bool) error {
			return newSearchHostError(index, status, hdr, b, truncated)
		}},
	}, &res)
	if err != nil {
		return nil, err
	}
	res.Hits = nonNil(res.Hits)
	return &res, nil
}

func searchPath(index SearchIndex) string { return "/indexes/" + string(index) + "/search" }

// newSearchHostError reads the host's error body.
func newSearchHostError(index SearchIndex, status int, h http.Header, body []byte, truncated bool) error {
	e := &SearchHostError{Index: index, APIError: &APIError{StatusCode: status, Method: http.MethodPost,
		Path: searchPath(index), RequestID: h.Get("X-Request-Id"), Body: body, Truncated: truncated}}
	var eb struct{ Message, Code, Type, Link string }
	if json.Unmarshal(body, &eb) == nil {
		e.Message, e.Code, e.Type, e.Link = eb.Message, eb.Code, eb.Type, eb.Link
	}
	return e
}

// redact replaces secret in the error's texts and body.
func (e *SearchHostError) redact(secret string) {
	if e.APIError == nil || secret == "" {
		return
	}
	e.Message = strings.ReplaceAll(e.Message, secret, "[redacted]")
	e.Body = []byte(strings.ReplaceAll(string(e.Body), secret, "[redacted]"))
}

// Is matches the sentinel of the status, as *APIError does.
func (e *SearchHostError) Is(target error) bool {
	return e.APIError != nil && e.APIError.Is(target)
}
