package lendgraphotel_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
	lendgraphotel "github.com/lendgraph/lendgraph-go/otel"
)

// traced is a client of srv reporting to an in-memory span recorder and a
// manual metric reader.
type traced struct {
	c      *lendgraph.Client
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
}

func newTraced(t *testing.T, srv *lendgraphtest.Server, opts ...lendgraph.Option) *traced {
	t.Helper()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
	obs := lendgraphotel.New(tp, mp, propagation.TraceContext{})
	opts = append([]lendgraph.Option{lendgraph.WithObserver(obs), lendgraph.WithRetryBackoff(time.Millisecond, 2*time.Millisecond)}, opts...)
	return &traced{c: srv.Client(opts...), spans: spans, reader: reader}
}

// named returns the ended spans called name.
func (tr *traced) named(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range tr.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// children returns the ended spans whose parent is s.
func (tr *traced) children(s sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, c := range tr.spans.Ended() {
		if c.Parent().SpanID() == s.SpanContext().SpanID() {
			out = append(out, c)
		}
	}
	return out
}

func attr(s sdktrace.ReadOnlySpan, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func attrInt(s sdktrace.ReadOnlySpan, key string) int64 {
	v, _ := attr(s, key)
	return v.AsInt64()
}

func attrString(s sdktrace.ReadOnlySpan, key string) string {
	v, _ := attr(s, key)
	return v.AsString()
}

// opCase is one public operation: its call and what its span must say.
type opCase struct {
	op       string // the span is "lendgraph " + op
	mayFail  bool   // the fake may answer an error (then the span is an error span)
	template string // url.template of its first API attempt ("" to skip)
	method   string
	call     func(ctx context.Context, c *lendgraph.Client, srv *lendgraphtest.Server) error
}

func drain[T any](seq func(func(T, error) bool)) error {
	for _, err := range seq {
		if err != nil {
			return err
		}
	}
	return nil
}

func completedDelivery(ctx context.Context, c *lendgraph.Client) (*lendgraph.DeliveryJob[lendgraph.Agent], error) {
	job, err := c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 20})
	if err != nil {
		return nil, err
	}
	_, err = job.Wait(ctx, lendgraph.WithPollInterval(2*time.Millisecond, 5*time.Millisecond))
	return job, err
}

func completedEnrichment(ctx context.Context, c *lendgraph.Client, srv *lendgraphtest.Server) (*lendgraph.EnrichJob, error) {
	job, err := c.Properties.EnrichBulk(ctx, []string{srv.Dataset().ID("properties", 1)}, nil)
	if err != nil {
		return nil, err
	}
	_, err = job.Wait(ctx, lendgraph.WithPollInterval(2*time.Millisecond, 5*time.Millisecond))
	return job, err
}

