package lendgraphotel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
	lendgraphotel "github.com/lendgraph/lendgraph-go/otel"
)

// benchServerEnv, set in a test binary's environment, makes it the fake
// API of a benchmark instead of running tests (serveBenchAPI).
const benchServerEnv = "LENDGRAPHOTEL_BENCH_SERVER"

// benchAgents is how many agents the benchmarks' fake API holds.
const benchAgents = 1000

// benchAPI is where the benchmarks' fake API listens, with a key and an
// agent id to get.
type benchAPI struct {
	URL, Key, ID string
}

// serveBenchAPI, when benchServerEnv is set, serves a fake API in this
// process: it prints a benchAPI as one line of JSON, serves until its
// standard input closes, and exits. The benchmarks run it in a process of
// their own so that the process they measure is the client alone.
func serveBenchAPI() {
	if os.Getenv(benchServerEnv) == "" {
		return
	}
	srv, err := lendgraphtest.Start(lendgraphtest.WithRows("agents", benchAgents))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(benchAPI{URL: srv.URL, Key: srv.DefaultCaller().Key, ID: srv.Dataset().ID("agents", 2)})
	_, _ = io.Copy(io.Discard, os.Stdin)
	srv.Close()
	os.Exit(0)
}

// startBenchAPI starts this test binary again as the fake API (see
// serveBenchAPI) and stops it when b ends.
func startBenchAPI(b *testing.B) benchAPI {
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), benchServerEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	var api benchAPI
	if err := json.NewDecoder(stdout).Decode(&api); err != nil {
		b.Fatalf("the fake API's process: %v", err)
	}
	return api
}

// discard is a span exporter that drops what it is given.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// benchMode is one way of observing a client: its name in the metrics the
// benchmarks report, and its client's options.
type benchMode struct {
	name string
	opts []lendgraph.Option
}

// benchModes are the ways the benchmarks compare, the floor first: no
// observer ("off", and "off2", another client without one, which shows
// the measurement's own spread); the adapter with no-op providers; traces
// alone (a real SDK tracer provider with a batch span processor, to an
// exporter that drops the spans); metrics alone (a real SDK meter
// provider); both; both with one trace in ten sampled ("both10",
// ParentBased(TraceIDRatioBased(0.1))); and, with bare, traces alone
// through a simple span processor that exports as each span ends
// ("syncer": what the batch processor's goroutine costs), and what the SDK
// alone costs for the telemetry of "both" on an Agents.Get ("bare",
// bareObserver).
func benchModes(b *testing.B, bare bool) []benchMode {
	ctx := context.Background()
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { _ = tp.Shutdown(ctx); _ = mp.Shutdown(ctx) })
	prop := propagation.TraceContext{}
	with := func(o lendgraph.Observer) []lendgraph.Option {
		return []lendgraph.Option{lendgraph.WithObserver(o)}
	}
	sampled := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.1))))
	b.Cleanup(func() { _ = sampled.Shutdown(ctx) })
	modes := []benchMode{
		{"off", nil},
		{"off2", nil},
		{"noop", with(lendgraphotel.New(tracenoop.NewTracerProvider(), metricnoop.NewMeterProvider(), prop))},
		{"traces", with(lendgraphotel.New(tp, nil, prop))},
		{"metrics", with(lendgraphotel.New(nil, mp, prop))},
		{"both", with(lendgraphotel.New(tp, mp, prop))},
		{"both10", with(lendgraphotel.New(sampled, mp, prop))},
	}
	if bare {
		syncer := sdktrace.NewTracerProvider(sdktrace.WithSyncer(discard{}))
		b.Cleanup(func() { _ = syncer.Shutdown(ctx) })
		modes = append(modes, benchMode{"syncer", with(lendgraphotel.New(syncer, nil, prop))},
			benchMode{"bare", with(newBareObserver(tp, mp, prop))})
	}
	return modes
}

