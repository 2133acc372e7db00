package lendgraph_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// bodyTracker is a client transport that records every response body and
// whether it was closed; hook runs as each response arrives.
type bodyTracker struct {
	next   http.RoundTripper
	mu     sync.Mutex
	bodies []*trackedBody
	hook   func(*http.Request)
}

type trackedBody struct {
	io.ReadCloser
	url    string
	closed bool
	mu     *sync.Mutex
}

func (b *trackedBody) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return b.ReadCloser.Close()
}

func (t *bodyTracker) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	tb := &trackedBody{ReadCloser: resp.Body, url: r.URL.Host + r.URL.Path, mu: &t.mu}
	resp.Body = tb
	t.mu.Lock()
	t.bodies = append(t.bodies, tb)
	hook := t.hook
	t.mu.Unlock()
	if hook != nil {
		hook(r)
	}
	return resp, nil
}

// open lists the bodies not closed.
func (t *bodyTracker) open() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, b := range t.bodies {
		if !b.closed {
			out = append(out, b.url)
		}
	}
	return out
}

// TestAttempt_CancelAfterHeadersClosesBody (item 5): a context
// cancelled the moment a response's headers arrive leaves no body open, on
// the API, on downloads and on the search host, and nothing is printed to
// the standard logger.
func TestAttempt_CancelAfterHeadersClosesBody(t *testing.T) {
	var logged bytes.Buffer
	log.SetOutput(&logged)
	defer log.SetOutput(defaultLogOutput)

	srv, _ := newDeliveryServer(t)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	tracker := &bodyTracker{next: tr}
	c := srv.Client(lendgraph.WithHTTPClient(&http.Client{Transport: tracker}))
	job, _ := deliver(t, c, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 200})
	host := func(u string) string { return strings.TrimPrefix(u, "http://") }
	calls := []struct {
		name, host string
		do         func(ctx context.Context) error
	}{
		{"Download", host(srv.StorageURL()), func(ctx context.Context) error { _, err := job.Download(ctx, io.Discard); return err }},
		{"Rows", host(srv.StorageURL()), func(ctx context.Context) error {
			for _, err := range job.Rows(ctx) {
				if err != nil {
					return err
				}
			}
			return nil
		}},
		{"search host", host(srv.SearchHostURL()), func(ctx context.Context) error {
			_, err := c.Search.Host().Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"})
			return err
		}},
		{"API", host(srv.URL), func(ctx context.Context) error { _, err := c.Agents.Get(ctx, "agt_0000001"); return err }},
	}
	if _, err := c.Search.TokenSource().Token(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, call := range calls {
		for range 5 {
			ctx, cancel := context.WithCancel(context.Background())
			tracker.mu.Lock()
			tracker.hook = func(r *http.Request) {
				if r.URL.Host == call.host {
					cancel()
				}
			}
			tracker.mu.Unlock()
			err := call.do(ctx)
			cancel()
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("%s: %v, want context.Canceled", call.name, err)
			}
			if open := tracker.open(); len(open) != 0 {
				t.Fatalf("%s: %d response bodies left open: %v", call.name, len(open), open)
			}
		}
	}
	if logged.Len() != 0 {
		t.Fatalf("the SDK printed to the standard logger: %q", logged.String())
	}
}

var defaultLogOutput = log.Writer()

