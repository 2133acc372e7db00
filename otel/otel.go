// Package lendgraphotel reports what a lendgraph client does as
// OpenTelemetry traces and metrics. It is a package of its own, as parquet
// and searchhost are, so a program that imports only package lendgraph
// links no OpenTelemetry module: a Go binary links the packages it imports,
// not every module its go.mod requires.
//
// Wire it into a service that already set up OpenTelemetry:
//
//	obs := lendgraphotel.New(otel.GetTracerProvider(), otel.GetMeterProvider(), otel.GetTextMapPropagator())
//	client, err := lendgraph.NewClient(lendgraph.WithObserver(obs))
//
// # Spans
//
// Every SDK operation is a span named "lendgraph " + the operation
// ("lendgraph Agents.List", "lendgraph DeliveryJob.Wait",
// "lendgraph Agents.All" for a whole range over an iterator). Under it,
// every HTTP attempt is a client span following OpenTelemetry's HTTP client
// conventions: named after the method and url.template ("GET
// /v1/agents/bulk-delivery/{id}"; a storage link's attempt is named "GET"
// alone), with http.request.method, server.address, server.port,
// url.template (ids templated, never raw), http.response.status_code,
// http.request.resend_count and error.type. A storage attempt carries
// lendgraph.download.range when it asks for a byte range.
//
// The operation span carries what the SDK counted (lendgraph.attempts,
// lendgraph.retries; for a job's Wait lendgraph.job.id, lendgraph.job.polls
// and lendgraph.job.status; for an iterator lendgraph.rows and
// lendgraph.pages; for a download lendgraph.download.bytes, .ranges,
// .connections, .resumptions and .links_resigned; for a call that charges
// lendgraph.credits.charged, or lendgraph.outcome_unknown when what it
// charged cannot be known; lendgraph.retry_budget.exhausted when a spent
// retry budget kept it from retrying), and events: "retry" (reason, wait),
// "rate_limiter_wait", "server_wait" (reason, wait), "download.resume"
// (offset) and "download.link_resigned". A failed operation has status
// Error, the SDK's error text (which never holds a key, a token or a link's
// signature) and error.type.
//
// # Metrics
//
//   - http.client.request.duration (s): every attempt, by method, server,
//     url.template, status, error.type and lendgraph.operation;
//   - lendgraph.client.operation.duration (s): every operation;
//   - lendgraph.client.attempts and lendgraph.client.retries (by
//     lendgraph.retry.reason);
//   - lendgraph.client.rate_limiter.wait (s) and
//     lendgraph.client.server_wait (s, by lendgraph.wait.reason);
//   - lendgraph.client.download.size (By): bytes downloaded;
//   - lendgraph.client.credits.charged ({credit}) and
//     lendgraph.client.outcome_unknown, by operation;
//   - lendgraph.client.retry_budget.exhausted ({operation}): operations a
//     spent retry budget kept from retrying (lendgraph.WithRetryBudget,
//     lendgraph.ErrRetryBudgetExhausted), by operation.
//
// # Cost
//
// With a no-op tracer provider no span is started, with a no-op meter
// provider nothing is measured, and an operation that neither records nor
// has a span context to pass on is not watched at all, so the adapter
// with no-op providers costs a call next to nothing. Span names, the
// spans' first attributes and the metrics' attribute sets are built once
// and reused. BENCHMARKS.md has the figures.
//
// # Propagation
//
// The W3C trace context (whatever propagator New is given) goes to the API
// host only. Signed storage links and hosts a redirect leads to never get
// it (the SDK does not ask); the search host gets it only with
// PropagateToSearchHost.
package lendgraphotel

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/lendgraph/lendgraph-go"
)

// ScopeName is the instrumentation scope of the spans and metrics.
const ScopeName = "github.com/lendgraph/lendgraph-go/otel"

// Option configures New.
type Option func(*config)

type config struct {
	searchHost bool
}

// PropagateToSearchHost sends the trace context to the search host too
// (SearchHost.Search). Without it only the API host receives it.
func PropagateToSearchHost() Option { return func(c *config) { c.searchHost = true } }

