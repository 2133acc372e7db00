package lendgraph_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// call is one SDK call of a given retry kind, with the route the fake sees.
type call struct {
	name, method, path string
	repeatable         bool // may be repeated after the server may have acted
	do                 func(ctx context.Context, c *lendgraph.Client) error
}

var calls = []call{
	{"list", http.MethodPost, "/v1/agents", true, func(ctx context.Context, c *lendgraph.Client) error {
		_, err := c.Agents.List(ctx, nil)
		return err
	}},
	{"get", http.MethodGet, "/v1/agents/agt_0000001", true, func(ctx context.Context, c *lendgraph.Client) error {
		_, err := c.Agents.Get(ctx, "agt_0000001")
		return err
	}},
	{"unrepeatable-post", http.MethodPost, "/v1/agents", false, func(ctx context.Context, c *lendgraph.Client) error {
		return c.Do(ctx, http.MethodPost, "/v1/agents", map[string]any{}, nil)
	}},
}

func TestRetry_Matrix(t *testing.T) {
	const maxRetries = 2
	for _, cl := range calls {
		for _, status := range []int{429, 500, 502, 503, 504, 400, 404} {
			t.Run(fmt.Sprintf("%s/%d", cl.name, status), func(t *testing.T) {
				t.Parallel()
				srv := smallServer(t)
				srv.InjectFault(cl.method, cl.path, lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: status,
					Body: `{"error":"injected"}`, Times: -1})
				c := srv.Client(lendgraph.WithMaxRetries(maxRetries))
				err := cl.do(context.Background(), c)
				var apiErr *lendgraph.APIError
				if !errors.As(err, &apiErr) || apiErr.StatusCode != status || apiErr.Message != "injected" {
					t.Fatalf("err = %v, want an *APIError with status %d", err, status)
				}
				retried := status == 429 || (status >= 500 && cl.repeatable)
				want := 1
				if retried {
					want = maxRetries + 1
				}
				if got := srv.CountRequests(cl.method, cl.path); got != want {
					t.Fatalf("%d attempts, want %d", got, want)
				}
			})
		}
		t.Run(cl.name+"/reset-after-send", func(t *testing.T) {
			t.Parallel()
			srv := smallServer(t)
			srv.InjectFault(cl.method, cl.path, lendgraphtest.Fault{Kind: lendgraphtest.DropBeforeResponse, Times: -1})
			err := cl.do(context.Background(), srv.Client(lendgraph.WithMaxRetries(maxRetries)))
			var te *lendgraph.TransportError
			if !errors.As(err, &te) {
				t.Fatalf("err = %v, want *TransportError", err)
			}
			want := 1
			if cl.repeatable {
				want = maxRetries + 1
			}
			if got := srv.CountRequests(cl.method, cl.path); got != want {
				t.Fatalf("%d attempts, want %d", got, want)
			}
		})
		t.Run(cl.name+"/connection-refused", func(t *testing.T) {
			t.Parallel()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close()
			ct := &countingTransport{next: http.DefaultTransport}
			c, err := lendgraph.NewClient(lendgraph.WithAPIKey("k"), lendgraph.WithBaseURL("http://"+addr),
				lendgraph.WithHTTPClient(&http.Client{Transport: ct}), lendgraph.WithMaxRetries(maxRetries),
				lendgraph.WithRetryBackoff(time.Millisecond, time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			err = cl.do(context.Background(), c)
			var te *lendgraph.TransportError
			if !errors.As(err, &te) {
				t.Fatalf("err = %v, want *TransportError", err)
			}
			// A connection that never opened is retried for every kind.
			if got := ct.n.Load(); got != maxRetries+1 {
				t.Fatalf("%d attempts, want %d", got, maxRetries+1)
			}
		})
	}
}

func TestRetry_SucceedsAfterTransientFailures(t *testing.T) {
	srv := smallServer(t)
	srv.InjectFault("POST", "/v1/agents", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 503, Times: 2})
	page, err := srv.Client().Agents.List(context.Background(), nil)
	if err != nil || len(page.Data) == 0 {
		t.Fatalf("List: %v", err)
	}
	if n := srv.CountRequests("POST", "/v1/agents"); n != 3 {
		t.Fatalf("%d attempts, want 3", n)
	}
}

type countingTransport struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.n.Add(1)
	return t.next.RoundTrip(r)
}