func opCases(t *testing.T) []opCase {
	list := &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 10}}
	get := func(ctx context.Context, c *lendgraph.Client, srv *lendgraphtest.Server) error {
		_, err := c.Agents.Get(ctx, srv.Dataset().ID("agents", 2))
		return err
	}
	dir := t.TempDir()
	return []opCase{
		{"Agents.List", false, "/v1/agents", "POST", func(ctx context.Context, c *lendgraph.Client, _ *lendgraphtest.Server) error {
			_, err := c.Agents.List(ctx, list)
			return err
		}},
		{"Agents.Get", false, "/v1/agents/{id}", "GET", get},
		{"Agents.All", false, "/v1/agents", "POST", func(ctx context.Context, c *lendgraph.Client, _ *lendgraphtest.Server) error {
			return drain(c.Agents.All(ctx, list))
		}},
		{"Agents.Summary", false, "/v1/agents/analytics/summary", "POST", func(ctx context.Context, c *lendgraph.Client, _ *lendgraphtest.Server) error {
			_, err := c.Agents.Summary(ctx, nil)
			return err
		}},
		{"Agents.TimeSeries", false, "/v1/agents/analytics/time-series", "POST", func(ctx context.Context, c *lendgraph.Client, _ *lendgraphtest.Server) error {
			_, err := c.Agents.TimeSeries(ctx, nil)
			return err
		}},
		{"Sales.Chart", false, "/v1/sales/analytics/chart", "POST", func(ctx context.Context, c *lendgraph.Client, _ *lendgraphtest.Server) error {
			_, err := c.Sales.Chart(ctx, &lendgraph.ChartRequest{Slice: "city"})
			return err
		}},
		{"Agents.Deliver", false, "/v1/agents/bulk-delivery", "POST", func(ctx context.Context, c *lendgraph.Client, _ *lendgraphtest.Server) error {
			_, err := c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 5})
			return err
		}},
		{"DeliveryJob.Wait", false, "/v1/agents/bulk-delivery/{id}", "GET", func(ctx context.Context, c *lendgraph.Client, _ *lendgraphtest.Server) error {
			_, err := completedDelivery(ctx, c)
			return err
		}},
		{"DeliveryJob.Status", false, "/v1/agents/bulk-delivery/{id}", "GET", func(ctx context.Context, c *lendgraph.Client, _ *lendgraphtest.Server) error {
			job, err := c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 5})
			if err != nil {
				return err
			}
			_, err = job.Status(ctx)
			return err
		}},
		{"DeliveryJob.Cancel", true, "/v1/agents/bulk-delivery/{id}", "DELETE", func(ctx context.Context, c *lendgraph.Client, _ *lendgraphtest.Server) error {
			job, err := c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 5})
			if err != nil {
				return err
			}
			_, err = job.Cancel(ctx)
			if errors.Is(err, lendgraph.ErrJobFinished) {
				return nil
			}
			return err
		}},
		{"DeliveryJob.Download", false, "", "GET", func(ctx context.Context, c *lendgraph.Client, _ *lendgraphtest.Server) error {
			job, err := completedDelivery(ctx, c)
			if err != nil {
				return err
			}
			_, err = job.Download(ctx, io.Discard)
			return err
		}},
		{"DeliveryJob.DownloadFile", false, "", "GET", func(ctx context.Context, c *lendgraph.Client, _ *lendgraphtest.Server) error {
			job, err := completedDelivery(ctx, c)
			if err != nil {
				return err
			}
			_, err = job.DownloadFile(ctx, filepath.Join(dir, "agents.csv"))
			return err
		}},
		{"DeliveryJob.Rows", false, "", "GET", func(ctx context.Context, c *lendgraph.Client, _ *lendgraphtest.Server) error {
			job, err := completedDelivery(ctx, c)
			if err != nil {
				return err
			}
			return drain(job.Rows(ctx))
		}},
		{"Originators.Count", false, "/v1/originators/count", "POST", func(ctx context.Context, c *lendgraph.Client, _ *lendgraphtest.Server) error {
			_, err := c.Originators.Count(ctx, nil)
			return err
		}},
		{"Originators.TitleCompanies", false, "/v1/originators/{id}/breakdowns/title-companies", "POST", func(ctx context.Context, c *lendgraph.Client, srv *lendgraphtest.Server) error {
			_, err := c.Originators.TitleCompanies(ctx, srv.Dataset().ID("originators", 0), nil)
			return err
		}},
		{"Originators.AllTitleCompanies", false, "/v1/originators/{id}/breakdowns/title-companies", "POST", func(ctx context.Context, c *lendgraph.Client, srv *lendgraphtest.Server) error {
			return drain(c.Originators.AllTitleCompanies(ctx, srv.Dataset().ID("originators", 0), nil))
		}},
		{"Companies.Branches", false, "/v1/companies/{id}/branches", "POST", func(ctx context.Context, c *lendgraph.Client, srv *lendgraphtest.Server) error {
			_, err := c.Companies.Branches(ctx, srv.Dataset().ID("companies", 0), nil)
			return err
		}},
		{"Companies.AllBranches", false, "/v1/companies/{id}/branches", "POST", func(ctx context.Context, c *lendgraph.Client, srv *lendgraphtest.Server) error {
			return drain(c.Companies.AllBranches(ctx, srv.Dataset().ID("companies", 0), nil))
		}},
		{"Companies.LenderCount", false, "/v1/lenders/count", "POST", func(ctx context.Context, c *lendgraph.Client, _ *lendgraphtest.Server) error {
			_, err := c.Companies.LenderCount(ctx, nil)
			return err
		}},
		{"Properties.Count", false, "/v1/properties/count", "POST", func(ctx context.Context, c *lendgraph.Client, _ *lendgraphtest.Server) error {
			_, err := c.Properties.Count(ctx, nil)
			return err
		}},
		{"Properties.Chart", false, "/v1/properties/analytics/chart", "POST", func(ctx context.Context, c *lendgraph.Client, _ *lendgraphtest.Server) error {
			_, err := c.Properties.Chart(ctx, &lendgraph.ChartRequest{Slice: "city"})
			return err
		}},
		{"Properties.AllChart", false, "/v1/properties/analytics/chart", "POST", func(ctx context.Context, c *lendgraph.Client, _ *lendgraphtest.Server) error {
			return drain(c.Properties.AllChart(ctx, &lendgraph.ChartRequest{Slice: "city"}))
		}},
		{"Properties.Related", false, "/v1/properties/{id}/related", "GET", func(ctx context.Context, c *lendgraph.Client, srv *lendgraphtest.Server) error {
			_, err := c.Properties.Related(ctx, srv.Dataset().ID("properties", 0), lendgraph.RelatedLoans, 5)
			return err
		}},
		{"Properties.Enrich", false, "/v1/properties/{id}/enrich", "POST", func(ctx context.Context, c *lendgraph.Client, srv *lendgraphtest.Server) error {
			_, err := c.Properties.Enrich(ctx, srv.Dataset().ID("properties", 4), nil)
			return err
		}},
		{"Properties.EnrichBulk", false, "/v1/properties/enrich-bulk", "POST", func(ctx context.Context, c *lendgraph.Client, srv *lendgraphtest.Server) error {
			_, err := c.Properties.EnrichBulk(ctx, []string{srv.Dataset().ID("properties", 5)}, nil)
			return err
		}},
		{"EnrichJob.Wait", false, "/v1/properties/enrich-bulk/{id}", "GET", func(ctx context.Context, c *lendgraph.Client, srv *lendgraphtest.Server) error {
			_, err := completedEnrichment(ctx, c, srv)
			return err
		}},
		{"EnrichJob.Download", false, "", "GET", func(ctx context.Context, c *lendgraph.Client, srv *lendgraphtest.Server) error {
			job, err := completedEnrichment(ctx, c, srv)
			if err != nil {
				return err
			}
			_, err = job.Download(ctx, io.Discard)
			return err
		}},
		{"EnrichJob.ResultRows", false, "", "GET", func(ctx context.Context, c *lendgraph.Client, srv *lendgraphtest.Server) error {
			job, err := completedEnrichment(ctx, c, srv)
			if err != nil {
				return err
			}
			return drain(job.ResultRows(ctx))
		}},
		{"Properties.Enrichments", false, "/v1/properties/enrichments", "GET", func(ctx context.Context, c *lendgraph.Client, _ *lendgraphtest.Server) error {
			_, err := c.Properties.Enrichments(ctx, nil)
			return err
		}},
		{"Properties.AllEnrichments", false, "/v1/properties/enrichments", "GET", func(ctx context.Context, c *lendgraph.Client, _ *lendgraphtest.Server) error {
			return drain(c.Properties.AllEnrichments(ctx, nil))
		}},
		{"Search.Instant", false, "/v1/instant-search", "POST", func(ctx context.Context, c *lendgraph.Client, _ *lendgraphtest.Server) error {
			_, err := c.Search.Instant(ctx, &lendgraph.InstantSearchRequest{Query: "smi", Limit: 5})
			return err
		}},
		{"Search.Token", false, "/v1/search-token", "GET", func(ctx context.Context, c *lendgraph.Client, _ *lendgraphtest.Server) error {
			_, err := c.Search.Token(ctx)
			return err
		}},
		{"SearchHost.Search", false, "", "POST", func(ctx context.Context, c *lendgraph.Client, _ *lendgraphtest.Server) error {
			_, err := c.Search.Host().Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"})
			return err
		}},
		{"Locations.Suggest", false, "/v1/locations/suggest", "GET", func(ctx context.Context, c *lendgraph.Client, _ *lendgraphtest.Server) error {
			_, err := c.Locations.Suggest(ctx, "Aus", 5)
			return err
		}},
		{"Market.MostGained", false, "/v1/market/movement/most-gained", "GET", func(ctx context.Context, c *lendgraph.Client, _ *lendgraphtest.Server) error {
			_, err := c.Market.MostGained(ctx, &lendgraph.MostGainedRequest{DateRange: "last_12_months", State: "TX"})
			return err
		}},
		{"CRM.Tasks", false, "/v1/crm/tasks", "GET", func(ctx context.Context, c *lendgraph.Client, _ *lendgraphtest.Server) error {
			_, err := c.CRM.Tasks(ctx, nil)
			return err
		}},
		{"CRM.WorkspaceTasks", false, "/v1/crm/tasks/workspace", "GET", func(ctx context.Context, c *lendgraph.Client, _ *lendgraphtest.Server) error {
			_, err := c.CRM.WorkspaceTasks(ctx, nil)
			return err
		}},
		{"CRM.OrgMembers", false, "/v1/crm/org-members", "GET", func(ctx context.Context, c *lendgraph.Client, _ *lendgraphtest.Server) error {
			_, err := c.CRM.OrgMembers(ctx, nil)
			return err
		}},
		{"CRM.TranscribeCall", false, "/v1/crm/calls/transcript", "POST", func(ctx context.Context, c *lendgraph.Client, srv *lendgraphtest.Server) error {
			_, err := c.CRM.TranscribeCall(ctx, srv.CRMFixtures(srv.DefaultCaller()).CallID)
			return err
		}},
		{"CRM.EditNote", false, "/v1/crm/activity", "PATCH", func(ctx context.Context, c *lendgraph.Client, srv *lendgraphtest.Server) error {
			_, err := c.CRM.EditNote(ctx, srv.CRMFixtures(srv.DefaultCaller()).NoteID, "<p>x</p>")
			return err
		}},
		{"CRM.UpdateMeeting", false, "/v1/crm/meetings", "PATCH", func(ctx context.Context, c *lendgraph.Client, srv *lendgraphtest.Server) error {
			_, err := c.CRM.UpdateMeeting(ctx, &lendgraph.UpdateMeetingRequest{ID: srv.CRMFixtures(srv.DefaultCaller()).MeetingID, Action: lendgraph.MeetingResync})
			return err
		}},
		{"CRM.DeleteRecords", false, "/v1/crm/records/delete", "POST", func(ctx context.Context, c *lendgraph.Client, srv *lendgraphtest.Server) error {
			_, err := c.CRM.DeleteRecords(ctx, srv.CRMFixtures(srv.DefaultCaller()).RecordIDs[:1])
			return err
		}},
		{"SavedFilters.List", false, "/v1/saved-filters", "GET", func(ctx context.Context, c *lendgraph.Client, _ *lendgraphtest.Server) error {
			_, err := c.SavedFilters.List(ctx, nil)
			return err
		}},
		{"SavedFilters.Delete", true, "/v1/saved-filters/{id}", "DELETE", func(ctx context.Context, c *lendgraph.Client, _ *lendgraphtest.Server) error {
			_, err := c.SavedFilters.Delete(ctx, "sf_missing")
			if errors.Is(err, lendgraph.ErrNotFound) {
				return nil
			}
			return err
		}},
		{"Integrations.CRMStatus", false, "/v1/integrations/crm/status", "GET", func(ctx context.Context, c *lendgraph.Client, _ *lendgraphtest.Server) error {
			_, err := c.Integrations.CRMStatus(ctx)
			return err
		}},
		{"Integrations.PushCRM", false, "/v1/integrations/crm/push", "POST", func(ctx context.Context, c *lendgraph.Client, srv *lendgraphtest.Server) error {
			_, err := c.Integrations.PushCRM(ctx, &lendgraph.PushCRMRequest{Entity: lendgraph.CRMEntityAgent,
				Object: lendgraph.CRMObjectContact, IDs: []string{srv.Dataset().ID("agents", 0)}})
			return err
		}},
		{"Client.Do", false, "/v1/agents/{id}", "GET", func(ctx context.Context, c *lendgraph.Client, srv *lendgraphtest.Server) error {
			return c.Do(ctx, http.MethodGet, "/v1/agents/"+srv.Dataset().ID("agents", 1), nil, nil)
		}},
	}
}

