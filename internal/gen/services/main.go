// Command services writes services_gen.go: the resource services of
// package lendgraph (c.Agents, c.Originators, ...), each with every method
// it offers written out, doc comment included, so that go doc and
// pkg.go.dev list them, and each service's interface (AgentsAPI, ...)
// listing the same methods. The methods are one line each over the
// generic machinery of resource.go; the table below says which
// capabilities each resource has (the API offers analytics and bulk
// delivery on some only), so a call the API does not have does not
// compile. Methods only one resource has are written by hand in its file
// (originators.go, properties.go, enrich*.go, market.go) and named in
// the table's extras, so that the interface lists them too.
//
// Run it with go generate from the module root (resource.go holds the
// directive); CI fails when services_gen.go is stale.
package main

import (
	"bytes"
	"go/format"
	"log"
	"os"
	"strings"
	"text/template"
)

type service struct {
	Name     string // the field of Client and the service's name: "Agents"
	Path     string // the path segment: "agents"
	Record   string // the record type: "Agent"
	Noun     string // the records in prose: "agents"
	Doc      string // what the service serves, for its doc comment
	Records  bool   // List, All, Pager, Get
	Summary  bool   // Summary, TimeSeries
	Chart    bool   // Chart, ChartPager, AllChart
	Delivery bool   // Deliver, DeliveryJob
	Extras   []string
}

var services = []service{
	{Name: "Agents", Path: "agents", Record: "Agent", Noun: "agents",
		Doc:     "serves agents: records, analytics and bulk delivery",
		Records: true, Summary: true, Chart: true, Delivery: true},
	{Name: "Originators", Path: "originators", Record: "Originator", Noun: "loan originators",
		Doc:     "serves loan originators: records, analytics, bulk delivery, the originator count and the title-company breakdown",
		Records: true, Summary: true, Chart: true, Delivery: true,
		Extras: []string{
			"Count(ctx context.Context, req *ListRequest, opts ...Option) (*OriginatorCount, error)",
			"TitleCompanies(ctx context.Context, nmlsID string, req *ListRequest, opts ...Option) (*TitleCompanyPage, error)",
			"TitleCompaniesPager(nmlsID string, req *ListRequest, opts ...Option) (*Pager[TitleCompanyRow], error)",
			"AllTitleCompanies(ctx context.Context, nmlsID string, req *ListRequest, opts ...Option) iter.Seq2[TitleCompanyRow, error]",
		}},
	{Name: "Companies", Path: "companies", Record: "Company", Noun: "companies",
		Doc:     "serves companies: records, bulk delivery, their branches and the lender count (the API has no company analytics)",
		Records: true, Delivery: true,
		Extras: []string{
			"Branches(ctx context.Context, nmlsID string, req *ListRequest, opts ...Option) (*BranchPage, error)",
			"BranchesPager(nmlsID string, req *ListRequest, opts ...Option) (*Pager[Branch], error)",
			"AllBranches(ctx context.Context, nmlsID string, req *ListRequest, opts ...Option) iter.Seq2[Branch, error]",
			"LenderCount(ctx context.Context, req *ListRequest, opts ...Option) (*Count, error)",
		}},
	{Name: "Loans", Path: "loans", Record: "Loan", Noun: "loans",
		Doc:     "serves loans: records, analytics and bulk delivery",
		Records: true, Summary: true, Chart: true, Delivery: true},
	{Name: "Properties", Path: "properties", Record: "Property", Noun: "properties",
		Doc:     "serves properties: search (List, All), detail, the property chart, bulk delivery, and the calls only properties have: count, related records and owner enrichment",
		Records: true, Chart: true, Delivery: true,
		Extras: []string{
			"Count(ctx context.Context, req *ListRequest, opts ...Option) (*Count, error)",
			"Related(ctx context.Context, id string, to RelatedTo, limit int, opts ...Option) (*RelatedResponse, error)",
			"Enrich(ctx context.Context, id string, req *EnrichRequest, opts ...Option) (*EnrichResult, error)",
			"EnrichBulk(ctx context.Context, ids []string, req *EnrichBulkRequest, opts ...Option) (*EnrichJob, error)",
			"EnrichJob(id string) *EnrichJob",
			"PlanEnrichBulk(ids []string, req *EnrichBulkRequest) (*EnrichPlan, error)",
			"EnrichBulkBatched(ctx context.Context, ids []string, req *EnrichBulkRequest, opts ...Option) (*EnrichBatch, error)",
			"Enrichments(ctx context.Context, req *EnrichmentsRequest, opts ...Option) (*EnrichmentPage, error)",
			"EnrichmentsPager(req *EnrichmentsRequest, opts ...Option) (*Pager[EnrichmentEntry], error)",
			"AllEnrichments(ctx context.Context, req *EnrichmentsRequest, opts ...Option) iter.Seq2[EnrichmentEntry, error]",
		}},
	{Name: "Branches", Path: "branches", Record: "Branch", Noun: "branches",
		Doc:     "serves branches: records and bulk delivery (the API has no branch analytics)",
		Records: true, Delivery: true},
	{Name: "Sales", Path: "sales", Record: "Sale", Noun: "sales",
		Doc:     "serves sales: records and analytics (the API has no bulk delivery of sales)",
		Records: true, Summary: true, Chart: true},
	{Name: "Market", Path: "market", Record: "MarketRecord", Noun: "market records",
		Doc:     "serves market records, their analytics, and market movement",
		Records: true, Summary: true, Chart: true,
		Extras: []string{
			"MostGained(ctx context.Context, req *MostGainedRequest, opts ...MostGainedOption) (*MostGainedResponse, error)",
		}},
}