// TestAttempt_StalledIsRetried (item 10): an attempt cut by a per-attempt
// timeout (WithAttemptTimeout, http.Client.Timeout or the transport's
// ResponseHeaderTimeout) is retried like a reset connection; only the
// caller's own context ends the retries. The fake counts the attempts
// that reached it, behind a proxy that holds the first answer.
func TestAttempt_StalledIsRetried(t *testing.T) {
	noLeaks(t)
	srv := smallServer(t)
	proxy := newFaultProxy(t)
	ways := []struct {
		name       string
		headerOnly bool // the timeout bounds the wait for the headers only
		opts       func() []lendgraph.Option
	}{
		{"WithAttemptTimeout", false, func() []lendgraph.Option {
			return []lendgraph.Option{lendgraph.WithAttemptTimeout(200 * time.Millisecond)}
		}},
		{"http.Client.Timeout", false, func() []lendgraph.Option {
			tr := proxy.Transport()
			t.Cleanup(tr.CloseIdleConnections)
			return []lendgraph.Option{lendgraph.WithHTTPClient(&http.Client{Transport: tr, Timeout: 200 * time.Millisecond})}
		}},
		{"ResponseHeaderTimeout", true, func() []lendgraph.Option {
			tr := proxy.Transport()
			tr.ResponseHeaderTimeout = 200 * time.Millisecond
			t.Cleanup(tr.CloseIdleConnections)
			return []lendgraph.Option{lendgraph.WithHTTPClient(&http.Client{Transport: tr})}
		}},
	}
	for _, w := range ways {
		t.Run(w.name, func(t *testing.T) {
			c := proxy.Client(srv, append(w.opts(), lendgraph.WithMaxRetries(2))...)
			ctx := context.Background()

			// One stalled answer: cut, retried, the call succeeds.
			srv.ResetRequests()
			proxy.SetScript(firstN("GET", "/v1/agents/*", 1, proxyFault{Kind: pfStallHead, Delay: 10 * time.Second}))
			start := time.Now()
			if _, err := c.Agents.Get(ctx, "agt_0000001"); err != nil {
				t.Fatalf("one stall: %v", err)
			}
			if n := srv.CountRequests("GET", "/v1/agents/*"); n != 2 || time.Since(start) > 3*time.Second {
				t.Fatalf("one stall: %d attempts reached the fake in %s, want 2", n, time.Since(start))
			}

			// A list whose body stalls mid-way: cut and retried too.
			if !w.headerOnly {
				srv.ResetRequests()
				proxy.SetScript(firstN("POST", "/v1/agents", 1, proxyFault{Kind: pfStallBody, Delay: 10 * time.Second}))
				if _, err := c.Agents.List(ctx, nil); err != nil {
					t.Fatalf("a body stall: %v", err)
				}
				if n := srv.CountRequests("POST", "/v1/agents"); n != 2 {
					t.Fatalf("a body stall: %d attempts, want 2", n)
				}
			}

			// Every answer stalls: the retries run out, and the error is a
			// timeout of the attempts, not the caller's deadline.
			srv.ResetRequests()
			proxy.SetScript(firstN("GET", "/v1/agents/*", -1, proxyFault{Kind: pfStallHead, Delay: 10 * time.Second}))
			_, err := c.Agents.Get(ctx, "agt_0000001")
			var te *lendgraph.TransportError
			var ne net.Error
			if !errors.As(err, &te) || !errors.As(err, &ne) || !ne.Timeout() {
				t.Fatalf("every attempt stalls: %v; want a *TransportError that is a net.Error timeout", err)
			}
			if errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "context deadline exceeded") {
				t.Fatalf("no deadline was set, yet the error says so: %v", err)
			}
			if n := srv.CountRequests("GET", "/v1/agents/*"); n != 3 {
				t.Fatalf("every attempt stalls: %d attempts, want 3", n)
			}

			// The caller's own deadline ends the call, and says so.
			srv.ResetRequests()
			dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			if _, err := c.Agents.Get(dctx, "agt_0000001"); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("the caller's deadline: %v", err)
			}
			// One attempt at most (none when a loaded machine cannot send it
			// within the deadline): never a retry after the deadline.
			if n := srv.CountRequests("GET", "/v1/agents/*"); n > 1 {
				t.Fatalf("the caller's deadline: %d attempts, want 1 at most", n)
			}
			proxy.SetScript(nil)
		})
	}
}

