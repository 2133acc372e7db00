package lendgraph_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/google/go-cmp/cmp"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// Every resource service satisfies the interface a test harness stubs.
var (
	_ lendgraph.ResourceAPI[lendgraph.Agent]        = (*lendgraph.ResourceService[lendgraph.Agent])(nil)
	_ lendgraph.ResourceAPI[lendgraph.Originator]   = (*lendgraph.OriginatorsService)(nil)
	_ lendgraph.ResourceAPI[lendgraph.Company]      = (*lendgraph.CompaniesService)(nil)
	_ lendgraph.ResourceAPI[lendgraph.Loan]         = (*lendgraph.ResourceService[lendgraph.Loan])(nil)
	_ lendgraph.ResourceAPI[lendgraph.Property]     = (*lendgraph.PropertiesService)(nil)
	_ lendgraph.ResourceAPI[lendgraph.Branch]       = (*lendgraph.ResourceService[lendgraph.Branch])(nil)
	_ lendgraph.ResourceAPI[lendgraph.Sale]         = (*lendgraph.ResourceService[lendgraph.Sale])(nil)
	_ lendgraph.ResourceAPI[lendgraph.MarketRecord] = (*lendgraph.MarketService)(nil)
)

func TestAllFollowsCursors(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithRows("agents", 250))
	c := srv.Client()
	ctx := context.Background()
	req := &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 100},
		Sort: []lendgraph.Sort{{Field: "transactionCount", Order: lendgraph.Desc}, {Field: "id"}}}
	all := collect(t, c.Agents.All(ctx, req))
	if len(all) != 250 {
		t.Fatalf("%d agents, want 250", len(all))
	}
	if n := srv.CountRequests("POST", "/v1/agents"); n != 3 {
		t.Fatalf("%d requests, want 3 pages", n)
	}
	for i := 1; i < len(all); i++ {
		if all[i-1].TransactionCount < all[i].TransactionCount {
			t.Fatalf("not sorted desc at %d", i)
		}
	}
	// NextPage walks the same pages.
	p, err := c.Agents.Pager(req)
	if err != nil {
		t.Fatal(err)
	}
	var paged []lendgraph.Agent
	for p.More() {
		items, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, items...)
	}
	if d := cmp.Diff(ids(all, agentID), ids(paged, agentID)); d != "" {
		t.Fatalf("NextPage differs from All: %s", d)
	}
	if items, err := p.NextPage(ctx); items != nil || err != nil {
		t.Fatal("NextPage after the last page")
	}
	// The request was not modified by paging.
	if req.Pagination.Cursor != "" {
		t.Fatal("All wrote into the caller's request")
	}
	// The body the server received.
	body := string(srv.Requests()[0].Body)
	if body != `{"sort":[{"field":"transactionCount","order":"desc"},{"field":"id"}],"pagination":{"size":100}}` {
		t.Fatalf("body %s", body)
	}
}

func TestListPageAndTotal(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithRows("agents", 250))
	page, err := srv.Client().Agents.List(context.Background(), &lendgraph.ListRequest{
		FlatFilters: map[string]any{"state": []string{"CA", "TX"}}, Period: lendgraph.PeriodAllTime,
		Pagination: &lendgraph.Pagination{Size: 7}})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 7 || page.Total < 7 || page.Cursor == "" {
		t.Fatalf("page: %d rows, total %d, cursor %q", len(page.Data), page.Total, page.Cursor)
	}
	for _, a := range page.Data {
		if a.State != "CA" && a.State != "TX" {
			t.Fatalf("state %s", a.State)
		}
	}
}

