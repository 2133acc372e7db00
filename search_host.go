package lendgraph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// SearchHostAPI is the search host as a test harness stubs it.
type SearchHostAPI interface {
	Search(ctx context.Context, index SearchIndex, req *HostSearchRequest, opts ...Option) (*HostSearchResult, error)
}

var _ SearchHostAPI = (*SearchHost)(nil)

// SearchHost queries the search host (a Meilisearch-compatible server)
// directly, with search tokens from the client's SearchTokenSource. Every
// request goes to the host named by the current token (following it when a
// new token names another host), through the client's credential-free
// pipeline with "Authorization: Bearer <search token>" and never the API
// key. A request the host refuses with 401 or 403 is retried once with a
// newly minted token (see SearchTokenSource for when a storm of refusals
// gets no new token), except a 403 saying the token is not scoped to the
// index, which no new token changes: that comes back as the host's
// *SearchHostError, nothing sent again; transient failures (5xx, 429, dropped connections, a
// body cut short) are retried like any read. The token is redacted from
// errors, and the host's address obeys the SDK's link rules
// (ErrUnsafeLink). It is safe for concurrent use; tokens rotate while
// queries are in flight, each query keeping the token it started with.
//
// Search is one typed query on one index. For the rest of the host's API
// (multi-search, facet search, every search parameter, typed), package
// github.com/lendgraph/lendgraph-go/searchhost gives the official
// Meilisearch Go client over Transport.
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
func (h *SearchHost) Search(ctx context.Context, index SearchIndex, req *HostSearchRequest, opts ...Option) (_ *HostSearchResult, err error) {
	body, err := req.prepared(index)
	if err != nil {
		return nil, err
	}
	ctx, o, err := h.client.begin(ctx, "SearchHost.Search", opts)
	if err != nil {
		return nil, err
	}
	defer func() { o.end(err) }()
	var res HostSearchResult
	if _, err := h.do(ctx, o, hostCall{method: http.MethodPost, path: searchPath(index), body: body, index: index}, &res); err != nil {
		return nil, err
	}
	res.Hits = nonNil(res.Hits)
	return &res, nil
}

// hostCall is one request to the search host.
type hostCall struct {
	method string
	path   string // escaped, relative to the token's host
	query  url.Values
	body   any           // encoded as JSON when non-nil
	index  SearchIndex   // the index the path names, "" for none: it must be among the token's
	multi  []SearchIndex // the indexUid of each query of a /multi-search body: each must be among the token's
	header *http.Header
}

// do is the one way to the search host: it sends hc with the current
// token, mints a new one and tries once more when the host refuses the
// token (401, 403), and decodes the 2xx JSON answer into out. It returns
// the answer's status.
func (h *SearchHost) do(ctx context.Context, o *operation, hc hostCall, out any) (int, error) {
	tok, err := h.tokens.token(ctx, o.cfg)
	if err != nil {
		return 0, err
	}
	status, err := h.send(ctx, o, tok, hc, out)
	var he *SearchHostError
	if !errors.As(err, &he) || he.StatusCode != http.StatusUnauthorized && he.StatusCode != http.StatusForbidden || he.notScoped() {
		if err == nil {
			h.tokens.accept(tok) // the host answered with it: a later refusal means revoked
		}
		redactRaw(out, tok.Token)
		return status, err
	}
	// Expired or revoked: mint a new token (unless another query already
	// did) and try once more.
	old := tok
	if tok, err = h.tokens.renew(ctx, old, o.cfg, false); err != nil {
		return 0, err
	}
	if tok == old {
		return 0, he // a storm: two mints in the last second already, no new token to try
	}
	status, err = h.send(ctx, o, tok, hc, out)
	if errors.As(err, &he) {
		he.redact(old.Token)
	}
	if err == nil {
		h.tokens.accept(tok)
	}
	redactRaw(out, tok.Token, old.Token)
	return status, err
}

