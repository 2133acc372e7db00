package lendgraph_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

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

func TestRetryMatrix(t *testing.T) {
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

func TestRetrySucceedsAfterTransientFailures(t *testing.T) {
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

func TestRetryAfter(t *testing.T) {
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

func TestContextCancelStopsBackoff(t *testing.T) {
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

func TestRetryBudgetSharedByClient(t *testing.T) {
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

func TestRateLimitInsideRetries(t *testing.T) {
	srv := smallServer(t)
	srv.InjectFault("POST", "/v1/agents", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 503, Times: -1})
	// Three tokens, then one an hour: the fourth attempt cannot happen
	// before the deadline.
	c := srv.Client(lendgraph.WithMaxRetries(5), lendgraph.WithRateLimit(rate.Every(time.Hour), 3))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := c.Agents.List(ctx, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want one that errors.Is context.DeadlineExceeded", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the call waited for the deadline instead of failing at once")
	}
	if n := srv.CountRequests("POST", "/v1/agents"); n != 3 {
		t.Fatalf("%d attempts, want 3: every attempt takes a token", n)
	}
}

// headerTransport is a user's transport: it adds a header and counts.
type headerTransport struct {
	n atomic.Int64
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.n.Add(1)
	r = r.Clone(r.Context())
	r.Header.Set("X-User-Transport", "yes")
	return http.DefaultTransport.RoundTrip(r)
}

func TestWithHTTPClientWrapsTransport(t *testing.T) {
	srv := smallServer(t)
	ut := &headerTransport{}
	hc := &http.Client{Transport: ut, Timeout: time.Minute}
	c := srv.Client(lendgraph.WithHTTPClient(hc), lendgraph.WithUserAgent("my-app/2.0"), lendgraph.WithBearerAuth())
	if _, err := c.Agents.List(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if hc.Transport != ut || hc.CheckRedirect != nil || hc.Timeout != time.Minute {
		t.Fatal("WithHTTPClient mutated the user's client")
	}
	if ut.n.Load() != 1 {
		t.Fatalf("user transport saw %d requests", ut.n.Load())
	}
	r := srv.Requests()[0]
	if r.Header.Get("X-User-Transport") != "yes" {
		t.Fatal("request did not go through the user's transport")
	}
	if ua := r.Header.Get("User-Agent"); !strings.HasPrefix(ua, "my-app/2.0 lendgraph-go/") {
		t.Fatalf("User-Agent %q", ua)
	}
	if r.Header.Get("Authorization") != "Bearer "+srv.DefaultCaller().Key || r.Header.Get("X-Api-Key") != "" {
		t.Fatalf("WithBearerAuth: headers %v", r.Header)
	}
}

func TestAPIKeyHeader(t *testing.T) {
	srv := smallServer(t)
	if _, err := srv.Client().Agents.List(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0]
	if r.Header.Get("X-Api-Key") != srv.DefaultCaller().Key || r.Header.Get("Authorization") != "" {
		t.Fatalf("headers %v", r.Header)
	}
}

func TestMissingAPIKey(t *testing.T) {
	t.Setenv(lendgraph.EnvAPIKey, "")
	srv := smallServer(t)
	c, err := lendgraph.NewClient(lendgraph.WithBaseURL(srv.URL))
	if err != nil {
		t.Fatalf("NewClient without a key: %v (the error belongs to the first call)", err)
	}
	_, err = c.Agents.List(context.Background(), nil)
	if !errors.Is(err, lendgraph.ErrMissingAPIKey) {
		t.Fatalf("err = %v, want ErrMissingAPIKey", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent without a key", n)
	}
}

func TestAPIKeyFromEnvironment(t *testing.T) {
	srv := smallServer(t)
	t.Setenv(lendgraph.EnvAPIKey, srv.DefaultCaller().Key)
	t.Setenv(lendgraph.EnvBaseURL, srv.URL)
	c, err := lendgraph.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	if c.BaseURL() != srv.URL {
		t.Fatalf("BaseURL %q", c.BaseURL())
	}
	if _, err := c.Agents.List(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}

func TestNewClientRejectsBadSettings(t *testing.T) {
	for name, opts := range map[string][]lendgraph.Option{
		"key with LF":       {lendgraph.WithAPIKey("secret\n")},
		"key with CR":       {lendgraph.WithAPIKey("sec\rret")},
		"relative base URL": {lendgraph.WithAPIKey("k"), lendgraph.WithBaseURL("/v1")},
		"ftp base URL":      {lendgraph.WithAPIKey("k"), lendgraph.WithBaseURL("ftp://x")},
		"negative retries":  {lendgraph.WithAPIKey("k"), lendgraph.WithMaxRetries(-1)},
	} {
		c, err := lendgraph.NewClient(opts...)
		if err == nil || c != nil {
			t.Errorf("%s: NewClient accepted it", name)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: error holds the key: %v", name, err)
		}
	}
}

func TestKeyNeverFollowsRedirectToAnotherOrigin(t *testing.T) {
	const key = "lg_secret_key_123"
	ok := func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"id":"agt_1"}`) }
	other := newRecorder(t, false, ok)
	var target string
	api := newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) {
		if r.Host == "api.lendgraph.test:"+portOf(r) && r.URL.Path == "/v1/agents/x" {
			http.Redirect(w, r, target, http.StatusFound)
			return
		}
		ok(w, r)
	})
	for name, to := range map[string]string{
		"other host":        "http://other.test:" + other.port + "/v1/agents/x",
		"subdomain-looking": "http://api.lendgraph.test.evil.test:" + other.port + "/v1/agents/x",
		"sibling name":      "http://evil.api.lendgraph.test:" + api.port + "/steal",
		"other port":        "http://api.lendgraph.test:" + other.port + "/v1/agents/x",
		"same origin":       "http://api.lendgraph.test:" + api.port + "/v1/agents/y",
	} {
		t.Run(name, func(t *testing.T) {
			target = to
			api.seen, other.seen = nil, nil
			tr := &http.Transport{DialContext: loopbackDialer()}
			defer tr.CloseIdleConnections()
			c, err := lendgraph.NewClient(lendgraph.WithAPIKey(key), lendgraph.WithBaseURL("http://api.lendgraph.test:"+api.port),
				lendgraph.WithHTTPClient(&http.Client{Transport: tr}))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Agents.Get(context.Background(), "x"); err != nil {
				t.Fatal(err)
			}
			all := append(api.headers(), other.headers()...)
			if len(all) != 2 {
				t.Fatalf("%d requests, want the original and the redirected one", len(all))
			}
			if all[0].Get("X-Api-Key") != key {
				t.Fatal("the API host did not get the key")
			}
			redirected := all[1]
			leaked := redirected.Get("X-Api-Key") != "" || redirected.Get("Authorization") != ""
			if name == "same origin" {
				if redirected.Get("X-Api-Key") != key {
					t.Fatal("same-origin redirect lost the key")
				}
			} else if leaked {
				t.Fatalf("key sent to %s", redirected.Get("X-Seen-Host"))
			}
		})
	}
}

func portOf(r *http.Request) string {
	_, p, _ := net.SplitHostPort(r.Host)
	return p
}

// An https API redirecting to plain http: the redirect is refused (the
// data would cross the network unencrypted); with WithInsecureHTTPLinks it
// is followed, without the key.
func TestKeyNotSentOnHTTPSToHTTPRedirect(t *testing.T) {
	const key = "lg_secret_key_456"
	plain := newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"id":"a"}`) })
	secure := newRecorder(t, true, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://127.0.0.1:"+plain.port+r.URL.Path, http.StatusMovedPermanently)
	})
	for _, insecure := range []bool{false, true} {
		for _, bearer := range []bool{false, true} {
			opts := []lendgraph.Option{lendgraph.WithAPIKey(key), lendgraph.WithBaseURL(secure.srv.URL),
				lendgraph.WithHTTPClient(secure.srv.Client())}
			if bearer {
				opts = append(opts, lendgraph.WithBearerAuth())
			}
			if insecure {
				opts = append(opts, lendgraph.WithInsecureHTTPLinks())
			}
			c, err := lendgraph.NewClient(opts...)
			if err != nil {
				t.Fatal(err)
			}
			before := len(plain.headers())
			_, err = c.Agents.Get(context.Background(), "a")
			if insecure && err != nil {
				t.Fatal(err)
			}
			if !insecure && (!errors.Is(err, lendgraph.ErrUnsafeLink) || len(plain.headers()) != before) {
				t.Fatalf("https to http redirect: err %v, %d requests over http", err, len(plain.headers())-before)
			}
		}
	}
	for _, h := range plain.headers() {
		if h.Get("X-Api-Key") != "" || h.Get("Authorization") != "" {
			t.Fatalf("key sent over plain http after a redirect: %v", h)
		}
	}
	if len(plain.headers()) != 2 {
		t.Fatalf("plain host got %d requests", len(plain.headers()))
	}
}

func TestPOSTRedirectToAnotherHostNotFollowed(t *testing.T) {
	other := newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{}`) })
	api := newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.srv.URL+"/v1/agents", http.StatusTemporaryRedirect)
	})
	c, err := lendgraph.NewClient(lendgraph.WithAPIKey("k"), lendgraph.WithBaseURL(api.srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	for _, do := range []func() error{
		func() error { return c.Do(context.Background(), http.MethodPost, "/v1/agents", map[string]any{}, nil) },
		func() error { _, err := c.Agents.List(context.Background(), nil); return err },
	} {
		err := do()
		if err == nil || !strings.Contains(err.Error(), "redirect") {
			t.Fatalf("err = %v, want a refused redirect", err)
		}
	}
	if n := len(other.headers()); n != 0 {
		t.Fatalf("the other host got %d requests", n)
	}
	if n := len(api.headers()); n != 2 {
		t.Fatalf("the API got %d requests, want 2 (no retries of a refused redirect)", n)
	}
}

func TestKeyNeverPrinted(t *testing.T) {
	srv := smallServer(t)
	key := srv.DefaultCaller().Key
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := srv.Client(lendgraph.WithLogger(logger), lendgraph.WithMaxRetries(1))
	bad := srv.Client(lendgraph.WithAPIKey(key+"x"), lendgraph.WithLogger(logger))
	srv.InjectFault("GET", "/v1/agents/*", lendgraphtest.Fault{Kind: lendgraphtest.DropBeforeResponse})
	ctx := context.Background()
	var errs []error
	_, err := c.Agents.Get(ctx, "agt_0000001") // dropped once, then retried
	errs = append(errs, err)
	_, err = c.Agents.Get(ctx, "nope")
	errs = append(errs, err)
	_, err = bad.Agents.List(ctx, nil)
	errs = append(errs, err)
	if !errors.Is(err, lendgraph.ErrUnauthorized) {
		t.Fatalf("wrong key: %v", err)
	}
	if !strings.Contains(buf.String(), "/v1/agents") {
		t.Fatalf("WithLogger at debug logged nothing useful:\n%s", buf.String())
	}
	texts := []string{buf.String(), fmt.Sprintf("%v", c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), fmt.Sprintf("%s", c), fmt.Sprint(*c)}
	for _, e := range errs {
		if e != nil {
			texts = append(texts, e.Error(), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e))
		}
	}
	for _, s := range texts {
		if strings.Contains(s, key) {
			t.Fatalf("key printed in %q", s)
		}
	}
}

func TestNothingLoggedByDefault(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer slog.SetDefault(old)
	srv := smallServer(t)
	srv.InjectFault("POST", "/v1/agents", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 503})
	if _, err := srv.Client().Agents.List(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Fatalf("logged without WithLogger: %s", buf.String())
	}
}

func TestTrailingGarbageIsDecodeError(t *testing.T) {
	srv := smallServer(t)
	srv.InjectFault("POST", "/v1/agents", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 200,
		Header: map[string]string{"Content-Type": "application/json"}, Body: `{"data":[],"total":0} {"x":1}`})
	_, err := srv.Client().Agents.List(context.Background(), nil)
	var de *lendgraph.DecodeError
	if !errors.As(err, &de) || de.StatusCode != 200 || de.RequestID == "" {
		t.Fatalf("err = %v, want *DecodeError with the request id", err)
	}
}

func TestHTMLSuccessBodyIsDecodeError(t *testing.T) {
	srv := smallServer(t)
	srv.InjectFault("GET", "/v1/agents/*", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 200,
		Header: map[string]string{"Content-Type": "text/html"}, Body: `<html>captive portal</html>`})
	_, err := srv.Client().Agents.Get(context.Background(), "agt_0000001")
	var de *lendgraph.DecodeError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "text/html") {
		t.Fatalf("err = %v, want *DecodeError naming the content type", err)
	}
}

func TestErrorBodyReadUnderCap(t *testing.T) {
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

func TestMidBodyDrop(t *testing.T) {
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

func TestQueryStringNotInErrorsOrLogs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var buf bytes.Buffer
	c, err := lendgraph.NewClient(lendgraph.WithAPIKey("k"), lendgraph.WithBaseURL("http://"+addr),
		lendgraph.WithMaxRetries(1), lendgraph.WithRetryBackoff(time.Millisecond, time.Millisecond),
		lendgraph.WithLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Do(context.Background(), "GET", "/v1/locations/retrieve?mapId=s3cr3t-signature", nil, nil)
	if err == nil {
		t.Fatal("no error from a closed port")
	}
	for _, s := range []string{err.Error(), buf.String()} {
		if strings.Contains(s, "s3cr3t") {
			t.Fatalf("query string printed: %s", s)
		}
	}
	if !strings.Contains(buf.String(), "request failed") {
		t.Fatalf("failure not logged: %s", buf.String())
	}
}
