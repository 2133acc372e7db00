package lendgraphotel_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/export"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
	lendgraphotel "github.com/lendgraph/lendgraph-go/otel"
)

// TestExport_OneSpanPerShard: an export run under one span is one trace,
// with a span for each shard (started by the export's own hook,
// RunOptions.StartShard) and, under each, the shard's submit, wait and
// download, which the adapter traces.
func TestExport_OneSpanPerShard(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithRows("agents", 300), lendgraphtest.WithNoStateShare(0))
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	obs := lendgraphotel.New(tp, nil, propagation.TraceContext{})
	c := srv.Client(lendgraph.WithObserver(obs))
	ctx := context.Background()
	p, err := export.NewPlan(ctx, c.Agents, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV}, &export.PlanOptions{By: []string{"state"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Shards) < 2 {
		t.Fatalf("%d shards", len(p.Shards))
	}
	dest, err := export.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer dest.Close()
	tracer := tp.Tracer("test")
	ctx, root := tracer.Start(ctx, "export run")
	res, err := export.Run(ctx, c.Agents, p, dest, &export.RunOptions{Concurrency: 3,
		StartShard: func(ctx context.Context, shard string) (context.Context, func(export.ShardStatus, error)) {
			ctx, span := tracer.Start(ctx, "lendgraph export.Shard", trace.WithAttributes(attribute.String("lendgraph.export.shard", shard)))
			return ctx, func(s export.ShardStatus, err error) {
				span.SetAttributes(attribute.String("lendgraph.job.id", s.JobID), attribute.Int64("lendgraph.rows", s.Rows))
				span.End()
			}
		},
		WaitOptions: []lendgraph.DeliveryWaitOption{lendgraph.WithPollInterval(2*time.Millisecond, 10*time.Millisecond)}})
	root.End()
	if err != nil || !res.Complete {
		t.Fatalf("run: %+v %v", res, err)
	}
	tr := &traced{spans: spans}
	shards := tr.named("lendgraph export.Shard")
	if len(shards) != len(p.Shards) {
		t.Fatalf("%d shard spans for %d shards", len(shards), len(p.Shards))
	}
	names := map[string]bool{}
	for _, s := range shards {
		names[attrString(s, "lendgraph.export.shard")] = true
		if s.Parent().SpanID() != root.SpanContext().SpanID() || attrInt(s, "lendgraph.rows") == 0 || attrString(s, "lendgraph.job.id") == "" {
			t.Errorf("shard span %v (parent %v)", s.Attributes(), s.Parent().SpanID())
		}
		kids := map[string]int{}
		for _, k := range tr.children(s) {
			kids[k.Name()]++
		}
		if kids["lendgraph Agents.Deliver"] != 1 || kids["lendgraph DeliveryJob.Wait"] != 1 || kids["lendgraph DeliveryJob.Download"] != 1 {
			t.Errorf("under shard %s: %v", attrString(s, "lendgraph.export.shard"), kids)
		}
	}
	for _, sh := range p.Shards {
		if !names[sh.Name] {
			t.Errorf("no span for shard %s", sh.Name)
		}
	}
	// Every shard's spans, down to the HTTP attempts, are in the run's trace.
	for _, s := range spans.Ended() {
		if s.StartTime().After(shards[0].StartTime()) && s.SpanContext().TraceID() != root.SpanContext().TraceID() {
			t.Errorf("span %s is in another trace", s.Name())
		}
	}
}
