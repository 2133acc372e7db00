package lendgraph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/meilisearch/meilisearch-go"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// SearchHostAPI is the search host as a test harness stubs it.
type SearchHostAPI interface {
	Search(ctx context.Context, index SearchIndex, req *HostSearchRequest) (*HostSearchResult, error)
}

var _ SearchHostAPI = (*SearchHost)(nil)

// SearchHost queries the search host directly, through meilisearch-go, with
// search tokens from the client's SearchTokenSource. It sends the host named
// by the current token (following it when a new token names another host)
// "Authorization: Bearer <search token>" and never the API key. A query the
// host refuses with 401 or 403 is retried once with a newly minted token;
// transient failures (5xx, 429, dropped connections) are retried like any
// read. It is safe for concurrent use; tokens rotate while queries are in
// flight, each query keeping the token it started with.
type SearchHost struct {
	tokens *SearchTokenSource
	hc     *http.Client // bearer transport over the SDK's credential-free retrying client

	mu   sync.Mutex
	addr string
	ms   meilisearch.ServiceManager
}

func newSearchHost(c *Client, tokens *SearchTokenSource) *SearchHost {
	return &SearchHost{
		tokens: tokens,
		hc:     &http.Client{Transport: &bearerTransport{next: &retryablehttp.RoundTripper{Client: c.plain}}},
	}
}

// meili returns the meilisearch-go client for addr, building a new one when
// the token names another host than the last.
func (h *SearchHost) meili(addr string) meilisearch.ServiceManager {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ms == nil || h.addr != addr {
		// No key at construction: the transport adds the query's token.
		// meilisearch-go's own retry re-sends an empty body; ours is
		// underneath, in the transport.
		h.ms = meilisearch.New(strings.TrimRight(addr, "/"), meilisearch.WithCustomClient(h.hc), meilisearch.DisableRetries())
		h.addr = addr
	}
	return h.ms
}

type searchTokenKey struct{}

// bearerTransport sends the query's search token, carried in the request's
// context, on a clone of each request.
type bearerTransport struct{ next http.RoundTripper }

func (t *bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, _ := req.Context().Value(searchTokenKey{}).(*SearchToken)
	if tok == nil {
		return nil, errors.New("lendgraph: search host request without a search token")
	}
	r := req.Clone(req.Context())
	r.Header.Del("x-api-key")
	r.Header.Set("Authorization", "Bearer "+tok.Token)
	resp, err := t.next.RoundTrip(r)
	if err == nil {
		// meilisearch-go reads whole bodies into memory: cap them.
		resp.Body = capBody(resp.Body, resp.StatusCode)
	}
	return resp, err
}

// capBody bounds a response body read whole: an error body is cut at
// maxErrorBody (its start says enough), a success body longer than
// maxResponseBody fails instead of filling the memory.
func capBody(body io.ReadCloser, status int) io.ReadCloser {
	if status >= 300 {
		return cappedBody{&capReader{r: body, left: maxErrorBody}, body}
	}
	return cappedBody{&capReader{r: body, left: maxResponseBody,
		tooLarge: fmt.Errorf("response body larger than %d bytes", maxResponseBody)}, body}
}

// cappedBody reads through a capReader and closes the body under it.
type cappedBody struct {
	io.Reader
	io.Closer
}

// HostSearchRequest is one query on one index of the search host.
type HostSearchRequest struct {
	// Q is the query text; empty matches every document.
	Q string
	// Limit is the maximum number of hits (0: the host's default, 20).
	Limit int
	// Offset skips that many hits.
	Offset int
	// Filter restricts the hits, in the host's filter syntax, e.g.
	// `states = "TX" AND cities = "Austin"`.
	Filter string
	// AttributesToSearchOn limits matching to these attributes.
	AttributesToSearchOn []string
	// AttributesToRetrieve limits the members of each hit (default: all).
	AttributesToRetrieve []string
	// AttributesToHighlight adds a _formatted member with the matches marked.
	AttributesToHighlight []string
}

func (r *HostSearchRequest) prepared(index SearchIndex) (*meilisearch.SearchRequest, error) {
	if index == "" || strings.ContainsAny(string(index), "/?#% ") {
		return nil, invalidArg("index", "%q is not an index name; use IndexOriginators, IndexCompanies, IndexAgents or IndexOffices", index)
	}
	if r == nil {
		r = &HostSearchRequest{}
	}
	if r.Limit < 0 {
		return nil, invalidArg("Limit", "%d is negative; use 0 for the host's default", r.Limit)
	}
	if r.Offset < 0 {
		return nil, invalidArg("Offset", "%d is negative", r.Offset)
	}
	sr := &meilisearch.SearchRequest{
		Query:                 r.Q,
		Limit:                 int64(r.Limit),
		Offset:                int64(r.Offset),
		AttributesToSearchOn:  r.AttributesToSearchOn,
		AttributesToRetrieve:  r.AttributesToRetrieve,
		AttributesToHighlight: r.AttributesToHighlight,
	}
	if r.Filter != "" {
		sr.Filter = r.Filter
	}
	return sr, nil
}

