package lendgraph_test

import (
	"context"
	"errors"
	"net/http"
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

// TestOutcomeUnknownTellsMayHaveActedFromNothingHappened (item 12): every
// failure of a call that charges or acts says whether the request may have
// reached the server (errors.Is ErrOutcomeUnknown) or certainly did not.
// A fault proxy sits between the client and the fake, which counts the
// requests, jobs and charges that reached it.
func TestOutcomeUnknownTellsMayHaveActedFromNothingHappened(t *testing.T) {
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