func TestRetry_HonoursRetryAfter(t *testing.T) {
	t.Run("seconds", func(t *testing.T) {
		srv := smallServer(t)
		srv.InjectFault("POST", "/v1/agents", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 429,
			Header: map[string]string{"Retry-After": "1"}, Body: `{"error":"slow down"}`})
		start := time.Now()
		if _, err := srv.Client().Agents.List(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < 900*time.Millisecond {
			t.Fatalf("retried after %v, before the server's Retry-After of 1s", d)
		}
	})
	t.Run("http-date", func(t *testing.T) {
		srv := smallServer(t)
		srv.InjectFault("POST", "/v1/agents", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 503,
			Header: map[string]string{"Retry-After": time.Now().Add(2 * time.Second).UTC().Format(http.TimeFormat)}})
		start := time.Now()
		if _, err := srv.Client().Agents.List(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		// The date has one-second resolution: at least about one second.
		if d := time.Since(start); d < 900*time.Millisecond {
			t.Fatalf("retried after %v, before the server's Retry-After date", d)
		}
	})
	for _, v := range []string{"", "soon", "-5"} {
		t.Run("absent-or-garbage/"+v, func(t *testing.T) {
			srv := smallServer(t)
			h := map[string]string{}
			if v != "" {
				h["Retry-After"] = v
			}
			srv.InjectFault("POST", "/v1/agents", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 429, Header: h, Times: 2})
			if _, err := srv.Client().Agents.List(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			if n := srv.CountRequests("POST", "/v1/agents"); n != 3 {
				t.Fatalf("%d attempts, want 3 (backoff used instead)", n)
			}
		})
	}
	t.Run("huge", func(t *testing.T) {
		srv := smallServer(t)
		srv.InjectFault("POST", "/v1/agents", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 429,
			Header: map[string]string{"Retry-After": "86400"}, Body: `{"error":"quota exhausted"}`, Times: -1})
		start := time.Now()
		_, err := srv.Client().Agents.List(context.Background(), nil)
		var rl *lendgraph.RateLimitError
		if !errors.As(err, &rl) || rl.RetryAfter != 24*time.Hour || !errors.Is(err, lendgraph.ErrRateLimited) {
			t.Fatalf("err = %#v, want *RateLimitError with RetryAfter 24h", err)
		}
		if n := srv.CountRequests("POST", "/v1/agents"); n != 1 {
			t.Fatalf("%d attempts, want 1: a day-long Retry-After is the caller's decision", n)
		}
		if time.Since(start) > 10*time.Second {
			t.Fatal("the call waited")
		}
	})
}

func TestRetry_CancelStopsBackoff(t *testing.T) {
	srv := smallServer(t)
	srv.InjectFault("POST", "/v1/agents", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 503,
		Header: map[string]string{"Retry-After": "30"}, Times: -1})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for srv.CountRequests("POST", "/v1/agents") == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	start := time.Now()
	_, err := srv.Client().Agents.List(ctx, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("cancel took %v to stop a 30s backoff", d)
	}
	if n := srv.CountRequests("POST", "/v1/agents"); n != 1 {
		t.Fatalf("%d attempts after cancel", n)
	}
}

func TestRetry_BudgetSharedByClient(t *testing.T) {
	srv := smallServer(t)
	srv.InjectFault("POST", "/v1/agents", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 503, Times: -1})
	c := srv.Client(lendgraph.WithMaxRetries(3))
	// The budget holds 500 tokens and a retry after a status costs 5:
	// 100 retries for the whole client, then every call fails at its
	// first error. Goroutines share it.
	const calls = 40
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() {
			if _, err := c.Agents.List(context.Background(), nil); err == nil {
				t.Error("List succeeded against a failing API")
			}
		})
	}
	wg.Wait()
	if n := srv.CountRequests("POST", "/v1/agents"); n != calls+100 {
		t.Fatalf("%d requests, want %d (%d calls + a budget of 100 retries)", n, calls+100, calls)
	}
}

func TestRetry_RateLimitInside(t *testing.T) {
	srv := smallServer(t)
	srv.InjectFault("POST", "/v1/agents", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 503, Times: -1})
	// Three tokens, then one an hour: the fourth attempt cannot happen
	// before the deadline.
	c := srv.Client(lendgraph.WithMaxRetries(5), lendgraph.WithRateLimit(1.0/3600, 3))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := c.Agents.List(ctx, nil)
	// The caller's context is live: the refusal is the client's own, says
	// nothing was sent, and is no deadline.
	var refused *lendgraph.ClientRateLimitError
	if !errors.As(err, &refused) || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "not sent") ||
		refused.Path != "/v1/agents" || refused.Deadline.IsZero() {
		t.Fatalf("err = %v, want a *ClientRateLimitError that is not context.DeadlineExceeded", err)
	}
	var te *lendgraph.TransportError
	if errors.As(err, &te) {
		t.Fatalf("err = %v is a *TransportError, although nothing was sent", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the call waited for the deadline instead of failing at once")
	}
	if n := srv.CountRequests("POST", "/v1/agents"); n != 3 {
		t.Fatalf("%d attempts, want 3: every attempt takes a token", n)
	}
}