// Observer is a lendgraph.Observer reporting to OpenTelemetry. Make one
// with New and share it across clients; it is safe for concurrent use.
//
// What an operation or an attempt is reported with is built once and
// kept: the span names, the spans' first attributes and the metrics'
// attribute sets, by operation, by an attempt's route (method, host, port,
// url.template) and by outcome. These are few (the SDK's operations and
// routes, the hosts a client talks to); past 512 of a kind the observer
// keeps no more and builds the others at each call.
type Observer struct {
	tracer trace.Tracer
	// noSpans: the tracer is a no-op one, so the observer starts no span
	// at all (the caller's span context, if any, is still propagated).
	noSpans bool
	prop    propagation.TextMapPropagator
	cfg     config

	attemptDur  metric.Float64Histogram
	opDur       metric.Float64Histogram
	attempts    metric.Int64Counter
	retries     metric.Int64Counter
	limiterWait metric.Float64Histogram
	serverWait  metric.Float64Histogram
	bytes       metric.Int64Counter
	credits     metric.Float64Counter
	unknown     metric.Int64Counter
	budget      metric.Int64Counter

	ops  kept[string, *opNames]
	hops kept[hopKey, *hopNames]
	sets kept[setKey, measure]
}

var _ lendgraph.Observer = (*Observer)(nil)

// New returns an observer recording spans with tp, metrics with mp and
// injecting trace context with prop. A nil tp or mp records nothing of
// that kind; a nil prop injects nothing.
func New(tp trace.TracerProvider, mp metric.MeterProvider, prop propagation.TextMapPropagator, opts ...Option) *Observer {
	o := &Observer{prop: prop}
	for _, opt := range opts {
		if opt != nil {
			opt(&o.cfg)
		}
	}
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	o.tracer = tp.Tracer(ScopeName, trace.WithInstrumentationVersion(lendgraph.Version))
	_, o.noSpans = o.tracer.(tracenoop.Tracer)
	m := mp.Meter(ScopeName, metric.WithInstrumentationVersion(lendgraph.Version))
	// An instrument that cannot be created is a no-op one (the API
	// returns it with the error): the SDK's calls go on either way.
	durations := metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 30, 60, 300)
	o.attemptDur, _ = m.Float64Histogram("http.client.request.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of HTTP client requests."), durations)
	o.opDur, _ = m.Float64Histogram("lendgraph.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of SDK operations, every attempt, wait and poll included."), durations)
	o.attempts, _ = m.Int64Counter("lendgraph.client.attempts", metric.WithUnit("{attempt}"),
		metric.WithDescription("HTTP attempts the SDK made, retries included."))
	o.retries, _ = m.Int64Counter("lendgraph.client.retries", metric.WithUnit("{retry}"),
		metric.WithDescription("Requests the SDK repeated, by reason."))
	o.limiterWait, _ = m.Float64Histogram("lendgraph.client.rate_limiter.wait", metric.WithUnit("s"),
		metric.WithDescription("Time attempts waited for the client's rate limiter."), durations)
	o.serverWait, _ = m.Float64Histogram("lendgraph.client.server_wait", metric.WithUnit("s"),
		metric.WithDescription("Time spent waiting because the server asked (Retry-After, throttled polls)."), durations)
	o.bytes, _ = m.Int64Counter("lendgraph.client.download.size", metric.WithUnit("By"),
		metric.WithDescription("Bytes of result files downloaded."))
	o.credits, _ = m.Float64Counter("lendgraph.client.credits.charged", metric.WithUnit("{credit}"),
		metric.WithDescription("Credits the API's answers say were charged, by operation."))
	o.unknown, _ = m.Int64Counter("lendgraph.client.outcome_unknown", metric.WithUnit("{operation}"),
		metric.WithDescription("Operations that charge or act whose outcome (and charge) is unknown."))
	o.budget, _ = m.Int64Counter("lendgraph.client.retry_budget.exhausted", metric.WithUnit("{operation}"),
		metric.WithDescription("Operations that were not retried because the client's retry budget was spent."))
	return o
}

