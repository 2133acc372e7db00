package lendgraph_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// jobsOf counts the jobs of a kind the fake holds.
func jobsOf(srv *lendgraphtest.Server, kind string) int {
	n := 0
	for _, j := range srv.Jobs() {
		if j.Kind == kind {
			n++
		}
	}
	return n
}

// TestTransport_OutcomeUnknownOrNothingHappened (item 12): every
// failure of a call that charges or acts says whether the request may have
// reached the server (errors.Is ErrOutcomeUnknown) or certainly did not.
// A fault proxy sits between the client and the fake, which counts the
// requests, jobs and charges that reached it.
func TestTransport_OutcomeUnknownOrNothingHappened(t *testing.T) {
	noLeaks(t)
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(300))
	proxy := newFaultProxy(t)
	c := proxy.client(srv)
	match := idsWith(t, srv, lendgraphtest.OutcomeMatch, 4) // bulk: the first two; single: the others
	deliverReq := &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 10}
	const submit = "/v1/agents/bulk-delivery"
	for _, tc := range []struct {
		name    string
		fault   proxyFault
		unknown bool
		jobs    int // created at the fake
		ok      bool
	}{
		{"reset after the server acted", proxyFault{kind: pfResetAfter}, true, 1, false},
		{"202 body cut", proxyFault{kind: pfCutBody}, true, 1, false},
		// A 502 is "failed to launch; safe to retry" by the reference's
		// word: retried (1+3 attempts), and the caller is told nothing
		// happened. A gateway's 502 after the server acted defeats that;
		// only the API can tell the two apart.
		{"502 from a gateway after the server acted", proxyFault{kind: pf502After}, false, 4, false},
		{"reset before the server saw it (the client cannot tell)", proxyFault{kind: pfResetBefore}, true, 0, false},
		{"503 from a gateway", proxyFault{kind: pf503}, true, 0, false},
		{"429 once", proxyFault{kind: pf429}, false, 1, true},
	} {
		t.Run("Deliver/"+tc.name, func(t *testing.T) {
			before := jobsOf(srv, "delivery")
			n := 1
			if tc.fault.kind == pf502After {
				n = -1
			}
			proxy.setScript(firstN("POST", submit, n, tc.fault))
			defer proxy.setScript(nil)
			_, err := c.Agents.Deliver(context.Background(), deliverReq)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v", err)
			}
			if err != nil && errors.Is(err, lendgraph.ErrOutcomeUnknown) != tc.unknown {
				t.Fatalf("errors.Is(err, ErrOutcomeUnknown) = %v, want %v: %v", !tc.unknown, tc.unknown, err)
			}
			if got := jobsOf(srv, "delivery") - before; got != tc.jobs {
				t.Fatalf("%d jobs created at the fake, want %d", got, tc.jobs)
			}
		})
	}

	t.Run("Deliver/connection refused", func(t *testing.T) {
		cc, err := lendgraph.NewClient(lendgraph.WithAPIKey(srv.DefaultCaller().Key), lendgraph.WithBaseURL("http://"+closedAddr(t)),
			lendgraph.WithMaxRetries(1), lendgraph.WithRetryBackoff(time.Millisecond, time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cc.Agents.Deliver(context.Background(), deliverReq); err == nil || errors.Is(err, lendgraph.ErrOutcomeUnknown) {
			t.Fatalf("nothing was sent, yet: %v", err)
		}
	})
	t.Run("Deliver/context ended before sending", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := c.Agents.Deliver(ctx, deliverReq); !errors.Is(err, context.Canceled) || errors.Is(err, lendgraph.ErrOutcomeUnknown) {
			t.Fatalf("%v", err)
		}
	})
	t.Run("Deliver/context ended in flight", func(t *testing.T) {
		before := jobsOf(srv, "delivery")
		proxy.setScript(firstN("POST", submit, 1, proxyFault{kind: pfStallHead, delay: 10 * time.Second}))
		defer proxy.setScript(nil)
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		defer cancel()
		_, err := c.Agents.Deliver(ctx, deliverReq)
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, lendgraph.ErrOutcomeUnknown) {
			t.Fatalf("%v", err)
		}
		if got := jobsOf(srv, "delivery") - before; got != 1 {
			t.Fatalf("%d jobs, want 1 (the server acted)", got)
		}
	})
	t.Run("Deliver/402", func(t *testing.T) {
		srv.SetCredits(lendgraphtest.DefaultOrg, 0)
		defer srv.SetCredits(lendgraphtest.DefaultOrg, 1e6)
		if _, err := c.Agents.Deliver(context.Background(), deliverReq); !errors.Is(err, lendgraph.ErrInsufficientCredits) || errors.Is(err, lendgraph.ErrOutcomeUnknown) {
			t.Fatalf("%v", err)
		}
	})
	t.Run("EnrichBulk/reset after the server acted", func(t *testing.T) {
		before := jobsOf(srv, "enrichment")
		proxy.setScript(firstN("POST", "/v1/properties/enrich-bulk", 1, proxyFault{kind: pfResetAfter}))
		defer proxy.setScript(nil)
		_, err := c.Properties.EnrichBulk(context.Background(), match[:2], nil)
		var te *lendgraph.TransportError
		if !errors.Is(err, lendgraph.ErrOutcomeUnknown) || !errors.As(err, &te) {
			t.Fatalf("%v", err)
		}
		if got := jobsOf(srv, "enrichment") - before; got != 1 {
			t.Fatalf("%d jobs, want 1", got)
		}
	})
	t.Run("Enrich with refresh/answer cut", func(t *testing.T) {
		srv.ResetRequests()
		d0, _ := debits(srv, lendgraphtest.DefaultOrg, "enrich")
		proxy.setScript(firstN("POST", "/v1/properties/*", 1, proxyFault{kind: pfCutBody}))
		defer proxy.setScript(nil)
		_, err := c.Properties.Enrich(context.Background(), match[2], &lendgraph.EnrichOptions{Refresh: true})
		var de *lendgraph.DecodeError
		if !errors.Is(err, lendgraph.ErrOutcomeUnknown) || !errors.As(err, &de) {
			t.Fatalf("%v", err)
		}
		d1, _ := debits(srv, lendgraphtest.DefaultOrg, "enrich")
		if n := srv.CountRequests("POST", "/v1/properties/*/enrich"); n != 1 || d1-d0 != 1 {
			t.Fatalf("%d requests, %d debits; want 1 and 1", n, d1-d0)
		}
	})
	t.Run("Enrich without refresh/reset after the server acted", func(t *testing.T) {
		// Enrichment rule 2: the repeat is a free cache hit, so the call is
		// retried and the result paid for is not lost.
		srv.ResetRequests()
		d0, _ := debits(srv, lendgraphtest.DefaultOrg, "enrich")
		proxy.setScript(firstN("POST", "/v1/properties/*", 1, proxyFault{kind: pfResetAfter}))
		defer proxy.setScript(nil)
		r, err := c.Properties.Enrich(context.Background(), match[3], nil)
		if err != nil || len(r.Data.Persons) == 0 || r.Reason != lendgraph.ReasonMemberCacheHit {
			t.Fatalf("%+v, %v", r, err)
		}
		d1, _ := debits(srv, lendgraphtest.DefaultOrg, "enrich")
		if n := srv.CountRequests("POST", "/v1/properties/*/enrich"); n != 2 || d1-d0 != 1 {
			t.Fatalf("%d requests, %d debits; want 2 and 1", n, d1-d0)
		}
	})
	t.Run("PushCRMAll/reset after the server acted", func(t *testing.T) {
		ids := make([]string, 150)
		for i := range ids {
			ids[i] = srv.Dataset().ID("agents", i)
		}
		proxy.setScript(func(r *http.Request, _ int) proxyFault {
			if r.Method == "POST" && r.URL.Path == "/v1/integrations/crm/push" {
				return proxyFault{kind: pfResetAfter}
			}
			return proxyFault{}
		})
		defer proxy.setScript(nil)
		_, err := c.Integrations.PushCRMAll(context.Background(), &lendgraph.CRMPushRequest{Entity: lendgraph.CRMEntityAgent,
			Object: lendgraph.CRMObjectContact, IDs: ids})
		var pe *lendgraph.PushIncompleteError
		if !errors.As(err, &pe) || len(pe.Unknown) != 100 || len(pe.NotSent) != 50 || !errors.Is(err, lendgraph.ErrOutcomeUnknown) {
			t.Fatalf("%v", err)
		}
	})
}

