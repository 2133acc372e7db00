package lendgraph_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// apiRequests returns the requests the fake's API listener saw for path.
func apiRequests(srv *lendgraphtest.Server, method, path string) []lendgraphtest.Request {
	var out []lendgraphtest.Request
	for _, r := range srv.Requests() {
		if r.Listener == "api" && r.Method == method && r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

func TestCallOptions_MaxRetries(t *testing.T) {
	srv := smallServer(t)
	c := srv.Client(lendgraph.WithMaxRetries(3))
	id := srv.Dataset().ID("agents", 0)
	path := "/v1/agents/" + id
	srv.InjectFault(http.MethodGet, "/v1/agents/{id}", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 503, Times: -1})

	_, err := c.Agents.Get(context.Background(), id, lendgraph.WithMaxRetries(0))
	if !errors.Is(err, lendgraph.ErrUnavailable) {
		t.Fatalf("err = %v, want a 503", err)
	}
	if n := len(apiRequests(srv, http.MethodGet, path)); n != 1 {
		t.Fatalf("WithMaxRetries(0): the server saw %d attempts, want 1", n)
	}
	_, _ = c.Agents.Get(context.Background(), id, lendgraph.WithMaxRetries(5))
	if n := len(apiRequests(srv, http.MethodGet, path)); n != 1+6 {
		t.Fatalf("WithMaxRetries(5): the server saw %d attempts in all, want 1+6", n)
	}
	// The client's setting stays the default of calls without options.
	_, _ = c.Agents.Get(context.Background(), id)
	if n := len(apiRequests(srv, http.MethodGet, path)); n != 1+6+4 {
		t.Fatalf("no call option: the server saw %d attempts in all, want 1+6+4", n)
	}
}

func TestCallOptions_MaxRetriesReachIterators(t *testing.T) {
	srv := smallServer(t)
	c := srv.Client()
	srv.InjectFault(http.MethodPost, "/v1/agents", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 503, Times: -1})
	if err := firstErr(c.Agents.All(context.Background(), nil, lendgraph.WithMaxRetries(0))); !errors.Is(err, lendgraph.ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
	if n := len(apiRequests(srv, http.MethodPost, "/v1/agents")); n != 1 {
		t.Fatalf("the server saw %d attempts of the page, want 1", n)
	}
}

func TestCallOptions_AttemptTimeout(t *testing.T) {
	srv := smallServer(t)
	c := srv.Client(lendgraph.WithMaxRetries(1))
	id := srv.Dataset().ID("agents", 0)
	srv.InjectFault(http.MethodGet, "/v1/agents/{id}", lendgraphtest.Fault{Kind: lendgraphtest.Stall, Delay: 2 * time.Second})
	a, err := c.Agents.Get(context.Background(), id, lendgraph.WithAttemptTimeout(50*time.Millisecond))
	if err != nil || a.ID != id {
		t.Fatalf("Get = %v, %v; want the stalled attempt cut and the retry answered", a, err)
	}
	if n := len(apiRequests(srv, http.MethodGet, "/v1/agents/"+id)); n != 2 {
		t.Fatalf("the server saw %d attempts, want 2", n)
	}
}

// A call's headers go with that call alone: never into the client's
// defaults, nor into a call made before or after; the client's own
// default header goes with every call.
func TestCallOptions_Header(t *testing.T) {
	srv := smallServer(t)
	c := srv.Client(lendgraph.WithHeader("X-App", "a1"))
	id := srv.Dataset().ID("agents", 0)
	if _, err := c.Agents.Get(context.Background(), id, lendgraph.WithHeader("X-Trace", "abc"), lendgraph.WithHeader("x-tenant", "t1")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Agents.Get(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Agents.Get(context.Background(), id, lendgraph.WithHeader("X-Trace", "def")); err != nil {
		t.Fatal(err)
	}
	got := apiRequests(srv, http.MethodGet, "/v1/agents/"+id)
	if len(got) != 3 || got[0].Header.Get("X-Trace") != "abc" || got[0].Header.Get("X-Tenant") != "t1" || got[0].Header.Get("X-App") != "a1" {
		t.Fatalf("headers of the call: %v", got)
	}
	if got[1].Header.Get("X-Trace") != "" || got[1].Header.Get("X-Tenant") != "" || got[1].Header.Get("X-App") != "a1" {
		t.Fatalf("a call without the option: %v", got[1].Header)
	}
	if v := got[2].Header.Values("X-Trace"); len(v) != 1 || v[0] != "def" || got[2].Header.Get("X-Tenant") != "" {
		t.Fatalf("a later call carries another call's header: %v", got[2].Header)
	}

	before := len(srv.Requests())
	for _, name := range []string{"x-api-key", "Authorization", "Host", "Content-Type", "traceparent", "bad name", ""} {
		_, err := c.Agents.Get(context.Background(), id, lendgraph.WithHeader(name, "evil"))
		var ia *lendgraph.InvalidArgumentError
		if !errors.As(err, &ia) || ia.Arg != "WithHeader" {
			t.Errorf("WithHeader(%q): err = %v, want an *InvalidArgumentError for WithHeader", name, err)
		}
	}
	if n := len(srv.Requests()); n != before {
		t.Fatalf("refused headers sent %d requests", n-before)
	}
}

func TestCallOptions_HeaderStaysOnTheAPIHost(t *testing.T) {
	srv := searchServer(t)
	c := srv.Client()
	if _, err := c.Search.Host().Search(context.Background(), lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "a"},
		lendgraph.WithHeader("X-Secret-Tenant", "t1")); err != nil {
		t.Fatal(err)
	}
	var api, search int
	for _, r := range srv.Requests() {
		if r.Header.Get("X-Secret-Tenant") == "" {
			continue
		}
		switch r.Listener {
		case "api":
			api++
		default:
			search++
		}
	}
	if api == 0 || search != 0 {
		t.Fatalf("the call header reached %d API requests and %d requests to other hosts; want some and none", api, search)
	}
}

func TestCallOptions_ResponseInto(t *testing.T) {
	srv := smallServer(t)
	c := srv.Client()
	id := srv.Dataset().ID("agents", 0)
	srv.InjectFault(http.MethodGet, "/v1/agents/{id}", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 503})
	var meta lendgraph.ResponseMeta
	ctx := context.Background()
	if _, err := c.Agents.Get(ctx, id, lendgraph.WithResponseInto(&meta)); err != nil {
		t.Fatal(err)
	}
	got := apiRequests(srv, http.MethodGet, "/v1/agents/"+id)
	if meta.StatusCode != 200 || meta.Attempts != 2 || meta.Operation != "Agents.Get" || meta.RequestID == "" ||
		meta.Header.Get("Content-Type") == "" || len(got) != 2 || meta.EarlierAttemptOutcomeUnknown {
		t.Fatalf("meta = %+v after %d requests", meta, len(got))
	}

	// An iterator leaves the last page's.
	meta = lendgraph.ResponseMeta{}
	for _, err := range c.Agents.All(ctx, &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 20}}, lendgraph.WithResponseInto(&meta)) {
		if err != nil {
			t.Fatal(err)
		}
	}
	pages := len(apiRequests(srv, http.MethodPost, "/v1/agents"))
	if pages < 2 || meta.Operation != "Agents.All" || meta.StatusCode != 200 || meta.Attempts != 1 {
		t.Fatalf("after %d pages meta = %+v", pages, meta)
	}
}

