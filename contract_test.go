package lendgraph_test

import (
	"bytes"
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"net/http"
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// TestContract_CardFiles checks the design card's files: each exists and
// declares its area's central type, so moving an area out of its file
// (AgentsService back into resource.go, say) fails here.
func TestContract_CardFiles(t *testing.T) {
	holds := map[string]string{
		"client.go":       "Client",
		"agents.go":       "AgentsService",
		"properties.go":   "PropertiesService",
		"enrich.go":       "EnrichResult",
		"delivery.go":     "DeliveryJob",
		"search.go":       "SearchService",
		"market.go":       "MarketService",
		"crm.go":          "CRMService",
		"savedfilters.go": "SavedFiltersService",
		"errors.go":       "APIError",
	}
	for file, name := range holds {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Errorf("the card's %s: %v", file, err)
			continue
		}
		found := false
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
				for _, sp := range g.Specs {
					found = found || sp.(*ast.TypeSpec).Name.Name == name
				}
			}
		}
		if !found {
			t.Errorf("%s does not declare %s", file, name)
		}
	}
}

// TestContract_Design walks the public surface exactly as DESIGN.md writes
// it, against the fake: renaming or reshaping a contract name breaks this
// file at compile time, and a contract call that stops working fails it.
func TestContract_Design(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(300))
	srv.SetEntitlement(lendgraphtest.DefaultOrg, "agents", lendgraphtest.Entitlement{MaxRows: 10_000})
	ctx := context.Background()
	var logs bytes.Buffer
	c, err := lendgraph.NewClient(
		lendgraph.WithAPIKey(srv.DefaultCaller().Key),
		lendgraph.WithBaseURL(srv.URL),
		lendgraph.WithHTTPClient(&http.Client{}),
		lendgraph.WithMaxRetries(3),
		lendgraph.WithRateLimit(1000, 100),
		lendgraph.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
		lendgraph.WithBearerAuth(),
	)
	must(t, err)

	req := &lendgraph.ListRequest{
		FlatFilters: map[string]any{"state": "CA"},
		Period:      "allTime",
		Sort:        []lendgraph.Sort{{Field: "transactionCount", Order: "desc"}},
		Pagination:  &lendgraph.Pagination{Size: 100},
	}
	page, err := c.Agents.List(ctx, req)
	must(t, err)
	var _ *lendgraph.Page[lendgraph.Agent] = page
	_ = page.Data
	_ = page.Total
	_ = page.Cursor
	for a, err := range c.Agents.All(ctx, req) {
		must(t, err)
		_ = a
		break
	}
	a, err := c.Agents.Get(ctx, page.Data[0].ID)
	must(t, err)
	var _ *lendgraph.Agent = a
	_, err = c.Agents.Summary(ctx, req)
	must(t, err)

	n, err := c.Originators.Count(ctx, nil)
	must(t, err)
	var _ *lendgraph.OriginatorCount = n
	orig, err := c.Originators.List(ctx, nil)
	must(t, err)
	tc, err := c.Originators.TitleCompanies(ctx, orig.Data[0].ID, nil)
	must(t, err)
	var _ *lendgraph.TitleCompanyPage = tc
	comp, err := c.Companies.List(ctx, nil)
	must(t, err)
	br, err := c.Companies.Branches(ctx, comp.Data[0].ID, nil)
	must(t, err)
	var _ *lendgraph.BranchPage = br
	ch, err := c.Properties.Chart(ctx, &lendgraph.ChartRequest{Slice: "city"})
	must(t, err)
	_ = ch
	props, err := c.Properties.List(ctx, nil)
	must(t, err)
	rel, err := c.Properties.Related(ctx, props.Data[0].ID, lendgraph.RelatedCompanies, 25)
	must(t, err)
	_ = rel
	cnt, err := c.Properties.Count(ctx, req)
	must(t, err)
	_ = cnt

	r, err := c.Properties.Enrich(ctx, props.Data[0].ID, &lendgraph.EnrichRequest{Refresh: false})
	must(t, err)
	var _ *lendgraph.EnrichResult = r
	ids := []string{props.Data[1].ID, props.Data[2].ID}
	job, err := c.Properties.EnrichBulk(ctx, ids, nil)
	must(t, err)
	var _ *lendgraph.EnrichJob = job
	_, _, _ = job.ID, job.PropertyCount, job.EstimatedCost
	st, err := job.Wait(ctx, lendgraph.WithProgress(func(s *lendgraph.EnrichJobStatus) {}))
	must(t, err)
	var _ *lendgraph.EnrichJobStatus = st
	_, err = job.Cancel(ctx)
	if !errors.Is(err, lendgraph.ErrJobFinished) {
		t.Fatalf("cancel of a finished job: %v", err)
	}
	job = c.Properties.EnrichJob(job.ID)
	_, err = job.Status(ctx)
	must(t, err)
	for e, err := range c.Properties.AllEnrichments(ctx, nil) {
		must(t, err)
		_ = e
	}

	dj, err := c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{
		FlatFilters: map[string]any{"state": "CA"}, Format: lendgraph.FormatCSV, Fields: []string{"id", "fullName"}, Limit: 5000,
	})
	must(t, err)
	var _ *lendgraph.DeliveryJob[lendgraph.Agent] = dj
	dst, err := dj.Wait(ctx, lendgraph.WithProgress(func(s *lendgraph.DeliveryStatus) {}))
	must(t, err)
	var file bytes.Buffer
	nb, err := dj.Download(ctx, &file)
	must(t, err)
	if nb != dst.Bytes || nb == 0 {
		t.Fatalf("downloaded %d bytes, status says %d", nb, dst.Bytes)
	}
	rows := 0
	for a, err := range dj.Rows(ctx) {
		must(t, err)
		if a.ID == "" || a.FullName == "" {
			t.Fatalf("row %+v", a)
		}
		rows++
	}
	fromFile := 0
	for a, err := range lendgraph.DecodeRows[lendgraph.Agent](bytes.NewReader(file.Bytes()), lendgraph.FormatCSV) {
		must(t, err)
		_ = a
		fromFile++
	}
	if rows == 0 || rows != fromFile {
		t.Fatalf("rows %d, from file %d", rows, fromFile)
	}
	for a, err := range lendgraph.DecodeRows[lendgraph.Agent](bytes.NewReader(nil), lendgraph.FormatCSV) {
		_, _ = a, err
	}

	res, err := c.Search.Instant(ctx, &lendgraph.InstantSearchRequest{Query: "smi", Limit: 5})
	must(t, err)
	_ = res
	ts := c.Search.TokenSource()
	tok, err := ts.Token(ctx)
	must(t, err)
	var _ *lendgraph.SearchToken = tok
	h := c.Search.Host()
	var _ *lendgraph.SearchHost = h
	hits, err := h.Search(ctx, lendgraph.IndexOriginators, &lendgraph.HostSearchRequest{Q: "smi", Limit: 10})
	must(t, err)
	_ = hits

	mv, err := c.Market.MostGained(ctx, &lendgraph.MostGainedRequest{DateRange: "last_12_months", State: "TX"})
	must(t, err)
	_ = mv

	_, err = c.Locations.Suggest(ctx, "Aus", 5)
	must(t, err)
	_, err = c.SavedFilters.List(ctx, nil)
	must(t, err)
	_, err = c.Integrations.CRMStatus(ctx)
	must(t, err)

	var out map[string]any
	must(t, c.Do(ctx, http.MethodPost, "/v1/agents", map[string]any{"pagination": map[string]any{"size": 1}}, &out))

	if bytes.Contains(logs.Bytes(), []byte(srv.DefaultCaller().Key)) {
		t.Fatal("the API key reached a log line")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
