package lendgraph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

func TestSearchService_InstantValidation(t *testing.T) {
	srv := searchServer(t)
	c := srv.Client()
	for _, tc := range []struct {
		name string
		req  *lendgraph.InstantSearchRequest
		arg  string
	}{
		{"nil", nil, "Query"},
		{"empty query", &lendgraph.InstantSearchRequest{}, "Query"},
		{"blank query", &lendgraph.InstantSearchRequest{Query: "  "}, "Query"},
		{"negative limit", &lendgraph.InstantSearchRequest{Query: "a", Limit: -1}, "Limit"},
		{"limit over 50", &lendgraph.InstantSearchRequest{Query: "a", Limit: 51}, "Limit"},
		{"unknown entity", &lendgraph.InstantSearchRequest{Query: "a", Entities: []lendgraph.SearchEntity{"loans"}}, "Entities"},
		{"duplicate entity", &lendgraph.InstantSearchRequest{Query: "a", Entities: []lendgraph.SearchEntity{lendgraph.EntityAgents, lendgraph.EntityAgents}}, "Entities"},
		{"filter outside entities", &lendgraph.InstantSearchRequest{Query: "a", Entities: []lendgraph.SearchEntity{lendgraph.EntityAgents},
			Filters: map[lendgraph.SearchEntity]string{lendgraph.EntityCompanies: "state = TX"}}, "Filters"},
		{"empty filter", &lendgraph.InstantSearchRequest{Query: "a", Filters: map[lendgraph.SearchEntity]string{lendgraph.EntityAgents: " "}}, "Filters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Search.Instant(context.Background(), tc.req)
			var ia *lendgraph.InvalidArgumentError
			if !errors.As(err, &ia) || ia.Arg != tc.arg {
				t.Fatalf("err = %v, want InvalidArgumentError on %s", err, tc.arg)
			}
		})
	}
	// Host queries are checked before a token is minted too.
	for _, tc := range []struct {
		index lendgraph.SearchIndex
		req   *lendgraph.HostSearchRequest
	}{
		{"", nil},
		{"a/b", nil},
		{lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Limit: -1}},
		{lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Offset: -5}},
	} {
		var ia *lendgraph.InvalidArgumentError
		if _, err := c.Search.Host().Search(context.Background(), tc.index, tc.req); !errors.As(err, &ia) {
			t.Fatalf("Search(%q, %+v) = %v, want InvalidArgumentError", tc.index, tc.req, err)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent for invalid arguments", n)
	}
}

func TestSearchService_Instant(t *testing.T) {
	srv := searchServer(t)
	c := srv.Client()
	res, err := c.Search.Instant(context.Background(), &lendgraph.InstantSearchRequest{Query: "smi"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Originators) != lendgraph.DefaultInstantLimit || len(res.Agents) != lendgraph.DefaultInstantLimit {
		t.Fatalf("got %d originators, %d agents, want the default %d each", len(res.Originators), len(res.Agents), lendgraph.DefaultInstantLimit)
	}
	for _, o := range res.Originators {
		if o.ID == "" || o.City == "" || o.State == "" || !o.Extra.Has("companyName") ||
			!(hasPrefixFold(o.FirstName, "smi") || hasPrefixFold(o.LastName, "smi")) {
			t.Fatalf("originator %+v", o)
		}
	}
	// No company or office name starts with "smi": empty, not nil.
	if res.Companies == nil || len(res.Companies) != 0 || res.Offices == nil || len(res.Offices) != 0 {
		t.Fatalf("companies %v, offices %v", res.Companies, res.Offices)
	}
	b, _ := json.Marshal(res)
	if !bytes.Contains(b, []byte(`"companies":[]`)) || !bytes.Contains(b, []byte(`"companyName"`)) {
		t.Fatalf("marshalled: %s", b)
	}
	// The default limit is sent.
	reqs := srv.Requests()
	if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, `"limit":5`) {
		t.Fatalf("sent %s", body)
	}
	res, err = c.Search.Instant(context.Background(), &lendgraph.InstantSearchRequest{Query: "summit"})
	if err != nil || len(res.Companies) == 0 || len(res.Offices) == 0 || !hasPrefixFold(res.Companies[0].Name, "summit") || res.Companies[0].City == "" {
		t.Fatalf("companies %+v offices %+v err %v", res.Companies, res.Offices, err)
	}
}