// bareObserver is the "bare" mode: a lendgraph.Observer that
// makes, with the same providers, the spans and measurements the adapter
// makes of a successful call without retries (an operation span, a client
// span per attempt with the same attributes, traceparent injected, the
// attempt's duration and count and the operation's duration), and nothing
// else: no summary, no events, no errors, attribute sets made once. What
// it costs is what OpenTelemetry's SDK costs for that telemetry.
type bareObserver struct {
	tracer                trace.Tracer
	prop                  propagation.TextMapPropagator
	attemptDur, opDur     metric.Float64Histogram
	attempts              metric.Int64Counter
	opAttrs, attemptAttrs metric.MeasurementOption
}

func newBareObserver(tp trace.TracerProvider, mp metric.MeterProvider, prop propagation.TextMapPropagator) *bareObserver {
	m := mp.Meter("floor")
	o := &bareObserver{tracer: tp.Tracer("floor"), prop: prop}
	o.attemptDur, _ = m.Float64Histogram("http.client.request.duration")
	o.opDur, _ = m.Float64Histogram("lendgraph.client.operation.duration")
	o.attempts, _ = m.Int64Counter("lendgraph.client.attempts")
	o.opAttrs = metric.WithAttributeSet(attribute.NewSet(attribute.String("lendgraph.operation", "Agents.Get")))
	o.attemptAttrs = metric.WithAttributeSet(attribute.NewSet(attribute.String("lendgraph.operation", "Agents.Get"),
		attribute.String("http.request.method", "GET"), attribute.String("server.address", "127.0.0.1"),
		attribute.Int("server.port", 1), attribute.String("url.template", "/v1/agents/{id}"), attribute.Int("http.response.status_code", 200)))
	return o
}

type bareOp struct {
	o     *bareObserver
	ctx   context.Context
	span  trace.Span
	start time.Time
}

type bareAttempt struct {
	op    *bareOp
	ctx   context.Context
	span  trace.Span
	start time.Time
}

func (o *bareObserver) StartOperation(ctx context.Context, name string) (context.Context, lendgraph.OperationObserver) {
	ctx, span := o.tracer.Start(ctx, "lendgraph "+name, trace.WithAttributes(attribute.String("lendgraph.operation", name)))
	return ctx, &bareOp{o: o, ctx: ctx, span: span, start: time.Now()}
}

func (p *bareOp) StartAttempt(ctx context.Context, a lendgraph.AttemptInfo) lendgraph.AttemptObserver {
	ctx, span := p.o.tracer.Start(ctx, a.Method+" "+a.URLTemplate, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("http.request.method", a.Method), attribute.String("server.address", a.Host),
			attribute.Int("server.port", a.Port), attribute.String("lendgraph.target", a.Target.String()),
			attribute.String("url.template", a.URLTemplate)))
	return &bareAttempt{op: p, ctx: ctx, span: span, start: time.Now()}
}

func (p *bareOp) Event(lendgraph.Event) {}

func (p *bareOp) End(s lendgraph.Summary, _ error) {
	p.span.SetAttributes(attribute.Int("lendgraph.attempts", s.Attempts))
	p.o.opDur.Record(p.ctx, time.Since(p.start).Seconds(), p.o.opAttrs)
	p.span.End()
}

func (a *bareAttempt) Inject(h http.Header) { a.op.o.prop.Inject(a.ctx, propagation.HeaderCarrier(h)) }

func (a *bareAttempt) End(r lendgraph.AttemptResult) {
	a.span.SetAttributes(attribute.Int("http.response.status_code", r.StatusCode))
	a.op.o.attemptDur.Record(a.op.ctx, time.Since(a.start).Seconds(), a.op.o.attemptAttrs)
	a.op.o.attempts.Add(a.op.ctx, 1, a.op.o.attemptAttrs)
	a.span.End()
}

