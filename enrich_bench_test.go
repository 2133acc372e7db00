package lendgraph_test

import (
	"context"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// benchWait runs a 50,000-property bulk job paced to about 10 s and reports
// how many status requests Wait made, their rate, and how long after the
// server's completedAt Wait returned.
func benchWait(b *testing.B, opts ...lendgraph.EnrichWaitOption) {
	srv := lendgraphtest.NewServer(b, lendgraphtest.WithRows("properties", 50_000), lendgraphtest.WithJobRate("enrichment", 5000))
	c, ctx := srv.Client(), context.Background()
	ids := propertyIDs(srv, 50_000)
	var polls, lag, secs float64
	for b.Loop() {
		job, err := c.Properties.EnrichBulk(ctx, ids, &lendgraph.EnrichBulkRequest{Refresh: true})
		if err != nil {
			b.Fatal(err)
		}
		srv.ResetRequests()
		start := time.Now()
		st, err := job.Wait(ctx, opts...)
		done := time.Now()
		if err != nil || st.Status != lendgraph.JobCompleted {
			b.Fatal(err)
		}
		polls += float64(srv.CountRequests("GET", "/v1/properties/enrich-bulk/*"))
		lag += float64(done.Sub(st.CompletedAt).Milliseconds())
		secs += done.Sub(start).Seconds()
	}
	n := float64(b.N)
	b.ReportMetric(polls/n, "polls/op")
	b.ReportMetric(polls/secs, "polls/s")
	b.ReportMetric(lag/n, "lag-ms/op")
	b.ReportMetric(secs/n, "job-s/op")
}

// BenchmarkEnrichWait is Wait with its default schedule (200ms growing to 1s).
func BenchmarkEnrichWait(b *testing.B) { benchWait(b) }

// BenchmarkEnrichWaitFixed200ms is the baseline: polling at a fixed 200ms,
// the fastest the default schedule ever polls.
func BenchmarkEnrichWaitFixed200ms(b *testing.B) {
	benchWait(b, lendgraph.WithPollInterval(200*time.Millisecond, 200*time.Millisecond))
}