func TestTransport_APIKeyHeader(t *testing.T) {
	srv := smallServer(t)
	if _, err := srv.Client().Agents.List(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0]
	if r.Header.Get("X-Api-Key") != srv.DefaultCaller().Key || r.Header.Get("Authorization") != "" {
		t.Fatalf("headers %v", r.Header)
	}
}

func TestTransport_NothingLoggedByDefault(t *testing.T) {
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

// A redirect from the API host, whatever the auth header and method,
// carries no credential and no body to another origin.
func TestAPIRedirectCarriesNoCredentialOrBody(t *testing.T) {
	const key = "lg_secret_redirect_key"
	other := newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if len(b) > 0 {
			t.Errorf("body sent to %s: %q", r.Host, b)
		}
		fmt.Fprint(w, `{"id":"x","data":[]}`)
	})
	var mu sync.Mutex
	var target string
	var code int
	var api *recorder
	api = newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) {
		if r.Host != "api.lendgraph.test:"+api.port {
			// Another name for the same listener: answer as another host.
			fmt.Fprint(w, `{"id":"x","data":[]}`)
			return
		}
		mu.Lock()
		to, c := target, code
		mu.Unlock()
		http.Redirect(w, r, to+r.URL.Path, c)
	})
	for name, to := range redirectTargets(api.port, other.port) {
		for _, bearer := range []bool{false, true} {
			// 302 and 303 turn a POST into a GET without its body; 307
			// and 308 would re-send it and are refused.
			for _, c := range []int{http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
				t.Run(fmt.Sprintf("%s/bearer=%v/%d", name, bearer, c), func(t *testing.T) {
					mu.Lock()
					target, code = to, c
					mu.Unlock()
					tr := &http.Transport{DialContext: loopbackDialer()}
					defer tr.CloseIdleConnections()
					opts := []lendgraph.Option{lendgraph.WithAPIKey(key), lendgraph.WithBaseURL("http://api.lendgraph.test:" + api.port),
						lendgraph.WithHTTPClient(&http.Client{Transport: tr}), lendgraph.WithMaxRetries(0)}
					if bearer {
						opts = append(opts, lendgraph.WithBearerAuth())
					}
					c2, err := lendgraph.NewClient(opts...)
					if err != nil {
						t.Fatal(err)
					}
					before, beforeAPI := len(other.headers()), len(api.headers())
					_, getErr := c2.Agents.Get(context.Background(), "x")
					_, postErr := c2.Agents.List(context.Background(), &lendgraph.ListRequest{FlatFilters: map[string]any{"state": "CA"}})
					if getErr != nil {
						t.Fatalf("GET after a %d: %v", c, getErr)
					}
					if (c == 307 || c == 308) != (postErr != nil) {
						t.Fatalf("POST after a %d: %v", c, postErr)
					}
					for _, h := range append(other.headers()[before:], api.headers()[beforeAPI:]...) {
						if h.Get("X-Seen-Host") == "api.lendgraph.test:"+api.port {
							if h.Get("X-Api-Key")+h.Get("Authorization") == "" {
								t.Fatal("the API host got no credential")
							}
							continue
						}
						if h.Get("X-Api-Key") != "" || h.Get("Authorization") != "" {
							t.Fatalf("credential sent to %s: %v", h.Get("X-Seen-Host"), h)
						}
					}
				})
			}
		}
	}
}