func TestRequest_TrailingGarbageIsDecodeError(t *testing.T) {
	srv := smallServer(t)
	srv.InjectFault("POST", "/v1/agents", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 200,
		Header: map[string]string{"Content-Type": "application/json"}, Body: `{"data":[],"total":0} {"x":1}`})
	_, err := srv.Client().Agents.List(context.Background(), nil)
	var de *lendgraph.DecodeError
	if !errors.As(err, &de) || de.StatusCode != 200 || de.RequestID == "" {
		t.Fatalf("err = %v, want *DecodeError with the request id", err)
	}
}

func TestRequest_HTMLSuccessBodyIsDecodeError(t *testing.T) {
	srv := smallServer(t)
	srv.InjectFault("GET", "/v1/agents/*", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 200,
		Header: map[string]string{"Content-Type": "text/html"}, Body: `<html>captive portal</html>`})
	_, err := srv.Client().Agents.Get(context.Background(), "agt_0000001")
	var de *lendgraph.DecodeError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "text/html") {
		t.Fatalf("err = %v, want *DecodeError naming the content type", err)
	}
}

func TestRequest_ErrorBodyReadUnderCap(t *testing.T) {
	srv := smallServer(t)
	huge := `{"error":"big","pad":"` + strings.Repeat("x", 1<<20) + `"}`
	srv.InjectFault("GET", "/v1/agents/*", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 400, Body: huge})
	_, err := srv.Client().Agents.Get(context.Background(), "agt_0000001")
	var apiErr *lendgraph.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v", err)
	}
	if !apiErr.Truncated || len(apiErr.Body) != 64<<10 {
		t.Fatalf("body kept %d bytes, truncated=%v", len(apiErr.Body), apiErr.Truncated)
	}
}

func TestRequest_MidBodyDrop(t *testing.T) {
	srv := smallServer(t)
	c := srv.Client(lendgraph.WithMaxRetries(2))
	ctx := context.Background()

	// A list read cut mid-body is repeated.
	srv.InjectFault("POST", "/v1/agents", lendgraphtest.Fault{Kind: lendgraphtest.DropMidBody})
	page, err := c.Agents.List(ctx, nil)
	if err != nil || len(page.Data) != 25 {
		t.Fatalf("List after a cut body: %v", err)
	}
	if n := srv.CountRequests("POST", "/v1/agents"); n != 2 {
		t.Fatalf("%d attempts, want 2", n)
	}

	// Until the retries run out: the cut body surfaces as a *DecodeError.
	srv.InjectFault("GET", "/v1/agents/*", lendgraphtest.Fault{Kind: lendgraphtest.DropMidBody, Times: -1})
	_, err = c.Agents.Get(ctx, "agt_0000001")
	var de *lendgraph.DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("err = %v, want *DecodeError for a body cut mid-way", err)
	}
	if n := srv.CountRequests("GET", "/v1/agents/*"); n != 3 {
		t.Fatalf("%d attempts, want 3", n)
	}

	// A call that may have acted is not repeated.
	srv.ResetRequests()
	srv.InjectFault("POST", "/v1/agents", lendgraphtest.Fault{Kind: lendgraphtest.DropMidBody})
	var out map[string]any
	err = c.Do(ctx, "POST", "/v1/agents", map[string]any{}, &out)
	if !errors.As(err, &de) || srv.CountRequests("POST", "/v1/agents") != 1 {
		t.Fatalf("unrepeatable call: %v after %d attempts", err, srv.CountRequests("POST", "/v1/agents"))
	}
}

