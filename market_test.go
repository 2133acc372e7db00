package lendgraph_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

func marketServer(t *testing.T) *lendgraphtest.Server {
	return lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(2000))
}

func TestMarketService_MostGained(t *testing.T) {
	srv := marketServer(t)
	c := srv.Client()
	var waits []time.Duration
	res, err := c.Market.MostGained(context.Background(), &lendgraph.MostGainedRequest{State: "TX", Limit: 5},
		lendgraph.WithProgress(func(p *lendgraph.MovementProgress) { waits = append(waits, p.RetryAfter) }))
	if err != nil {
		t.Fatal(err)
	}
	if len(waits) == 0 || waits[0] <= 0 || waits[0] > lendgraphtest.DefaultComputeDelay {
		t.Fatalf("computing waits %v", waits)
	}
	if n := srv.CountRequests(http.MethodGet, "/v1/market/movement/most-gained"); n != len(waits)+1 {
		t.Fatalf("%d requests for %d waits", n, len(waits))
	}
	reqs := srv.Requests()
	if reqs[0].Query != reqs[len(reqs)-1].Query {
		t.Fatalf("repeat changed the request: %q vs %q", reqs[0].Query, reqs[len(reqs)-1].Query)
	}
	if len(res.Data) == 0 || len(res.Data) > 5 {
		t.Fatalf("rows: %d", len(res.Data))
	}
	for i, r := range res.Data {
		if r.Net != r.Gained-r.Lost || r.CompanyNMLSID == "" || r.CompanyName == "" {
			t.Fatalf("row %d: %+v", i, r)
		}
		if i > 0 && r.Gained > res.Data[i-1].Gained {
			t.Fatalf("not ranked by count: %+v", res.Data)
		}
		if r.Units > 0 && r.AvgLoanSize <= 0 {
			t.Fatalf("avgLoanSize: %+v", r)
		}
	}
	if res.Window.Months != 12 || res.Window.StartDate == "" || res.Window.EndDate == "" {
		t.Fatalf("window %+v", res.Window)
	}
	// The same parameter set is ready now: one request, no wait.
	srv.ResetRequests()
	waits = nil
	if _, err := c.Market.MostGained(context.Background(), &lendgraph.MostGainedRequest{State: "TX", Limit: 5},
		lendgraph.WithProgress(func(p *lendgraph.MovementProgress) { waits = append(waits, p.RetryAfter) })); err != nil || len(waits) != 0 || len(srv.Requests()) != 1 {
		t.Fatalf("second call: %v, waits %v, %d requests", err, waits, len(srv.Requests()))
	}
}

