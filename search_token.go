package lendgraph

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// SearchToken is a search credential from GET /v1/search-token: read-only,
// scoped to Indexes, valid until ExpiresAt, for the search host only. It is
// safe to hand to a browser, but it is still a credential: String, GoString,
// every fmt verb and slog print it without Token.
type SearchToken struct {
	// Token is sent as "Authorization: Bearer <Token>" to Host.
	Token string `json:"token"`
	// Host is the search host's address.
	Host string `json:"host"`
	// Indexes are the indexes the token may query.
	Indexes []SearchIndex `json:"indexes"`
	// ExpiresAt is when the host stops accepting the token.
	ExpiresAt time.Time `json:"expiresAt"`
	// Extra holds members the SDK has no field for.
	Extra Fields `json:",unknown"`

	refreshAt time.Time // when the source replaces it; set by the source
	served    time.Time // the server's clock when it minted the token (its Date header); zero when absent
}

// SearchIndex names an index on the search host. Unknown values sent by the
// server are kept as sent.
type SearchIndex string

// The indexes of the search host.
const (
	IndexAgents      SearchIndex = "agents"
	IndexOriginators SearchIndex = "originators"
	IndexCompanies   SearchIndex = "companies"
	IndexOffices     SearchIndex = "offices"
)

// String describes the token without the token itself.
func (t SearchToken) String() string {
	return fmt.Sprintf("lendgraph.SearchToken{Token: [redacted], Host: %s, Indexes: %v, ExpiresAt: %s}",
		t.Host, t.Indexes, t.ExpiresAt.Format(time.RFC3339))
}

// GoString is String: %#v must not print the token either.
func (t SearchToken) GoString() string { return t.String() }

// Format makes every verb (%v, %+v, %#v, %s, %q) print String.
func (t SearchToken) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, t.String()) }

// LogValue keeps the token out of slog output.
func (t SearchToken) LogValue() slog.Value {
	return slog.GroupValue(slog.String("token", "[redacted]"), slog.String("host", t.Host),
		slog.Any("indexes", t.Indexes), slog.Time("expiresAt", t.ExpiresAt))
}

// Token mints a new search token (GET /v1/search-token). Most callers want
// TokenSource, which caches it until half of its lifetime has passed.
func (s *SearchService) Token(ctx context.Context, opts ...Option) (*SearchToken, error) {
	if err := s.client.ready(ctx); err != nil {
		return nil, err
	}
	cfg, err := forCall(&s.client.defaults, "Search.Token", opts)
	if err != nil {
		return nil, err
	}
	return s.token(ctx, cfg)
}

// token mints a search token as an operation Search.Token with settings
// cfg (nil: the client's defaults): those of the call the mint is made
// for, when a query of the search host needs a new token.
func (s *SearchService) token(ctx context.Context, cfg *callConfig) (_ *SearchToken, err error) {
	if cfg == nil {
		cfg = &s.client.defaults
	}
	ctx, o := s.client.open(ctx, "Search.Token", cfg)
	defer func() { o.end(err) }()
	var h http.Header
	t, err := sendFor[SearchToken](ctx, o, request{method: http.MethodGet, path: "/v1/search-token", kind: retry.Idempotent, respHeader: &h})
	if err != nil {
		return nil, err
	}
	if d, err := http.ParseTime(h.Get("Date")); err == nil {
		t.served = d
	}
	if t.Token == "" {
		return nil, errors.New("lendgraph: GET /v1/search-token: the response has no token")
	}
	if err := s.client.checkLinkString("search host address", t.Host); err != nil {
		return nil, err
	}
	if t.ExpiresAt.IsZero() {
		return nil, errors.New("lendgraph: GET /v1/search-token: the response has no expiresAt")
	}
	return t, nil
}

// SearchTokenProvider hands out a valid search token; *SearchTokenSource is one.
type SearchTokenProvider interface {
	Token(ctx context.Context) (*SearchToken, error)
}

var _ SearchTokenProvider = (*SearchTokenSource)(nil)

// SearchTokenSource caches a search token and mints the next one once half
// of the cached token's lifetime has passed, so that a token it hands out
// (to a query, or to a browser through TokenHandler) always has at least
// half of its lifetime left. The lifetime is measured from when the token
// was received: expiresAt against the local clock, or against the Date of
// the response that carried the token when the two clocks disagree by more
// than two seconds, so a machine whose clock is minutes off neither mints
// on every call nor keeps a token past its end. A token that arrives
// expired or nearly so (a skewed clock, a broken minter) would call for a
// mint on every call: the source then keeps handing out the newest token,
// minting at most twice a second. A token the search host refuses (401,
// 403) is replaced at once, however recent the last mints, when the host
// had accepted it before (revoked); a token refused without ever being
// accepted (a host refusing every token, a token arriving expired) gets a
// new one only within the same limit, two mints starting in any second,
// and SearchHost then returns the host's refusal. However many goroutines ask at once, one
// mint runs; the others wait for it, each until its own context ends. A
// failed mint is not cached: the next call tries again. Get one from
// SearchService.TokenSource.
type SearchTokenSource struct {
	mint func(context.Context, *callConfig) (*SearchToken, error)
	now  func() time.Time

	cur      atomic.Pointer[SearchToken]
	accepted atomic.Pointer[SearchToken] // the last token the search host answered a request with (2xx)
	mu       sync.Mutex
	inflight *mintCall
	minted   [2]time.Time // when the last two successful mints started (ts.now), the older first; guarded by mu
}

