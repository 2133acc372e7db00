package lendgraphotel_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
	lendgraphotel "github.com/lendgraph/lendgraph-go/otel"
)

// discard is a span exporter that drops what it is given.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// cpu is the process's user+system CPU time so far.
func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkListAgentsTracing lists 100,000 agents (100 a page, over
// loopback, from the in-process fake) with tracing off and on: on is a
// real SDK tracer provider with a batch span processor (to an exporter
// that drops the spans) and a real meter provider. cpu-ms/op is the
// process's CPU time, the fake server's included (the same in both).
func BenchmarkListAgentsTracing(b *testing.B) {
	const rows = 100_000
	srv := lendgraphtest.NewServer(b, lendgraphtest.WithRows("agents", rows))
	ctx := context.Background()
	list := func(b *testing.B, c *lendgraph.Client) {
		start := cpu()
		for b.Loop() {
			n := 0
			for _, err := range c.Agents.All(ctx, &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 100}}) {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			if n != rows {
				b.Fatalf("%d rows", n)
			}
		}
		b.ReportMetric(float64((cpu()-start).Milliseconds())/float64(b.N), "cpu-ms/op")
	}
	b.Run("off", func(b *testing.B) { list(b, srv.Client()) })
	b.Run("on", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		defer func() { _ = tp.Shutdown(ctx); _ = mp.Shutdown(ctx) }()
		list(b, srv.Client(lendgraph.WithObserver(lendgraphotel.New(tp, mp, propagation.TraceContext{}))))
	})
}
