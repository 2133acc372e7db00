package lendgraph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// TestSearchTokenSource_ClockSkew (item 8): the token's lifetime is the
// server's (expiresAt against the response's Date), so a machine whose
// clock is ten minutes ahead does not mint on every call, and one ten
// minutes behind replaces the token before the server ends it.
func TestSearchTokenSource_ClockSkew(t *testing.T) {
	noLeaks(t)
	t.Run("ahead", func(t *testing.T) {
		srv := searchServer(t)
		c := srv.Client()
		lendgraph.SetSearchClock(c, func() time.Time { return srv.Now().Add(10 * time.Minute) })
		ts := c.Search.TokenSource()
		stop := time.Now().Add(time.Second)
		var wg sync.WaitGroup
		var calls sync.Map
		for g := range 200 {
			wg.Go(func() {
				n := 0
				for time.Now().Before(stop) {
					if _, err := ts.Token(context.Background()); err != nil {
						t.Error(err)
						return
					}
					n++
				}
				calls.Store(g, n)
			})
		}
		wg.Wait()
		total := 0
		calls.Range(func(_, v any) bool { total += v.(int); return true })
		if m := srv.SearchTokenMints(); m != 1 {
			t.Fatalf("%d mints for %d calls in a second with the clock 10 minutes ahead, want 1", m, total)
		}
		if _, err := c.Search.Host().Search(context.Background(), lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("behind", func(t *testing.T) {
		srv := searchServer(t)
		srv.SetSearchTokenTTL(time.Minute) // measured on the server's clock: replaced about 30s after the mint
		c := srv.Client()
		lendgraph.SetSearchClock(c, func() time.Time { return srv.Now().Add(-10 * time.Minute) })
		ts := c.Search.TokenSource()
		ctx := context.Background()
		t1, err := ts.Token(ctx)
		if err != nil {
			t.Fatal(err)
		}
		srv.Advance(28 * time.Second) // 32s left by the server's clock
		if t2, _ := ts.Token(ctx); t2 != t1 || srv.SearchTokenMints() != 1 {
			t.Fatal("token replaced with more than half of its lifetime left")
		}
		srv.Advance(3 * time.Second) // 29s left by the server's clock
		t3, err := ts.Token(ctx)
		if err != nil || t3 == t1 || srv.SearchTokenMints() != 2 {
			t.Fatalf("with the clock 10 minutes behind, the token was kept past half of its lifetime: %v, %d mints", err, srv.SearchTokenMints())
		}
		srv.ResetRequests()
		if _, err := c.Search.Host().Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"}); err != nil {
			t.Fatal(err)
		}
		if n := len(srv.Requests()); n != 1 {
			t.Fatalf("%d requests: the host refused the token", n)
		}
	})
}

func TestSearchTokenSource_OneMintForManyCallers(t *testing.T) {
	srv := searchServer(t)
	c := srv.Client()
	ts := c.Search.TokenSource()
	var wg sync.WaitGroup
	toks := make([]*lendgraph.SearchToken, 100)
	errs := make([]error, 100)
	for i := range 100 {
		wg.Go(func() { toks[i], errs[i] = ts.Token(context.Background()) })
	}
	wg.Wait()
	for i := range toks {
		if errs[i] != nil || toks[i] != toks[0] {
			t.Fatalf("caller %d: %v, %p vs %p", i, errs[i], toks[i], toks[0])
		}
	}
	if n := srv.SearchTokenMints(); n != 1 {
		t.Fatalf("%d mints, want 1", n)
	}
	tok := toks[0]
	if tok.Host != srv.SearchHostURL() || len(tok.Indexes) != 4 || tok.ExpiresAt.Before(srv.Now()) {
		t.Fatalf("token %v", tok)
	}
	if c.Search.TokenSource() != ts {
		t.Fatal("TokenSource is not shared")
	}
}

// manualClock is a client clock that moves only when the test moves it
// (with the fake server's, so that the two agree): what a token source
// decides depends on nothing but the steps the test takes.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (m *manualClock) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// Advance moves the client's clock alone.
func (m *manualClock) Advance(d time.Duration) {
	m.mu.Lock()
	m.now = m.now.Add(d)
	m.mu.Unlock()
}

// clockedSearch returns a client (with opts) whose token source reads a
// manual clock, and a step that moves that clock and the server's by d.
func clockedSearch(t *testing.T, srv *lendgraphtest.Server, opts ...lendgraph.Option) (*lendgraph.Client, *manualClock, func(d time.Duration)) {
	t.Helper()
	clk := &manualClock{now: srv.Now()}
	c := srv.Client(opts...)
	lendgraph.SetSearchClock(c, clk.Now)
	return c, clk, func(d time.Duration) {
		clk.Advance(d)
		srv.Advance(d)
	}
}

// TestSearchTokenSource_HalfLifetimeLeft (issue 26 item 5): a token is
// handed out only while at least half of its lifetime, measured from when
// it was received, is left, short-lived tokens included: a token minted
// with a 1.2s lifetime is no longer handed out 200ms before it expires.
// Each call's answer is checked on the client's clock (a manual one, so
// the check is exact), the mints are counted at the server, and every
// token handed out is one the search host accepts.
func TestSearchTokenSource_HalfLifetimeLeft(t *testing.T) {
	for _, tc := range []struct {
		ttl, step time.Duration
	}{
		{1200 * time.Millisecond, 50 * time.Millisecond},
		{time.Second, 50 * time.Millisecond},
		{time.Minute, time.Second},
		{5 * time.Minute, 5 * time.Second},
	} {
		t.Run(tc.ttl.String(), func(t *testing.T) {
			srv := searchServer(t)
			srv.SetSearchTokenTTL(tc.ttl)
			c, clk, step := clockedSearch(t, srv)
			ts := c.Search.TokenSource()
			ctx := context.Background()
			var cur *lendgraph.SearchToken
			var receivedAt time.Time
			tokens := 0
			const lifetimes = 4
			for range int(lifetimes * tc.ttl / tc.step) {
				tok, err := ts.Token(ctx)
				if err != nil {
					t.Fatal(err)
				}
				now := clk.Now()
				if tok != cur {
					cur, receivedAt = tok, now
					tokens++
				}
				life := tok.ExpiresAt.Sub(receivedAt)
				if left := tok.ExpiresAt.Sub(now); left < life/2 {
					t.Fatalf("token handed out with %v left of its %v lifetime (received %v ago)", left, life, now.Sub(receivedAt))
				}
				step(tc.step)
			}
			// One mint per half lifetime: a token is not replaced early either.
			if want := 2*lifetimes + 1; srv.SearchTokenMints() != tokens || tokens < want-1 || tokens > want {
				t.Fatalf("%d tokens, %d mints over %d lifetimes; want about %d", tokens, srv.SearchTokenMints(), lifetimes, want)
			}
			srv.ResetRequests()
			if _, err := c.Search.Host().Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"}); err != nil {
				t.Fatal(err)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Fatalf("%d requests: the host refused the token", n)
			}
		})
	}
}

// TestSearchTokenSource_MintStormGuard (issue 26 item 5): a token that
// arrives expired (a broken minter, a skewed server) or nearly so is
// handed out again rather than minted on every call, at most two mints a
// second per client, both for calls to Token and for host queries that the
// host refuses (each would re-mint). Counted at the server.
func TestSearchTokenSource_MintStormGuard(t *testing.T) {
	for _, tc := range []struct {
		name string
		ttl  time.Duration
	}{
		{"expired on arrival", -time.Second},
		{"100ms", 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := searchServer(t)
			srv.SetSearchTokenTTL(tc.ttl)
			c, _, step := clockedSearch(t, srv)
			ts := c.Search.TokenSource()
			ctx := context.Background()
			const seconds = 3
			for range seconds * 100 {
				if _, err := ts.Token(ctx); err != nil {
					t.Fatal(err)
				}
				step(10 * time.Millisecond)
			}
			if m := srv.SearchTokenMints(); m > 2*seconds {
				t.Fatalf("%d mints in %d seconds, want at most %d", m, seconds, 2*seconds)
			} else if m < seconds {
				t.Fatalf("%d mints in %d seconds: the source stopped renewing", m, seconds)
			}
			// Host queries in one instant: each refusal would re-mint; at
			// most two mints start in a second, then the host's refusal
			// comes back as it is.
			srv.SetSearchTokenTTL(-time.Second)
			step(time.Second)
			before := srv.SearchTokenMints()
			srv.ResetRequests()
			h := c.Search.Host()
			for range 20 {
				_, err := h.Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"})
				var he *lendgraph.SearchHostError
				if !errors.As(err, &he) || he.StatusCode != http.StatusForbidden {
					t.Fatalf("expired tokens: %v", err)
				}
			}
			if m := srv.SearchTokenMints() - before; m > 2 {
				t.Fatalf("20 refused queries in one instant minted %d tokens, want at most 2", m)
			}
			if n := srv.CountRequests(http.MethodPost, "/indexes/*/search"); n > 22 {
				t.Fatalf("%d host requests for 20 queries", n)
			}
		})
	}
}

