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
	return s.token(ctx, cfg, retry.Idempotent)
}

// token mints a search token as an operation Search.Token with settings
// cfg (nil: the client's defaults): those of the call the mint is made
// for, when a query of the search host needs a new token. kind is
// retry.Never for a mint of TokenHandler (one attempt, none of the
// client's retry budget).
func (s *SearchService) token(ctx context.Context, cfg *callConfig, kind retry.Kind) (_ *SearchToken, err error) {
	if cfg == nil {
		cfg = &s.client.defaults
	}
	ctx, o := s.client.open(ctx, "Search.Token", cfg)
	defer func() { o.end(err) }()
	var h http.Header
	t, err := sendFor[SearchToken](ctx, o, request{method: http.MethodGet, path: "/v1/search-token", kind: kind, respHeader: &h})
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
// on every call nor keeps a token past its end.
//
// Mints are held back, whatever the traffic: at most two start in any
// second, successful or failed. Within that limit, a token that arrives
// expired or nearly so (a skewed clock, a broken minter) is handed out
// again rather than minted on every call, and a failed mint's error is
// returned again, wrapped, without minting, for the rest of the second or
// until the Retry-After the API sent with it has passed (at most the
// client's WithMaxServerWait), whichever is later. A token the search host
// refuses (401, 403) is replaced at once, however recent the last mints,
// when the host had accepted it before (revoked) and the last mint did not
// fail; a token refused without ever being accepted (a host refusing every
// token, a token arriving expired) gets a new one only within the limit,
// and SearchHost then returns the host's refusal. However many goroutines
// ask at once, one mint runs; the others wait for it, each until its own
// context ends. A mint whose caller gave up counts for nothing: a waiter
// that still wants a token mints. Get one from SearchService.TokenSource.
type SearchTokenSource struct {
	mint func(ctx context.Context, cfg *callConfig, kind retry.Kind) (*SearchToken, error)
	now  func() time.Time
	// maxWait bounds how long a failed mint's Retry-After holds the next
	// mint back (the client's WithMaxServerWait).
	maxWait time.Duration

	cur      atomic.Pointer[SearchToken]
	accepted atomic.Pointer[SearchToken] // the last token the search host answered a request with (2xx)
	mu       sync.Mutex
	inflight *mintCall
	started  [2]time.Time // when the last two mints that ended started (ts.now), the older first; guarded by mu
	failed   *mintFailure // the last mint's failure, nil when it succeeded; guarded by mu
}

// mintFailure is a failed mint, kept until the next mint ends.
type mintFailure struct {
	err   error
	until time.Time // the server's Retry-After ends; zero when it sent none
}

type mintCall struct {
	done      chan struct{}
	tok       *SearchToken
	err       error
	cancelled bool // the minting caller's context ended: others try again
}

// Token returns the cached token, or mints one when there is none or half
// of the cached one's lifetime has passed. When two mints started within
// the last second, or a failed mint's Retry-After has not passed, it mints
// none: it returns the cached token when the last mint succeeded, and the
// last mint's error, wrapped, when it failed.
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
	return ts.renew(ctx, nil, cfg, false)
}

// forBrowser is Token for TokenHandler: a mint it starts is one attempt,
// spending none of the client's retry budget, that the browser's leaving
// does not cut short (so that browsers that ask and leave cannot start a
// mint each); it waits at most browserWait for a mint another caller
// started. With an error it returns how long until the source may mint
// again.
func (ts *SearchTokenSource) forBrowser(ctx context.Context) (*SearchToken, time.Duration, error) {
	if t := ts.cur.Load(); t != nil && ts.now().Before(t.refreshAt) {
		return t, 0, nil
	}
	t, err := ts.renew(ctx, nil, nil, true)
	if err == nil {
		return t, 0, nil
	}
	var held *mintHeldError
	if errors.As(err, &held) {
		return nil, held.wait, err
	}
	ts.mu.Lock()
	wait := ts.nextMint().Sub(ts.now())
	ts.mu.Unlock()
	return nil, wait, err
}

