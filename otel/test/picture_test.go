package lendgraphotel_test

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
	lendgraphotel "github.com/lendgraph/lendgraph-go/otel"
)

// TestPicture_DeliveryTrace draws the waterfall of one real delivery's
// trace (submit, polls, a download cut mid-body and resumed with a Range
// request, its link re-signed) from the spans the SDK exported, into
// the SVG file $LENDGRAPH_TRACE_PICTURE names (docs/delivery-trace.png,
// the README's picture, is a headless Chromium screenshot of it; from
// otel/test: LENDGRAPH_TRACE_PICTURE=$PWD/../../docs/delivery-trace.svg
// go test -run Picture .).
func TestPicture_DeliveryTrace(t *testing.T) {
	out := os.Getenv("LENDGRAPH_TRACE_PICTURE")
	if out == "" {
		t.Skip("set LENDGRAPH_TRACE_PICTURE to draw the picture")
	}
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithJobRate("delivery", 4000))
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	c := srv.Client(lendgraph.WithObserver(lendgraphotel.New(tp, nil, propagation.TraceContext{})))
	ctx, root := tp.Tracer("example").Start(context.Background(), "handler: nightly agents export")
	job, err := c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := job.Wait(ctx, lendgraph.WithPollInterval(30*time.Millisecond, 60*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	srv.InjectFault(http.MethodGet, "/objects/{key...}", lendgraphtest.Fault{Kind: lendgraphtest.DropMidBody})
	srv.InjectFault(http.MethodGet, "/objects/{key...}", lendgraphtest.Fault{Status: 403, Body: "<Error><Code>AccessDenied</Code></Error>"})
	if _, err := job.Download(ctx, io.Discard); err != nil {
		t.Fatal(err)
	}
	root.End()
	all := spans.Ended()
	sort.Slice(all, func(i, j int) bool { return all[i].StartTime().Before(all[j].StartTime()) })
	depth := map[string]int{}
	for _, s := range all {
		depth[s.SpanContext().SpanID().String()] = depth[s.Parent().SpanID().String()] + 1
	}
	const rowH, labelW, barW = 22, 470, 560
	var svg strings.Builder
	fmt.Fprintf(&svg, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="monospace" font-size="12">`+"\n",
		labelW+barW+20, rowH*(len(all)+2))
	fmt.Fprintf(&svg, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	t0, t1 := root.(sdktrace.ReadOnlySpan).StartTime(), root.(sdktrace.ReadOnlySpan).EndTime()
	scale := float64(barW) / float64(t1.Sub(t0))
	fmt.Fprintf(&svg, `<text x="8" y="15">one delivery as lendgraphotel exported it (%s): operations blue, HTTP attempts green, failed attempts red</text>`+"\n",
		t1.Sub(t0).Round(time.Millisecond))
	for i, s := range all {
		y := rowH * (i + 1)
		label := s.Name()
		for _, kv := range s.Attributes() {
			switch kv.Key {
			case "http.response.status_code", "lendgraph.download.range", "error.type":
				label += " " + kv.Value.String()
			}
		}
		ind := (depth[s.SpanContext().SpanID().String()] - 1) * 12
		col := "#4682b4" // an operation
		if s.SpanKind().String() == "client" {
			col = "#3caa6e"
			if s.Status().Code == 1 { // error
				col = "#d2503c"
			}
		}
		x0 := labelW + int(float64(s.StartTime().Sub(t0))*scale)
		w := max(int(float64(s.EndTime().Sub(s.StartTime()))*scale), 2)
		fmt.Fprintf(&svg, `<text x="%d" y="%d">%s</text><rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`+"\n",
			8+ind, y+15, html.EscapeString(label), x0, y+4, w, rowH-8, col)
	}
	svg.WriteString("</svg>\n")
	if err := os.WriteFile(out, []byte(svg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