func TestAllEmptyResult(t *testing.T) {
	srv := smallServer(t)
	c := srv.Client()
	n := 0
	for _, err := range c.Agents.All(context.Background(), &lendgraph.ListRequest{FlatFilters: map[string]any{"state": "ZZ"}}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 0 || srv.CountRequests("POST", "/v1/agents") != 1 {
		t.Fatalf("%d rows, %d requests", n, srv.CountRequests("POST", "/v1/agents"))
	}
	page, err := c.Agents.List(context.Background(), &lendgraph.ListRequest{FlatFilters: map[string]any{"state": "ZZ"}})
	if err != nil || page.Total != 0 || len(page.Data) != 0 || page.Cursor != "" {
		t.Fatalf("%+v %v", page, err)
	}
}

func TestAllRepeatedCursorIsAnError(t *testing.T) {
	noLeaks(t)
	srv := smallServer(t)
	srv.InjectFault("POST", "/v1/agents", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 200,
		Body: `{"data":[{"id":"a"},{"id":"b"}],"total":99,"cursor":"c1"}`, Times: -1})
	var got []string
	var gotErr error
	for a, err := range srv.Client().Agents.All(context.Background(), nil) {
		if err != nil {
			gotErr = err
			break
		}
		got = append(got, a.ID)
	}
	if gotErr == nil || !strings.Contains(gotErr.Error(), "second time") {
		t.Fatalf("err = %v, want a repeated-cursor error", gotErr)
	}
	if n := srv.CountRequests("POST", "/v1/agents"); n != 2 {
		t.Fatalf("%d requests: the pager looped", n)
	}
	if len(got) != 4 {
		t.Fatalf("yielded %v", got)
	}
}

func TestAllBreakEarly(t *testing.T) {
	noLeaks(t)
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithRows("agents", 1000))
	n := 0
	for _, err := range srv.Client().Agents.All(context.Background(), &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 100}}) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 150 {
			break
		}
	}
	// Page 1, page 2, and at most the prefetch of page 3.
	if r := srv.CountRequests("POST", "/v1/agents"); r > 3 {
		t.Fatalf("%d requests after breaking in page 2", r)
	}
}

func TestAllCancelMidIteration(t *testing.T) {
	noLeaks(t)
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithRows("agents", 1000))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	var gotErr error
	for _, err := range srv.Client().Agents.All(ctx, &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 100}}) {
		if err != nil {
			gotErr = err
			break
		}
		if n++; n == 150 {
			cancel()
		}
	}
	if !errors.Is(gotErr, context.Canceled) {
		t.Fatalf("err = %v after %d rows, want context.Canceled", gotErr, n)
	}
	if n >= 1000 {
		t.Fatal("iteration went on after cancel")
	}
}

func TestResumeFromCursor(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithRows("agents", 250))
	c := srv.Client()
	ctx := context.Background()
	req := &lendgraph.ListRequest{FlatFilters: map[string]any{"isTeamLead": false},
		Sort: []lendgraph.Sort{{Field: "city"}, {Field: "id", Order: lendgraph.Desc}}, Pagination: &lendgraph.Pagination{Size: 40}}
	want := ids(collect(t, c.Agents.All(ctx, req)), agentID)

	// First process: stops in the middle of the third page.
	p, err := c.Agents.Pager(req)
	if err != nil {
		t.Fatal(err)
	}
	var first []string
	for a, err := range p.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		first = append(first, a.ID)
		if len(first) == 95 {
			break
		}
	}
	saved := p.Cursor()
	if saved == "" {
		t.Fatal("no cursor to resume from")
	}
	// Second process: a new client, the same request, the saved cursor.
	resume := *req
	resume.Pagination = &lendgraph.Pagination{Size: 40, Cursor: saved}
	rest := ids(collect(t, srv.Client().Agents.All(ctx, &resume)), agentID)
	// The page being read is read again: 80 rows done, the rest follows.
	got := append(first[:80:80], rest...)
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("resumed listing differs: %s", d)
	}
}

