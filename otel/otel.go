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
// charged cannot be known), and events: "retry" (reason, wait),
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
//     lendgraph.client.outcome_unknown, by operation.
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
type Observer struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
	cfg    config

	attemptDur  metric.Float64Histogram
	opDur       metric.Float64Histogram
	attempts    metric.Int64Counter
	retries     metric.Int64Counter
	limiterWait metric.Float64Histogram
	serverWait  metric.Float64Histogram
	bytes       metric.Int64Counter
	credits     metric.Float64Counter
	unknown     metric.Int64Counter
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

// StartOperation implements lendgraph.Observer.
func (o *Observer) StartOperation(ctx context.Context, name string) (context.Context, lendgraph.OperationObserver) {
	ctx, span := o.tracer.Start(ctx, "lendgraph "+name, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(keyOperation.String(name)))
	return ctx, &operation{o: o, ctx: ctx, span: span, name: name, op: keyOperation.String(name), start: time.Now()}
}

// operation is one operation's span.
type operation struct {
	o     *Observer
	ctx   context.Context
	span  trace.Span
	name  string
	op    attribute.KeyValue
	start time.Time
}

// StartAttempt implements lendgraph.OperationObserver.
func (p *operation) StartAttempt(ctx context.Context, a lendgraph.AttemptInfo) lendgraph.AttemptObserver {
	name := a.Method
	if a.URLTemplate != "" {
		name += " " + a.URLTemplate
	}
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs, keyMethod.String(a.Method), keyServerAddress.String(a.Host), keyServerPort.Int(a.Port),
		keyTarget.String(a.Target.String()))
	if a.URLTemplate != "" {
		attrs = append(attrs, keyURLTemplate.String(a.URLTemplate))
	}
	if a.ResendCount > 0 {
		attrs = append(attrs, keyResend.Int(a.ResendCount))
	}
	if a.Range != "" {
		attrs = append(attrs, keyRange.String(a.Range))
	}
	ctx, span := p.o.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return &attempt{p: p, ctx: ctx, span: span, info: a, start: time.Now()}
}

// Event implements lendgraph.OperationObserver.
func (p *operation) Event(e lendgraph.Event) {
	secs := e.Wait.Seconds()
	switch e.Kind {
	case lendgraph.EventRetry:
		p.span.AddEvent("retry", trace.WithAttributes(keyRetryReason.String(e.Reason), keyWait.Float64(secs)))
		p.o.retries.Add(p.ctx, 1, metric.WithAttributes(p.op, keyRetryReason.String(e.Reason)))
	case lendgraph.EventRateLimiterWait:
		p.span.AddEvent("rate_limiter_wait", trace.WithAttributes(keyWait.Float64(secs)))
		p.o.limiterWait.Record(p.ctx, secs, metric.WithAttributes(p.op))
	case lendgraph.EventServerWait:
		p.span.AddEvent("server_wait", trace.WithAttributes(keyWaitReason.String(e.Reason), keyWait.Float64(secs)))
		p.o.serverWait.Record(p.ctx, secs, metric.WithAttributes(p.op, keyWaitReason.String(e.Reason)))
	case lendgraph.EventResume:
		p.span.AddEvent("download.resume", trace.WithAttributes(keyOffset.Int64(e.Offset)))
	case lendgraph.EventLinkResigned:
		p.span.AddEvent("download.link_resigned")
	}
}

// End implements lendgraph.OperationObserver.
func (p *operation) End(s lendgraph.Summary, err error) {
	attrs := make([]attribute.KeyValue, 0, 12)
	add := func(k string, v int64) {
		if v != 0 {
			attrs = append(attrs, attribute.Int64(k, v))
		}
	}
	add("lendgraph.attempts", int64(s.Attempts))
	add("lendgraph.retries", int64(s.Retries))
	if s.JobID != "" {
		attrs = append(attrs, attribute.String("lendgraph.job.id", s.JobID))
	}
	if s.JobStatus != "" {
		attrs = append(attrs, attribute.String("lendgraph.job.status", s.JobStatus))
	}
	add("lendgraph.job.polls", int64(s.Polls))
	add("lendgraph.pages", s.Pages)
	add("lendgraph.rows", s.Rows)
	add("lendgraph.download.bytes", s.Bytes)
	add("lendgraph.download.ranges", int64(s.Ranges))
	add("lendgraph.download.connections", int64(s.Connections))
	add("lendgraph.download.resumptions", int64(s.Resumptions))
	add("lendgraph.download.links_resigned", int64(s.LinksResigned))
	if s.RetryBudgetExhausted {
		attrs = append(attrs, attribute.Bool("lendgraph.retry_budget.exhausted", true))
	}
	if s.CreditsKnown {
		attrs = append(attrs, attribute.Float64("lendgraph.credits.charged", s.Credits))
		if s.Credits != 0 {
			p.o.credits.Add(p.ctx, s.Credits, metric.WithAttributes(p.op))
		}
	}
	if s.OutcomeUnknown {
		attrs = append(attrs, attribute.Bool("lendgraph.outcome_unknown", true))
		p.o.unknown.Add(p.ctx, 1, metric.WithAttributes(p.op))
	}
	if s.Bytes > 0 {
		p.o.bytes.Add(p.ctx, s.Bytes, metric.WithAttributes(p.op))
	}
	mattrs := []attribute.KeyValue{p.op}
	if err != nil {
		et := errorType(err)
		attrs = append(attrs, keyErrorType.String(et))
		mattrs = append(mattrs, keyErrorType.String(et))
		p.span.SetStatus(codes.Error, err.Error())
	}
	p.span.SetAttributes(attrs...)
	p.o.opDur.Record(p.ctx, time.Since(p.start).Seconds(), metric.WithAttributes(mattrs...))
	p.span.End()
}

// attempt is one HTTP attempt's span.
type attempt struct {
	p     *operation
	ctx   context.Context
	span  trace.Span
	info  lendgraph.AttemptInfo
	start time.Time
}

// Inject implements lendgraph.AttemptObserver.
func (a *attempt) Inject(h http.Header) {
	if a.p.o.prop == nil || (a.info.Target == lendgraph.TargetSearchHost && !a.p.o.cfg.searchHost) ||
		(a.info.Target != lendgraph.TargetAPI && a.info.Target != lendgraph.TargetSearchHost) {
		return
	}
	a.p.o.prop.Inject(a.ctx, propagation.HeaderCarrier(h))
}

// End implements lendgraph.AttemptObserver.
func (a *attempt) End(r lendgraph.AttemptResult) {
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs, keyMethod.String(a.info.Method), keyServerAddress.String(a.info.Host), keyServerPort.Int(a.info.Port), a.p.op)
	if a.info.URLTemplate != "" {
		attrs = append(attrs, keyURLTemplate.String(a.info.URLTemplate))
	}
	if r.StatusCode != 0 {
		attrs = append(attrs, keyStatus.Int(r.StatusCode))
		a.span.SetAttributes(keyStatus.Int(r.StatusCode))
	}
	if r.ErrorType != "" {
		attrs = append(attrs, keyErrorType.String(r.ErrorType))
		a.span.SetAttributes(keyErrorType.String(r.ErrorType))
		a.span.SetStatus(codes.Error, "")
	}
	set := metric.WithAttributes(attrs...)
	a.p.o.attemptDur.Record(a.p.ctx, time.Since(a.start).Seconds(), set)
	a.p.o.attempts.Add(a.p.ctx, 1, set)
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