// TestObserver_EveryOperation runs every public operation once and checks
// its span: the name, one span only, its HTTP attempts as client spans
// under it following the HTTP conventions, ids templated.
func TestObserver_EveryOperation(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(30))
	for _, tc := range opCases(t) {
		t.Run(tc.op, func(t *testing.T) {
			tr := newTraced(t, srv)
			srv.ResetRequests()
			if err := tc.call(context.Background(), tr.c, srv); err != nil {
				t.Fatalf("%s: %v", tc.op, err)
			}
			ops := tr.named("lendgraph " + tc.op)
			if len(ops) != 1 {
				var names []string
				for _, s := range tr.spans.Ended() {
					names = append(names, s.Name())
				}
				t.Fatalf("%d spans named %q; spans: %v", len(ops), "lendgraph "+tc.op, names)
			}
			op := ops[0]
			if attrString(op, "lendgraph.operation") != tc.op || (op.Status().Code == codes.Error && !tc.mayFail) {
				t.Errorf("operation span %v, status %v", op.Attributes(), op.Status())
			}
			var attempts []sdktrace.ReadOnlySpan
			for _, c := range tr.children(op) {
				if c.SpanKind().String() == "client" {
					attempts = append(attempts, c)
				}
			}
			if len(attempts) == 0 {
				t.Fatalf("no attempt span under %s", op.Name())
			}
			first := attempts[len(attempts)-1] // the last: a search's first fetches its token
			if tc.template != "" {
				if got := attrString(first, "url.template"); got != tc.template {
					t.Errorf("url.template %q, want %q", got, tc.template)
				}
				if first.Name() != tc.method+" "+tc.template {
					t.Errorf("attempt span named %q", first.Name())
				}
			}
			if attrString(first, "http.request.method") != tc.method || attrString(first, "server.address") == "" ||
				attrInt(first, "server.port") == 0 || attrInt(first, "http.response.status_code") == 0 {
				t.Errorf("attempt attributes %v", first.Attributes())
			}
			// No id of the dataset in a span name or attribute.
			for _, s := range tr.spans.Ended() {
				text := s.Name() + fmt.Sprint(s.Attributes())
				for _, r := range []string{"agents", "properties", "originators", "companies"} {
					for i := range 6 {
						if id := srv.Dataset().ID(r, i); strings.Contains(text, id) {
							t.Errorf("span %s holds id %s: %s", s.Name(), id, text)
						}
					}
				}
			}
		})
	}
}