func TestSearchTokenSource_ErrorsNotCached(t *testing.T) {
	srv := searchServer(t)
	c := srv.Client(lendgraph.WithMaxRetries(0))
	ts := c.Search.TokenSource()
	srv.InjectFault(http.MethodGet, "/v1/search-token", lendgraphtest.Fault{Status: 500, Body: `{"error":"boom"}`})
	if _, err := ts.Token(context.Background()); err == nil {
		t.Fatal("want the mint's error")
	}
	if _, err := ts.Token(context.Background()); err != nil {
		t.Fatalf("error was cached: %v", err)
	}

	// A mint that hangs: a waiter with a cancelled context returns at once;
	// when the minting caller gives up, a waiter that still wants a token mints.
	c = srv.Client()
	ts = c.Search.TokenSource()
	srv.InjectFault(http.MethodGet, "/v1/search-token", lendgraphtest.Fault{Kind: lendgraphtest.Stall, Delay: time.Minute})
	ctxA, cancelA := context.WithCancel(context.Background())
	aDone := make(chan error, 1)
	go func() { _, err := ts.Token(ctxA); aDone <- err }()
	for srv.CountRequests(http.MethodGet, "/v1/search-token") < 3 {
		time.Sleep(time.Millisecond) // wait for the stalled request to arrive
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ts.Token(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("waiter: %v", err)
	}
	bDone := make(chan error, 1)
	go func() { _, err := ts.Token(context.Background()); bDone <- err }()
	cancelA()
	if err := <-aDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("minting caller: %v", err)
	}
	if err := <-bDone; err != nil {
		t.Fatalf("waiter after the minting caller gave up: %v", err)
	}
}