// renew returns a token that is fresh and is not stale (a token the search
// host refused), minting one unless another goroutine already did. When no
// mint may start now (nextMint), it returns the last mint's error wrapped
// in a *mintHeldError when that mint failed, and otherwise the cached
// token, stale or not (the caller compares it with stale to know that no
// new token came), unless stale is a token the host had accepted: a
// revoked token gets its new one at once. cfg, when not nil, are the
// settings of the call the token is for; browser: see forBrowser.
func (ts *SearchTokenSource) renew(ctx context.Context, stale *SearchToken, cfg *callConfig, browser bool) (*SearchToken, error) {
	var waitCap <-chan time.Time
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
			if next := ts.nextMint(); now.Before(next) {
				if ts.failed != nil {
					err := &mintHeldError{err: ts.failed.err, wait: next.Sub(now)}
					ts.mu.Unlock()
					return nil, err
				}
				if t != nil && (stale == nil || ts.accepted.Load() != stale) {
					ts.mu.Unlock()
					return t, nil // the mint-storm guard
				}
			}
			call = &mintCall{done: make(chan struct{})}
			ts.inflight = call
			ts.mu.Unlock()
			ts.run(ctx, call, now, cfg, browser)
			return call.tok, call.err
		}
		ts.mu.Unlock()
		if browser && waitCap == nil {
			timer := time.NewTimer(browserWait)
			defer timer.Stop()
			waitCap = timer.C
		}
		select {
		case <-call.done:
		case <-ctx.Done():
			return nil, fmt.Errorf("lendgraph: waiting for a search token: %w", ctxErr(ctx))
		case <-waitCap:
			return nil, &mintHeldError{wait: browserWait}
		}
		if !call.cancelled || ctx.Err() != nil {
			return call.tok, call.err
		}
		// The caller that was minting gave up; mint again for this one.
	}
}

// nextMint is when the next mint may start: a second after the older of
// the last two, and not before a failed last mint's Retry-After has
// passed. ts.mu is held.
func (ts *SearchTokenSource) nextMint() time.Time {
	next := ts.started[0].Add(mintWindow)
	if ts.failed != nil && ts.failed.until.After(next) {
		next = ts.failed.until
	}
	return next
}

// accept records that the search host answered a request made with t
// other than by refusing the token.
func (ts *SearchTokenSource) accept(t *SearchToken) {
	if ts.accepted.Load() != t {
		ts.accepted.Store(t)
	}
}

// run mints on the calling goroutine and publishes the result; started is
// when the mint began. A browser's mint (see forBrowser) is one attempt,
// bounded by browserMintTimeout instead of the browser's context.
func (ts *SearchTokenSource) run(ctx context.Context, call *mintCall, started time.Time, cfg *callConfig, browser bool) {
	kind, mctx := retry.Idempotent, ctx
	if browser {
		var cancel context.CancelFunc
		mctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), browserMintTimeout)
		defer cancel()
		kind = retry.Never
	}
	tok, err := ts.mint(mctx, cfg, kind)
	end := ts.now()
	if err == nil {
		tok.refreshAt = refreshTime(end, tok.served, tok.ExpiresAt)
	}
	ts.mu.Lock()
	call.tok, call.err = tok, err
	call.cancelled = err != nil && mctx.Err() != nil && !browser
	if !call.cancelled {
		ts.started = [2]time.Time{ts.started[1], started}
		ts.failed = nil
		if err == nil {
			ts.cur.Store(tok)
		} else {
			f := &mintFailure{err: err}
			if d := serverWait(err); d > 0 {
				f.until = end.Add(min(d, ts.maxWait))
			}
			ts.failed = f
		}
	}
	ts.inflight = nil
	ts.mu.Unlock()
	close(call.done)
}

// serverWait is the Retry-After the API sent with err, zero when none.
func serverWait(err error) time.Duration {
	var rl *RateLimitError
	if errors.As(err, &rl) && rl.RetryAfter > 0 {
		return rl.RetryAfter
	}
	var api *APIError
	if errors.As(err, &api) {
		return api.retryAfter
	}
	return 0
}