// TestObserver_RetryAndMetrics: a 503 answered once is a second attempt
// with http.request.resend_count 1, a retry event with its reason, and
// counted in the metrics by reason; credits charged are counted by
// operation.
func TestObserver_RetryAndMetrics(t *testing.T) {
	srv := lendgraphtest.NewServer(t)
	tr := newTraced(t, srv)
	ctx := context.Background()
	srv.InjectFault(http.MethodGet, "/v1/agents/{id}", lendgraphtest.Fault{Status: 503, Header: map[string]string{"Retry-After": "0"}})
	if _, err := tr.c.Agents.Get(ctx, srv.Dataset().ID("agents", 1)); err != nil {
		t.Fatal(err)
	}
	op := tr.named("lendgraph Agents.Get")[0]
	attempts := tr.children(op)
	if n := srv.CountRequests(http.MethodGet, "/v1/agents/{id}"); len(attempts) != n || n != 2 {
		t.Fatalf("%d attempt spans, the server saw %d requests", len(attempts), n)
	}
	if attrInt(attempts[0], "http.response.status_code") != 503 || attrString(attempts[0], "error.type") != "503" ||
		attrInt(attempts[1], "http.request.resend_count") != 1 || attrInt(attempts[1], "http.response.status_code") != 200 {
		t.Errorf("attempts: %v / %v", attempts[0].Attributes(), attempts[1].Attributes())
	}
	var retry bool
	for _, e := range op.Events() {
		if e.Name == "retry" && fmt.Sprint(e.Attributes) != "" && strings.Contains(fmt.Sprint(e.Attributes), "status 503") {
			retry = true
		}
	}
	if !retry || attrInt(op, "lendgraph.retries") != 1 || attrInt(op, "lendgraph.attempts") != 2 {
		t.Errorf("operation span: events %v, attributes %v", op.Events(), op.Attributes())
	}

	id := matchingProperty(t, srv)
	if _, err := tr.c.Properties.Enrich(ctx, id, &lendgraph.EnrichRequest{Refresh: true}); err != nil {
		t.Fatal(err)
	}
	got := tr.metrics(t)
	charged, _ := debitsOf(srv)
	for k, want := range map[string]float64{
		"lendgraph.client.retries{lendgraph.operation=Agents.Get,lendgraph.retry.reason=status 503}":                                       1,
		"lendgraph.client.credits.charged{lendgraph.operation=Properties.Enrich}":                                                          charged,
		"http.client.request.duration{error.type=503,http.request.method=GET,http.response.status_code=503,lendgraph.operation=Agents.Get": 1,
	} {
		if found := sumOf(got, k); found != want {
			t.Errorf("%s = %v, want %v; metrics: %v", k, found, want, got)
		}
	}
}

// metrics collects what the client measured so far: the sums' values and
// the histograms' counts, by name{attribute=value,...}.
func (tr *traced) metrics(t *testing.T) map[string]float64 {
	t.Helper()
	return collect(t, tr.reader)
}

// collect reads what reader's meter provider measured so far (see
// traced.metrics).
func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					got[m.Name+attrsOf(p.Attributes)] += float64(p.Value)
				}
			case metricdata.Sum[float64]:
				for _, p := range d.DataPoints {
					got[m.Name+attrsOf(p.Attributes)] += p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					got[m.Name+attrsOf(p.Attributes)] += float64(p.Count)
				}
			}
		}
	}
	return got
}

