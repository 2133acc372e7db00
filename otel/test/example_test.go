package lendgraphotel_test

import (
	"context"
	"fmt"
	"log"
	"slices"

	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
	lendgraphotel "github.com/lendgraph/lendgraph-go/otel"
)

// A client reporting to OpenTelemetry SDK providers: here they keep what
// they record in memory (a service exports it instead), and the client
// talks to the fake API. One Get is an operation span with its HTTP
// attempt under it, and a measurement in each of the attempt and
// operation metrics.
func ExampleNew() {
	srv, err := lendgraphtest.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	ctx := context.Background()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = tp.Shutdown(ctx); _ = mp.Shutdown(ctx) }()

	obs := lendgraphotel.New(tp, mp, propagation.TraceContext{})
	client, err := lendgraph.NewClient(lendgraph.WithBaseURL(srv.URL), lendgraph.WithAPIKey(srv.DefaultCaller().Key),
		lendgraph.WithObserver(obs))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	if _, err := client.Agents.Get(ctx, srv.Dataset().ID("agents", 1)); err != nil {
		log.Fatal(err)
	}

	names := map[string]string{} // span id -> name
	for _, s := range spans.GetSpans() {
		names[s.SpanContext.SpanID().String()] = s.Name
	}
	for _, s := range spans.GetSpans() {
		fmt.Printf("span %q (%s)", s.Name, s.SpanKind)
		if parent, ok := names[s.Parent.SpanID().String()]; ok {
			fmt.Printf(" under %q", parent)
		}
		for _, kv := range s.Attributes {
			switch kv.Key {
			case "http.response.status_code", "url.template", "lendgraph.attempts":
				fmt.Printf(" %s=%s", kv.Key, kv.Value.String())
			}
		}
		fmt.Println()
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		log.Fatal(err)
	}
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					op, _ := p.Attributes.Value("lendgraph.operation")
					lines = append(lines, fmt.Sprintf("metric %s{lendgraph.operation=%s} = %d", m.Name, op.String(), p.Value))
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					op, _ := p.Attributes.Value("lendgraph.operation")
					lines = append(lines, fmt.Sprintf("metric %s{lendgraph.operation=%s}: %d measured", m.Name, op.String(), p.Count))
				}
			}
		}
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// span "GET /v1/agents/{id}" (client) under "lendgraph Agents.Get" url.template=/v1/agents/{id} http.response.status_code=200
	// span "lendgraph Agents.Get" (internal) lendgraph.attempts=1
	// metric http.client.request.duration{lendgraph.operation=Agents.Get}: 1 measured
	// metric lendgraph.client.attempts{lendgraph.operation=Agents.Get} = 1
	// metric lendgraph.client.operation.duration{lendgraph.operation=Agents.Get}: 1 measured
}
