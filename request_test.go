package lendgraph_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/lendgraph/lendgraph-go"
)

// pathRecorder is an API that answers 404 to everything and records the
// path of each request as the server's mux sees it.
type pathRecorder struct {
	mu       sync.Mutex
	paths    []string // r.URL.Path: unescaped
	escaped  []string // r.URL.EscapedPath(): the wire form
	received int
}

func (p *pathRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.paths = append(p.paths, r.URL.Path)
	p.escaped = append(p.escaped, r.URL.EscapedPath())
	p.received++
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write([]byte(`{"error":"not found"}`))
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
			rec := &pathRecorder{}
			srv := httptest.NewServer(rec)
			defer srv.Close()
			c, err := lendgraph.NewClient(lendgraph.WithBaseURL(srv.URL), lendgraph.WithAPIKey("k"), lendgraph.WithMaxRetries(0))
			if err != nil {
				t.Fatal(err)
			}
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
	rec := &pathRecorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	c, err := lendgraph.NewClient(lendgraph.WithBaseURL(srv.URL), lendgraph.WithAPIKey("k"))
	if err != nil {
		t.Fatal(err)
	}
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

// Saved-filter ids are refused before any request unless they match
// [\w-]{1,32}, so no escaping can reach the server.
func TestSavedFilters_IDRefusedBeforeRequest(t *testing.T) {
	rec := &pathRecorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	c, err := lendgraph.NewClient(lendgraph.WithBaseURL(srv.URL), lendgraph.WithAPIKey("k"))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a/b", "prop 1", "100%"} {
		if _, err := c.SavedFilters.Delete(context.Background(), id); err == nil {
			t.Errorf("Delete(%q) sent", id)
		}
	}
	if rec.received != 0 {
		t.Fatalf("%d requests reached the server", rec.received)
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

// A filter value that cannot be encoded is an *InvalidArgumentError, and
// nothing is sent.
func TestClient_UnencodableFilter(t *testing.T) {
	rec := &pathRecorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	c, err := lendgraph.NewClient(lendgraph.WithBaseURL(srv.URL), lendgraph.WithAPIKey("k"))
	if err != nil {
		t.Fatal(err)
	}
	for name, req := range map[string]*lendgraph.ListRequest{
		"flat":     {FlatFilters: map[string]any{"state": make(chan int)}},
		"advanced": {AdvancedFilters: lendgraph.Eq("state", func() {})},
	} {
		_, err := c.Agents.List(context.Background(), req)
		var ia *lendgraph.InvalidArgumentError
		if !errors.As(err, &ia) {
			t.Errorf("%s: %v, want *InvalidArgumentError", name, err)
		}
	}
	if rec.received != 0 {
		t.Fatalf("%d requests reached the server", rec.received)
	}
}