// attrsOf prints a metric point's attributes as {k=v,...}.
func attrsOf(s attribute.Set) string {
	var parts []string
	for _, kv := range s.ToSlice() {
		parts = append(parts, string(kv.Key)+"="+kv.Value.String())
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// sumOf adds the points of got that are of want's metric and have every
// attribute want names ("name{k=v,...}").
func sumOf(got map[string]float64, want string) float64 {
	sum := 0.0
	for name, v := range got {
		if strings.HasPrefix(name, strings.SplitN(want, "{", 2)[0]+"{") && containsAll(name, want) {
			sum += v
		}
	}
	return sum
}

// containsAll reports whether the metric name holds every k=v of want.
func containsAll(name, want string) bool {
	inner := strings.TrimSuffix(strings.SplitN(want, "{", 2)[1], "}")
	for _, kv := range strings.Split(inner, ",") {
		if !strings.Contains(name, kv) {
			return false
		}
	}
	return true
}

func debitsOf(srv *lendgraphtest.Server) (float64, int) {
	total := 0.0
	ds := srv.Debits(srv.DefaultCaller().OrgID)
	for _, d := range ds {
		total += d.Amount
	}
	return total, len(ds)
}

func matchingProperty(t *testing.T, srv *lendgraphtest.Server) string {
	for i := range srv.Dataset().Len("properties") {
		if id := srv.Dataset().ID("properties", i); srv.EnrichOutcome(id) == lendgraphtest.OutcomeMatch {
			return id
		}
	}
	t.Fatal("no matching property")
	return ""
}

// TestObserver_RetryBudgetExhausted: against an API answering 503 to
// every request, a client with a small retry budget stops retrying once
// it is spent. Each call the budget cut short (fewer attempts reached the
// server than the call's retries allow) is counted once in
// lendgraph.client.retry_budget.exhausted by operation and marked on its
// span; a call of a client without a budget, which made all its
// attempts, is not.
func TestObserver_RetryBudgetExhausted(t *testing.T) {
	const retries = 3
	srv := lendgraphtest.NewServer(t)
	tr := newTraced(t, srv, lendgraph.WithMaxRetries(retries), lendgraph.WithRetryBudget(10))
	unbudgeted := newTraced(t, srv, lendgraph.WithMaxRetries(retries), lendgraph.WithRetryBudget(0))
	srv.InjectFault(http.MethodGet, "/v1/agents/{id}", lendgraphtest.Fault{Status: 503, Times: -1, Header: map[string]string{"Retry-After": "0"}})
	ctx := context.Background()
	id := srv.Dataset().ID("agents", 1)
	cut := 0
	for i := range 4 {
		before := srv.CountRequests(http.MethodGet, "/v1/agents/{id}")
		_, err := tr.c.Agents.Get(ctx, id)
		if err == nil {
			t.Fatalf("call %d succeeded against a 503", i)
		}
		if srv.CountRequests(http.MethodGet, "/v1/agents/{id}")-before < retries+1 {
			cut++
		}
	}
	before := srv.CountRequests(http.MethodGet, "/v1/agents/{id}")
	if _, err := unbudgeted.c.Agents.Get(ctx, id); err == nil {
		t.Fatal("the call without a budget succeeded against a 503")
	}
	if n := srv.CountRequests(http.MethodGet, "/v1/agents/{id}") - before; n != retries+1 {
		t.Fatalf("setup: the call without a budget made %d attempts, want %d", n, retries+1)
	}
	if cut < 2 {
		t.Fatalf("setup: the budget cut %d calls short", cut)
	}
	const metric = "lendgraph.client.retry_budget.exhausted{lendgraph.operation=Agents.Get}"
	if got := sumOf(tr.metrics(t), metric); got != float64(cut) {
		t.Errorf("%s = %v, want %d (the calls the server saw cut short)", metric, got, cut)
	}
	if got := sumOf(unbudgeted.metrics(t), metric); got != 0 {
		t.Errorf("without a budget: %s = %v, want 0", metric, got)
	}
	marked := 0
	for _, s := range tr.named("lendgraph Agents.Get") {
		if v, _ := attr(s, "lendgraph.retry_budget.exhausted"); v.AsBool() {
			marked++
		}
	}
	if marked != cut {
		t.Errorf("%d spans marked lendgraph.retry_budget.exhausted, want %d", marked, cut)
	}
}

// TestObserver_ResumedDownloadAndRelinked: a download cut mid-body and then
// refused for an expired link resumes with a Range request from a freshly
// signed link; its span counts both, and the storage host got no
// traceparent while the API host did.
func TestObserver_ResumedDownloadAndRelinked(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(200))
	tr := newTraced(t, srv)
	ctx := context.Background()
	job, err := completedDelivery(ctx, tr.c)
	if err != nil {
		t.Fatal(err)
	}
	srv.ResetRequests()
	srv.InjectFault(http.MethodGet, "/objects/{key...}", lendgraphtest.Fault{Kind: lendgraphtest.DropMidBody})
	srv.InjectFault(http.MethodGet, "/objects/{key...}", lendgraphtest.Fault{Status: 403, Body: "<Error><Code>AccessDenied</Code></Error>"})
	n, err := job.Download(ctx, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	dl := tr.named("lendgraph DeliveryJob.Download")[0]
	if attrInt(dl, "lendgraph.download.bytes") != n || attrInt(dl, "lendgraph.download.resumptions") != 2 ||
		attrInt(dl, "lendgraph.download.links_resigned") != 1 || attrInt(dl, "lendgraph.download.connections") != 1 ||
		attrInt(dl, "lendgraph.download.ranges") < 1 {
		t.Errorf("download span: %v", dl.Attributes())
	}
	storage, ranged := 0, 0
	for _, s := range tr.children(dl) {
		if attrString(s, "lendgraph.target") == "storage" {
			storage++
			if attrString(s, "lendgraph.download.range") != "" {
				ranged++
			}
			if _, ok := attr(s, "url.template"); ok || s.Name() != "GET" {
				t.Errorf("storage attempt %s %v", s.Name(), s.Attributes())
			}
		}
	}
	if got := srv.CountRequests(http.MethodGet, "/objects/{key...}"); storage != got || ranged == 0 {
		t.Errorf("%d storage attempt spans (%d ranged), the storage host saw %d", storage, ranged, got)
	}
	for _, r := range srv.Requests() {
		tp := r.Header.Get("Traceparent")
		if (r.Listener == "api") != (tp != "") {
			t.Errorf("%s %s %s: traceparent %q", r.Listener, r.Method, r.Path, tp)
		}
		if r.Listener == "api" && !strings.Contains(tp, dl.SpanContext().TraceID().String()) {
			t.Errorf("traceparent %q is not of the download's trace", tp)
		}
	}
}

// TestObserver_CancelledWait: a Wait ended by its context is an error span
// saying so, with the polls made.
func TestObserver_CancelledWait(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithJobRate("delivery", 1))
	tr := newTraced(t, srv)
	job, err := tr.c.Agents.Deliver(context.Background(), &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := job.Wait(ctx, lendgraph.WithPollInterval(10*time.Millisecond, 10*time.Millisecond)); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	w := tr.named("lendgraph DeliveryJob.Wait")[0]
	polls := srv.CountRequests(http.MethodGet, "/v1/agents/bulk-delivery/{id}")
	if w.Status().Code != codes.Error || attrString(w, "error.type") != "canceled" || attrInt(w, "lendgraph.job.polls") != int64(polls) ||
		attrString(w, "lendgraph.job.id") != job.ID || attrString(w, "lendgraph.job.status") == "completed" {
		t.Errorf("wait span %v %v; the server answered %d polls", w.Status(), w.Attributes(), polls)
	}
}

// TestObserver_LostCharge: a charging call whose first answer was lost
// (the server charged) and whose repeat says "not charged" reports an
// unknown outcome, not zero credits.
func TestObserver_LostCharge(t *testing.T) {
	srv := lendgraphtest.NewServer(t)
	tr := newTraced(t, srv)
	id := matchingProperty(t, srv)
	srv.InjectFault(http.MethodPost, "/v1/properties/{id}/enrich", lendgraphtest.Fault{Kind: lendgraphtest.DropMidBody})
	res, err := tr.c.Properties.Enrich(context.Background(), id, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, n := debitsOf(srv); n != 1 || res.Charged {
		t.Fatalf("setup: %d debits, the answer says charged=%v", n, res.Charged)
	}
	s := tr.named("lendgraph Properties.Enrich")[0]
	if v, ok := attr(s, "lendgraph.outcome_unknown"); !ok || !v.AsBool() {
		t.Errorf("span %v", s.Attributes())
	}
	if _, ok := attr(s, "lendgraph.credits.charged"); ok {
		t.Errorf("span claims a charge: %v", s.Attributes())
	}

	// A refreshed enrichment whose answer is lost fails with
	// ErrOutcomeUnknown: the span says so.
	srv.InjectFault(http.MethodPost, "/v1/properties/{id}/enrich", lendgraphtest.Fault{Kind: lendgraphtest.DropMidBody})
	_, err = tr.c.Properties.Enrich(context.Background(), id, &lendgraph.EnrichRequest{Refresh: true})
	if !errors.Is(err, lendgraph.ErrOutcomeUnknown) {
		t.Fatalf("err = %v", err)
	}
	s = tr.named("lendgraph Properties.Enrich")[1]
	if v, _ := attr(s, "lendgraph.outcome_unknown"); !v.AsBool() || attrString(s, "error.type") != "outcome_unknown" {
		t.Errorf("span %v", s.Attributes())
	}
}

// TestObserver_RedirectOffHost: the API redirecting a read to another
// host: the API got a traceparent, the other host none (checked at that
// host), and the redirected attempt is a span of target "other".
func TestObserver_RedirectOffHost(t *testing.T) {
	var otherTP, apiTP string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherTP = r.Header.Get("Traceparent") + r.Header.Get("X-Api-Key")
		fmt.Fprint(w, `{"id":"agt_1"}`)
	}))
	defer other.Close()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		apiTP = r.Header.Get("Traceparent")
		http.Redirect(w, r, other.URL+"/mirror"+r.URL.Path, http.StatusFound)
	}))
	defer api.Close()
	// httptest servers are both 127.0.0.1: tell them apart by port, as the SDK does (origin = scheme+host+port).
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	c, err := lendgraph.NewClient(lendgraph.WithAPIKey("lg_test_redirect_key_123"), lendgraph.WithBaseURL(api.URL),
		lendgraph.WithObserver(lendgraphotel.New(tp, nil, propagation.TraceContext{})))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Agents.Get(context.Background(), "agt_1"); err != nil {
		t.Fatal(err)
	}
	if apiTP == "" || otherTP != "" {
		t.Errorf("traceparent at the API %q, at the other host %q", apiTP, otherTP)
	}
	targets := map[string]int{}
	for _, s := range spans.Ended() {
		if s.SpanKind().String() == "client" {
			targets[attrString(s, "lendgraph.target")]++
		}
	}
	if targets["api"] != 1 || targets["other"] != 1 {
		t.Errorf("attempt targets %v", targets)
	}
}

