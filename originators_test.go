package lendgraph_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// A few originators and many loans: each originator has a real population.
func breakdownServer(t *testing.T) *lendgraphtest.Server {
	return lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(400),
		lendgraphtest.WithRows("originators", 3), lendgraphtest.WithRows("loans", 1200), lendgraphtest.WithRows("companies", 20))
}

func TestOriginatorsService_TitleCompanies(t *testing.T) {
	srv := breakdownServer(t)
	c := srv.Client()
	ctx := context.Background()
	page, err := c.Originators.TitleCompanies(ctx, "1000000", nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]lendgraph.TitleCompanyRow{}
	var units int64
	for _, r := range page.Data {
		ids[r.ID] = r
		units += r.Units
	}
	// Spellings merged: filler words removed, natl read as national.
	for _, id := range []string{"first american", "fidelity national", "chicago", "old republic", "stewart", "wfg", "attorney", "accommodation"} {
		if _, ok := ids[id]; !ok {
			t.Errorf("row %q missing; rows: %v", id, keys(ids))
		}
	}
	// Placeholders and short names are excluded, not ranked.
	for id := range ids {
		if strings.Contains(id, "none") || id == "unknown" || id == "n a" || id == "ab" {
			t.Errorf("placeholder ranked: %q", id)
		}
	}
	if page.Totals.Excluded == 0 || page.Totals.Units != units+page.Totals.Excluded || !page.Totals.VolumePlausible {
		t.Fatalf("totals %+v, ranked units %d", page.Totals, units)
	}
	// Shares are of the whole population, excluded loans included.
	var pctSum float64
	for _, r := range page.Data {
		want := math.Round(10000*float64(r.Units)/float64(page.Totals.Units)) / 100
		if math.Abs(r.PctUnits-want) > 0.011 || r.PctVolume <= 0 {
			t.Fatalf("row %q pctUnits %v, want %v", r.ID, r.PctUnits, want)
		}
		pctSum += r.PctUnits
	}
	if pctSum > 99.5 {
		t.Fatalf("shares sum to %v although loans were excluded", pctSum)
	}
	if fa := ids["fidelity national"]; fa.Label != "Fidelity National Title" && fa.Label != "Fidelity Natl Title Inc" {
		t.Fatalf("label %q", fa.Label)
	}
	if page.Total != int64(len(page.Data)) {
		t.Fatalf("total %d, rows %d", page.Total, len(page.Data))
	}
}

func TestOriginatorsService_TitleCompaniesPager(t *testing.T) {
	srv := breakdownServer(t)
	c := srv.Client()
	ctx := context.Background()
	req := &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 3}}
	first, err := c.Originators.TitleCompanies(ctx, "1000001", req)
	if err != nil || len(first.Data) != 3 || first.Cursor == "" {
		t.Fatalf("%v %+v", err, first)
	}
	n := 0
	seen := map[string]bool{}
	for r, err := range c.Originators.AllTitleCompanies(ctx, "1000001", req) {
		if err != nil {
			t.Fatal(err)
		}
		if seen[r.ID] {
			t.Fatalf("row %q twice", r.ID)
		}
		seen[r.ID] = true
		n++
	}
	if int64(n) != first.Total {
		t.Fatalf("iterated %d of %d", n, first.Total)
	}
	srv.ResetRequests()
	_, err = c.Originators.TitleCompanies(ctx, "1000001", &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 101}})
	wantInvalid(t, srv, err, "Pagination.Size")
	_, err = c.Originators.TitleCompanies(ctx, "", nil)
	wantInvalid(t, srv, err, "nmlsID")
	_, err = c.Originators.TitleCompanies(ctx, "42", nil)
	wantStatus(t, err, http.StatusNotFound)
}