// cpu is the process's user+system CPU time so far.
func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// alternate measures op on a client of each mode, in turns of block calls
// (each round starting with another mode, so that a change in the
// machine's load falls on every mode alike), and reports for each mode
// the process's CPU time a call (MODE-cpu-ns/call; the fake API runs in
// another process), its ratio to the floor, mode "off" (MODE-x), and its
// heap allocations a call (MODE-allocs/call, MODE-B/call). An iteration
// is one round: block calls in every mode.
func alternate(b *testing.B, api benchAPI, block int, modes []benchMode, op func(c *lendgraph.Client) error) {
	clients := make([]*lendgraph.Client, len(modes))
	for i, m := range modes {
		c, err := lendgraph.NewClient(append([]lendgraph.Option{lendgraph.WithBaseURL(api.URL), lendgraph.WithAPIKey(api.Key)}, m.opts...)...)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.Close() })
		clients[i] = c
		for range block { // warm the connection pool and the instruments
			if err := op(c); err != nil {
				b.Fatal(err)
			}
		}
	}
	cpus := make([]time.Duration, len(modes))
	allocs := make([]uint64, len(modes))
	bytes := make([]uint64, len(modes))
	var before, after runtime.MemStats
	rounds := 0
	for b.Loop() {
		for k := range modes {
			m := (k + rounds) % len(modes)
			runtime.ReadMemStats(&before)
			start := cpu()
			for range block {
				if err := op(clients[m]); err != nil {
					b.Fatal(err)
				}
			}
			cpus[m] += cpu() - start
			runtime.ReadMemStats(&after)
			allocs[m] += after.Mallocs - before.Mallocs
			bytes[m] += after.TotalAlloc - before.TotalAlloc
		}
		rounds++
	}
	calls := float64(rounds * block)
	for m, mode := range modes {
		b.ReportMetric(float64(cpus[m].Nanoseconds())/calls, mode.name+"-cpu-ns/call")
		b.ReportMetric(float64(cpus[m])/float64(cpus[0]), mode.name+"-x")
		b.ReportMetric(float64(allocs[m])/calls, mode.name+"-allocs/call")
		b.ReportMetric(float64(bytes[m])/calls, mode.name+"-B/call")
	}
}

// BenchmarkObservedGet compares the client CPU of single calls (Agents.Get
// against the fake API over loopback, in another process) with no
// observer and with the adapter in each mode (benchModes): see
// BENCHMARKS.md.
func BenchmarkObservedGet(b *testing.B) {
	api := startBenchAPI(b)
	ctx := context.Background()
	alternate(b, api, 100, benchModes(b, true), func(c *lendgraph.Client) error {
		_, err := c.Agents.Get(ctx, api.ID)
		return err
	})
}

// BenchmarkObservedGetNoop is BenchmarkObservedGet with no observer
// (twice) and the adapter with no-op providers only, so that more rounds
// fit in the same time: it measures what "costs nothing measurable"
// allows, against the spread between two clients without observer.
func BenchmarkObservedGetNoop(b *testing.B) {
	api := startBenchAPI(b)
	ctx := context.Background()
	var modes []benchMode
	for _, m := range benchModes(b, false) {
		if m.name == "off" || m.name == "off2" || m.name == "noop" {
			modes = append(modes, m)
		}
	}
	alternate(b, api, 100, modes, func(c *lendgraph.Client) error {
		_, err := c.Agents.Get(ctx, api.ID)
		return err
	})
}

// BenchmarkObservedList compares the client CPU of a listing (ranging
// over Agents.All, 10 pages of 100 agents, against the fake API in another
// process) in each mode (benchModes).
func BenchmarkObservedList(b *testing.B) {
	api := startBenchAPI(b)
	ctx := context.Background()
	req := &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 100}}
	alternate(b, api, 5, benchModes(b, false), func(c *lendgraph.Client) error {
		n := 0
		for _, err := range c.Agents.All(ctx, req) {
			if err != nil {
				return err
			}
			n++
		}
		if n != benchAgents {
			return fmt.Errorf("%d agents listed, want %d", n, benchAgents)
		}
		return nil
	})
}