// TestObserver_SearchHostPropagation: the search host gets trace context
// only with PropagateToSearchHost.
func TestObserver_SearchHostPropagation(t *testing.T) {
	for _, opt := range []bool{false, true} {
		srv := lendgraphtest.NewServer(t)
		var opts []lendgraphotel.Option
		if opt {
			opts = append(opts, lendgraphotel.PropagateToSearchHost())
		}
		tp := sdktrace.NewTracerProvider()
		c := srv.Client(lendgraph.WithObserver(lendgraphotel.New(tp, nil, propagation.TraceContext{}, opts...)))
		if _, err := c.Search.Host().Search(context.Background(), lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"}); err != nil {
			t.Fatal(err)
		}
		for _, r := range srv.Requests() {
			got := r.Header.Get("Traceparent") != ""
			if want := r.Listener == "api" || opt; got != want {
				t.Errorf("PropagateToSearchHost=%v: %s %s got traceparent %v", opt, r.Listener, r.Path, got)
			}
		}
	}
}

// TestObserver_NoSecretInSpans runs the fake's flows that carry every kind
// of secret (the key, a wrong key refused, search tokens, signed links,
// one expired and re-signed, a refused search) and checks that no span
// name, attribute, event or status holds any of them.
func TestObserver_NoSecretInSpans(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(50), lendgraphtest.WithLinkTTL(time.Minute))
	key := srv.DefaultCaller().Key
	for _, bearer := range []bool{false, true} {
		var opts []lendgraph.Option
		if bearer {
			opts = append(opts, lendgraph.WithBearerAuth())
		}
		tr := newTraced(t, srv, opts...)
		ctx := context.Background()
		srv.ResetRequests()
		srv.InjectFault("GET", "/v1/agents/{id}", lendgraphtest.Fault{Kind: lendgraphtest.DropBeforeResponse})
		if _, err := tr.c.Agents.Get(ctx, srv.Dataset().ID("agents", 1)); err != nil {
			t.Fatal(err)
		}
		wrong := newTraced(t, srv, append(opts, lendgraph.WithAPIKey(key+"x"))...)
		if _, err := wrong.c.Agents.List(ctx, nil); !errors.Is(err, lendgraph.ErrUnauthorized) {
			t.Fatalf("wrong key: %v", err)
		}
		job, err := completedDelivery(ctx, tr.c)
		if err != nil {
			t.Fatal(err)
		}
		srv.InjectFault("GET", "/objects/{key...}", lendgraphtest.Fault{Kind: lendgraphtest.DropMidBody})
		srv.InjectFault("GET", "/objects/{key...}", lendgraphtest.Fault{Status: 403, Body: "<Error><Code>AccessDenied</Code></Error>"}) // re-signed
		if _, err := job.Download(ctx, io.Discard); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.c.Search.Host().Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"}); err != nil {
			t.Fatal(err)
		}
		srv.InjectFault(http.MethodPost, "/indexes/{index}/search", lendgraphtest.Fault{Status: 403, Times: -1,
			Body: `{"message":"expired","code":"invalid_api_key","type":"auth","link":""}`})
		if _, err := tr.c.Search.Host().Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"}); !errors.Is(err, lendgraph.ErrForbidden) {
			t.Fatalf("refused search: %v", err)
		}
		srv.ClearFaults()

		secrets := map[string]string{key: "API key", key + "x": "wrong key"}
		for _, r := range srv.Requests() {
			q, _ := urlQuery(r.Query)
			if s := q.Get("X-Signature"); s != "" {
				secrets[s] = "link signature"
			}
			if a := r.Header.Get("Authorization"); r.Listener == "search" && a != "" {
				secrets[strings.TrimPrefix(a, "Bearer ")] = "search token"
			}
		}
		if len(secrets) < 4 {
			t.Fatalf("secrets seen: %d", len(secrets))
		}
		var text strings.Builder
		for _, s := range append(tr.spans.Ended(), wrong.spans.Ended()...) {
			fmt.Fprintln(&text, s.Name(), s.Attributes(), s.Events(), s.Status(), s.Links())
		}
		if !strings.Contains(text.String(), "lendgraph SearchHost.Search") || !strings.Contains(text.String(), "download.link_resigned") {
			t.Fatalf("the flows were not traced:\n%s", text.String())
		}
		for secret, what := range secrets {
			if strings.Contains(text.String(), secret) {
				t.Errorf("bearer=%v: the %s is in a span:\n%s", bearer, what, text.String())
			}
		}
	}
}

