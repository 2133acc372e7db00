package lendgraphtest

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func get(t *testing.T, s *Server, path string, client *http.Client) (*http.Response, []byte, error) {
	t.Helper()
	req, _ := http.NewRequest("GET", s.URL+path, nil)
	req.Header.Set("x-api-key", s.DefaultCaller().Key)
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func TestFaults(t *testing.T) {
	s := NewServer(t, WithDefaultRows(10))
	const path = "/v1/agents/agt_0000001"
	_, normal, err := get(t, s, path, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("Respond", func(t *testing.T) {
		s.InjectFault("GET", "/v1/agents/*", Fault{Status: 418, Header: map[string]string{"Retry-After": "3"}, Body: `{"error":"teapot"}`, Times: 2})
		for range 2 {
			resp, b, err := get(t, s, path, http.DefaultClient)
			if err != nil || resp.StatusCode != 418 || string(b) != `{"error":"teapot"}` || resp.Header.Get("Retry-After") != "3" {
				t.Fatalf("%v %v %s", err, resp, b)
			}
		}
		if resp, _, _ := get(t, s, path, http.DefaultClient); resp.StatusCode != 200 {
			t.Fatalf("fault outlived Times: %d", resp.StatusCode)
		}
	})
	t.Run("method and pattern", func(t *testing.T) {
		s.InjectFault("POST", "/v1/agents/*", Fault{Status: 500})
		s.InjectFault("GET", "/v1/loans/*", Fault{Status: 500})
		if resp, _, _ := get(t, s, path, http.DefaultClient); resp.StatusCode != 200 {
			t.Fatalf("fault for another method or path applied: %d", resp.StatusCode)
		}
		s.ClearFaults()
	})
	t.Run("DropBeforeResponse", func(t *testing.T) {
		s.InjectFault("GET", path, Fault{Kind: DropBeforeResponse})
		if _, _, err := get(t, s, path, &http.Client{Transport: &http.Transport{}}); err == nil {
			t.Fatal("no error for a dropped connection")
		}
	})
	t.Run("DropMidBody", func(t *testing.T) {
		s.InjectFault("GET", path, Fault{Kind: DropMidBody})
		resp, b, err := get(t, s, path, &http.Client{Transport: &http.Transport{}})
		if resp == nil || resp.StatusCode != 200 || resp.ContentLength != int64(len(normal)) {
			t.Fatalf("headers: %v %v", resp, err)
		}
		if !errors.Is(err, io.ErrUnexpectedEOF) || len(b) != len(normal)/2 || string(b) != string(normal[:len(normal)/2]) {
			t.Fatalf("got %d of %d bytes, err %v", len(b), len(normal), err)
		}
	})
	t.Run("Trickle", func(t *testing.T) {
		const short = "/v1/agents/nope"
		_, want, _ := get(t, s, short, http.DefaultClient)
		s.InjectFault("GET", short, Fault{Kind: Trickle, Delay: time.Millisecond})
		tr := &http.Transport{}
		client := &http.Client{Transport: tr}
		resp, b, err := get(t, s, short, client)
		if err != nil || resp.StatusCode != 404 || string(b) != string(want) || resp.Header.Get("X-Request-Id") == "" {
			t.Fatalf("%v %v %q want %q", err, resp, b, want)
		}
		// The connection is closed after the trickle; the next request
		// on the same client works.
		if resp, _, err := get(t, s, path, client); err != nil || resp.StatusCode != 200 {
			t.Fatalf("after trickle: %v", err)
		}
	})
	t.Run("Stall", func(t *testing.T) {
		s.InjectFault("GET", path, Fault{Kind: Stall, Delay: time.Hour})
		client := &http.Client{Timeout: 50 * time.Millisecond, Transport: &http.Transport{}}
		_, _, err := get(t, s, path, client)
		if err == nil || !strings.Contains(err.Error(), "Timeout") {
			t.Fatalf("stall: %v", err)
		}
		s.InjectFault("GET", path, Fault{Kind: Stall, Delay: 20 * time.Millisecond})
		if resp, b, err := get(t, s, path, http.DefaultClient); err != nil || string(b) != string(normal) {
			t.Fatalf("short stall: %v %v", resp, err)
		}
	})
	t.Run("Throttle and BytesSent", func(t *testing.T) {
		const list = "/v1/agents?limit=100"
		before := s.BytesSent("api")
		_, body, err := get(t, s, list, http.DefaultClient)
		if err != nil || s.BytesSent("api")-before != int64(len(body)) {
			t.Fatalf("BytesSent counted %d for a body of %d (%v)", s.BytesSent("api")-before, len(body), err)
		}
		rate := int64(len(body)) * 5 // a fifth of a second
		s.InjectFault("GET", "/v1/agents", Fault{Kind: Throttle, Rate: rate})
		start := time.Now()
		_, b, err := get(t, s, list, http.DefaultClient)
		if took := time.Since(start); err != nil || string(b) != string(body) || took < 150*time.Millisecond || took > 2*time.Second {
			t.Fatalf("throttled at %d B/s: %d bytes in %v, %v", rate, len(b), took, err)
		}
	})
}

func TestRoutePatterns(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		yes, no []string
	}{
		{"/v1/agents/{id}", []string{"/v1/agents/agt_0000001", "/v1/agents/x"}, []string{"/v1/agents", "/v1/agents/", "/v1/agents/a/b", "/v1/loans/x"}},
		{"/v1/{resource}/bulk-delivery/{jobId}", []string{"/v1/agents/bulk-delivery/dlv_1", "/v1/loans/bulk-delivery/x"}, []string{"/v1/agents/bulk-delivery", "/v1/agents/x/dlv_1"}},
		{"/v1/properties/*/enrich", []string{"/v1/properties/prop_1/enrich"}, []string{"/v1/properties/enrich-bulk", "/v1/properties/a/b/enrich"}},
		{"/objects/{key...}", []string{"/objects/a", "/objects/a/b.csv", "/objects/"}, []string{"/objects", "/v1/objects/a"}},
		{"/{path...}", []string{"/", "/v1/agents", "/objects/x"}, nil},
		{"/v1/agents/{$}", []string{"/v1/agents/"}, []string{"/v1/agents", "/v1/agents/x"}},
		{"", []string{"/", "/v1/agents/x"}, nil},
		{"/v1/[al]*", []string{"/v1/agents", "/v1/loans"}, []string{"/v1/sales"}},
	} {
		rp, err := compileRoute(tc.pattern)
		if err != nil {
			t.Fatalf("%q: %v", tc.pattern, err)
		}
		for _, p := range tc.yes {
			if !rp.match(p) {
				t.Errorf("%q does not match %q", tc.pattern, p)
			}
		}
		for _, p := range tc.no {
			if rp.match(p) {
				t.Errorf("%q matches %q", tc.pattern, p)
			}
		}
	}
}

// TestInjectFaultRefusesPatternsThatNeverMatch: a fault that could never
// fire panics with a message saying what to write, in InjectFault and
// CountRequests alike.
func TestInjectFaultRefusesPatternsThatNeverMatch(t *testing.T) {
	s := NewServer(t, WithDefaultRows(10))
	for _, tc := range []struct{ method, pattern, want string }{
		{"get", "/v1/agents", `"GET"`},
		{"GET", "v1/agents", `"/v1/agents"`},
		{"", "GET /v1/agents/{id}", `pass "GET" as the method`},
		{"GET", "http://127.0.0.1/v1/agents", "path only"},
		{"GET", "/v1/agents/{id", "whole segment"},
		{"GET", "/v1/agents/x{id}", "whole segment"},
		{"GET", "/v1/{}/x", "needs a name"},
		{"GET", "/v1/{rest...}/x", "last segment"},
		{"GET", "/v1/[agents", "path.Match"},
	} {
		for _, helper := range []string{"InjectFault", "CountRequests"} {
			func() {
				defer func() {
					msg, _ := recover().(string)
					if !strings.Contains(msg, helper) || !strings.Contains(msg, tc.want) {
						t.Errorf("%s(%q, %q): panic %q, want one naming %s and %q", helper, tc.method, tc.pattern, msg, helper, tc.want)
					}
				}()
				if helper == "InjectFault" {
					s.InjectFault(tc.method, tc.pattern, Fault{Status: 500})
				} else {
					s.CountRequests(tc.method, tc.pattern)
				}
			}()
		}
	}
	// Nothing was armed by the refused calls.
	if resp, _, err := get(t, s, "/v1/agents/agt_0000001", http.DefaultClient); err != nil || resp.StatusCode != 200 {
		t.Fatalf("after refused patterns: %v %v", resp, err)
	}
}

// TestInjectFaultRouteSyntax: the pattern the docs show fires, and counts.
func TestInjectFaultRouteSyntax(t *testing.T) {
	s := NewServer(t, WithDefaultRows(10))
	s.InjectFault("GET", "/v1/agents/{id}", Fault{Status: 503, Body: `{"error":"down"}`})
	resp, b, err := get(t, s, "/v1/agents/agt_0000003", http.DefaultClient)
	if err != nil || resp.StatusCode != 503 || string(b) != `{"error":"down"}` {
		t.Fatalf("the {id} fault did not fire: %v %v %s", err, resp, b)
	}
	if resp, _, _ := get(t, s, "/v1/agents/agt_0000003", http.DefaultClient); resp.StatusCode != 200 {
		t.Fatalf("second request: %d", resp.StatusCode)
	}
	if n := s.CountRequests("GET", "/v1/agents/{id}"); n != 2 {
		t.Fatalf("CountRequests(/v1/agents/{id}) = %d, want 2", n)
	}
	if n := s.CountRequests("", "/v1/{path...}"); n != 2 {
		t.Fatalf("CountRequests(/v1/{path...}) = %d, want 2", n)
	}
}
