package main

import (
	"bytes"
	"context"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// The whole tour with every request logged at debug level: nothing it
// prints or logs holds the API key, a search token or a link's signature,
// and the hosts that are not the API (storage, search) never receive the
// key, in a header or anywhere else.
func TestTourLeaksNoSecret(t *testing.T) {
	t.Setenv(lendgraph.EnvAPIKey, "")
	var logs, out bytes.Buffer
	var srv *lendgraphtest.Server
	testHooks.options = []lendgraph.Option{lendgraph.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))}
	testHooks.fake = func(s *lendgraphtest.Server) { srv = s }
	defer func() { testHooks.options, testHooks.fake = nil, nil }()
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	key := srv.DefaultCaller().Key
	secrets := map[string]string{key: "the API key"}
	seen := map[string]int{}
	for _, r := range srv.Requests() {
		seen[r.Listener]++
		switch r.Listener {
		case "api":
			continue
		case "search":
			if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && tok != "" {
				secrets[tok] = "a search token"
			}
		case "storage":
			if q, _ := url.ParseQuery(r.Query); q.Get("X-Signature") != "" {
				secrets[q.Get("X-Signature")] = "a link signature"
			}
			if r.Header.Get("Authorization") != "" {
				t.Errorf("storage host got an Authorization header: %s", r.Path)
			}
		}
		if r.Header.Get("X-Api-Key") != "" {
			t.Errorf("%s host got an x-api-key header: %s %s", r.Listener, r.Method, r.Path)
		}
		for name, vals := range r.Header {
			for _, v := range vals {
				if strings.Contains(v, key) {
					t.Errorf("%s host got the API key in header %s", r.Listener, name)
				}
			}
		}
		if strings.Contains(r.Query, key) || bytes.Contains(r.Body, []byte(key)) {
			t.Errorf("%s host got the API key in the query or body of %s", r.Listener, r.Path)
		}
	}
	if seen["storage"] == 0 || seen["search"] == 0 {
		t.Fatalf("the tour did not reach the storage and search hosts: %v", seen)
	}
	if !strings.Contains(logs.String(), "level=DEBUG") {
		t.Fatal("nothing logged at debug level")
	}
	for text, where := range map[string]string{out.String(): "the tour's output", logs.String(): "the debug log"} {
		for s, what := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s printed in %s", what, where)
			}
		}
	}
	t.Logf("scanned %d bytes of output, %d bytes of debug log, %d requests (%v), %d secrets",
		out.Len(), logs.Len(), len(srv.Requests()), seen, len(secrets))
}