func urlQuery(q string) (url.Values, error) { return url.ParseQuery(q) }

// TestObserver_NoEchoedSecretInSpans: servers that echo the secrets they
// were sent back in their error bodies and headers (the API quoting the
// API key in a 400's message, its request id, a 503 it is retried after;
// the storage host quoting the link's signature as its error code and in
// its headers, for the first link and the freshly signed one) put none of
// them in a span name, attribute, event, status or link, nor in a metric's
// attributes, with the key in a header or as a bearer token.
func TestObserver_NoEchoedSecretInSpans(t *testing.T) {
	const key = "lg_test_echoed_secret_key_0123456789"
	var signed atomic.Int64
	sig := func(n int64) string { return fmt.Sprintf("sig%016d", n) }
	storage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := r.URL.Query().Get("X-Signature")
		w.Header().Set("X-Amz-Request-Id", s)
		w.Header().Set("X-Echo", r.URL.RawQuery)
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, "<Error><Code>%s</Code><Message>signature %s does not match</Message></Error>", s, r.URL.RawQuery)
	}))
	defer storage.Close()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent := r.Header.Get("X-Api-Key") + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		w.Header().Set("X-Request-Id", sent)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasPrefix(r.URL.Path, "/v1/agents/bulk-delivery/"):
			fmt.Fprintf(w, `{"jobId":"dlv_1","status":"completed","format":"ndjson","resultsUrl":%q}`,
				storage.URL+"/results.ndjson?X-Signature="+sig(signed.Add(1)))
		case r.Header.Get("X-Retried") == "" && strings.HasPrefix(r.URL.Path, "/v1/agents/"):
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, `{"error":"overloaded, key %s"}`, sent)
		default:
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":"invalid request for key %s","message":"key %s"}`, sent, sent)
		}
	}))
	defer api.Close()
	for _, bearer := range []bool{false, true} {
		spans := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		opts := []lendgraph.Option{lendgraph.WithAPIKey(key), lendgraph.WithBaseURL(api.URL), lendgraph.WithInsecureHTTPLinks(),
			lendgraph.WithRetryBackoff(time.Millisecond, 2*time.Millisecond),
			lendgraph.WithObserver(lendgraphotel.New(tp, mp, propagation.TraceContext{}))}
		if bearer {
			opts = append(opts, lendgraph.WithBearerAuth())
		}
		c, err := lendgraph.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if _, err := c.Agents.Get(ctx, "agt_1"); err == nil {
			t.Fatal("Get: no error from an API answering 400")
		}
		retried := lendgraph.WithHeader("X-Retried", "yes")
		if _, err := c.Agents.List(ctx, nil, retried); err == nil {
			t.Fatal("List: no error from an API answering 400")
		}
		if _, err := c.Agents.DeliveryJob("dlv_1").Download(ctx, io.Discard); err == nil {
			t.Fatal("Download: no error from a storage host answering 403")
		}
		_ = c.Close()
		secrets := map[string]string{key: "API key"}
		for i := int64(1); i <= signed.Load(); i++ {
			secrets[sig(i)] = "link signature"
		}
		if len(secrets) < 3 {
			t.Fatalf("setup: %d links signed, want a fresh one after the first was refused", len(secrets)-1)
		}
		var text strings.Builder
		for _, s := range spans.Ended() {
			fmt.Fprintln(&text, s.Name(), s.Attributes(), s.Events(), s.Status(), s.Links())
		}
		for name := range collect(t, reader) {
			fmt.Fprintln(&text, name)
		}
		for _, want := range []string{"lendgraph Agents.Get", "lendgraph Agents.List", "lendgraph DeliveryJob.Download", "400", "403"} {
			if !strings.Contains(text.String(), want) {
				t.Fatalf("bearer=%v: the calls were not traced (no %q):\n%s", bearer, want, text.String())
			}
		}
		for secret, what := range secrets {
			if strings.Contains(text.String(), secret) {
				t.Errorf("bearer=%v: the %s %s is in a span or a metric:\n%s", bearer, what, secret, text.String())
			}
		}
		_ = tp.Shutdown(ctx)
		_ = mp.Shutdown(ctx)
	}
}