type mintCall struct {
	done      chan struct{}
	tok       *SearchToken
	err       error
	cancelled bool // the minting caller's context ended: others try again
}

// Token returns the cached token, or mints one when there is none or half
// of the cached one's lifetime has passed (unless two mints started within
// the last second: then the cached token is returned).
func (ts *SearchTokenSource) Token(ctx context.Context) (*SearchToken, error) {
	return ts.token(ctx, nil)
}

// token is Token for a call with settings cfg (nil: the client's
// defaults), which a mint it makes takes.
func (ts *SearchTokenSource) token(ctx context.Context, cfg *callConfig) (*SearchToken, error) {
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	if t := ts.cur.Load(); t != nil && ts.now().Before(t.refreshAt) {
		return t, nil
	}
	return ts.renew(ctx, nil, cfg)
}

// renew returns a token that is fresh and is not stale (a token the search
// host refused), minting one unless another goroutine already did. When two
// mints started within the last second, it returns the cached token, stale
// or not, instead of minting a third (the caller compares it with stale to
// know that no new token came), unless stale is a token the host had
// accepted: a revoked token always gets its new one.
// cfg, when not nil, are the settings of the call the token is for.
func (ts *SearchTokenSource) renew(ctx context.Context, stale *SearchToken, cfg *callConfig) (*SearchToken, error) {
	for {
		ts.mu.Lock()
		now := ts.now()
		t := ts.cur.Load()
		if t != nil && t != stale && now.Before(t.refreshAt) {
			ts.mu.Unlock()
			return t, nil
		}
		call := ts.inflight
		if call == nil {
			if t != nil && now.Sub(ts.minted[0]) < mintWindow && (stale == nil || ts.accepted.Load() != stale) {
				ts.mu.Unlock()
				return t, nil // the mint-storm guard
			}
			call = &mintCall{done: make(chan struct{})}
			ts.inflight = call
			ts.mu.Unlock()
			ts.run(ctx, call, now, cfg)
			return call.tok, call.err
		}
		ts.mu.Unlock()
		select {
		case <-call.done:
		case <-ctx.Done():
			return nil, fmt.Errorf("lendgraph: waiting for a search token: %w", ctxErr(ctx))
		}
		if !call.cancelled || ctx.Err() != nil {
			return call.tok, call.err
		}
		// The caller that was minting gave up; mint again for this one.
	}
}

// accept records that the search host answered a request made with t
// other than by refusing the token.
func (ts *SearchTokenSource) accept(t *SearchToken) {
	if ts.accepted.Load() != t {
		ts.accepted.Store(t)
	}
}

// run mints on the calling goroutine and publishes the result; started is
// when the mint began.
func (ts *SearchTokenSource) run(ctx context.Context, call *mintCall, started time.Time, cfg *callConfig) {
	tok, err := ts.mint(ctx, cfg)
	if err == nil {
		tok.refreshAt = refreshTime(ts.now(), tok.served, tok.ExpiresAt)
	}
	ts.mu.Lock()
	call.tok, call.err = tok, err
	call.cancelled = err != nil && ctx.Err() != nil
	if err == nil {
		ts.cur.Store(tok)
		ts.minted = [2]time.Time{ts.minted[1], started}
	}
	ts.inflight = nil
	ts.mu.Unlock()
	close(call.done)
}

// mintWindow is the mint-storm guard: at most two mints start within it.
// clockSlack is how far the server's Date may be from the local clock for
// the two to count as agreeing (Date has whole seconds).
const (
	mintWindow = time.Second
	clockSlack = 2 * time.Second
)

// refreshTime is when a token received at now (the local clock) and
// expiring at exp (the server's clock) is replaced: halfway through its
// lifetime, measured from now. served is the server's Date when the token
// was minted (zero when it sent none). When the two clocks disagree, the
// lifetime is measured on the server's alone. A token that arrived expired
// is due at once (the mint-storm guard in renew spaces the mints).
func refreshTime(now, served, exp time.Time) time.Time {
	ref := now
	if !served.IsZero() && (served.Sub(now) > clockSlack || now.Sub(served) > clockSlack) {
		ref = served.Add(500 * time.Millisecond) // Date is truncated to the second
	}
	return now.Add(exp.Sub(ref) / 2)
}