func TestSearchService_InstantLimitsAndFilters(t *testing.T) {
	srv := searchServer(t)
	c := srv.Client()
	res, err := c.Search.Instant(context.Background(), &lendgraph.InstantSearchRequest{
		Query:    "j",
		Entities: []lendgraph.SearchEntity{lendgraph.EntityOriginators, lendgraph.EntityAgents},
		Limit:    12,
		Filters: map[lendgraph.SearchEntity]string{
			lendgraph.EntityOriginators: "state = TX",
			lendgraph.EntityAgents:      `state = CA AND city = "San Diego"`,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Originators) != 12 || len(res.Agents) == 0 || len(res.Agents) > 12 {
		t.Fatalf("%d originators, %d agents", len(res.Originators), len(res.Agents))
	}
	if len(res.Companies) != 0 || len(res.Offices) != 0 {
		t.Fatal("entity types not asked for came back")
	}
	for _, o := range res.Originators {
		var states []string
		if err := o.Extra.Decode("states", &states); err != nil || !slices.Contains(states, "TX") {
			t.Fatalf("originator %+v outside TX", o)
		}
	}
	for _, a := range res.Agents {
		if a.State != "CA" || a.City != "San Diego" {
			t.Fatalf("agent %+v outside San Diego, CA", a)
		}
	}
	// A filter the server cannot read is its 400, an *APIError.
	_, err = c.Search.Instant(context.Background(), &lendgraph.InstantSearchRequest{Query: "j",
		Filters: map[lendgraph.SearchEntity]string{lendgraph.EntityAgents: "zip = 78701"}})
	var ae *lendgraph.APIError
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusBadRequest {
		t.Fatalf("err = %v, want a 400 APIError", err)
	}
}

func TestSearchService_InstantUnavailable(t *testing.T) {
	srv := searchServer(t)
	ctx := context.Background()
	// A 503 is retried like a read.
	srv.InjectFault(http.MethodPost, "/v1/instant-search", lendgraphtest.Fault{Status: http.StatusServiceUnavailable,
		Header: map[string]string{"Retry-After": "0"}, Body: `{"error":"search backend temporarily unavailable"}`})
	if _, err := srv.Client().Search.Instant(ctx, &lendgraph.InstantSearchRequest{Query: "smi"}); err != nil {
		t.Fatal(err)
	}
	if n := srv.CountRequests(http.MethodPost, "/v1/instant-search"); n != 2 {
		t.Fatalf("%d requests, want 2 (one retry)", n)
	}
	// Not configured: recognisable once the retries give up.
	srv.SetSearchConfigured(false)
	_, err := srv.Client(lendgraph.WithMaxRetries(0)).Search.Instant(ctx, &lendgraph.InstantSearchRequest{Query: "smi"})
	if !errors.Is(err, lendgraph.ErrUnavailable) || !strings.Contains(err.Error(), "not configured") {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}

func TestSearch_NoGoroutineLeft(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	srv, err := lendgraphtest.Start(lendgraphtest.WithDefaultRows(500))
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{}}
	c := srv.Client(lendgraph.WithHTTPClient(hc))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			_, _ = c.Search.Host().Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"})
			_, _ = c.Search.Instant(ctx, &lendgraph.InstantSearchRequest{Query: "jo"})
		})
	}
	wg.Wait()
	srv.InjectFault("", "/v1/search-token", lendgraphtest.Fault{Kind: lendgraphtest.Stall, Delay: time.Minute})
	srv.RevokeSearchTokens()
	go cancel()
	_, _ = c.Search.Host().Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"})
	srv.Close()
	hc.CloseIdleConnections()
	goleak.VerifyNone(t, opt)
}

func TestSearchService_FakeInstantRules(t *testing.T) {
	srv := searchServer(t)
	c := srv.Client(lendgraph.WithMaxRetries(0))
	ctx := context.Background()
	for _, body := range []map[string]any{
		{"query": ""},
		{},
		{"query": "jo", "limit": 0},
		{"query": "jo", "limit": 51},
		{"query": "jo", "entities": []string{"loans"}},
		{"query": "jo", "entities": []string{"agents"}, "filters": map[string]string{"companies": "state = TX"}},
		{"query": "jo", "filters": map[string]string{"agents": "state === TX"}},
		{"query": "jo", "filters": map[string]string{"agents": "zip = 78701"}},
	} {
		err := c.Do(ctx, http.MethodPost, "/v1/instant-search", body, nil)
		var ae *lendgraph.APIError
		if !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Message == "" {
			t.Fatalf("%v: err = %v, want 400", body, err)
		}
	}
	var out struct {
		Results map[string][]map[string]any `json:"results"`
	}
	if err := c.Do(ctx, http.MethodPost, "/v1/instant-search", map[string]any{"query": "Jo", "limit": 50,
		"filters": map[string]string{"offices": `city = "Austin"`}}, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Results) != 4 || len(out.Results["agents"]) != 50 || len(out.Results["offices"]) != 0 {
		t.Fatalf("%d agents, %d offices", len(out.Results["agents"]), len(out.Results["offices"]))
	}
	if err := c.Do(ctx, http.MethodPost, "/v1/instant-search", map[string]any{"query": "Summ",
		"filters": map[string]string{"offices": `city = "Austin"`}}, &out); err != nil {
		t.Fatal(err)
	}
	for _, o := range out.Results["offices"] {
		if o["city"] != "Austin" || !hasPrefixFold(fmt.Sprint(o["name"]), "summ") {
			t.Fatalf("office %v", o)
		}
	}
	if len(out.Results["offices"]) == 0 {
		t.Fatal("no Summit office in Austin")
	}
}
