package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/lendgraph/lendgraph-go"
	lendgraphotel "github.com/lendgraph/lendgraph-go/otel"
)

// telemetry exports the traces and metrics of one run over OTLP, when the
// standard OTEL_EXPORTER_OTLP_* variables name an endpoint: one trace a
// command, its root span named after the command ("lendgraph export"),
// the SDK's operations under it.
//
// What OpenTelemetry itself has to say (its internal logger, its error
// handler: a collector refusing an export, a malformed variable) goes
// through the tool's own messages (JSON under --json), with every header
// value of the OTLP configuration redacted: a collector answering 401 may
// echo the Authorization header it was sent.
type telemetry struct {
	obs  *lendgraphotel.Observer
	tp   *sdktrace.TracerProvider
	mp   *sdkmetric.MeterProvider
	root trace.Span
	red  *redactor
}

// otlpHeaderVars are the variables whose values are OTLP request headers:
// credentials, as often as not.
var otlpHeaderVars = []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_METRICS_HEADERS"}

// checkOTLPHeaders checks the OTLP header variables as OpenTelemetry
// parses them (NAME=VALUE entries separated by commas, the value
// %-encoded) and returns the secrets they hold: each variable whole and
// each value as written, decoded, and its words. A malformed entry is
// reported by its variable and position, never by its text: the
// common typo "Authorization: Bearer TOKEN" would otherwise print the
// token.
func checkOTLPHeaders(getenv func(string) string) (secrets []string, err error) {
	var problems []string
	for _, name := range otlpHeaderVars {
		raw := getenv(name)
		if strings.TrimSpace(raw) == "" {
			continue
		}
		secrets = append(secrets, raw)
		entries := strings.Split(raw, ",")
		for i, entry := range entries {
			if strings.TrimSpace(entry) == "" {
				continue
			}
			secrets = append(secrets, entry)
			at := fmt.Sprintf("%s: entry %d of %d", name, i+1, len(entries))
			key, value, ok := strings.Cut(entry, "=")
			if !ok {
				problems = append(problems, at+` has no "=": write NAME=VALUE with the value %-encoded, e.g. Authorization=Bearer%20TOKEN`)
				continue
			}
			secrets = append(secrets, value)
			key = strings.TrimSpace(key)
			if !validHeaderName(key) {
				problems = append(problems, at+": the part before \"=\" is not a header name (letters, digits and !#$%&'*+-.^_`|~)")
				continue
			}
			decoded, derr := url.PathUnescape(value)
			if derr != nil {
				problems = append(problems, fmt.Sprintf("%s (%s): the value has a malformed %%-escape: write %%XX with two hex digits (%%20 for a space, %%25 for %%)", at, key))
				continue
			}
			secrets = append(secrets, strings.TrimSpace(decoded))
			secrets = append(secrets, strings.Fields(decoded)...)
		}
	}
	if len(problems) > 0 {
		return secrets, errors.New(strings.Join(problems, "; "))
	}
	return secrets, nil
}

// validHeaderName tells whether s is an HTTP header name (an RFC 9110 token).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r))) {
			return false
		}
	}
	return true
}

// redactor hides secrets in the text it is given.
type redactor struct{ r *strings.Replacer }

// minSecret is the length under which a word of a header value is not
// redacted on its own ("Bearer" is, a one-letter word is not).
const minSecret = 4

func newRedactor(secrets []string) *redactor {
	// Longest first: a value is hidden whole before its words are.
	secrets = slices.DeleteFunc(slices.Clone(secrets), func(s string) bool { return len(strings.TrimSpace(s)) < minSecret })
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	secrets = slices.Compact(secrets)
	var pairs []string
	for _, s := range secrets {
		pairs = append(pairs, s, "[redacted]")
	}
	return &redactor{strings.NewReplacer(pairs...)}
}

func (r *redactor) redact(s string) string { return r.r.Replace(s) }

// otelSink is OpenTelemetry's internal logger (a logr sink): its errors
// and warnings, redacted, become the tool's messages.
type otelSink struct {
	say func(string)
	red *redactor
	kv  []any
}

func (s *otelSink) Init(logr.RuntimeInfo)  {}
func (s *otelSink) Enabled(level int) bool { return level <= 1 } // errors and warnings; not info or debug
func (s *otelSink) Info(_ int, msg string, kv ...any) {
	s.say("telemetry: " + s.red.redact(msg+formatKV(append(slices.Clone(s.kv), kv...))))
}
func (s *otelSink) Error(err error, msg string, kv ...any) {
	s.say("telemetry: " + s.red.redact(msg+": "+fmt.Sprint(err)+formatKV(append(slices.Clone(s.kv), kv...))))
}
func (s *otelSink) WithValues(kv ...any) logr.LogSink {
	return &otelSink{say: s.say, red: s.red, kv: append(slices.Clone(s.kv), kv...)}
}
func (s *otelSink) WithName(string) logr.LogSink { return s }

func formatKV(kv []any) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, " %v=%v", kv[i], kv[i+1])
	}
	return b.String()
}

// telemetryWanted reports whether the environment asks for OTLP export.
func telemetryWanted(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"} {
		if getenv(v) != "" {
			return true
		}
	}
	return false
}

// startTelemetry sets up the OTLP/HTTP exporters (they read the
// OTEL_EXPORTER_OTLP_* variables themselves: endpoint, headers, timeout,
// TLS) and starts the command's root span. OpenTelemetry's internal
// logger and error handler, process-wide, go to say, redacted.
func startTelemetry(ctx context.Context, getenv func(string) string, command string, say func(string)) (context.Context, *telemetry, error) {
	for _, v := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"} {
		if p := getenv(v); p != "" && p != "http/protobuf" {
			return ctx, nil, fmt.Errorf("%s=%s: this tool exports OTLP over http/protobuf only (port 4318 by default)", v, p)
		}
	}
	secrets, err := checkOTLPHeaders(getenv)
	red := newRedactor(secrets)
	if err != nil {
		return ctx, nil, err
	}
	otel.SetLogger(logr.New(&otelSink{say: say, red: red}))
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { say("telemetry: " + red.redact(err.Error())) }))
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", "lendgraph-cli"),
		attribute.String("service.version", lendgraph.Version)), resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return ctx, nil, err
	}
	te, err := otlptracehttp.New(ctx)
	if err != nil {
		return ctx, nil, err
	}
	me, err := otlpmetrichttp.New(ctx)
	if err != nil {
		return ctx, nil, err
	}
	t := &telemetry{
		red: red,
		tp:  sdktrace.NewTracerProvider(sdktrace.WithBatcher(te), sdktrace.WithResource(res)),
		mp:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(me)), sdkmetric.WithResource(res)),
	}
	t.obs = lendgraphotel.New(t.tp, t.mp, propagation.TraceContext{})
	ctx, t.root = t.tp.Tracer(lendgraphotel.ScopeName).Start(ctx, command, trace.WithSpanKind(trace.SpanKindInternal))
	return ctx, t, nil
}

// end ends the root span with the command's error and sends what is left
// (within 5 seconds: a collector that is down does not hold the command).
func (t *telemetry) end(err error) error {
	if err != nil {
		t.root.SetStatus(codes.Error, err.Error())
	}
	t.root.End()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := errors.Join(t.tp.Shutdown(ctx), t.mp.Shutdown(ctx)); err != nil {
		return errors.New(t.red.redact(err.Error()))
	}
	return nil
}