// mintHeldError is what a source answers instead of minting: the last
// mint failed with err and the next may start in wait, or (err nil) a
// mint another caller started has run longer than a browser waits.
type mintHeldError struct {
	err  error
	wait time.Duration
}

func (e *mintHeldError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("lendgraph: search token: a mint is still running after %s", e.wait)
	}
	return fmt.Sprintf("lendgraph: search token: not minted again for %s after the last mint failed: %v", e.wait.Round(time.Millisecond), e.err)
}

func (e *mintHeldError) Unwrap() error { return e.err }

// mintWindow is the mint-storm guard: at most two mints start within it.
// clockSlack is how far the server's Date may be from the local clock for
// the two to count as agreeing (Date has whole seconds). browserWait is
// the longest TokenHandler waits for a mint another caller started, and
// browserMintTimeout bounds a mint TokenHandler starts.
const (
	mintWindow         = time.Second
	clockSlack         = 2 * time.Second
	browserWait        = time.Second
	browserMintTimeout = 10 * time.Second
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
//   - 503 when the API is rate limited (429) or unavailable (503), or the
//     client's own rate limit refused the mint, or a mint another caller
//     started has run for a second: the browser may try again later;
//   - 499 (a client closed request, as nginx logs it) when the request's own
//     context ended before the answer: the browser is gone, and no error is
//     reported to OnTokenError. A mint the handler started goes on to its
//     end first (its token is cached for the next browser), so the 499
//     comes when the mint ends;
//   - 502 when minting failed otherwise (the API refused the key, an
//     answer without a token, a network failure);
//   - 500 when the token could not be encoded.
//
// Every 502 and 503 carries a Retry-After in whole seconds, rounded up and
// at least 1: when the provider is a *SearchTokenSource, the time until it
// mints again, which passes the API's own Retry-After on; otherwise the
// Retry-After the API sent with the error, or 1. Error bodies are
// {"error": "..."} and never say more than the status.
//
// Over a *SearchTokenSource, a failing API is not flooded however many
// browsers ask: the source starts at most two mints in any second, none
// before the API's Retry-After has passed, and answers the others with the
// last failure (see SearchTokenSource). A mint the handler starts is a
// single attempt, which spends none of the client's retry budget (the
// browser retries, after the Retry-After), runs to its end when the
// browser leaves (at most ten seconds), and a browser waits at most a
// second for a mint another caller started; so a failure is answered
// within about a second.
func NewTokenHandler(p SearchTokenProvider, opts ...TokenHandlerOption) http.Handler {
	h := &tokenHandler{p: p}
	h.src, _ = p.(*SearchTokenSource)
	for _, o := range opts {
		if o != nil {
			o(h)
		}
	}
	return h
}

type tokenHandler struct {
	p       SearchTokenProvider
	src     *SearchTokenSource // p, when it is the SDK's source; nil otherwise
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
	var t *SearchToken
	var wait time.Duration
	var err error
	if h.src != nil {
		t, wait, err = h.src.forBrowser(r.Context())
	} else if t, err = h.p.Token(r.Context()); err != nil {
		wait = serverWait(err)
	}
	if r.Context().Err() != nil {
		// The browser left while the mint it started ran to its end: the
		// token (if one came) is cached for the next browser; the answer
		// says, in the server's logs, that nobody took it.
		w.WriteHeader(StatusClientClosedRequest)
		return
	}
	if err != nil {
		w.Header().Set("Retry-After", retryAfterSeconds(wait))
		var rl *RateLimitError
		var crl *ClientRateLimitError
		var held *mintHeldError
		if errors.As(err, &rl) || errors.As(err, &crl) || errors.Is(err, ErrUnavailable) || (errors.As(err, &held) && held.err == nil) {
			h.fail(w, r, http.StatusServiceUnavailable, "search token temporarily unavailable", err)
			return
		}
		h.fail(w, r, http.StatusBadGateway, "search token unavailable", err)
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

// retryAfterSeconds is a Retry-After value for a wait of d: whole seconds,
// rounded up, at least 1 (a browser told 0 would ask again at once).
func retryAfterSeconds(d time.Duration) string {
	return strconv.FormatInt(max(1, int64(math.Ceil(d.Seconds()))), 10)
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