func TestUnknownFieldsRoundTrip(t *testing.T) {
	srv := smallServer(t)
	ctx := context.Background()
	a, err := srv.Client().Agents.Get(ctx, "agt_0000003")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"email", "recentTransactions", "office", "tags"} {
		if !a.Extra.Has(k) {
			t.Fatalf("member %q not kept: %v", k, a.Extra.Names())
		}
	}
	var office struct{ Name, City, State string }
	if err := a.Extra.Decode("office", &office); err != nil || office.City != a.City {
		t.Fatalf("office %+v %v", office, err)
	}
	raw := srv.Dataset().Record("agents", 3)
	rawJSON, _ := json.Marshal(raw)
	for name, codec := range map[string]struct {
		marshal   func(any) ([]byte, error)
		unmarshal func([]byte, any) error
	}{
		"encoding/json": {json.Marshal, json.Unmarshal},
		"json v2": {func(v any) ([]byte, error) { return jsonv2.Marshal(v) },
			func(b []byte, v any) error { return jsonv2.Unmarshal(b, v) }},
	} {
		b, err := codec.marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		var back, want map[string]any
		_ = json.Unmarshal(b, &back)
		_ = json.Unmarshal(rawJSON, &want)
		// A typed field tagged omitempty holding its zero value is left out,
		// as encoding/json leaves it out of a request: one meaning per tag.
		for _, k := range []string{"fullName", "city", "state", "transactionCount"} {
			if v, ok := want[k]; ok && (v == float64(0) || v == "") {
				delete(want, k)
			}
		}
		if d := cmp.Diff(want, back); d != "" {
			t.Fatalf("%s: re-marshalled record differs from what the server sent: %s", name, d)
		}
		var again lendgraph.Agent
		if err := codec.unmarshal(b, &again); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(*a, again); d != "" {
			t.Fatalf("%s: round trip: %s", name, d)
		}
		// Pages of records too.
		var page lendgraph.Page[lendgraph.Agent]
		if err := codec.unmarshal([]byte(`{"data":[`+string(b)+`],"total":1,"extraTop":1}`), &page); err != nil || page.Data[0].Extra.Has("email") == false {
			t.Fatalf("%s: page decode %v", name, err)
		}
	}
}

func TestUnknownEnumValuesAccepted(t *testing.T) {
	var l lendgraph.Loan
	if err := json.Unmarshal([]byte(`{"id":"l","transactionType":"reverse_mortgage","mortgageAmount":1e5,"newField":[1]}`), &l); err != nil {
		t.Fatal(err)
	}
	if l.TransactionType != "reverse_mortgage" || !l.Extra.Has("newField") {
		t.Fatalf("%+v", l)
	}
	b, _ := json.Marshal(l)
	if !strings.Contains(string(b), `"transactionType":"reverse_mortgage"`) {
		t.Fatalf("%s", b)
	}
	var s lendgraph.Sort
	if err := json.Unmarshal([]byte(`{"field":"x","order":"nulls_last"}`), &s); err != nil || s.Order != "nulls_last" {
		t.Fatalf("%+v %v", s, err)
	}
}

func TestFilterBuilderJSON(t *testing.T) {
	f := lendgraph.And(
		lendgraph.Eq("state", "CA"),
		lendgraph.Or(lendgraph.Gte("transactionCount", 10), lendgraph.Lt("volume", 0)),
		lendgraph.Not(lendgraph.In("city", "Fresno", "San Jose")),
		lendgraph.Ne("isTeamLead", false),
		lendgraph.Gt("zip", "9"), lendgraph.Lte("volume", 1e6),
	)
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"and":[{"field":"state","op":"eq","value":"CA"},` +
		`{"or":[{"field":"transactionCount","op":"gte","value":10},{"field":"volume","op":"lt","value":0}]},` +
		`{"not":{"field":"city","op":"in","value":["Fresno","San Jose"]}},` +
		`{"field":"isTeamLead","op":"ne","value":false},{"field":"zip","op":"gt","value":"9"},` +
		`{"field":"volume","op":"lte","value":1000000}]}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	var back lendgraph.Filter
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	b2, _ := json.Marshal(&back)
	if string(b2) != want {
		t.Fatalf("round trip %s", b2)
	}
	// The fake evaluates the same tree.
	srv := smallServer(t)
	page, err := srv.Client().Agents.List(context.Background(), &lendgraph.ListRequest{AdvancedFilters: f, Pagination: &lendgraph.Pagination{Size: 100}})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range page.Data {
		if a.State != "CA" || a.City == "Fresno" || a.City == "San Jose" || a.TransactionCount < 10 {
			t.Fatalf("row %+v does not match", a)
		}
	}
}