// HostSearchResult is the search host's answer to one query.
type HostSearchResult struct {
	// Hits are the matching documents as sent; decode them with DecodeHits
	// (or OriginatorHits for the originators index).
	Hits []json.RawMessage `json:"hits"`
	// Query is the query text the host answered.
	Query string `json:"query"`
	// Limit and Offset are the page the host answered.
	Limit  int `json:"limit"`
	Offset int `json:"offset"`
	// EstimatedTotalHits is the host's estimate of all matches.
	EstimatedTotalHits int64 `json:"estimatedTotalHits"`
	// ProcessingTimeMs is the host's time spent on the query.
	ProcessingTimeMs int64 `json:"processingTimeMs"`
	// Extra holds members the SDK has no field for.
	Extra Fields `json:",unknown"`
}

// OriginatorHit is a hit of the originators index.
type OriginatorHit struct {
	ID        string   `json:"id"`
	FirstName string   `json:"firstName"`
	LastName  string   `json:"lastName"`
	States    []string `json:"states"`
	Cities    []string `json:"cities"`
	// Extra holds every other member (_formatted among them, when asked for).
	Extra Fields `json:",unknown"`
}

// DecodeHits decodes every hit of r into a T.
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
func (h *SearchHost) Search(ctx context.Context, index SearchIndex, req *HostSearchRequest) (*HostSearchResult, error) {
	if _, err := req.prepared(index); err != nil {
		return nil, err
	}
	tok, err := h.tokens.Token(ctx)
	if err != nil {
		return nil, err
	}
	res, err := h.query(ctx, tok, index, req)
	var he *SearchHostError
	if errors.As(err, &he) && (he.StatusCode == http.StatusUnauthorized || he.StatusCode == http.StatusForbidden) {
		// Expired or revoked: mint a new token (unless another query
		// already did) and try once more.
		old := tok
		if tok, err = h.tokens.renew(ctx, tok); err != nil {
			return nil, err
		}
		res, err = h.query(ctx, tok, index, req)
		if errors.As(err, &he) {
			he.Message = strings.ReplaceAll(he.Message, old.Token, "[redacted]")
		}
	}
	return res, err
}

func (h *SearchHost) query(ctx context.Context, tok *SearchToken, index SearchIndex, req *HostSearchRequest) (*HostSearchResult, error) {
	if !slices.Contains(tok.Indexes, index) {
		return nil, invalidArg("index", "%q is not among the search token's indexes %v", index, tok.Indexes)
	}
	sr, _ := req.prepared(index) // a new request each time: meilisearch-go edits it
	qctx := context.WithValue(retry.WithKind(ctx, retry.Idempotent), searchTokenKey{}, tok)
	raw, err := h.meili(tok.Host).Index(string(index)).SearchRawWithContext(qctx, sr.Query, sr)
	if err != nil {
		err = hostError(ctx, index, err)
		var he *SearchHostError
		if errors.As(err, &he) {
			// A host echoing the token back must not put it in an error text.
			he.Message = strings.ReplaceAll(he.Message, tok.Token, "[redacted]")
		}
		// meilisearch-go quotes whole response bodies in its errors.
		return nil, redactError(err, tok.Token)
	}
	var res HostSearchResult
	if err := unmarshal(*raw, &res); err != nil {
		return nil, &DecodeError{Method: http.MethodPost, Path: searchPath(index), StatusCode: http.StatusOK, Err: err}
	}
	res.Hits = nonNil(res.Hits)
	return &res, nil
}

func searchPath(index SearchIndex) string { return "/indexes/" + string(index) + "/search" }

// hostError turns a meilisearch-go error into the SDK's.
func hostError(ctx context.Context, index SearchIndex, err error) error {
	path := searchPath(index)
	if ctx.Err() != nil {
		return fmt.Errorf("lendgraph: search host POST %s: %w", path, ctx.Err())
	}
	var me *meilisearch.Error
	if !errors.As(err, &me) {
		return &TransportError{Method: http.MethodPost, Path: path, Err: redactError(err)}
	}
	if me.StatusCode >= 200 && me.StatusCode < 300 {
		// The host answered 2xx with a body that is not a search result
		// (an HTML page from a proxy, a cut or oversized body).
		return &DecodeError{Method: http.MethodPost, Path: path, StatusCode: me.StatusCode, Err: me}
	}
	if me.StatusCode == 0 {
		inner := me.OriginError
		if inner == nil {
			inner = err
		}
		return &TransportError{Method: http.MethodPost, Path: path, Err: redactError(inner)}
	}
	api := me.MeilisearchApiError
	return &SearchHostError{StatusCode: me.StatusCode, Index: index, Message: api.Message,
		Code: api.Code, Type: api.Type, Link: api.Link, Err: me}
}

// SearchHostError is a non-2xx answer of the search host, with the fields of
// its error body. It matches the sentinel of its status with errors.Is
// (ErrUnauthorized for 401, ErrForbidden for 403, ErrUnavailable for 503,
// ...), and unwraps to the *meilisearch.Error underneath.
type SearchHostError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Index is the index queried.
	Index SearchIndex
	// Message, Code, Type and Link are the members of the host's error body.
	Message, Code, Type, Link string
	// Err is meilisearch-go's error.
	Err error
}

// Error implements the error interface.
func (e *SearchHostError) Error() string {
	s := fmt.Sprintf("lendgraph: search host POST %s: %d %s", searchPath(e.Index), e.StatusCode, http.StatusText(e.StatusCode))
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Code != "" {
		s += " (code " + e.Code + ")"
	}
	return s
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *SearchHostError) Unwrap() error { return e.Err }

// Is matches the sentinel of the status, as *APIError does.
func (e *SearchHostError) Is(target error) bool {
	return (&APIError{StatusCode: e.StatusCode}).Is(target)
}