// TestAttempt_TimeoutOnDownloads: a download is cut only when no byte comes
// for the attempt timeout (then resumed where it stopped), never because
// the whole file takes longer.
func TestAttempt_TimeoutOnDownloads(t *testing.T) {
	noLeaks(t)
	srv, _ := newDeliveryServer(t)
	proxy := newFaultProxy(t)
	c := proxy.Client(srv, lendgraph.WithAttemptTimeout(300*time.Millisecond))
	job, st := deliver(t, c, &lendgraph.DeliveryRequest{Format: lendgraph.FormatJSON, Limit: 800})
	ctx := context.Background()

	// 64 pieces 20 ms apart: over a second in all, never 300 ms idle.
	srv.ResetRequests()
	proxy.SetScript(firstN("GET", "/objects/*", 1, proxyFault{Kind: pfTrickle, Delay: 20 * time.Millisecond}))
	start := time.Now()
	n, err := job.Download(ctx, io.Discard)
	if err != nil || n != st.Bytes || time.Since(start) < time.Second {
		t.Fatalf("slow download: %d of %d bytes in %s, %v", n, st.Bytes, time.Since(start), err)
	}
	if r := srv.CountRequests("GET", "/objects/*"); r != 1 {
		t.Fatalf("a download that kept moving was cut: %d requests", r)
	}

	// Stalled mid-body: cut after 300 ms of silence and resumed.
	srv.ResetRequests()
	proxy.SetScript(firstN("GET", "/objects/*", 1, proxyFault{Kind: pfStallBody, Delay: 10 * time.Second}))
	start = time.Now()
	rows := collect(t, job.Rows(ctx))
	if len(rows) != 800 || time.Since(start) > 3*time.Second {
		t.Fatalf("stalled download: %d rows in %s", len(rows), time.Since(start))
	}
	var ranged bool
	for _, r := range srv.Requests() {
		ranged = ranged || r.Listener == "storage" && r.Header.Get("Range") != ""
	}
	if r := srv.CountRequests("GET", "/objects/*"); r != 2 || !ranged {
		t.Fatalf("stalled download: %d requests (ranged: %v), want a resume", r, ranged)
	}
}

// TestAttempt_TimeoutOnACallThatActs: a stalled enrichment with refresh is
// not repeated (the server acted and charged), and its error says the
// outcome is unknown.
func TestAttempt_TimeoutOnACallThatActs(t *testing.T) {
	noLeaks(t)
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(300))
	proxy := newFaultProxy(t)
	c := proxy.Client(srv, lendgraph.WithAttemptTimeout(200*time.Millisecond))
	match := idsWith(t, srv, lendgraphtest.OutcomeMatch, 1)[0]
	proxy.SetScript(firstN("POST", "/v1/properties/*", -1, proxyFault{Kind: pfStallHead, Delay: 10 * time.Second}))
	_, err := c.Properties.Enrich(context.Background(), match, &lendgraph.EnrichRequest{Refresh: true})
	var ne net.Error
	if !errors.Is(err, lendgraph.ErrOutcomeUnknown) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("stalled enrichment: %v", err)
	}
	if n := srv.CountRequests("POST", "/v1/properties/*/enrich"); n != 1 {
		t.Fatalf("%d attempts, want 1", n)
	}
	if n, _ := debits(srv, lendgraphtest.DefaultOrg, "enrich"); n != 1 {
		t.Fatalf("%d debits, want 1", n)
	}
}

// TestAttempt_TimeoutSparesASentSubmit (issue 22): a bulk delivery submit
// is not cut by WithAttemptTimeout once its request is sent, however long
// the answer takes: a cut would lose the answer of a job that started and
// is charged when it completes. Its own context still ends it.
func TestAttempt_TimeoutSparesASentSubmit(t *testing.T) {
	noLeaks(t)
	srv, _ := newDeliveryServer(t)
	proxy := newFaultProxy(t)
	c := proxy.Client(srv, lendgraph.WithAttemptTimeout(100*time.Millisecond))
	proxy.SetScript(firstN("POST", "/v1/agents/bulk-delivery", 1, proxyFault{Kind: pfStallHead, Delay: 500 * time.Millisecond}))
	srv.ResetRequests()
	job, err := c.Agents.Deliver(context.Background(), &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 10})
	if err != nil || job.ID == "" {
		t.Fatalf("a slow submit answer: %v", err)
	}
	if n := srv.CountRequests("POST", "/v1/agents/bulk-delivery"); n != 1 {
		t.Fatalf("%d submits reached the fake, want 1", n)
	}

	// The caller's context ends the wait, and says the outcome is unknown.
	proxy.SetScript(firstN("POST", "/v1/agents/bulk-delivery", 1, proxyFault{Kind: pfStallHead, Delay: 5 * time.Second}))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 10})
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, lendgraph.ErrOutcomeUnknown) {
		t.Fatalf("the caller's deadline: %v", err)
	}
	proxy.SetScript(nil)
}