func TestOriginatorsService_Count(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(500))
	c := srv.Client()
	ctx := context.Background()
	exact, err := c.Originators.Count(ctx, &lendgraph.ListRequest{FlatFilters: map[string]any{"city": "Fort Worth"}})
	if err != nil {
		t.Fatal(err)
	}
	n, err := c.Originators.Count(ctx, &lendgraph.ListRequest{
		FlatFilters: map[string]any{"city": "ft worth", "companyNmlsId": "2000001"},
		Sort:        []lendgraph.Sort{{Field: "x"}}, Pagination: &lendgraph.Pagination{Size: 5},
	})
	if err != nil {
		t.Fatal(err)
	}
	if exact.Total == 0 || len(n.LocationNormalizations) != 1 {
		t.Fatalf("%+v %+v", exact, n)
	}
	ln := n.LocationNormalizations[0]
	if ln.Original != "ft worth" || ln.Normalized != "Fort Worth" || ln.ID != "city_tx_fort-worth" || ln.Field != lendgraph.LocationFieldCity || ln.Confidence != lendgraph.ConfidenceNormalized {
		t.Fatalf("location normalization %+v", ln)
	}
	if len(n.LenderNormalizations) != 1 || n.LenderNormalizations[0].MatchedVia != lendgraph.MatchedViaID || n.LenderNormalizations[0].Original != "2000001" {
		t.Fatalf("lender normalizations %+v", n.LenderNormalizations)
	}
	// Pagination and sort are not sent: the count ignores them.
	body := string(srv.Requests()[1].Body)
	if strings.Contains(body, "pagination") || strings.Contains(body, "sort") {
		t.Fatalf("count body %s", body)
	}
	if exact.PreviousTotal != exact.Total || exact.TotalIsLowerBound {
		t.Fatalf("%+v", exact)
	}
}

func TestOriginatorCount_KeepsUnknown(t *testing.T) {
	var n lendgraph.OriginatorCount
	in := `{"total":5,"previousTotal":4,"totalIsLowerBound":true,"lenderNormalizations":[{"aliasCount":2,"displayName":"A","id":"1","matchedVia":"alias","original":"a","totalDocuments":9,"score":0.5}],"locationNormalizations":[{"candidates":["c"],"confidence":"fuzzy","displayName":"D","field":"county","id":"city_tx_x","normalized":"X","original":"x","variants":["X"]}],"took":3}`
	if err := json.Unmarshal([]byte(in), &n); err != nil {
		t.Fatal(err)
	}
	if n.LenderNormalizations[0].MatchedVia != "alias" || n.LocationNormalizations[0].Confidence != "fuzzy" || n.LocationNormalizations[0].Field != "county" {
		t.Fatalf("unknown enum values not kept: %+v", n)
	}
	out, _ := json.Marshal(n)
	if !strings.Contains(string(out), `"took":3`) || !strings.Contains(string(out), `"score":0.5`) {
		t.Fatalf("%s", out)
	}
}

func TestCompaniesService_Branches(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(300), lendgraphtest.WithRows("companies", 4))
	c := srv.Client()
	ctx := context.Background()
	page, err := c.Companies.Branches(ctx, "2000001", &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 75 || len(page.Data) != 10 || page.Cursor == "" {
		t.Fatalf("total %d rows %d cursor %q", page.Total, len(page.Data), page.Cursor)
	}
	b := page.Data[0]
	if b.CompanyNMLSID != "2000001" || b.Location == nil || len(b.LicensedStates) == 0 || len(b.Managers) == 0 {
		t.Fatalf("branch %+v", b)
	}
	n := 0
	for b, err := range c.Companies.AllBranches(ctx, "2000001", &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 20}}) {
		if err != nil || b.CompanyNMLSID != "2000001" {
			t.Fatal(err, b)
		}
		n++
	}
	if n != 75 {
		t.Fatalf("iterated %d", n)
	}
	page, err = c.Companies.Branches(ctx, "2000001", &lendgraph.ListRequest{FlatFilters: map[string]any{"city": "NYC"}})
	if err != nil || len(page.LocationNormalizations) != 1 || page.LocationNormalizations[0].Normalized != "New York" {
		t.Fatalf("%v %+v", err, page)
	}
	for _, b := range page.Data {
		if b.City != "New York" {
			t.Fatalf("city %q", b.City)
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A breakdown or branch pager with no id fails when it is built, before any
// request, like the iterators over it.
func TestOriginatorsService_PagersRejectEmptyID(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(50))
	c := srv.Client()
	var inv *lendgraph.InvalidArgumentError
	if _, err := c.Originators.TitleCompaniesPager("", nil); !errors.As(err, &inv) || inv.Arg != "nmlsID" {
		t.Fatalf("TitleCompaniesPager: %v", err)
	}
	if _, err := c.Companies.BranchesPager("", nil); !errors.As(err, &inv) || inv.Arg != "nmlsID" {
		t.Fatalf("BranchesPager: %v", err)
	}
	for _, err := range c.Companies.AllBranches(context.Background(), "", nil) {
		if !errors.As(err, &inv) {
			t.Fatalf("AllBranches: %v", err)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}