func TestSearchService_TokenHandler(t *testing.T) {
	srv := searchServer(t)
	c := srv.Client()
	h := c.Search.TokenHandler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/search-token", nil))
	if rec.Code != 200 || rec.Header().Get("Cache-Control") != "no-store" || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("%d %v", rec.Code, rec.Header())
	}
	var got struct {
		Token     string    `json:"token"`
		Host      string    `json:"host"`
		Indexes   []string  `json:"indexes"`
		ExpiresAt time.Time `json:"expiresAt"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.Token == "" || got.Host != srv.SearchHostURL() ||
		len(got.Indexes) != 4 || got.ExpiresAt.IsZero() {
		t.Fatalf("%v %s", err, rec.Body)
	}
	if strings.Contains(rec.Body.String(), srv.DefaultCaller().Key) {
		t.Fatal("the API key was served")
	}
	// What a browser does with it: query the host with the token alone.
	status, res := hostPost(t, srv, "originators", got.Token, "application/json", `{"q":"smi","limit":2}`)
	if status != 200 || !strings.HasPrefix(res["hits"], "[map[") || res["limit"] != "2" {
		t.Fatalf("browser query: %d %v", status, res)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/search-token", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %d", rec.Code)
	}
	srv.SetSearchConfigured(false)
	c2 := srv.Client(lendgraph.WithMaxRetries(0))
	rec = httptest.NewRecorder()
	c2.Search.TokenHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/search-token", nil))
	// The API's 503 (search not configured) is passed on as a 503.
	if rec.Code != http.StatusServiceUnavailable || strings.Contains(rec.Body.String(), "lendgraph:") {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

// tokenStub is a SearchTokenProvider of a unit test.
type tokenStub struct {
	tok *lendgraph.SearchToken
	err error
}

func (s tokenStub) Token(ctx context.Context) (*lendgraph.SearchToken, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.tok, s.err
}

func TestNewTokenHandler_Statuses(t *testing.T) {
	tok := &lendgraph.SearchToken{Token: "tok-123456789", Host: "https://search.example", Indexes: []lendgraph.SearchIndex{lendgraph.IndexAgents}, ExpiresAt: time.Now().Add(time.Hour)}
	rl := lendgraph.NewAPIError(http.MethodGet, "/v1/search-token", 429, http.Header{"Retry-After": {"7"}}, []byte(`{"error":"rate_limited"}`))
	down := lendgraph.NewAPIError(http.MethodGet, "/v1/search-token", 503, http.Header{"Retry-After": {"30"}}, []byte(`{"error":"search_unavailable"}`))
	bad := lendgraph.NewAPIError(http.MethodGet, "/v1/search-token", 401, nil, []byte(`{"error":"unauthorized"}`))
	for _, tc := range []struct {
		name       string
		p          lendgraph.SearchTokenProvider
		cancel     bool
		status     int
		retryAfter string
		hooked     error
	}{
		{"token", tokenStub{tok: tok}, false, 200, "", nil},
		{"API rate limited", tokenStub{err: rl}, false, 503, "7", rl},
		{"API unavailable", tokenStub{err: down}, false, 503, "30", down},
		{"key refused", tokenStub{err: bad}, false, 502, "1", bad},
		{"client rate limit", tokenStub{err: &lendgraph.ClientRateLimitError{}}, false, 503, "1", &lendgraph.ClientRateLimitError{}},
		{"caller went away", tokenStub{tok: tok}, true, lendgraph.StatusClientClosedRequest, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hooked error
			h := lendgraph.NewTokenHandler(tc.p, lendgraph.OnTokenError(func(r *http.Request, err error) { hooked = err }))
			req := httptest.NewRequest(http.MethodGet, "/search-token", nil)
			if tc.cancel {
				ctx, cancel := context.WithCancel(req.Context())
				cancel()
				req = req.WithContext(ctx)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.status || rec.Header().Get("Retry-After") != tc.retryAfter {
				t.Fatalf("status %d Retry-After %q, want %d %q (%s)", rec.Code, rec.Header().Get("Retry-After"), tc.status, tc.retryAfter, rec.Body)
			}
			if (tc.hooked == nil) != (hooked == nil) || (hooked != nil && hooked.Error() != tc.hooked.Error()) {
				t.Fatalf("hook got %v, want %v", hooked, tc.hooked)
			}
			if tc.status == 200 && !strings.Contains(rec.Body.String(), tok.Token) {
				t.Fatalf("body %s", rec.Body)
			}
		})
	}
}

// TestSearchService_TokenHostWithoutScheme: a token naming its host as
// "host:port" is refused with ErrUnsafeLink, the message saying that the
// address has no http(s) scheme (url.Parse reads "evil.example" as its
// scheme).
func TestSearchService_TokenHostWithoutScheme(t *testing.T) {
	srv := searchServer(t)
	srv.SetSearchTokenHost("evil.example:443")
	_, err := srv.Client().Search.Token(context.Background())
	if !errors.Is(err, lendgraph.ErrUnsafeLink) || !strings.Contains(err.Error(), `"evil.example:443" has no http or https scheme`) ||
		strings.Contains(err.Error(), `scheme "evil.example"`) {
		t.Fatalf("err = %v", err)
	}
}

// floodResult is what a flood of browser requests at a token endpoint saw.
type floodResult struct {
	answers      int
	statuses     map[int]int
	noRetryAfter int // failures answered without a Retry-After
	retryAfters  map[string]int
	median       time.Duration
	slowest      time.Duration
	took         time.Duration // from the first request to the last answer
}

// floodTokenEndpoint sends GETs to url from clients concurrent browsers,
// each asking again as soon as it has its answer, for d.
func floodTokenEndpoint(t *testing.T, url string, clients int, d time.Duration) floodResult {
	t.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	var mu sync.Mutex
	res := floodResult{statuses: map[int]int{}, retryAfters: map[string]int{}}
	var times []time.Duration
	begin := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for time.Since(begin) < d {
				start := time.Now()
				resp, err := hc.Get(url)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				took := time.Since(start)
				mu.Lock()
				times = append(times, took)
				res.statuses[resp.StatusCode]++
				if resp.StatusCode != http.StatusOK {
					if ra := resp.Header.Get("Retry-After"); ra == "" {
						res.noRetryAfter++
					} else {
						res.retryAfters[ra]++
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	res.took = time.Since(begin)
	slices.Sort(times)
	res.answers = len(times)
	if len(times) > 0 {
		res.median, res.slowest = times[len(times)/2], times[len(times)-1]
	}
	return res
}

// floodDuration is how long each flood of TestSearchService_TokenHandlerFailureFlood
// lasts: LENDGRAPH_FLOOD (a duration), 500ms when unset.
func floodDuration(t *testing.T) time.Duration {
	s := os.Getenv("LENDGRAPH_FLOOD")
	if s == "" {
		return 500 * time.Millisecond
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		t.Fatalf("LENDGRAPH_FLOOD=%q: want a positive duration such as 2s", s)
	}
	return d
}

// TestSearchService_TokenHandlerFailureFlood: while the API's
// /v1/search-token fails, a flood of browsers at TokenHandler (16 and 32
// of them, each asking again as soon as it is answered) makes at most two
// mints start in any second, counted at the API; each browser is answered
// within about a second, with the status the failure calls for and a
// Retry-After, the server's own when it sent one. The client has the
// default retry schedule, so a handler that waited through it would take
// seconds. Run with LENDGRAPH_FLOOD=2s -v for the figures:
//
//	LENDGRAPH_FLOOD=2s go test -run TestSearchService_TokenHandlerFailureFlood -v .
func TestSearchService_TokenHandlerFailureFlood(t *testing.T) {
	noLeaks(t)
	d := floodDuration(t)
	for _, up := range []struct {
		name       string
		status     int
		retryAfter string
		want       int // the status the browsers get
	}{
		{"401", http.StatusUnauthorized, "", http.StatusBadGateway},
		{"500", http.StatusInternalServerError, "", http.StatusBadGateway},
		{"503 Retry-After 2", http.StatusServiceUnavailable, "2", http.StatusServiceUnavailable},
		{"429 Retry-After 2", http.StatusTooManyRequests, "2", http.StatusServiceUnavailable},
	} {
		for _, clients := range []int{16, 32} {
			t.Run(fmt.Sprintf("%s/%d clients", up.name, clients), func(t *testing.T) {
				srv := searchServer(t)
				f := lendgraphtest.Fault{Status: up.status, Body: `{"error":"failing"}`, Times: -1}
				if up.retryAfter != "" {
					f.Header = map[string]string{"Retry-After": up.retryAfter}
				}
				srv.InjectFault(http.MethodGet, "/v1/search-token", f)
				// The default retry schedule (the fake's client retries within milliseconds).
				c := srv.Client(lendgraph.WithRetryBackoff(250*time.Millisecond, 8*time.Second))
				hs := httptest.NewServer(c.Search.TokenHandler())
				defer hs.Close()
				res := floodTokenEndpoint(t, hs.URL, clients, d)
				mints := srv.CountRequests(http.MethodGet, "/v1/search-token")
				t.Logf("API %s, %d browsers for %v: %d mints (%.1f/s), %d answers %v, Retry-After %v (missing on %d), median %v, slowest %v",
					up.name, clients, d, mints, float64(mints)/res.took.Seconds(), res.answers, res.statuses, res.retryAfters,
					res.noRetryAfter, res.median.Round(time.Microsecond), res.slowest.Round(time.Millisecond))
				if limit := 2 * (int(res.took/time.Second) + 1); mints > limit || mints == 0 {
					t.Errorf("%d mints in %v, want 1 to %d (two in any second)", mints, res.took.Round(time.Millisecond), limit)
				}
				if res.slowest > 1500*time.Millisecond {
					t.Errorf("the slowest answer took %v, want about a second at most", res.slowest)
				}
				if res.statuses[up.want] != res.answers || res.noRetryAfter > 0 {
					t.Errorf("answers %v (%d without Retry-After), want all %d with a Retry-After", res.statuses, res.noRetryAfter, up.want)
				}
				if up.retryAfter != "" && res.retryAfters[up.retryAfter] == 0 {
					t.Errorf("Retry-After %v, want the server's %s passed on", res.retryAfters, up.retryAfter)
				}
			})
		}
	}
}

// TestSearchService_TokenHandlerSparesRetryBudget: a flood of browsers at
// TokenHandler while the API's /v1/search-token fails leaves the client's
// retry budget to the calls it is meant for: afterwards, 20 Gets each
// meeting one transient 503 all succeed on their second attempt (40
// requests at the API). The budget is sized for the Gets: each retry
// takes 5 tokens and each success gives one back, so the 20th Get has
// 85-19*4 = 9 tokens, and a single retry of a mint would leave it 4, too
// few to retry.
func TestSearchService_TokenHandlerSparesRetryBudget(t *testing.T) {
	noLeaks(t)
	srv := searchServer(t)
	srv.InjectFault(http.MethodGet, "/v1/search-token", lendgraphtest.Fault{Status: 500, Body: `{"error":"failing"}`, Times: -1})
	c := srv.Client(lendgraph.WithRetryBudget(85))
	hs := httptest.NewServer(c.Search.TokenHandler())
	defer hs.Close()
	floodTokenEndpoint(t, hs.URL, 16, time.Second)
	ctx := context.Background()
	ok := 0
	for range 20 {
		srv.InjectFault(http.MethodGet, "/v1/agents/{id}", lendgraphtest.Fault{Status: 503, Body: `{"error":"unavailable"}`})
		if _, err := c.Agents.Get(ctx, "agt_0000001"); err == nil {
			ok++
		}
	}
	if n := srv.CountRequests(http.MethodGet, "/v1/agents/{id}"); ok != 20 || n != 40 {
		t.Fatalf("after the flood, %d of 20 Gets meeting one 503 succeeded, in %d requests; want 20 in 40", ok, n)
	}
}

// TestSearchTokenSource_FailuresHeldBack: while the API's
// /v1/search-token fails, the source starts at most two mints in any
// second, and none before the Retry-After the API sent has passed; the
// calls in between get the last failure (still matching its sentinel)
// without a request. Counted at the fake, on a manual clock.
func TestSearchTokenSource_FailuresHeldBack(t *testing.T) {
	ctx := context.Background()
	t.Run("401", func(t *testing.T) {
		srv := searchServer(t)
		srv.InjectFault(http.MethodGet, "/v1/search-token", lendgraphtest.Fault{Status: 401, Body: `{"error":"unauthorized"}`, Times: -1})
		c, _, step := clockedSearch(t, srv)
		ts := c.Search.TokenSource()
		for second := 1; second <= 3; second++ {
			for i := range 100 {
				_, err := ts.Token(ctx)
				if !errors.Is(err, lendgraph.ErrUnauthorized) {
					t.Fatalf("err = %v, want the API's 401", err)
				}
				if i == 2 && !strings.Contains(err.Error(), "not minted again for 980ms after the last mint failed: lendgraph: GET /v1/search-token: 401") {
					t.Fatalf("the third call in a second: %v", err)
				}
				step(10 * time.Millisecond)
			}
			if n := srv.CountRequests(http.MethodGet, "/v1/search-token"); n != 2*second {
				t.Fatalf("%d mints after %d s of calls every 10ms, want %d", n, second, 2*second)
			}
		}
	})
	t.Run("503 Retry-After 5", func(t *testing.T) {
		srv := searchServer(t)
		srv.InjectFault(http.MethodGet, "/v1/search-token", lendgraphtest.Fault{Status: 503, Body: `{"error":"unavailable"}`,
			Header: map[string]string{"Retry-After": "5"}})
		// The client's retries would wait on the real clock: none.
		c, _, step := clockedSearch(t, srv, lendgraph.WithMaxRetries(0))
		ts := c.Search.TokenSource()
		if _, err := ts.Token(ctx); !errors.Is(err, lendgraph.ErrUnavailable) {
			t.Fatalf("err = %v", err)
		}
		for range 49 {
			step(100 * time.Millisecond)
			if _, err := ts.Token(ctx); !errors.Is(err, lendgraph.ErrUnavailable) {
				t.Fatalf("err = %v, want the held 503", err)
			}
		}
		if n := srv.CountRequests(http.MethodGet, "/v1/search-token"); n != 1 {
			t.Fatalf("%d mints within the API's Retry-After of 5s, want 1", n)
		}
		step(100 * time.Millisecond)
		if tok, err := ts.Token(ctx); err != nil || tok == nil {
			t.Fatalf("after the Retry-After: %v", err)
		}
		if n := srv.CountRequests(http.MethodGet, "/v1/search-token"); n != 2 {
			t.Fatalf("%d mints, want 2", n)
		}
	})
}

// TestNewTokenHandler_RetryAfterRoundedUp: a wait that is not a whole
// number of seconds is sent up to the next second, never down and never
// as 0 (a browser told 0 asks again at once): the API's own Retry-After
// as a stub's error carries it, and the rest of the wait a source holds a
// failed mint back for, on a manual clock.
func TestNewTokenHandler_RetryAfterRoundedUp(t *testing.T) {
	get := func(h http.Handler) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/search-token", nil))
		return rec
	}
	for _, tc := range []struct {
		wait time.Duration
		want string
	}{
		{300 * time.Millisecond, "1"},
		{time.Second, "1"},
		{1200 * time.Millisecond, "2"},
		{1999 * time.Millisecond, "2"},
	} {
		rec := get(lendgraph.NewTokenHandler(tokenStub{err: &lendgraph.RateLimitError{RetryAfter: tc.wait}}))
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != tc.want {
			t.Errorf("API asking for %v: %d Retry-After %q, want 503 %q", tc.wait, rec.Code, rec.Header().Get("Retry-After"), tc.want)
		}
	}

	srv := searchServer(t)
	srv.InjectFault(http.MethodGet, "/v1/search-token", lendgraphtest.Fault{Status: 503, Body: `{"error":"unavailable"}`,
		Header: map[string]string{"Retry-After": "2"}, Times: -1})
	c, _, step := clockedSearch(t, srv)
	h := c.Search.TokenHandler()
	for _, s := range []struct {
		step time.Duration
		want string // 2s after the failed mint
	}{
		{0, "2"},
		{800 * time.Millisecond, "2"}, // 1.2s left
		{900 * time.Millisecond, "1"}, // 0.3s left
	} {
		step(s.step)
		if rec := get(h); rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != s.want {
			t.Errorf("%d Retry-After %q, want 503 %q", rec.Code, rec.Header().Get("Retry-After"), s.want)
		}
	}
	if n := srv.CountRequests(http.MethodGet, "/v1/search-token"); n != 1 {
		t.Fatalf("%d mints within the API's Retry-After, want 1", n)
	}
}

// TestSearchService_TokenHandlerBrowsersThatLeave: browsers that ask for a
// token and leave before it comes (here, 10ms into a mint the API takes
// 100ms to answer) do not each start a mint: the mint a browser started
// runs to its end, and its token, or its failure, serves the next ones.
// Counted at the fake.
func TestSearchService_TokenHandlerBrowsersThatLeave(t *testing.T) {
	noLeaks(t)
	for _, failing := range []bool{false, true} {
		t.Run(map[bool]string{false: "API slow", true: "API slow and failing"}[failing], func(t *testing.T) {
			srv := searchServer(t)
			srv.SetSearchConfigured(!failing) // a 503 when failing
			srv.InjectFault(http.MethodGet, "/v1/search-token", lendgraphtest.Fault{Kind: lendgraphtest.Stall, Delay: 100 * time.Millisecond, Times: -1})
			h := srv.Client().Search.TokenHandler()
			const d = time.Second
			begin := time.Now()
			var wg sync.WaitGroup
			for range 16 {
				wg.Go(func() {
					for time.Since(begin) < d {
						ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
						rec := httptest.NewRecorder()
						h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/search-token", nil).WithContext(ctx))
						cancel()
						if want := map[bool]int{false: 200, true: 503}[failing]; rec.Code != lendgraph.StatusClientClosedRequest && rec.Code != want {
							t.Errorf("a browser gone after 10ms: %d %s, want %d or %d", rec.Code, rec.Body, want, lendgraph.StatusClientClosedRequest)
							return
						}
					}
				})
			}
			wg.Wait()
			took := time.Since(begin)
			n := srv.CountRequests(http.MethodGet, "/v1/search-token")
			if limit := 2 * (int(took/time.Second) + 1); n > limit || (!failing && n != 1) {
				t.Fatalf("%d mints in %v for browsers that left (want 1 for a healthy API, at most %d)", n, took.Round(time.Millisecond), limit)
			}
		})
	}
}

// TestSearchService_TokenHandlerWaitsASecondAtMost: a browser whose token
// depends on a mint another caller started (the backend's own, with the
// client's retries) is answered 503 with Retry-After: 1 after about a
// second, not when that mint ends.
func TestSearchService_TokenHandlerWaitsASecondAtMost(t *testing.T) {
	noLeaks(t)
	srv := searchServer(t)
	srv.InjectFault(http.MethodGet, "/v1/search-token", lendgraphtest.Fault{Kind: lendgraphtest.Stall, Delay: time.Minute})
	c := srv.Client()
	ctx, cancel := context.WithCancel(context.Background())
	backend := make(chan error, 1)
	go func() { _, err := c.Search.TokenSource().Token(ctx); backend <- err }()
	defer func() { cancel(); <-backend }()
	for srv.CountRequests(http.MethodGet, "/v1/search-token") == 0 {
		time.Sleep(time.Millisecond)
	}
	answered := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		rec := httptest.NewRecorder()
		c.Search.TokenHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/search-token", nil))
		answered <- rec
	}()
	select {
	case rec := <-answered:
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" {
			t.Fatalf("%d Retry-After %q, want 503 1", rec.Code, rec.Header().Get("Retry-After"))
		}
	case <-time.After(10 * time.Second):
		cancel()
		<-answered
		t.Fatal("the browser waited for the backend's mint")
	}
}

// TestSearchService_TokenHandlerAnswers499WhenTheBrowserLeft: a browser
// that leaves during the mint it started gets 499 in the server's logs,
// not a 200 nobody reads; the token that came is cached, so the next
// browser gets it without a second mint (counted at the fake).
func TestSearchService_TokenHandlerAnswers499WhenTheBrowserLeft(t *testing.T) {
	noLeaks(t)
	srv := searchServer(t)
	srv.InjectFault(http.MethodGet, "/v1/search-token", lendgraphtest.Fault{Kind: lendgraphtest.Stall, Delay: 200 * time.Millisecond, Times: 1})
	h := srv.Client().Search.TokenHandler()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/search-token", nil).WithContext(ctx))
	if rec.Code != lendgraph.StatusClientClosedRequest {
		t.Fatalf("a browser gone during its mint: %d %s, want 499", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/search-token", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("the next browser: %d %s", rec.Code, rec.Body)
	}
	if n := srv.CountRequests(http.MethodGet, "/v1/search-token"); n != 1 {
		t.Errorf("%d mints; want 1 (the first browser's token cached)", n)
	}
}
