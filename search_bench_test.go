package lendgraph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

const (
	benchQueries    = 10_000
	benchGoroutines = 16
)

// runQueries runs n queries from g goroutines and returns the wall time.
func runQueries(b *testing.B, n, g int, query func() error) time.Duration {
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range g {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := query(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

// BenchmarkSearchHostTokenLifetimes runs 10,000 host searches from 16
// goroutines while the fake clock covers 5.5 token lifetimes, and reports
// the mints per token rotation (goal: exactly 1), mints that came too soon
// after another (goal: 0) and the host's refusals (goal: 0: tokens are
// replaced before they expire).
func BenchmarkSearchHostTokenLifetimes(b *testing.B) {
	for _, ttl := range []time.Duration{30 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute} {
		b.Run("ttl="+ttl.String(), func(b *testing.B) {
			srv := lendgraphtest.NewServer(b)
			srv.SetSearchTokenTTL(ttl)
			c := srv.Client()
			lendgraph.SetSearchClock(c, srv.Now)
			h := c.Search.Host()
			ctx := context.Background()
			req := &lendgraph.HostSearchRequest{Q: "jo", Limit: 10}
			if _, err := h.Search(ctx, lendgraph.IndexAgents, req); err != nil { // builds the index
				b.Fatal(err)
			}
			// The run covers 5.5 token lifetimes of the fake clock. A token
			// is replaced halfway through its lifetime, so a new token is
			// due every ttl/2: that many rotations.
			span := 11 * ttl / 2
			step := span / benchQueries
			rotation := ttl / 2
			rotations := float64(span) / float64(rotation)
			var mints, duplicates, refused int
			for b.Loop() {
				srv.ResetRequests()
				runQueries(b, benchQueries, benchGoroutines, func() error {
					srv.Advance(step)
					_, err := h.Search(ctx, lendgraph.IndexAgents, req)
					return err
				})
				// A mint sooner than half a rotation after the last is a duplicate.
				var last time.Time
				for _, r := range srv.Requests() {
					if r.Path != "/v1/search-token" {
						continue
					}
					mints++
					if !last.IsZero() && r.At.Sub(last) < rotation/2 {
						duplicates++
					}
					last = r.At
				}
				refused += srv.CountRequests("POST", "/indexes/*/search") - benchQueries
			}
			b.ReportMetric(float64(mints)/float64(b.N), "mints/10k-queries")
			b.ReportMetric(float64(mints)/(float64(b.N)*rotations), "mints/rotation")
			b.ReportMetric(float64(duplicates)/float64(b.N), "duplicate-mints")
			b.ReportMetric(float64(refused)/float64(b.N), "refusals")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkSearchHostOverhead compares, in the same run and against the
// same fake host, 10,000 queries from 16 goroutines through the SDK
// (SearchHost.Search: token source, bearer transport, SDK retry layer,
// typed envelope) with the same queries through a bare net/http POST
// holding a token and decoding the envelope with encoding/json. Rounds alternate which goes first; the reported
// ratio is the median over rounds (goal ≤ 1.10).
func BenchmarkSearchHostOverhead(b *testing.B) {
	srv := lendgraphtest.NewServer(b)
	// The same connection pool settings on both sides: room for 16 idle
	// connections (http.DefaultTransport keeps 2 a host).
	transport := func() *http.Client {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 32
		return &http.Client{Transport: t}
	}
	c := srv.Client(lendgraph.WithHTTPClient(transport()))
	h := c.Search.Host()
	ctx := context.Background()
	token := srv.NewSearchToken(time.Hour)
	bare := bareSearch(transport(), srv.SearchHostURL(), token)
	sdk := func() error {
		_, err := h.Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo", Limit: 10})
		return err
	}
	raw := func() error { return bare(ctx, "agents", `{"q":"jo","limit":10}`) }
	for range 200 { // warm up: index built, connections open
		if sdk() != nil || raw() != nil {
			b.Fatal("warm-up failed")
		}
	}
	var ratios []float64
	var sdkTotal, bareTotal time.Duration
	round := 0
	for b.Loop() {
		srv.ResetRequests()
		var ds, db time.Duration
		if round%2 == 0 {
			db = runQueries(b, benchQueries, benchGoroutines, raw)
			ds = runQueries(b, benchQueries, benchGoroutines, sdk)
		} else {
			ds = runQueries(b, benchQueries, benchGoroutines, sdk)
			db = runQueries(b, benchQueries, benchGoroutines, raw)
		}
		round++
		sdkTotal += ds
		bareTotal += db
		ratios = append(ratios, float64(ds)/float64(db))
	}
	slices.Sort(ratios)
	n := float64(b.N * benchQueries)
	b.ReportMetric(float64(sdkTotal.Nanoseconds())/n, "sdk-ns/query")
	b.ReportMetric(float64(bareTotal.Nanoseconds())/n, "bare-ns/query")
	b.ReportMetric(ratios[len(ratios)/2], "sdk/bare")
	b.ReportMetric(0, "ns/op")
	if srv.SearchTokenMints() != 1 {
		b.Errorf("%d mints", srv.SearchTokenMints())
	}
}

// bareSearch is the floor the SDK is measured against: one hand-written
// POST /indexes/{index}/search with a token, its envelope decoded with
// encoding/json, no retries, no token source.
func bareSearch(hc *http.Client, host, token string) func(ctx context.Context, index, body string) error {
	return func(ctx context.Context, index, body string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, host+"/indexes/"+index+"/search", bytes.NewReader([]byte(body)))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			_, _ = io.Copy(io.Discard, resp.Body)
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		var out struct {
			Hits               []json.RawMessage `json:"hits"`
			Query              string            `json:"query"`
			Limit              int               `json:"limit"`
			Offset             int               `json:"offset"`
			EstimatedTotalHits int64             `json:"estimatedTotalHits"`
		}
		return json.NewDecoder(resp.Body).Decode(&out)
	}
}

// BenchmarkSearchHostQuery is one query at a time, SDK against the bare
// client on the same host: time and allocations per query (the fake host's
// own work included, the same on both sides).
func BenchmarkSearchHostQuery(b *testing.B) {
	srv := lendgraphtest.NewServer(b)
	c := srv.Client()
	h := c.Search.Host()
	ctx := context.Background()
	bare := bareSearch(&http.Client{}, srv.SearchHostURL(), srv.NewSearchToken(time.Hour))
	if _, err := h.Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"}); err != nil {
		b.Fatal(err)
	}
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := bare(ctx, "agents", `{"q":"jo","limit":10}`); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := h.Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo", Limit: 10}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