// Attribute keys the adapter sets beyond OpenTelemetry's conventions.
const (
	keyOperation     = attribute.Key("lendgraph.operation")
	keyTarget        = attribute.Key("lendgraph.target")
	keyRange         = attribute.Key("lendgraph.download.range")
	keyRetryReason   = attribute.Key("lendgraph.retry.reason")
	keyWaitReason    = attribute.Key("lendgraph.wait.reason")
	keyWait          = attribute.Key("lendgraph.wait.seconds")
	keyOffset        = attribute.Key("lendgraph.download.offset")
	keyErrorType     = attribute.Key("error.type")
	keyMethod        = attribute.Key("http.request.method")
	keyStatus        = attribute.Key("http.response.status_code")
	keyResend        = attribute.Key("http.request.resend_count")
	keyServerAddress = attribute.Key("server.address")
	keyServerPort    = attribute.Key("server.port")
	keyURLTemplate   = attribute.Key("url.template")
)

// metricsOn reports whether any instrument records (a no-op meter
// provider's never do).
func (o *Observer) metricsOn(ctx context.Context) bool {
	return o.attemptDur.Enabled(ctx) || o.opDur.Enabled(ctx) || o.attempts.Enabled(ctx) || o.retries.Enabled(ctx) ||
		o.limiterWait.Enabled(ctx) || o.serverWait.Enabled(ctx) || o.bytes.Enabled(ctx) || o.credits.Enabled(ctx) ||
		o.unknown.Enabled(ctx) || o.budget.Enabled(ctx)
}

// opNames is what every span of an operation called name starts with.
type opNames struct {
	name  string
	span  string // "lendgraph " + name
	start []trace.SpanStartOption
}

func newOpNames(name string) *opNames {
	return &opNames{name: name, span: "lendgraph " + name,
		start: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(keyOperation.String(name))}}
}

// hopKey is an attempt's route: what its span's name and first
// attributes are made of.
type hopKey struct {
	target   lendgraph.Target
	method   string
	host     string
	port     int
	template string
}

// hopNames is what every attempt span of a route starts with.
type hopNames struct {
	key   hopKey
	span  string               // the method, and the url.template if any
	attrs []attribute.KeyValue // method, server, target, url.template
	start []trace.SpanStartOption
}

func newHopNames(k hopKey) *hopNames {
	h := &hopNames{key: k, span: k.method}
	if k.template != "" {
		h.span += " " + k.template
	}
	h.attrs = []attribute.KeyValue{keyMethod.String(k.method), keyServerAddress.String(k.host), keyServerPort.Int(k.port),
		keyTarget.String(k.target.String())}
	if k.template != "" {
		h.attrs = append(h.attrs, keyURLTemplate.String(k.template))
	}
	h.start = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(h.attrs...)}
	return h
}

// Kinds of attribute set a measurement is made with (setKey.kind).
const (
	setOperation  = iota // lendgraph.operation, error.type when text is set
	setAttempt           // an attempt's: its route, operation, status and error.type
	setRetry             // lendgraph.operation, lendgraph.retry.reason
	setServerWait        // lendgraph.operation, lendgraph.wait.reason
)

// setKey names the attribute set of a measurement.
type setKey struct {
	kind   int
	op     string
	hop    hopKey // setAttempt
	status int    // setAttempt
	text   string // error.type or a reason
}

// measure is an attribute set as the instruments take it.
type measure struct {
	rec []metric.RecordOption
	add []metric.AddOption
}