// The search host's token is not carried by a redirect to another origin,
// the API key never reaches it at all, and an https search host that
// redirects to http loses the token too.
func TestSearchTokenNotCarriedByRedirect(t *testing.T) {
	srv := smallServer(t)
	key := srv.DefaultCaller().Key
	other := newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"hits":[],"query":"jo","processingTimeMs":1,"limit":20,"offset":0,"estimatedTotalHits":0}`)
	})
	var mu sync.Mutex
	var target string
	host := newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		to := target
		mu.Unlock()
		http.Redirect(w, r, to+r.URL.Path, http.StatusFound)
	})
	srv.SetSearchTokenHost("http://search.lendgraph.test:" + host.port)
	targets := map[string]string{
		"other host": "http://other.test:" + other.port,
		"subdomain":  "http://evil.search.lendgraph.test:" + other.port,
		"other port": "http://search.lendgraph.test:" + other.port,
	}
	for name, to := range targets {
		t.Run(name, func(t *testing.T) {
			mu.Lock()
			target = to
			mu.Unlock()
			tr := &http.Transport{DialContext: loopbackDialer()}
			defer tr.CloseIdleConnections()
			// The API itself is reached by its loopback address.
			c := srv.Client(lendgraph.WithHTTPClient(&http.Client{Transport: tr}))
			before := len(other.headers())
			_, _ = c.Search.Host().Search(context.Background(), lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"})
			for _, h := range append(host.headers(), other.headers()[before:]...) {
				if strings.Contains(fmt.Sprint(h), key) {
					t.Fatalf("API key sent to the search host side: %v", h)
				}
			}
			for _, h := range other.headers()[before:] {
				if h.Get("Authorization") != "" {
					t.Fatalf("search token sent to %s after a redirect", h.Get("X-Seen-Host"))
				}
			}
		})
	}
	t.Run("https to http", func(t *testing.T) {
		plain := newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"hits":[]}`)
		})
		secure := newRecorder(t, true, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://127.0.0.1:"+plain.port+r.URL.Path, http.StatusFound)
		})
		srv.SetSearchTokenHost(secure.srv.URL)
		defer srv.SetSearchTokenHost("")
		tr := secure.srv.Client().Transport.(*http.Transport).Clone()
		defer tr.CloseIdleConnections()
		c := srv.Client(lendgraph.WithHTTPClient(&http.Client{Transport: tr}))
		_, _ = c.Search.Host().Search(context.Background(), lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"})
		if len(secure.headers()) == 0 || secure.headers()[0].Get("Authorization") == "" {
			t.Fatal("the https search host got no token")
		}
		for _, h := range plain.headers() {
			if h.Get("Authorization") != "" {
				t.Fatalf("search token sent over plain http after a redirect")
			}
		}
	})
}

