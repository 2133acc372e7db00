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
