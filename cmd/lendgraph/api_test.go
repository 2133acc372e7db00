package main

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// lastRequest is the last request the fake received on its API listener.
func lastRequest(t *testing.T, srv *lendgraphtest.Server) lendgraphtest.Request {
	t.Helper()
	var last *lendgraphtest.Request
	for _, r := range srv.Requests() {
		if r.Listener == "api" {
			last = &r
		}
	}
	if last == nil {
		t.Fatal("the fake received no request")
	}
	return *last
}

func decodeJSON(t *testing.T, what, text string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("%s: %v\n%.300s", what, err, text)
	}
	return v
}

// TestAPI_Requests: api sends the method, path, query and body it is given
// (fields typed, nested, appended; --input as is) and prints the answer.
func TestAPI_Requests(t *testing.T) {
	c := newCLI(t)
	id := c.srv.Dataset().ID("agents", 42)

	// GET: the same record get prints.
	r := c.run("api", "/v1/agents/"+id)
	wantCode(t, r, 0)
	g := c.run("get", "agents", id)
	wantCode(t, g, 0)
	if d := cmp.Diff(decodeJSON(t, "get", g.stdout), decodeJSON(t, "api", r.stdout)); d != "" {
		t.Errorf("api GET differs from get:\n%s", d)
	}
	if req := lastRequest(t, c.srv); req.Method != http.MethodGet || req.Path != "/v1/agents/"+id {
		t.Errorf("sent %s %s", req.Method, req.Path)
	}
	// --json: one line.
	r = c.run("--json", "api", "v1/agents/"+id) // the leading slash may be left out
	wantCode(t, r, 0)
	if strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("--json printed %d lines", strings.Count(r.stdout, "\n"))
	}

	// Fields: POST, a JSON body, typed (-F) or strings (-f), nested, arrays.
	r = c.run("api", "/v1/agents", "-F", "flatFilters[state][]=TX", "-F", "flatFilters[state][]=CA", "-F", "pagination[size]=3", "-f", "period=2024")
	wantCode(t, r, 0)
	req := lastRequest(t, c.srv)
	want := map[string]any{"flatFilters": map[string]any{"state": []any{"TX", "CA"}}, "pagination": map[string]any{"size": 3.0}, "period": "2024"}
	if d := cmp.Diff(any(want), decodeJSON(t, "body", string(req.Body))); d != "" || req.Method != http.MethodPost {
		t.Errorf("%s with the body:\n%s", req.Method, d)
	}
	var page struct {
		Data []struct {
			State string `json:"state"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil || len(page.Data) != 3 {
		t.Fatalf("answer %.300s: %v", r.stdout, err)
	}
	for _, a := range page.Data {
		if a.State != "TX" && a.State != "CA" {
			t.Errorf("the filter was not applied: state %q", a.State)
		}
	}

	// GET with fields: the query string, added to the one in PATH.
	r = c.run("api", "/v1/locations/suggest?limit=2", "-X", "get", "-f", "q=Austin")
	wantCode(t, r, 0)
	if req := lastRequest(t, c.srv); req.Method != http.MethodGet || req.Query != "limit=2&q=Austin" || len(req.Body) != 0 {
		t.Errorf("sent %s ?%s with a body of %d bytes", req.Method, req.Query, len(req.Body))
	}

	// --input: the body as written; fields then go to the query string.
	body := `{"flatFilters": {"state": "TX"}, "pagination": {"size": 1}}`
	if err := os.WriteFile(c.path("body.json"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	r = c.run("api", "/v1/agents", "--input", "body.json", "-f", "x=1")
	wantCode(t, r, 0)
	req = lastRequest(t, c.srv)
	if d := cmp.Diff(decodeJSON(t, "file", body), decodeJSON(t, "sent", string(req.Body))); d != "" || req.Method != http.MethodPost || req.Query != "x=1" {
		t.Errorf("--input: %s ?%s, body:\n%s", req.Method, req.Query, d)
	}
	c.stdin = body
	r = c.run("api", "-X", "POST", "/v1/agents", "--input", "-")
	wantCode(t, r, 0)
	if d := cmp.Diff(decodeJSON(t, "stdin", body), decodeJSON(t, "sent", string(lastRequest(t, c.srv).Body))); d != "" {
		t.Errorf("--input -: body:\n%s", d)
	}
}

// TestAPI_ErrorsAndSecrets: a non-2xx answer exits non-zero with the API
// error; the API key never shows, even when the server echoes it; mistakes
// exit 2 before any request.
func TestAPI_ErrorsAndSecrets(t *testing.T) {
	c := newCLI(t)
	r := c.run("api", "/v1/agents/agt_nosuch")
	if r.code != exitFailure || !strings.Contains(r.stderr, "404") || r.stdout != "" {
		t.Errorf("a 404: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	r = c.run("--json", "api", "/v1/agents/agt_nosuch")
	var e struct {
		Error    string `json:"error"`
		ExitCode int    `json:"exitCode"`
	}
	if err := json.Unmarshal([]byte(r.stderr), &e); err != nil || e.ExitCode != exitFailure || !strings.Contains(e.Error, "404") {
		t.Errorf("--json 404: %q: %v", r.stderr, err)
	}

	// A server that echoes the key, in an error and in an answer (c.run
	// fails the test when the key shows anywhere).
	c.srv.InjectFault(http.MethodGet, "/v1/agents/{id}", lendgraphtest.Fault{Status: http.StatusBadRequest,
		Body: `{"error": "key ` + c.key + ` is not valid here"}`})
	r = c.run("api", "/v1/agents/agt_0000001")
	if r.code != exitFailure || !strings.Contains(r.stderr, "[redacted]") {
		t.Errorf("an error echoing the key: exit %d, stderr: %s", r.code, r.stderr)
	}
	c.srv.InjectFault(http.MethodGet, "/v1/agents/{id}", lendgraphtest.Fault{Status: http.StatusOK,
		Header: map[string]string{"Content-Type": "application/json"}, Body: `{"echo": "` + c.key + `"}`})
	r = c.run("api", "/v1/agents/agt_0000001")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, `"[redacted]"`) {
		t.Errorf("an answer echoing the key: %s", r.stdout)
	}
	// Usage errors: nothing sent.
	c.srv.ResetRequests()
	if err := os.WriteFile(c.path("bad.json"), []byte(`{"a":`), 0o600); err != nil {
		t.Fatal(err)
	}
	wantUsageErrors(t, c, [][]string{
		{"api", "http://127.0.0.1:1/v1/agents"},
		{"api", "//elsewhere.example/v1/agents"},
		{"api", "-X", "GET X", "/v1/agents"},
		{"api", "/v1/agents", "-F", "novalue"},
		{"api", "/v1/agents", "-F", "a=1", "-F", "a=2"},
		{"api", "/v1/agents", "-F", "a=1", "-F", "a[b]=2"},
		{"api", "/v1/agents", "-F", "a[b=1"},
		{"api", "/v1/agents", "-F", "a[][b]=1"},
		{"api", "/v1/agents", "--input", "bad.json"},
		{"api", "/v1/agents", "--input", "missing.json"},
		{"api"},
		{"api", ""},
		{"api", " "},
		{"api", "/v1/agents/a%2Fb?x#y"},
		{"api", "/v1/agents#top"},
	})
	if r := c.run("api", "/v1/agents/a%2Fb?x#y"); !strings.Contains(r.stderr, "%23") || !strings.Contains(r.stderr, "fragment") {
		t.Errorf("a # fragment: the message does not say to drop it or escape it as %%23: %s", r.stderr)
	}
	if r := c.run("api", ""); !strings.Contains(r.stderr, "PATH is empty") {
		t.Errorf("an empty PATH: %s", r.stderr)
	}
	// An escaped # (%23) is sent as written.
	wantCode(t, c.run("api", "/v1/agents/agt_0000001?q=a%23b"), 0)
	if req := lastRequest(t, c.srv); req.Query != "q=a%23b" {
		t.Errorf("?q=a%%23b sent the query %q", req.Query)
	}
}

// TestAPI_RetriesByMethod: what the help says of retries, counted at the
// fake. A read is repeated after a 503; a POST after a 429 (the server did
// not act), but never after a connection lost once it was sent or a 503:
// it exits with "outcome unknown" and the fake saw one submit.
func TestAPI_RetriesByMethod(t *testing.T) {
	c := newCLI(t)
	retryNow := map[string]string{"Retry-After": "0"}

	c.srv.InjectFault(http.MethodGet, "/v1/agents/{id}", lendgraphtest.Fault{Status: http.StatusServiceUnavailable, Header: retryNow})
	r := c.run("api", "/v1/agents/agt_0000001")
	wantCode(t, r, 0)
	if n := c.srv.CountRequests(http.MethodGet, "/v1/agents/{id}"); n != 2 {
		t.Errorf("GET after a 503: %d requests, want 2", n)
	}

	submit := "/v1/agents/bulk-delivery"
	c.srv.InjectFault(http.MethodPost, submit, lendgraphtest.Fault{Status: http.StatusTooManyRequests, Header: retryNow})
	r = c.run("api", submit, "-f", "format=ndjson", "-F", "limit=5")
	wantCode(t, r, 0)
	if n := c.srv.CountRequests(http.MethodPost, submit); n != 2 {
		t.Errorf("POST after a 429: %d requests, want 2", n)
	}

	for what, f := range map[string]lendgraphtest.Fault{
		"connection lost after sending": {Kind: lendgraphtest.DropBeforeResponse},
		"503":                           {Status: http.StatusServiceUnavailable, Header: retryNow},
	} {
		c.srv.ResetRequests()
		c.srv.InjectFault(http.MethodPost, submit, f)
		r = c.run("api", submit, "-f", "format=ndjson", "-F", "limit=5")
		if r.code != exitFailure || !strings.Contains(r.stderr, "outcome unknown") {
			t.Errorf("POST, %s: exit %d, stderr: %s", what, r.code, r.stderr)
		}
		if n := c.srv.CountRequests(http.MethodPost, submit); n != 1 {
			t.Errorf("POST, %s: %d requests, want 1 (never repeated)", what, n)
		}
	}
}