const src = `// Code generated by internal/gen/services; DO NOT EDIT.

package lendgraph

import (
	"context"
	"iter"
)
{{range .}}{{$s := .}}
// {{.Name}}API is what c.{{.Name}} offers: the interface a test double
// implements. Embed it in the double's struct and implement the methods
// the test calls: the double keeps compiling when a method is added.
type {{.Name}}API interface {
{{- if .Records}}
	List(ctx context.Context, req *ListRequest, opts ...Option) (*Page[{{.Record}}], error)
	All(ctx context.Context, req *ListRequest, opts ...Option) iter.Seq2[{{.Record}}, error]
	Pager(req *ListRequest, opts ...Option) (*Pager[{{.Record}}], error)
	Get(ctx context.Context, id string, opts ...Option) (*{{.Record}}, error)
{{- end}}
{{- if .Summary}}
	Summary(ctx context.Context, req *ListRequest, opts ...Option) (*AnalyticsResult, error)
	TimeSeries(ctx context.Context, req *ListRequest, opts ...Option) (*AnalyticsResult, error)
{{- end}}
{{- if .Chart}}
	Chart(ctx context.Context, req *ChartRequest, opts ...Option) (*ChartResponse, error)
	ChartPager(req *ChartRequest, opts ...Option) (*Pager[ChartRow], error)
	AllChart(ctx context.Context, req *ChartRequest, opts ...Option) iter.Seq2[ChartRow, error]
{{- end}}
{{- if .Delivery}}
	Deliver(ctx context.Context, req *DeliveryRequest, opts ...Option) (*DeliveryJob[{{.Record}}], error)
	DeliveryJob(id string) *DeliveryJob[{{.Record}}]
{{- end}}
	Resource() string
{{- range .Extras}}
	{{.}}
{{- end}}
}

var _ {{.Name}}API = (*{{.Name}}Service)(nil)

// {{.Name}}Service {{.Doc}}.
type {{.Name}}Service struct {
	r resource[{{.Record}}]
}

// Resource is the path segment of the resource the service serves
// ("{{.Path}}", as in /v1/{{.Path}}). It sends nothing.
func (s *{{.Name}}Service) Resource() string { return s.r.path }
{{if .Records}}
// List returns one page of {{.Noun}} matching req (nil lists everything):
// POST /v1/{{.Path}}. Set req.Pagination.Cursor to continue from a
// previous page.
func (s *{{.Name}}Service) List(ctx context.Context, req *ListRequest, opts ...Option) (*Page[{{.Record}}], error) {
	return s.r.list(ctx, req, opts)
}

// All yields every one of the {{.Noun}} matching req, following cursors
// until the server returns none; the next page is fetched while the loop
// works on this one. The sequence follows the package's iterator
// contract: every range starts again from req's first page (or its
// Pagination.Cursor), ranges in several goroutines are independent, and
// break, a panic or a cancelled ctx stop it at once with nothing left
// behind. opts apply to every page. Use Pager to keep track of the cursor
// for resuming in another process.
func (s *{{.Name}}Service) All(ctx context.Context, req *ListRequest, opts ...Option) iter.Seq2[{{.Record}}, error] {
	return s.r.all(ctx, req, opts)
}

// Pager returns a pager over every one of the {{.Noun}} matching req,
// starting at req.Pagination.Cursor when set; opts apply to every page.
func (s *{{.Name}}Service) Pager(req *ListRequest, opts ...Option) (*Pager[{{.Record}}], error) {
	return s.r.pager(req, "{{.Name}}.Pager", opts)
}

// Get returns the complete record with nested data: GET /v1/{{.Path}}/{id}.
func (s *{{.Name}}Service) Get(ctx context.Context, id string, opts ...Option) (*{{.Record}}, error) {
	return s.r.get(ctx, id, opts)
}
{{end}}{{if .Summary}}
// Summary returns the analytics summary of the {{.Noun}} matching req:
// POST /v1/{{.Path}}/analytics/summary.
func (s *{{.Name}}Service) Summary(ctx context.Context, req *ListRequest, opts ...Option) (*AnalyticsResult, error) {
	return s.r.analytics(ctx, "Summary", "summary", req, opts)
}

// TimeSeries returns the analytics time series of the {{.Noun}} matching
// req: POST /v1/{{.Path}}/analytics/time-series.
func (s *{{.Name}}Service) TimeSeries(ctx context.Context, req *ListRequest, opts ...Option) (*AnalyticsResult, error) {
	return s.r.analytics(ctx, "TimeSeries", "time-series", req, opts)
}
{{end}}{{if .Chart}}
// Chart returns one page of the chart of the {{.Noun}} matching req:
// POST /v1/{{.Path}}/analytics/chart.{{if eq .Path "properties"}} req.Slice is required.{{end}}
// Continue it with req.Pagination.Cursor set to the answer's NextCursor,
// or use AllChart.
func (s *{{.Name}}Service) Chart(ctx context.Context, req *ChartRequest, opts ...Option) (*ChartResponse, error) {
	return s.r.chart(ctx, req, opts)
}

// ChartPager returns a pager over every slice of the chart, following
// NextCursor; opts apply to every page.
func (s *{{.Name}}Service) ChartPager(req *ChartRequest, opts ...Option) (*Pager[ChartRow], error) {
	return s.r.chartPager(req, "{{.Name}}.ChartPager", opts)
}

// AllChart yields every slice of the chart, following NextCursor; each
// range starts again from the first page (see the package's iterator
// contract).
func (s *{{.Name}}Service) AllChart(ctx context.Context, req *ChartRequest, opts ...Option) iter.Seq2[ChartRow, error] {
	return s.r.allChart(ctx, req, opts)
}
{{end}}{{if .Delivery}}
// Deliver submits a bulk delivery job writing every one of the {{.Noun}}
// matching req to one file: POST /v1/{{.Path}}/bulk-delivery. The request
// is checked before anything is sent. Errors a caller may branch on:
// *MaxRowsError (the estimate is above the row ceiling: narrow the
// filters), *EntitlementError (more than 1,000 rows need the
// bulk-delivery.{{.Path}} entitlement), *InsufficientCreditsError (the
// balance does not cover the estimate). A 502 (the job failed to launch)
// is retried: the reference calls it safe to repeat. Other 5xx answers, a
// connection reset after sending and a cut response are not: a job may
// have started, and a second submit would deliver and charge twice (the
// error then matches ErrOutcomeUnknown).
func (s *{{.Name}}Service) Deliver(ctx context.Context, req *DeliveryRequest, opts ...Option) (*DeliveryJob[{{.Record}}], error) {
	return s.r.deliver(ctx, req, opts)
}

// DeliveryJob re-attaches to a bulk delivery job of {{.Noun}} by id. It
// sends nothing.
func (s *{{.Name}}Service) DeliveryJob(id string) *DeliveryJob[{{.Record}}] {
	return s.r.deliveryJob(id)
}
{{end}}{{end}}
// newServices builds the resource services of c.
func (c *Client) newServices() {
{{- range .}}
	c.{{.Name}} = &{{.Name}}Service{newResource[{{.Record}}](c, "{{.Path}}", "{{.Name}}")}
{{- end}}
}
`

func main() {
	t := template.Must(template.New("services").Parse(src))
	var b bytes.Buffer
	if err := t.Execute(&b, services); err != nil {
		log.Fatal(err)
	}
	out, err := format.Source(b.Bytes())
	if err != nil {
		log.Fatalf("formatting: %v\n%s", err, b.Bytes())
	}
	out = bytes.ReplaceAll(out, []byte("\n\n\n"), []byte("\n\n"))
	if strings.Contains(string(out), "<no value>") {
		log.Fatal("a template field is missing")
	}
	if err := os.WriteFile("services_gen.go", out, 0o644); err != nil {
		log.Fatal(err)
	}
}