// measure returns the attribute set k names.
func (o *Observer) measure(k setKey) measure {
	m, _ := o.sets.get(k, func() measure {
		attrs := make([]attribute.KeyValue, 0, 7)
		attrs = append(attrs, keyOperation.String(k.op))
		switch k.kind {
		case setOperation, setAttempt:
			if k.kind == setAttempt {
				attrs = append(attrs, keyMethod.String(k.hop.method), keyServerAddress.String(k.hop.host), keyServerPort.Int(k.hop.port))
				if k.hop.template != "" {
					attrs = append(attrs, keyURLTemplate.String(k.hop.template))
				}
				if k.status != 0 {
					attrs = append(attrs, keyStatus.Int(k.status))
				}
			}
			if k.text != "" {
				attrs = append(attrs, keyErrorType.String(k.text))
			}
		case setRetry:
			attrs = append(attrs, keyRetryReason.String(k.text))
		case setServerWait:
			attrs = append(attrs, keyWaitReason.String(k.text))
		}
		opt := metric.WithAttributeSet(attribute.NewSet(attrs...))
		return measure{rec: []metric.RecordOption{opt}, add: []metric.AddOption{opt}}
	})
	return m
}

// maxKept is how many entries of a kind an Observer keeps (see Observer).
const maxKept = 512

// kept is a map that is read without a lock and grows by copying, up to
// maxKept entries.
type kept[K comparable, V any] struct {
	mu sync.Mutex
	m  atomic.Pointer[map[K]V]
}

// get returns the value kept for k, or builds it and keeps it while there
// is room.
func (c *kept[K, V]) get(k K, build func() V) (V, bool) {
	if m := c.m.Load(); m != nil {
		if v, ok := (*m)[k]; ok {
			return v, true
		}
	}
	v := build()
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	if old != nil {
		if kept, ok := (*old)[k]; ok {
			return kept, true
		}
		if len(*old) >= maxKept {
			return v, false
		}
	}
	next := make(map[K]V, 1+len(ptrMap(old)))
	for kk, vv := range ptrMap(old) {
		next[kk] = vv
	}
	next[k] = v
	c.m.Store(&next)
	return v, true
}

func ptrMap[K comparable, V any](m *map[K]V) map[K]V {
	if m == nil {
		return nil
	}
	return *m
}

// noSpan is the span of every operation and attempt of an observer whose
// tracer is a no-op one: it records nothing and has no span context.
var noSpan trace.Span = tracenoop.Span{}

// StartOperation implements lendgraph.Observer.
func (o *Observer) StartOperation(ctx context.Context, name string) (context.Context, lendgraph.OperationObserver) {
	names, _ := o.ops.get(name, func() *opNames { return newOpNames(name) })
	span := noSpan
	if !o.noSpans {
		ctx, span = o.tracer.Start(ctx, names.span, names.start...)
	}
	metrics := o.metricsOn(ctx)
	if !metrics && !span.IsRecording() && (o.prop == nil || !trace.SpanContextFromContext(ctx).IsValid()) {
		return ctx, nil // no span records, no instrument measures, no trace context to pass on
	}
	p := &operation{o: o, names: names, ctx: ctx, span: span, metrics: metrics}
	if metrics {
		p.start = time.Now()
	}
	return ctx, p
}

// operation is one operation's span.
type operation struct {
	o       *Observer
	names   *opNames
	ctx     context.Context
	span    trace.Span
	metrics bool      // the instruments measure
	start   time.Time // when metrics
}

// StartAttempt implements lendgraph.OperationObserver.
func (p *operation) StartAttempt(ctx context.Context, a lendgraph.AttemptInfo) lendgraph.AttemptObserver {
	k := hopKey{target: a.Target, method: a.Method, host: a.Host, port: a.Port, template: a.URLTemplate}
	hop, _ := p.o.hops.get(k, func() *hopNames { return newHopNames(k) })
	start := hop.start
	if (a.ResendCount > 0 || a.Range != "") && !p.o.noSpans {
		attrs := append(make([]attribute.KeyValue, 0, len(hop.attrs)+2), hop.attrs...)
		if a.ResendCount > 0 {
			attrs = append(attrs, keyResend.Int(a.ResendCount))
		}
		if a.Range != "" {
			attrs = append(attrs, keyRange.String(a.Range))
		}
		start = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...)}
	}
	span := noSpan
	if !p.o.noSpans {
		ctx, span = p.o.tracer.Start(ctx, hop.span, start...)
	}
	inject := p.o.injects(a.Target) && trace.SpanContextFromContext(ctx).IsValid()
	if !p.metrics && !span.IsRecording() && !inject {
		return nil
	}
	at := &attempt{p: p, ctx: ctx, span: span, hop: hop, inject: inject}
	if p.metrics {
		at.start = time.Now()
	}
	return at
}