// TestObserver_NoopProviders: with no-op providers the observer records
// nothing, yet a caller's span context still goes to the API host (and
// only there), as it would through any no-op tracer; without one no
// request carries trace context.
func TestObserver_NoopProviders(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(40))
	obs := lendgraphotel.New(tracenoop.NewTracerProvider(), metricnoop.NewMeterProvider(), propagation.TraceContext{})
	c := srv.Client(lendgraph.WithObserver(obs))
	run := func(ctx context.Context) {
		t.Helper()
		srv.ResetRequests()
		if _, err := c.Agents.Get(ctx, srv.Dataset().ID("agents", 1)); err != nil {
			t.Fatal(err)
		}
		job, err := completedDelivery(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := job.Download(ctx, io.Discard); err != nil {
			t.Fatal(err)
		}
	}
	run(context.Background())
	for _, r := range srv.Requests() {
		if tp := r.Header.Get("Traceparent"); tp != "" {
			t.Errorf("no span in the context, yet %s %s carries traceparent %q", r.Method, r.Path, tp)
		}
	}
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6},
		TraceFlags: trace.FlagsSampled, Remote: true})
	run(trace.ContextWithRemoteSpanContext(context.Background(), parent))
	api := 0
	for _, r := range srv.Requests() {
		tp := r.Header.Get("Traceparent")
		if r.Listener == "api" {
			api++
			if !strings.Contains(tp, parent.TraceID().String()) {
				t.Errorf("%s %s: traceparent %q, want the caller's trace %s", r.Method, r.Path, tp, parent.TraceID())
			}
		} else if tp != "" {
			t.Errorf("%s %s %s carries traceparent %q", r.Listener, r.Method, r.Path, tp)
		}
	}
	if api < 3 {
		t.Errorf("%d requests to the API host", api)
	}
}

// TestObserver_ManyNamesAndRoutes: past the names and routes an observer
// keeps built, every operation and attempt is still reported with its own
// span name, attributes and metric attributes.
func TestObserver_ManyNamesAndRoutes(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	obs := lendgraphotel.New(tp, mp, propagation.TraceContext{})
	const n = 1500
	for i := range n {
		ctx, op := obs.StartOperation(context.Background(), fmt.Sprintf("Op%d.Call", i))
		a := op.StartAttempt(ctx, lendgraph.AttemptInfo{Target: lendgraph.TargetAPI, Method: "GET", Host: fmt.Sprintf("h%d.example", i),
			Port: 443, URLTemplate: fmt.Sprintf("/v1/r%d/{id}", i)})
		a.End(lendgraph.AttemptResult{StatusCode: 200 + i%3})
		op.End(lendgraph.Summary{Attempts: 1}, nil)
	}
	names := map[string]bool{}
	for _, s := range spans.Ended() {
		names[s.Name()] = true
		if s.SpanKind() == trace.SpanKindClient {
			var i int
			if _, err := fmt.Sscanf(s.Name(), "GET /v1/r%d/{id}", &i); err != nil || attrString(s, "server.address") != fmt.Sprintf("h%d.example", i) ||
				attrInt(s, "http.response.status_code") != int64(200+i%3) {
				t.Fatalf("attempt span %q %v", s.Name(), s.Attributes())
			}
		}
	}
	for i := range n {
		if !names[fmt.Sprintf("lendgraph Op%d.Call", i)] || !names[fmt.Sprintf("GET /v1/r%d/{id}", i)] {
			t.Fatalf("operation %d: no span", i)
		}
	}
	got := collect(t, reader)
	for _, i := range []int{0, n / 2, n - 1} {
		k := fmt.Sprintf("http.client.request.duration{http.response.status_code=%d,lendgraph.operation=Op%d.Call,server.address=h%d.example}", 200+i%3, i, i)
		if v := sumOf(got, k); v != 1 {
			t.Errorf("%s = %v, want 1", k, v)
		}
	}
}
