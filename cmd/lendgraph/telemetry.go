package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

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
type telemetry struct {
	obs  *lendgraphotel.Observer
	tp   *sdktrace.TracerProvider
	mp   *sdkmetric.MeterProvider
	root trace.Span
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
// TLS) and starts the command's root span.
func startTelemetry(ctx context.Context, getenv func(string) string, command string) (context.Context, *telemetry, error) {
	for _, v := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"} {
		if p := getenv(v); p != "" && p != "http/protobuf" {
			return ctx, nil, fmt.Errorf("%s=%s: this tool exports OTLP over http/protobuf only (port 4318 by default)", v, p)
		}
	}
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
		tp: sdktrace.NewTracerProvider(sdktrace.WithBatcher(te), sdktrace.WithResource(res)),
		mp: sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(me)), sdkmetric.WithResource(res)),
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
	return errors.Join(t.tp.Shutdown(ctx), t.mp.Shutdown(ctx))
}