// redactRaw removes the tokens from an answer kept as sent (Transport's):
// a host echoing a token must not put it where a library quotes the body
// in its errors.
func redactRaw(out any, tokens ...string) {
	if raw, ok := out.(*json.RawMessage); ok {
		for _, t := range tokens {
			if len(t) >= minSecret && bytes.Contains(*raw, []byte(t)) {
				*raw = []byte(redact(string(*raw), tokens...))
				return
			}
		}
	}
}

// send sends hc once with tok, through the client's pipeline.
func (h *SearchHost) send(ctx context.Context, o *operation, tok *SearchToken, hc hostCall, out any) (int, error) {
	if hc.index != "" && !slices.Contains(tok.Indexes, hc.index) {
		return 0, invalidArg("index", "%q is not among the search token's indexes %v", hc.index, tok.Indexes)
	}
	for i, ix := range hc.multi {
		if ix != "" && !slices.Contains(tok.Indexes, ix) {
			return 0, invalidArg("indexUid", "queries[%d] names index %q, which is not among the search token's indexes %v", i, ix, tok.Indexes)
		}
	}
	base, err := url.Parse(strings.TrimRight(tok.Host, "/"))
	if err != nil {
		return 0, fmt.Errorf("lendgraph: search host %q: %w", tok.Host, err)
	}
	var q any
	if len(hc.query) > 0 {
		q = hc.query
	}
	return o.send(ctx, request{
		method: hc.method, path: hc.path, query: q, body: hc.body, kind: retry.Idempotent, respHeader: hc.header,
		host: base, bearer: tok.Token, parseError: func(status int, hdr http.Header, b []byte, truncated bool) error {
			return newSearchHostError(hc.method, hc.path, hc.index, status, hdr, b, truncated)
		},
	}, out)
}

func searchPath(index SearchIndex) string { return "/indexes/" + string(index) + "/search" }

// Transport returns an http.RoundTripper that sends each request to the
// search host as Search does: to the host the current token names (the
// request's path and query are kept, resolved against the token's host;
// its scheme and host are ignored), with the token as
// "Authorization: Bearer" (whatever credentials the request carried are
// dropped), once more with a new token after a 401 or 403, transient
// failures retried, answers read whole within the SDK's size caps and the
// token redacted from them. A request on /indexes/{index}/... for an index
// outside the token's scope fails before it is sent, and so does a
// /multi-search whose queries name one (an *InvalidArgumentError either
// way). Every request is
// treated as a read: a search token cannot write. Errors other than the
// host's answers (a transport failure, ErrUnsafeLink, a context ending)
// are returned by RoundTrip as the SDK's errors.
//
// Hand it to a Meilisearch client library; package
// github.com/lendgraph/lendgraph-go/searchhost does so for the official Go
// client.
func (h *SearchHost) Transport() http.RoundTripper { return hostTransport{h} }

// hostTransport is SearchHost.Transport.
type hostTransport struct{ h *SearchHost }

// RoundTrip implements http.RoundTripper.
func (t hostTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body any
	if req.Body != nil {
		b, err := readCappedRequest(req.Body)
		if err != nil {
			return nil, err
		}
		if len(b) > 0 {
			body = json.RawMessage(b)
		}
	}
	query, err := url.ParseQuery(req.URL.RawQuery)
	if err != nil {
		return nil, invalidArg("request URL", "its query string does not parse: %v", err)
	}
	path := req.URL.EscapedPath()
	var index SearchIndex
	if rest, ok := strings.CutPrefix(path, "/indexes/"); ok {
		uid, _, _ := strings.Cut(rest, "/")
		if u, err := url.PathUnescape(uid); err == nil && u != "" {
			index = SearchIndex(u)
		}
	}
	var multi []SearchIndex
	if b, ok := body.(json.RawMessage); ok && path == "/multi-search" {
		multi = multiSearchIndexes(b)
	}
	var raw json.RawMessage
	var hdr http.Header
	ctx, o, err := t.h.client.begin(req.Context(), "SearchHost.Transport", nil)
	if err != nil {
		return nil, err
	}
	status, err := t.h.do(ctx, o, hostCall{method: req.Method, path: path, query: query, body: body, index: index, multi: multi, header: &hdr}, &raw)
	o.end(err)
	var he *SearchHostError
	switch {
	case errors.As(err, &he) && he.APIError != nil:
		// The host's answer, as the library expects to read it (its body
		// capped and redacted already).
		status, raw = he.StatusCode, he.Body
		hdr = http.Header{"Content-Type": {"application/json"}}
	case err != nil:
		return nil, err
	}
	hdr.Del("Content-Length")
	return &http.Response{
		Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), StatusCode: status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: hdr, Body: io.NopCloser(bytes.NewReader(raw)), ContentLength: int64(len(raw)), Request: req,
	}, nil
}