// TokenHandler returns an http.Handler that serves a valid search token to a
// browser as JSON ({token, host, indexes, expiresAt}, Cache-Control:
// no-store), so that the browser can query the search host while the API key
// stays on the server. Mount it behind your own authentication; it answers
// GET and HEAD only. Tokens come from TokenSource. It is
// NewTokenHandler(s.TokenSource(), opts...), whose doc lists its statuses.
func (s *SearchService) TokenHandler(opts ...TokenHandlerOption) http.Handler {
	return NewTokenHandler(s.TokenSource(), opts...)
}

// TokenHandlerOption configures NewTokenHandler.
type TokenHandlerOption func(*tokenHandler)

// OnTokenError sets a function the handler calls with the request and the
// error whenever it cannot serve a token (not for 405), so that the
// service can log why; the error never holds the API key. It runs before
// the answer is written, on the request's goroutine.
func OnTokenError(fn func(r *http.Request, err error)) TokenHandlerOption {
	return func(h *tokenHandler) { h.onError = fn }
}

// NewTokenHandler returns the search-token endpoint of SearchService.TokenHandler
// over any token provider: a *SearchTokenSource, or a stub in a unit test.
// Its answers:
//
//   - 200 with the token as JSON, Cache-Control: no-store;
//   - 405 with Allow: GET, HEAD to any other method;
//   - 503 with the API's Retry-After (in whole seconds) when the API is
//     rate limited (429) or unavailable (503), or the client's own rate
//     limit refused the mint: the browser may try again then;
//   - 499 (a client closed request, as nginx logs it) when the request's own
//     context ended before a token came: the browser is gone, and no
//     error is reported to OnTokenError;
//   - 502 when minting failed otherwise (the API refused the key, an
//     answer without a token, a network failure);
//   - 500 when the token could not be encoded.
//
// Error bodies are {"error": "..."} and never say more than the status.
func NewTokenHandler(p SearchTokenProvider, opts ...TokenHandlerOption) http.Handler {
	h := &tokenHandler{p: p}
	for _, o := range opts {
		if o != nil {
			o(h)
		}
	}
	return h
}

type tokenHandler struct {
	p       SearchTokenProvider
	onError func(*http.Request, error)
}

// StatusClientClosedRequest is the status NewTokenHandler answers (and
// logs through your middleware) when the request's own context ended
// first: nginx's 499, "client closed request".
const StatusClientClosedRequest = 499

func (h *tokenHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, `{"error":"method not allowed"}`, http.StatusMethodNotAllowed)
		return
	}
	if h.p == nil {
		h.fail(w, r, http.StatusInternalServerError, "search token unavailable", invalidArg("NewTokenHandler", "the token provider is nil"))
		return
	}
	t, err := h.p.Token(r.Context())
	if err != nil {
		if r.Context().Err() != nil {
			w.WriteHeader(StatusClientClosedRequest)
			return
		}
		var rl *RateLimitError
		var crl *ClientRateLimitError
		switch {
		case errors.As(err, &rl):
			if rl.RetryAfter > 0 {
				w.Header().Set("Retry-After", strconv.FormatInt(int64(math.Ceil(rl.RetryAfter.Seconds())), 10))
			}
			h.fail(w, r, http.StatusServiceUnavailable, "search token temporarily unavailable", err)
		case errors.As(err, &crl):
			w.Header().Set("Retry-After", "1")
			h.fail(w, r, http.StatusServiceUnavailable, "search token temporarily unavailable", err)
		case errors.Is(err, ErrUnavailable):
			var api *APIError
			if errors.As(err, &api) && api.retryAfter > 0 {
				w.Header().Set("Retry-After", strconv.FormatInt(int64(math.Ceil(api.retryAfter.Seconds())), 10))
			}
			h.fail(w, r, http.StatusServiceUnavailable, "search token temporarily unavailable", err)
		default:
			h.fail(w, r, http.StatusBadGateway, "search token unavailable", err)
		}
		return
	}
	b, err := marshal(browserToken{Token: t.Token, Host: t.Host, Indexes: t.Indexes, ExpiresAt: t.ExpiresAt})
	if err != nil {
		h.fail(w, r, http.StatusInternalServerError, "encoding the search token", err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// fail reports err to the hook and answers status with a bare message.
func (h *tokenHandler) fail(w http.ResponseWriter, r *http.Request, status int, msg string, err error) {
	if h.onError != nil {
		h.onError(r, err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, `{"error":"`+msg+`"}`)
}

// browserToken is what TokenHandler serves: the documented members only.
type browserToken struct {
	Token     string        `json:"token"`
	Host      string        `json:"host"`
	Indexes   []SearchIndex `json:"indexes"`
	ExpiresAt time.Time     `json:"expiresAt"`
}