func TestNoSecretInPrintsLogsOrErrors(t *testing.T) {
	srv := smallServer(t)
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := srv.Client(lendgraph.WithLogger(logger), lendgraph.WithMaxRetries(1))
	ctx := context.Background()
	sec := secretsOf{key: srv.DefaultCaller().Key}

	job, err := c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	st, err := job.Wait(ctx, lendgraph.WithPollInterval(5*time.Millisecond, 20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(st.ResultsURL.Reveal())
	sec.signature = u.Query().Get("X-Signature")
	if sec.signature == "" {
		t.Fatal("no signature in the results link")
	}
	tok, err := c.Search.TokenSource().Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sec.token = tok.Token
	ej, err := c.Properties.EnrichBulk(ctx, []string{srv.Dataset().ID("properties", 1)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	est, err := ej.Wait(ctx, lendgraph.WithPollInterval(5*time.Millisecond, 20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}

	// Errors from every layer, the storage host's included: a 403 body
	// echoing the signature (as S3's SignatureDoesNotMatch does), a
	// refused connection to a signed link, a search host refusing the token.
	var errs []error
	srv.InjectFault("GET", "/objects/*", lendgraphtest.Fault{Status: 403, Times: -1,
		Body: "<Error><Code>SignatureDoesNotMatch</Code><SignatureProvided>" + sec.signature + "</SignatureProvided></Error>"})
	_, err = job.Download(ctx, io.Discard)
	errs = append(errs, err)
	srv.ClearFaults()
	srv.InjectFault("", "/objects/*", lendgraphtest.Fault{Kind: lendgraphtest.DropBeforeResponse, Times: -1})
	_, err = job.Download(ctx, io.Discard)
	errs = append(errs, err)
	srv.ClearFaults()
	srv.InjectFault("POST", "/indexes/*/search", lendgraphtest.Fault{Status: 401, Times: -1, Body: `{"message":"bad token ` + sec.token + `"}`})
	_, err = c.Search.Host().Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"})
	errs = append(errs, err)
	srv.ClearFaults()
	srv.InjectFault("", "/v1/agents/bulk-delivery/*", lendgraphtest.Fault{Kind: lendgraphtest.DropBeforeResponse, Times: -1})
	_, err = job.Status(ctx)
	errs = append(errs, err)
	srv.ClearFaults()
	srv.InjectFault("POST", "/v1/agents", lendgraphtest.Fault{Status: 401, Body: `{"error":"invalid key ` + sec.key + `"}`})
	_, err = c.Agents.List(ctx, nil)
	errs = append(errs, err)
	for i, e := range errs {
		if e == nil {
			t.Fatalf("error %d: nil", i)
		}
		sec.scan(t, fmt.Sprintf("error %d", i), printAll(e)+e.Error())
	}

	opts := []lendgraph.Option{lendgraph.WithAPIKey(sec.key), lendgraph.WithBearerAuth()}
	for name, v := range map[string]any{
		"client": c, "client value": *c, "option": opts, "token": tok, "token value": *tok,
		"delivery job": job, "delivery status": st, "enrich job": ej, "enrich status": est,
		"results link": st.ResultsURL, "search service": c.Search, "token source": c.Search.TokenSource(),
	} {
		sec.scan(t, name, printAll(v))
	}
	sec.scan(t, "debug log", logs.String())
	if !strings.Contains(logs.String(), "/objects/") || !strings.Contains(logs.String(), "/indexes/") {
		t.Errorf("the debug log misses the storage or search host requests:\n%s", logs.String())
	}

	// A panic's value is printed by the runtime: a client panicking with
	// itself (or a status record) in the message shows no secret either.
	func() {
		defer func() { sec.scan(t, "panic", fmt.Sprint(recover())) }()
		panic(fmt.Sprintf("unexpected state: %v %v %v", c, st, tok))
	}()
}

// The signed-link downloader and the search host client send through the
// credential-free pipeline: whatever the transport, the storage and search
// hosts never see the key, in a header or anywhere else in the request.
func TestNonAPIHostsNeverSeeTheKey(t *testing.T) {
	srv := smallServer(t)
	key := srv.DefaultCaller().Key
	for _, bearer := range []bool{false, true} {
		opts := []lendgraph.Option{}
		if bearer {
			opts = append(opts, lendgraph.WithBearerAuth())
		}
		c := srv.Client(opts...)
		ctx := context.Background()
		job, err := c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatNDJSON, Limit: 20})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := job.Download(ctx, io.Discard); err != nil {
			t.Fatal(err)
		}
		for _, err := range job.Rows(ctx) {
			if err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.Search.Host().Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"}); err != nil {
			t.Fatal(err)
		}
	}
	hosts := map[string]int{}
	for _, r := range srv.Requests() {
		hosts[r.Listener]++
		if r.Listener == "api" {
			continue
		}
		if strings.Contains(fmt.Sprint(r.Header, r.Query, string(r.Body)), key) {
			t.Errorf("%s host received the key: %s %s", r.Listener, r.Method, r.Path)
		}
		if r.Listener == "storage" && (r.Header.Get("Authorization") != "" || r.Header.Get("X-Api-Key") != "") {
			t.Errorf("storage host received a credential header")
		}
	}
	if hosts["storage"] == 0 || hosts["search"] == 0 {
		t.Fatalf("requests by host: %v", hosts)
	}
}

// redirectTargets are the origins a redirect may point to that are not
// the origin the credential belongs to. from is "host:port" of the origin.
func redirectTargets(fromPort, otherPort string) map[string]string {
	return map[string]string{
		"other host":   "http://other.test:" + otherPort,
		"subdomain":    "http://evil.api.lendgraph.test:" + fromPort,
		"parent-named": "http://api.lendgraph.test.evil.test:" + otherPort,
		"other port":   "http://api.lendgraph.test:" + otherPort,
	}
}

// secretsOf collects the credentials a test must never see printed.
type secretsOf struct {
	key, token, signature string
}

func (s secretsOf) scan(t *testing.T, where, text string) {
	t.Helper()
	for name, v := range map[string]string{"API key": s.key, "search token": s.token, "link signature": s.signature} {
		if v != "" && strings.Contains(text, v) {
			t.Errorf("%s printed in %s: %q", name, where, text)
		}
	}
}

// printAll formats v with every verb a user (or a logger) might use.
func printAll(v any) string {
	var b strings.Builder
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		fmt.Fprintf(&b, f+"\n", v)
	}
	var js bytes.Buffer
	slog.New(slog.NewJSONHandler(&js, nil)).Info("x", "v", v)
	slog.New(slog.NewTextHandler(&js, nil)).Info("x", "v", v)
	return b.String() + js.String()
}

// recorder is an HTTP server that records the headers it receives by host.
type recorder struct {
	mu   sync.Mutex
	seen []http.Header
	srv  *httptest.Server
	port string
}

func newRecorder(t *testing.T, tls bool, h func(w http.ResponseWriter, r *http.Request)) *recorder {
	rec := &recorder{}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		hd := r.Header.Clone()
		hd.Set("X-Seen-Host", r.Host)
		rec.seen = append(rec.seen, hd)
		rec.mu.Unlock()
		h(w, r)
	})
	if tls {
		rec.srv = httptest.NewTLSServer(handler)
	} else {
		rec.srv = httptest.NewServer(handler)
	}
	t.Cleanup(rec.srv.Close)
	_, rec.port, _ = net.SplitHostPort(rec.srv.Listener.Addr().String())
	return rec
}

func (r *recorder) headers() []http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]http.Header(nil), r.seen...)
}

// loopbackDialer sends every host name to 127.0.0.1, keeping the port, so
// tests can use names that look like the API host.
func loopbackDialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		_, port, _ := net.SplitHostPort(addr)
		return d.DialContext(ctx, network, "127.0.0.1:"+port)
	}
}

func portOf(r *http.Request) string {
	_, p, _ := net.SplitHostPort(r.Host)
	return p
}