func TestCallOptions_ResponseIntoError(t *testing.T) {
	srv := smallServer(t)
	c := srv.Client()
	var meta lendgraph.ResponseMeta
	_, err := c.Agents.Get(context.Background(), "no-such-agent", lendgraph.WithResponseInto(&meta))
	var apiErr *lendgraph.APIError
	if !errors.As(err, &apiErr) || meta.StatusCode != 404 || meta.RequestID != apiErr.RequestID || meta.Attempts != 1 {
		t.Fatalf("err %v, meta %+v", err, meta)
	}
}

func TestMiddleware_SeesEveryAttemptWithItsOperation(t *testing.T) {
	srv := smallServer(t)
	var mu sync.Mutex
	var seen []string
	mw := func(req *http.Request, next lendgraph.MiddlewareNext) (*http.Response, error) {
		mu.Lock()
		seen = append(seen, lendgraph.OperationFrom(req.Context())+" key="+req.Header.Get("x-api-key"))
		mu.Unlock()
		req.Header.Set("X-From-Middleware", "1")
		resp, err := next(req)
		if resp != nil {
			resp.Header.Set("X-Seen", "yes")
		}
		return resp, err
	}
	hc := &http.Client{Transport: http.DefaultTransport}
	c := srv.Client(lendgraph.WithHTTPClient(hc), lendgraph.WithMiddleware(mw))
	id := srv.Dataset().ID("agents", 0)
	srv.InjectFault(http.MethodGet, "/v1/agents/{id}", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 502})
	var meta lendgraph.ResponseMeta
	ctx := context.Background()
	if _, err := c.Agents.Get(ctx, id, lendgraph.WithResponseInto(&meta)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Agents.List(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"Agents.Get key=", "Agents.Get key=", "Agents.List key="}
	if strings.Join(seen, "|") != strings.Join(want, "|") {
		t.Fatalf("middleware saw %q, want %q (one per attempt, no key)", seen, want)
	}
	if meta.Header.Get("X-Seen") != "yes" {
		t.Fatal("the middleware's change to the response was lost")
	}
	got := apiRequests(srv, http.MethodGet, "/v1/agents/"+id)
	if len(got) != 2 || got[1].Header.Get("X-From-Middleware") != "1" || got[1].Header.Get("x-api-key") == "" {
		t.Fatalf("the server saw %v", got)
	}
	if _, err := lendgraph.NewClient(lendgraph.WithMiddleware(nil)); err == nil {
		t.Fatal("a nil middleware was accepted")
	}
}

