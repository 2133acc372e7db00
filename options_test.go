package lendgraph_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

func TestWithHTTPClient_WrapsTransport(t *testing.T) {
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