// injects reports whether attempts to target get the trace context.
func (o *Observer) injects(t lendgraph.Target) bool {
	return o.prop != nil && (t == lendgraph.TargetAPI || t == lendgraph.TargetSearchHost && o.cfg.searchHost)
}

// Event implements lendgraph.OperationObserver.
func (p *operation) Event(e lendgraph.Event) {
	secs := e.Wait.Seconds()
	rec := p.span.IsRecording()
	switch e.Kind {
	case lendgraph.EventRetry:
		if rec {
			p.span.AddEvent("retry", trace.WithAttributes(keyRetryReason.String(e.Reason), keyWait.Float64(secs)))
		}
		if p.metrics {
			p.o.retries.Add(p.ctx, 1, p.o.measure(setKey{kind: setRetry, op: p.names.name, text: e.Reason}).add...)
		}
	case lendgraph.EventRateLimiterWait:
		if rec {
			p.span.AddEvent("rate_limiter_wait", trace.WithAttributes(keyWait.Float64(secs)))
		}
		if p.metrics {
			p.o.limiterWait.Record(p.ctx, secs, p.o.measure(setKey{kind: setOperation, op: p.names.name}).rec...)
		}
	case lendgraph.EventServerWait:
		if rec {
			p.span.AddEvent("server_wait", trace.WithAttributes(keyWaitReason.String(e.Reason), keyWait.Float64(secs)))
		}
		if p.metrics {
			p.o.serverWait.Record(p.ctx, secs, p.o.measure(setKey{kind: setServerWait, op: p.names.name, text: e.Reason}).rec...)
		}
	case lendgraph.EventResume:
		if rec {
			p.span.AddEvent("download.resume", trace.WithAttributes(keyOffset.Int64(e.Offset)))
		}
	case lendgraph.EventLinkResigned:
		if rec {
			p.span.AddEvent("download.link_resigned")
		}
	}
}

// End implements lendgraph.OperationObserver.
func (p *operation) End(s lendgraph.Summary, err error) {
	var et string
	if err != nil {
		et = errorType(err)
	}
	if p.span.IsRecording() {
		if attrs := summaryAttributes(s, et); len(attrs) > 0 {
			p.span.SetAttributes(attrs...)
		}
		if err != nil {
			p.span.SetStatus(codes.Error, err.Error())
		}
	}
	if p.metrics {
		op := p.o.measure(setKey{kind: setOperation, op: p.names.name})
		if s.CreditsKnown && s.Credits != 0 {
			p.o.credits.Add(p.ctx, s.Credits, op.add...)
		}
		if s.OutcomeUnknown {
			p.o.unknown.Add(p.ctx, 1, op.add...)
		}
		if s.RetryBudgetExhausted {
			p.o.budget.Add(p.ctx, 1, op.add...)
		}
		if s.Bytes > 0 {
			p.o.bytes.Add(p.ctx, s.Bytes, op.add...)
		}
		if et != "" {
			op = p.o.measure(setKey{kind: setOperation, op: p.names.name, text: et})
		}
		p.o.opDur.Record(p.ctx, time.Since(p.start).Seconds(), op.rec...)
	}
	p.span.End()
}