// Every call that puts an id in a path sends it escaped exactly once: the
// server decodes the very id the caller passed.
func TestClient_PathIDsEscapedOnce(t *testing.T) {
	ids := []string{"prop 1", "a/b", "100%", "q?x=1", "h#frag", "plain_id", "é"}
	calls := map[string]struct {
		call func(c *lendgraph.Client, ctx context.Context, id string) error
		path func(id string) string
	}{
		"Agents.Get": {func(c *lendgraph.Client, ctx context.Context, id string) error {
			_, err := c.Agents.Get(ctx, id)
			return err
		}, func(id string) string { return "/v1/agents/" + id }},
		"Loans.Get": {func(c *lendgraph.Client, ctx context.Context, id string) error {
			_, err := c.Loans.Get(ctx, id)
			return err
		}, func(id string) string { return "/v1/loans/" + id }},
		"Properties.Enrich": {func(c *lendgraph.Client, ctx context.Context, id string) error {
			_, err := c.Properties.Enrich(ctx, id, nil)
			return err
		}, func(id string) string { return "/v1/properties/" + id + "/enrich" }},
		"Properties.Related": {func(c *lendgraph.Client, ctx context.Context, id string) error {
			_, err := c.Properties.Related(ctx, id, lendgraph.RelatedCompanies, 5)
			return err
		}, func(id string) string { return "/v1/properties/" + id + "/related" }},
		"EnrichJob.Status": {func(c *lendgraph.Client, ctx context.Context, id string) error {
			_, err := c.Properties.EnrichJob(id).Status(ctx)
			return err
		}, func(id string) string { return "/v1/properties/enrich-bulk/" + id }},
		"DeliveryJob.Status": {func(c *lendgraph.Client, ctx context.Context, id string) error {
			_, err := c.Agents.DeliveryJob(id).Status(ctx)
			return err
		}, func(id string) string { return "/v1/agents/bulk-delivery/" + id }},
		"Originators.TitleCompanies": {func(c *lendgraph.Client, ctx context.Context, id string) error {
			_, err := c.Originators.TitleCompanies(ctx, id, nil)
			return err
		}, func(id string) string { return "/v1/originators/" + id + "/breakdowns/title-companies" }},
		"Companies.Branches": {func(c *lendgraph.Client, ctx context.Context, id string) error {
			_, err := c.Companies.Branches(ctx, id, nil)
			return err
		}, func(id string) string { return "/v1/companies/" + id + "/branches" }},
	}
	for name, tc := range calls {
		t.Run(name, func(t *testing.T) {
			c, rec := recordingClient(t, lendgraph.WithMaxRetries(0))
			for i, id := range ids {
				_ = tc.call(c, context.Background(), id)
				rec.mu.Lock()
				if rec.received != i+1 {
					rec.mu.Unlock()
					t.Fatalf("id %q: the server received %d requests, want %d", id, rec.received, i+1)
				}
				got, wire := rec.paths[i], rec.escaped[i]
				rec.mu.Unlock()
				if want := tc.path(id); got != want {
					t.Errorf("id %q: the server decoded %q (wire %q), want %q", id, got, wire, want)
				}
				if strings.Contains(wire, "%25") && !strings.Contains(id, "%") {
					t.Errorf("id %q escaped twice: %q", id, wire)
				}
			}
		})
	}
}

// The ids "." and ".." would name another path once a server resolves
// them: they are refused before any request.
func TestClient_DotIDsRefused(t *testing.T) {
	c, rec := recordingClient(t)
	ctx := context.Background()
	for _, id := range []string{".", ".."} {
		_, err1 := c.Agents.Get(ctx, id)
		_, err2 := c.Properties.EnrichJob(id).Status(ctx)
		_, err3 := c.Agents.DeliveryJob(id).Cancel(ctx)
		for _, err := range []error{err1, err2, err3} {
			var ia *lendgraph.InvalidArgumentError
			if !errors.As(err, &ia) {
				t.Errorf("id %q: %v, want *InvalidArgumentError", id, err)
			}
		}
	}
	if rec.received != 0 {
		t.Fatalf("%d requests reached the server", rec.received)
	}
}

// lengthTransport answers with body, declaring length as its
// Content-Length whatever the body's size (a transport that does not hold
// a server to its Content-Length, as net/http's does).
type lengthTransport struct {
	body   string
	length int64
}

func (t lengthTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(t.body)), ContentLength: t.length, Request: req}, nil
}

// TestRequest_BodyLengthNotAsDeclared: the SDK reads an answer's body to
// its end whatever length it declared: longer, shorter or unknown.
func TestRequest_BodyLengthNotAsDeclared(t *testing.T) {
	body := `{"id":"agt_0000001","fullName":"` + strings.Repeat("x", 2000) + `","city":"Austin","zip":"78701"}`
	for _, length := range []int64{0, 10, int64(len(body)) - 1, int64(len(body)), int64(len(body)) + 1, 1 << 20, -1} {
		c, err := lendgraph.NewClient(lendgraph.WithAPIKey("lg_test_length"), lendgraph.WithBaseURL("http://127.0.0.1:1"),
			lendgraph.WithHTTPClient(&http.Client{Transport: lengthTransport{body: body, length: length}}))
		if err != nil {
			t.Fatal(err)
		}
		a, err := c.Agents.Get(context.Background(), "agt_0000001")
		if err != nil || len(a.FullName) != 2000 || !a.Extra.Has("zip") {
			t.Fatalf("declared %d of %d bytes: %+v, %v", length, len(body), a, err)
		}
	}
}