func TestMarketService_MostGainedRankByNet(t *testing.T) {
	srv := marketServer(t)
	srv.SetComputeDelay(0)
	c := srv.Client()
	res, err := c.Market.MostGained(context.Background(), &lendgraph.MostGainedRequest{
		DateRange: lendgraph.DateRangeAllTime, States: []string{"TX", "CA"}, RankBy: lendgraph.RankByNet,
		CompanyCategories: []lendgraph.CompanyCategory{lendgraph.CategoryBank, lendgraph.CategoryCreditUnion}, Limit: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(res.Data); i++ {
		if res.Data[i].Net > res.Data[i-1].Net {
			t.Fatalf("not ranked by net at %d", i)
		}
	}
	q, _ := url.ParseQuery(srv.Requests()[0].Query)
	if q.Get("states") != "TX,CA" || q.Get("companyCategory") != "BANK,CU" || q.Get("rankBy") != "net" || q.Get("dateRange") != "all_time" || q.Get("limit") != "100" {
		t.Fatalf("query %v", q)
	}
}

func TestMarketService_MostGainedCancel(t *testing.T) {
	srv := marketServer(t)
	srv.SetComputeDelay(time.Hour)
	// The fake asks for the whole hour: a cap above it, so the client waits.
	c := srv.Client(lendgraph.WithMaxServerWait(2 * time.Hour))
	ctx, cancel := context.WithCancel(context.Background())
	_, err := c.Market.MostGained(ctx, &lendgraph.MostGainedRequest{State: "CA"},
		lendgraph.WithProgress(func(*lendgraph.MovementProgress) { cancel() }))
	if err != context.Canceled {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	// The clock moves past the computation: rows come.
	srv.Advance(2 * time.Hour)
	if _, err := c.Market.MostGained(context.Background(), &lendgraph.MostGainedRequest{State: "CA"}); err != nil {
		t.Fatal(err)
	}
}

func TestMostGainedParams_Validate(t *testing.T) {
	srv := marketServer(t)
	c := srv.Client()
	for _, tc := range []struct {
		p   lendgraph.MostGainedRequest
		arg string
	}{
		{lendgraph.MostGainedRequest{DateRange: lendgraph.LastNMonths(0)}, "DateRange"},
		{lendgraph.MostGainedRequest{DateRange: lendgraph.LastNMonths(1000)}, "DateRange"},
		{lendgraph.MostGainedRequest{DateRange: "last_year"}, "DateRange"},
		{lendgraph.MostGainedRequest{State: "Texas"}, "State"},
		{lendgraph.MostGainedRequest{States: []string{"TX", "T1"}}, "States[1]"},
		{lendgraph.MostGainedRequest{City: "Austin"}, "City"},
		{lendgraph.MostGainedRequest{State: "TX", City: strings.Repeat("a", 101)}, "City"},
		{lendgraph.MostGainedRequest{CompanyCategories: []lendgraph.CompanyCategory{"BANKS"}}, "CompanyCategories[0]"},
		{lendgraph.MostGainedRequest{RankBy: "volume"}, "RankBy"},
		{lendgraph.MostGainedRequest{Limit: 101}, "Limit"},
		{lendgraph.MostGainedRequest{Limit: -1}, "Limit"},
	} {
		_, err := c.Market.MostGained(context.Background(), &tc.p)
		wantInvalid(t, srv, err, tc.arg)
	}
	for _, d := range []lendgraph.DateRange{lendgraph.LastNMonths(1), lendgraph.LastNMonths(999), lendgraph.DateRangeYearToDate,
		lendgraph.CalendarYear(2024), lendgraph.FiscalYear(2024), "fiscal_2023", lendgraph.DateRangeAllTime, lendgraph.DateRangeLast12Months} {
		if err := d.Validate(); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
	if lendgraph.CalendarYear(2024) != "2024" || lendgraph.FiscalYear(2024) != "fy_2024" || lendgraph.LastNMonths(6) != "last_6_months" {
		t.Fatal("helpers")
	}
}

// The fake refuses what the SDK refuses, for callers that bypass it.
func TestMarketService_FakeMostGainedValidates(t *testing.T) {
	srv := marketServer(t)
	c := srv.Client()
	for _, q := range []string{"dateRange=last_0_months", "state=TXX", "city=", "companyCategory=BANK,X", "rankBy=x", "limit=0", "limit=101"} {
		err := c.Do(context.Background(), http.MethodGet, "/v1/market/movement/most-gained?"+q, nil, nil)
		wantStatus(t, err, http.StatusBadRequest)
	}
}

func TestMostGainedResponse_KeepsUnknown(t *testing.T) {
	var r lendgraph.MostGainedResult
	in := `{"data":[{"companyName":"A","companyNmlsId":"1","gained":3,"lost":1,"net":2,"units":4,"volume":1.5,"avgLoanSize":0.4,"volumeTruncated":true,"rank":1}],"truncated":true,"window":{"startDate":"2025-01-01","endDate":"2025-12-31","months":12,"tz":"UTC"},"asOf":"x"}`
	if err := r.UnmarshalJSON([]byte(in)); err != nil {
		t.Fatal(err)
	}
	if !r.Truncated || !r.Data[0].VolumeTruncated || !r.Data[0].Extra.Has("rank") || !r.Window.Extra.Has("tz") || !r.Extra.Has("asOf") {
		t.Fatalf("%+v", r)
	}
	out, _ := r.MarshalJSON()
	for _, m := range []string{`"rank":1`, `"tz":"UTC"`, `"asOf":"x"`} {
		if !strings.Contains(string(out), m) {
			t.Fatalf("%s lost: %s", m, out)
		}
	}
}