// summaryAttributes are the operation span's attributes from what the SDK
// counted, and error.type when et is set.
func summaryAttributes(s lendgraph.Summary, et string) []attribute.KeyValue {
	ints := [...]struct {
		key string
		v   int64
	}{
		{"lendgraph.attempts", int64(s.Attempts)},
		{"lendgraph.retries", int64(s.Retries)},
		{"lendgraph.job.polls", int64(s.Polls)},
		{"lendgraph.pages", s.Pages},
		{"lendgraph.rows", s.Rows},
		{"lendgraph.download.bytes", s.Bytes},
		{"lendgraph.download.ranges", int64(s.Ranges)},
		{"lendgraph.download.connections", int64(s.Connections)},
		{"lendgraph.download.resumptions", int64(s.Resumptions)},
		{"lendgraph.download.links_resigned", int64(s.LinksResigned)},
	}
	n := 0
	for _, kv := range ints {
		if kv.v != 0 {
			n++
		}
	}
	strs := [...]struct{ key, v string }{
		{"lendgraph.job.id", s.JobID},
		{"lendgraph.job.status", s.JobStatus},
		{string(keyErrorType), et},
	}
	for _, kv := range strs {
		if kv.v != "" {
			n++
		}
	}
	bools := [...]struct {
		key string
		v   bool
	}{
		{"lendgraph.retry_budget.exhausted", s.RetryBudgetExhausted},
		{"lendgraph.outcome_unknown", s.OutcomeUnknown},
	}
	for _, kv := range bools {
		if kv.v {
			n++
		}
	}
	if s.CreditsKnown {
		n++
	}
	if n == 0 {
		return nil
	}
	attrs := make([]attribute.KeyValue, 0, n)
	for _, kv := range ints {
		if kv.v != 0 {
			attrs = append(attrs, attribute.Int64(kv.key, kv.v))
		}
	}
	for _, kv := range strs {
		if kv.v != "" {
			attrs = append(attrs, attribute.String(kv.key, kv.v))
		}
	}
	for _, kv := range bools {
		if kv.v {
			attrs = append(attrs, attribute.Bool(kv.key, true))
		}
	}
	if s.CreditsKnown {
		attrs = append(attrs, attribute.Float64("lendgraph.credits.charged", s.Credits))
	}
	return attrs
}

// attempt is one HTTP attempt's span.
type attempt struct {
	p      *operation
	ctx    context.Context
	span   trace.Span
	hop    *hopNames
	inject bool      // the attempt's target gets the trace context
	start  time.Time // when metrics
}

// Inject implements lendgraph.AttemptObserver.
func (a *attempt) Inject(h http.Header) {
	if a.inject {
		a.p.o.prop.Inject(a.ctx, propagation.HeaderCarrier(h))
	}
}

// End implements lendgraph.AttemptObserver.
func (a *attempt) End(r lendgraph.AttemptResult) {
	if a.span.IsRecording() {
		switch {
		case r.StatusCode != 0 && r.ErrorType != "":
			a.span.SetAttributes(keyStatus.Int(r.StatusCode), keyErrorType.String(r.ErrorType))
		case r.StatusCode != 0:
			a.span.SetAttributes(keyStatus.Int(r.StatusCode))
		case r.ErrorType != "":
			a.span.SetAttributes(keyErrorType.String(r.ErrorType))
		}
		if r.ErrorType != "" {
			a.span.SetStatus(codes.Error, "")
		}
	}
	if p := a.p; p.metrics {
		m := p.o.measure(setKey{kind: setAttempt, op: p.names.name, hop: a.hop.key, status: r.StatusCode, text: r.ErrorType})
		p.o.attemptDur.Record(p.ctx, time.Since(a.start).Seconds(), m.rec...)
		p.o.attempts.Add(p.ctx, 1, m.add...)
	}
	a.span.End()
}

// errorType classifies an operation's error (error.type) without quoting
// it: the status code of an API answer, a few well-known conditions, or
// the error's Go type.
func errorType(err error) string {
	var api *lendgraph.APIError
	var inv *lendgraph.InvalidArgumentError
	var job *lendgraph.JobError
	switch {
	case errors.Is(err, lendgraph.ErrOutcomeUnknown):
		return "outcome_unknown"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	case errors.As(err, &api):
		return strconv.Itoa(api.StatusCode)
	case errors.As(err, &inv):
		return "invalid_argument"
	case errors.As(err, &job):
		return "job_" + job.Status
	}
	return fmt.Sprintf("%T", err)
}