// readCappedRequest reads and closes a request body, refusing one larger
// than a response the SDK would read.
func readCappedRequest(body io.ReadCloser) ([]byte, error) {
	defer body.Close()
	b, truncated := readCapped(body, maxResponseBody)
	if truncated {
		return nil, invalidArg("request body", "is larger than %d bytes", maxResponseBody)
	}
	return b, nil
}

// newSearchHostError reads the host's error body.
func newSearchHostError(method, path string, index SearchIndex, status int, h http.Header, body []byte, truncated bool) error {
	e := &SearchHostError{Index: index, APIError: &APIError{StatusCode: status, Method: method,
		Path: path, RequestID: h.Get("X-Request-Id"), Body: body, Truncated: truncated}}
	var eb struct {
		Message string `json:"message"`
		Code    string `json:"code"`
		Type    string `json:"type"`
		Link    string `json:"link"`
	}
	if unmarshal(body, &eb) == nil {
		e.Message, e.Code, e.Type, e.Link = eb.Message, eb.Code, eb.Type, eb.Link
	}
	return e
}

// NewSearchHostError returns the error the SDK returns for a non-2xx
// answer of the search host with this status and body (Meilisearch's
// {message, code, type, link}), for a request with method and path on
// index ("" for a route that names none): a *SearchHostError matching the
// sentinel of its status (ErrForbidden for 403...). header may be nil. It
// is for test doubles that stand in for SearchHostAPI.
func NewSearchHostError(method, path string, index SearchIndex, status int, header http.Header, body []byte) error {
	if header == nil {
		header = http.Header{}
	}
	b, truncated := body, false
	if len(b) > maxErrorBody {
		b, truncated = b[:maxErrorBody], true
	}
	return newSearchHostError(method, path, index, status, header, b, truncated)
}

// redact replaces secret in the error's texts and body.
func (e *SearchHostError) redact(secret string) {
	if e.APIError == nil || secret == "" {
		return
	}
	e.Message = strings.ReplaceAll(e.Message, secret, "[redacted]")
	e.Body = []byte(strings.ReplaceAll(string(e.Body), secret, "[redacted]"))
}

// notScoped reports whether the host refused the token for naming an index
// outside its scope: a refusal of the request, not of the token, which a
// new token (scoped alike) would not change. The host sends the same code
// (invalid_api_key) for that as for an expired token, so its message tells
// the two apart.
func (e *SearchHostError) notScoped() bool {
	return e.APIError != nil && e.StatusCode == http.StatusForbidden && e.Code == "invalid_api_key" &&
		strings.Contains(e.Message, "not scoped to index")
}

// multiSearchIndexes returns the indexUid of each query of a /multi-search
// body, or nil when the body does not parse as one (the host then says
// what is wrong with it).
func multiSearchIndexes(body json.RawMessage) []SearchIndex {
	var ms struct {
		Queries []struct {
			IndexUID SearchIndex `json:"indexUid"`
		} `json:"queries"`
	}
	if unmarshal(body, &ms) != nil {
		return nil
	}
	out := make([]SearchIndex, len(ms.Queries))
	for i, q := range ms.Queries {
		out[i] = q.IndexUID
	}
	return out
}

// Is matches the sentinel of the status, as *APIError does.
func (e *SearchHostError) Is(target error) bool {
	return e.APIError != nil && e.APIError.Is(target)
}