func TestWithLogger_RetriesTiedTogether(t *testing.T) {
	srv := smallServer(t)
	var buf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(&lockedWriter{w: &buf, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := srv.Client(lendgraph.WithLogger(logger), lendgraph.WithMaxRetries(2))
	id := srv.Dataset().ID("agents", 0)
	srv.InjectFault(http.MethodGet, "/v1/agents/{id}", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 503, Times: -1})
	if _, err := c.Agents.Get(context.Background(), id); err == nil {
		t.Fatal("want the 503")
	}
	mu.Lock()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	mu.Unlock()
	if len(lines) != 4 {
		t.Fatalf("%d log lines, want 3 attempts and one final line:\n%s", len(lines), buf.String())
	}
	for i, l := range lines[:3] {
		if !strings.Contains(l, `"operation":"Agents.Get"`) || !strings.Contains(l, `"attempt":`+string(rune('1'+i))) {
			t.Errorf("attempt line %d: %s", i+1, l)
		}
		if i > 0 && (!strings.Contains(l, `"retry_reason":"status 503"`) || !strings.Contains(l, `"backoff":`)) {
			t.Errorf("retry line %d carries no reason or backoff: %s", i+1, l)
		}
	}
	if !strings.Contains(lines[3], `"level":"WARN"`) || !strings.Contains(lines[3], "call failed") ||
		!strings.Contains(lines[3], `"attempts":3`) {
		t.Errorf("final line: %s", lines[3])
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestWithRetryBudget(t *testing.T) {
	srv := smallServer(t)
	// 12 tokens: two retries after a 503 (5 each), not a third.
	c := srv.Client(lendgraph.WithRetryBudget(12), lendgraph.WithMaxRetries(5))
	id := srv.Dataset().ID("agents", 0)
	srv.InjectFault(http.MethodGet, "/v1/agents/{id}", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 503, Times: -1})
	_, _ = c.Agents.Get(context.Background(), id)
	if n := len(apiRequests(srv, http.MethodGet, "/v1/agents/"+id)); n != 3 {
		t.Fatalf("the server saw %d attempts, want 3 (the budget allows two retries)", n)
	}
	// 0 turns the budget off: the retry count alone bounds retries.
	c = srv.Client(lendgraph.WithRetryBudget(0), lendgraph.WithMaxRetries(5))
	for range 3 {
		_, _ = c.Agents.Get(context.Background(), id)
	}
	if n := len(apiRequests(srv, http.MethodGet, "/v1/agents/"+id)); n != 3+18 {
		t.Fatalf("the server saw %d attempts, want 3+18", n)
	}
	if _, err := lendgraph.NewClient(lendgraph.WithRetryBudget(-1)); err == nil {
		t.Fatal("a negative budget was accepted")
	}
}

func TestCallOptions_BadOptionsSendNothing(t *testing.T) {
	srv := smallServer(t)
	c := srv.Client()
	var nilOpt lendgraph.Option
	for name, opt := range map[string]lendgraph.Option{
		"WithMaxRetries":     lendgraph.WithMaxRetries(-1),
		"WithAttemptTimeout": lendgraph.WithAttemptTimeout(-time.Second),
		"WithRetryBackoff":   lendgraph.WithRetryBackoff(2*time.Second, time.Second), // base above max
		"WithResponseInto":   lendgraph.WithResponseInto(nil),
		"WithAPIKey":         lendgraph.WithAPIKey("other"),     // a client's, not a call's
		"WithRetryBudget":    lendgraph.WithRetryBudget(10),     // a client's, not a call's
		"WithBaseURL":        lendgraph.WithBaseURL("http://x"), // a client's, not a call's
		"option":             nilOpt,
	} {
		_, err := c.Agents.List(context.Background(), nil, opt)
		var ia *lendgraph.InvalidArgumentError
		if !errors.As(err, &ia) || ia.Arg != name {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("bad options sent %d requests", n)
	}
	// An option that describes one call is refused by NewClient.
	var meta lendgraph.ResponseMeta
	_, err := lendgraph.NewClient(lendgraph.WithResponseInto(&meta))
	var ia *lendgraph.InvalidArgumentError
	if !errors.As(err, &ia) || ia.Arg != "WithResponseInto" {
		t.Errorf("NewClient(WithResponseInto): %v", err)
	}
}

// Methods that make several requests (Wait, Download, Rows) name them
// after the operation that makes them, and per-call options reach each of
// them.
func TestOperationFrom_MultiRequestMethods(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(300))
	var mu sync.Mutex
	ops := map[string]int{}
	c := srv.Client(lendgraph.WithMiddleware(func(req *http.Request, next lendgraph.MiddlewareNext) (*http.Response, error) {
		mu.Lock()
		ops[lendgraph.OperationFrom(req.Context())]++
		mu.Unlock()
		return next(req)
	}))
	ctx := context.Background()
	trace := lendgraph.WithHeader("X-Job-Trace", "j1")
	job, err := c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatNDJSON}, trace)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := job.Wait(ctx, lendgraph.WithPollInterval(time.Millisecond, 5*time.Millisecond), trace); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := job.Download(ctx, &buf, trace); err != nil {
		t.Fatal(err)
	}
	if err := firstErr(job.Rows(ctx, trace)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// The waits inside Download and Rows are operations DeliveryJob.Wait
	// of their own, as the observer sees them; the storage requests reach
	// no middleware.
	for _, op := range []string{"Agents.Deliver", "DeliveryJob.Wait"} {
		if ops[op] == 0 {
			t.Errorf("no attempt named %s: %v", op, ops)
		}
	}
	for op := range ops {
		switch op {
		case "Agents.Deliver", "DeliveryJob.Wait", "DeliveryJob.Download", "DeliveryJob.Rows":
		default:
			t.Errorf("an attempt named %q", op)
		}
	}
	var api, traced int
	for _, r := range srv.Requests() {
		if r.Listener == "api" {
			api++
			if r.Header.Get("X-Job-Trace") == "j1" {
				traced++
			}
		} else if r.Header.Get("X-Job-Trace") != "" {
			t.Errorf("the call header reached the %s listener", r.Listener)
		}
	}
	if api == 0 || traced != api {
		t.Fatalf("%d of %d API requests carried the call header", traced, api)
	}
}

// TestResponseMeta_RateLimit: the X- headers first, the IETF draft's names
// when they are absent, "" when neither is sent.
func TestResponseMeta_RateLimit(t *testing.T) {
	for _, c := range []struct {
		header http.Header
		want   [3]string
	}{
		{http.Header{"X-Ratelimit-Limit": {"100"}, "X-Ratelimit-Remaining": {"7"}, "X-Ratelimit-Reset": {"30"}}, [3]string{"100", "7", "30"}},
		{http.Header{"Ratelimit-Limit": {"50"}, "Ratelimit-Remaining": {"1"}, "Ratelimit-Reset": {"9"}}, [3]string{"50", "1", "9"}},
		{http.Header{"X-Ratelimit-Limit": {"100"}, "Ratelimit-Limit": {"50"}}, [3]string{"100", "", ""}},
		{http.Header{}, [3]string{}},
	} {
		m := &lendgraph.ResponseMeta{Header: c.header}
		l, r, s := m.RateLimit()
		if got := [3]string{l, r, s}; got != c.want {
			t.Errorf("RateLimit() of %v = %q, want %q", c.header, got, c.want)
		}
	}
	var none *lendgraph.ResponseMeta
	if l, r, s := none.RateLimit(); l+r+s != "" {
		t.Errorf("nil meta: %q %q %q", l, r, s)
	}
}

// Middleware order: the client's run outside a call's, and within each
// list the first given is the outermost (it sees the request first and the
// response last).
func TestMiddleware_Order(t *testing.T) {
	srv := smallServer(t)
	var mu sync.Mutex
	var trail []string
	mark := func(name string) lendgraph.Middleware {
		return func(req *http.Request, next lendgraph.MiddlewareNext) (*http.Response, error) {
			mu.Lock()
			trail = append(trail, name+">")
			mu.Unlock()
			resp, err := next(req)
			mu.Lock()
			trail = append(trail, "<"+name)
			mu.Unlock()
			return resp, err
		}
	}
	c := srv.Client(lendgraph.WithMiddleware(mark("c1"), mark("c2")))
	if _, err := c.Agents.List(context.Background(), nil, lendgraph.WithMiddleware(mark("k1")), lendgraph.WithMiddleware(mark("k2"))); err != nil {
		t.Fatal(err)
	}
	want := "c1> c2> k1> k2> <k2 <k1 <c2 <c1"
	if got := strings.Join(trail, " "); got != want {
		t.Fatalf("middleware ran %q, want %q", got, want)
	}
	// A call's middleware does not stay on the client.
	trail = nil
	if _, err := c.Agents.List(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(trail, " "); got != "c1> c2> <c2 <c1" {
		t.Fatalf("a later call ran %q", got)
	}
}

// A spent retry budget says so: in the error (ErrRetryBudgetExhausted), in
// a warning line, and to the observer.
func TestRetryBudget_ExhaustedSaysSo(t *testing.T) {
	srv := smallServer(t)
	var buf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(&lockedWriter{w: &buf, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	obs := &recObserver{}
	c := srv.Client(lendgraph.WithRetryBudget(10), lendgraph.WithMaxRetries(3), lendgraph.WithLogger(logger), lendgraph.WithObserver(obs))
	id := srv.Dataset().ID("agents", 0)
	srv.InjectFault(http.MethodGet, "/v1/agents/{id}", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 503, Times: -1})
	_, err := c.Agents.Get(context.Background(), id)
	if !errors.Is(err, lendgraph.ErrUnavailable) || !errors.Is(err, lendgraph.ErrRetryBudgetExhausted) {
		t.Fatalf("first call: %v, want a 503 that also says the budget is spent", err)
	}
	if n := len(apiRequests(srv, http.MethodGet, "/v1/agents/"+id)); n != 3 {
		t.Fatalf("the server saw %d attempts, want 3 (two retries of 5 tokens, then none left)", n)
	}
	_, err = c.Agents.Get(context.Background(), id)
	if !errors.Is(err, lendgraph.ErrRetryBudgetExhausted) || !strings.Contains(err.Error(), "retry budget") {
		t.Fatalf("second call: %v", err)
	}
	if n := len(apiRequests(srv, http.MethodGet, "/v1/agents/"+id)); n != 4 {
		t.Fatalf("the server saw %d attempts in all, want 4", n)
	}
	mu.Lock()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	mu.Unlock()
	if len(lines) != 2 || !strings.Contains(lines[1], `"retry_budget_exhausted":true`) || !strings.Contains(lines[1], `"level":"WARN"`) {
		t.Fatalf("warning lines:\n%s", buf.String())
	}
	var flagged int
	obs.mu.Lock()
	for _, o := range obs.ops {
		if o.sum.RetryBudgetExhausted {
			flagged++
		}
	}
	obs.mu.Unlock()
	if flagged != 2 {
		t.Fatalf("%d operations told the observer the budget was spent, want 2", flagged)
	}
}

// The budget's figures, through a client: a retry after a transport error
// costs 10 tokens, one after a 5xx 5, a success gives one back, and the
// budget never grows past its size.
func TestRetryBudget_TransportCostAndRefundCap(t *testing.T) {
	srv := smallServer(t)
	id := srv.Dataset().ID("agents", 0)
	path := "/v1/agents/" + id
	// A client of its own: each attempt opens a new connection (Go's
	// transport silently repeats a GET whose reused connection drops).
	c := srv.Client(lendgraph.WithRetryBudget(25), lendgraph.WithMaxRetries(5))
	srv.InjectFault(http.MethodGet, "/v1/agents/{id}", lendgraphtest.Fault{Kind: lendgraphtest.DropBeforeResponse, Times: -1})
	_, _ = c.Agents.Get(context.Background(), id)
	if n := len(apiRequests(srv, http.MethodGet, path)); n != 3 {
		t.Fatalf("25 tokens: the server saw %d attempts, want 3 (two transport retries of 10)", n)
	}
	srv.ClearFaults()

	c = srv.Client(lendgraph.WithRetryBudget(25), lendgraph.WithMaxRetries(10))
	fail := lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 503, Times: -1}
	srv.InjectFault(http.MethodGet, "/v1/agents/{id}", fail)
	_, _ = c.Agents.Get(context.Background(), id)
	if n := len(apiRequests(srv, http.MethodGet, path)); n != 3+6 {
		t.Fatalf("25 tokens: the server saw %d attempts, want 6 (five retries of 5)", n-3)
	}
	srv.ClearFaults()
	for range 30 {
		if _, err := c.Agents.List(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
	}
	srv.InjectFault(http.MethodGet, "/v1/agents/{id}", fail)
	_, _ = c.Agents.Get(context.Background(), id)
	if n := len(apiRequests(srv, http.MethodGet, path)); n != 3+6+6 {
		t.Fatalf("after 30 successes the server saw %d more attempts, want 6: the refunds stop at the size (25)", n-9)
	}
}

// Calls made at once on one client, each with a header of its own, never
// see each other's: every request the server sees carries exactly its own
// call's value.
func TestCallOptions_HeadersOfConcurrentCallsStayApart(t *testing.T) {
	srv := smallServer(t)
	c := srv.Client(lendgraph.WithHeader("X-App", "a1"))
	id := srv.Dataset().ID("agents", 0)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 5 {
				if _, err := c.Agents.Get(context.Background(), id, lendgraph.WithHeader("X-Call", strconv.Itoa(i))); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	seen := map[string]int{}
	for _, r := range apiRequests(srv, http.MethodGet, "/v1/agents/"+id) {
		calls, apps := r.Header.Values("X-Call"), r.Header.Values("X-App")
		if len(calls) != 1 || len(apps) != 1 || apps[0] != "a1" {
			t.Fatalf("a request carried X-Call %q and X-App %q", calls, apps)
		}
		seen[calls[0]]++
	}
	for i := range 8 {
		if seen[strconv.Itoa(i)] != 5 {
			t.Fatalf("call headers seen %v, want 5 of each", seen)
		}
	}
}

// TestMiddleware_NilResponseNamesTheMiddleware: a middleware that returns
// neither a response nor an error fails the call with an error that says
// so, not one naming the SDK's internal transport.
func TestMiddleware_NilResponseNamesTheMiddleware(t *testing.T) {
	srv := smallServer(t)
	pass := func(req *http.Request, next lendgraph.MiddlewareNext) (*http.Response, error) { return next(req) }
	broken := func(*http.Request, lendgraph.MiddlewareNext) (*http.Response, error) { return nil, nil }
	_, err := srv.Client(lendgraph.WithMiddleware(pass, broken)).Agents.List(context.Background(), nil, lendgraph.WithMaxRetries(0))
	if err == nil || !strings.Contains(err.Error(), "middleware 2 of 2 returned no response and no error") || strings.Contains(err.Error(), "runner") {
		t.Fatalf("err = %v", err)
	}
}
