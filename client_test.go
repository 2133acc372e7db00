package lendgraph_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
	"go.uber.org/goleak"
)

// Options that can only fail every call are refused by NewClient.
func TestNewClient_Options(t *testing.T) {
	for _, o := range []lendgraph.Option{lendgraph.WithRateLimit(10, 0), lendgraph.WithRateLimit(0, 5), lendgraph.WithMaxRetries(-1)} {
		var ia *lendgraph.InvalidArgumentError
		if _, err := lendgraph.NewClient(o); !errors.As(err, &ia) {
			t.Errorf("%v, want *InvalidArgumentError", err)
		}
	}
}

func TestNewClient_MissingAPIKey(t *testing.T) {
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

func TestNewClient_APIKeyFromEnvironment(t *testing.T) {
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

func TestNewClient_RejectsBadSettings(t *testing.T) {
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

// An empty key, a blank one, or one with a line break is refused before
// any request; the error does not print it.
func TestNewClient_BadKeysRefused(t *testing.T) {
	srv := smallServer(t)
	t.Setenv(lendgraph.EnvAPIKey, "")
	for _, key := range []string{"", "   ", "\t"} {
		c, err := lendgraph.NewClient(lendgraph.WithAPIKey(key), lendgraph.WithBaseURL(srv.URL))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Agents.List(context.Background(), nil); !errors.Is(err, lendgraph.ErrMissingAPIKey) {
			t.Errorf("key %q: err = %v, want ErrMissingAPIKey", key, err)
		}
		if _, err := c.Search.Host().Search(context.Background(), lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"}); !errors.Is(err, lendgraph.ErrMissingAPIKey) {
			t.Errorf("key %q: search host: err = %v, want ErrMissingAPIKey", key, err)
		}
	}
	for _, key := range []string{"lg_live_abc\n", "lg_live_abc\r\n", "lg\rlive", "\nlg_live_abc"} {
		t.Setenv(lendgraph.EnvAPIKey, key)
		for _, opts := range [][]lendgraph.Option{{lendgraph.WithAPIKey(key)}, nil} {
			c, err := lendgraph.NewClient(append(opts, lendgraph.WithBaseURL(srv.URL))...)
			if err == nil || c != nil {
				t.Errorf("key %q accepted", key)
			} else if strings.Contains(err.Error(), "lg_live") || strings.Contains(err.Error(), "live") {
				t.Errorf("error prints the key: %v", err)
			}
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

// One Client used by many goroutines at once, mixing every kind of call,
// under -race: nothing shared is written unguarded, every call succeeds.
func TestClient_ConcurrentUse(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(400))
	c := srv.Client()
	ctx := context.Background()
	job, err := c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	match := matchingProperty(t, srv)
	// Intermittent faults keep the retry paths (and the shared budget) busy.
	srv.InjectFault("POST", "/v1/agents", lendgraphtest.Fault{Status: 503, Times: 5})
	srv.InjectFault("GET", "/v1/agents/*", lendgraphtest.Fault{Kind: lendgraphtest.DropBeforeResponse, Times: 5})
	ops := []func() error{
		func() error { _, err := c.Agents.List(ctx, nil); return err },
		func() error { _, err := c.Agents.Get(ctx, "agt_0000002"); return err },
		func() error {
			n := 0
			for _, err := range c.Agents.All(ctx, &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 20}}) {
				if err != nil {
					return err
				}
				if n++; n == 30 {
					break // an iterator broken early
				}
			}
			return nil
		},
		func() error { _, err := c.Properties.Enrich(ctx, match, nil); return err },
		func() error { _, err := job.Status(ctx); return err },
		func() error {
			_, err := job.Wait(ctx, lendgraph.WithPollInterval(2*time.Millisecond, 10*time.Millisecond))
			return err
		},
		func() error { _, err := c.Search.Instant(ctx, &lendgraph.InstantSearchRequest{Query: "s"}); return err },
		func() error {
			_, err := c.Search.Host().Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"})
			return err
		},
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 12 {
				if err := ops[(g+i)%len(ops)](); err != nil {
					t.Errorf("goroutine %d op %d: %v", g, (g+i)%len(ops), err)
				}
			}
		})
	}
	wg.Wait()
	if n := len(srv.Debits(lendgraphtest.DefaultOrg)); n > 2 {
		// One fresh enrichment (then cache hits) and one delivery.
		t.Errorf("%d debits, want at most 2", n)
	}
}

// A base URL copied with its /v1 works; an empty one is refused.
func TestNewClient_BaseURL(t *testing.T) {
	rec := &pathRecorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	for _, base := range []string{srv.URL + "/v1", srv.URL + "/v1/", srv.URL + "/"} {
		c, err := lendgraph.NewClient(lendgraph.WithBaseURL(base), lendgraph.WithAPIKey("k"), lendgraph.WithMaxRetries(0))
		if err != nil {
			t.Fatalf("%s: %v", base, err)
		}
		_, _ = c.Agents.Get(context.Background(), "agt_1")
		if got := rec.paths[len(rec.paths)-1]; got != "/v1/agents/agt_1" {
			t.Errorf("base %s: the server got %s", base, got)
		}
	}
	for _, base := range []string{"", "api.lendgraph.com", "ftp://x", "https://k:secret@api.example.com", "https://api.example.com?key=s3cret"} {
		_, err := lendgraph.NewClient(lendgraph.WithBaseURL(base))
		var ia *lendgraph.InvalidArgumentError
		if !errors.As(err, &ia) {
			t.Errorf("WithBaseURL(%q): %v, want *InvalidArgumentError", base, err)
			continue
		}
		if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("WithBaseURL(%q): the error shows a secret: %v", base, err)
		}
	}
}

// A client releases its connection pool when closed: twenty clients, each
// used and closed, leave no goroutine behind; a closed client refuses
// calls before sending anything.
func TestClient_Close(t *testing.T) {
	srv := smallServer(t)
	base := goleak.IgnoreCurrent()
	for range 20 {
		c, err := lendgraph.NewClient(lendgraph.WithAPIKey(srv.DefaultCaller().Key), lendgraph.WithBaseURL(srv.URL))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Agents.List(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil { // twice is fine
			t.Fatal(err)
		}
		before := len(srv.Requests())
		if _, err := c.Agents.List(context.Background(), nil); !errors.Is(err, lendgraph.ErrClientClosed) {
			t.Fatalf("a call after Close: %v", err)
		}
		if len(srv.Requests()) != before {
			t.Fatal("a closed client sent a request")
		}
	}
	if err := goleak.Find(base); err != nil {
		t.Fatalf("closed clients left goroutines: %v", err)
	}
	// A client built on the caller's http.Client shares its pool, which
	// Close leaves open.
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	c1 := srv.Client(lendgraph.WithHTTPClient(hc))
	c2 := srv.Client(lendgraph.WithHTTPClient(hc))
	if _, err := c1.Agents.List(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	_ = c1.Close()
	if _, err := c2.Agents.List(context.Background(), nil); err != nil {
		t.Fatalf("closing one client broke another on the same http.Client: %v", err)
	}
}
