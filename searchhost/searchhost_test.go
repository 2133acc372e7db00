package searchhost_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meilisearch/meilisearch-go"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
	"github.com/lendgraph/lendgraph-go/searchhost"
)

func newHost(t *testing.T, opts ...lendgraph.Option) (*lendgraphtest.Server, *lendgraph.Client, meilisearch.ServiceReader) {
	t.Helper()
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(2000))
	c := srv.Client(opts...)
	ms, err := searchhost.New(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return srv, c, ms
}

// hostRequests are the requests the search host received.
func hostRequests(srv *lendgraphtest.Server) []lendgraphtest.Request {
	var out []lendgraphtest.Request
	for _, r := range srv.Requests() {
		if r.Listener == "search" {
			out = append(out, r)
		}
	}
	return out
}

// rawHost posts body to the fake host's path with a token of its own, not
// through the SDK: what the host itself answers.
func rawHost(t *testing.T, srv *lendgraphtest.Server, path, body string) map[string]json.RawMessage {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.SearchHostURL()+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+srv.NewSearchToken(time.Minute))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %v", resp.StatusCode, err)
	}
	return out
}

// TestNew_Search: the official client's typed search, with parameters the
// SDK's own SearchHost.Search has no field for (distinct, filter arrays,
// crop, matches position, matching strategy), reaches the host through the
// token and answers what the host answers.
func TestNew_Search(t *testing.T) {
	srv, c, ms := newHost(t, lendgraph.WithBearerAuth()) // the key would travel in Authorization
	ctx := context.Background()
	hpp := int64(5)
	res, err := ms.Index("originators").Search(ctx, "smi", &meilisearch.SearchRequest{
		Filter:                [][]string{{`states = "TX"`, `states = "CA"`}},
		Sort:                  []string{"lastName:asc"},
		HitsPerPage:           &hpp,
		Page:                  2,
		AttributesToRetrieve:  []string{"id", "lastName", "states"},
		AttributesToCrop:      []string{"lastName"},
		CropLength:            3,
		ShowMatchesPosition:   true,
		ShowRankingScore:      true,
		MatchingStrategy:      meilisearch.All,
		Distinct:              "cities",
		AttributesToHighlight: []string{"lastName"},
	})
	if err != nil {
		t.Fatal(err)
	}
	type hit struct {
		ID        string          `json:"id"`
		LastName  string          `json:"lastName"`
		States    []string        `json:"states"`
		Score     float64         `json:"_rankingScore"`
		Matches   json.RawMessage `json:"_matchesPosition"`
		Formatted map[string]any  `json:"_formatted"`
	}
	var hits []hit
	if err := res.Hits.DecodeInto(&hits); err != nil || len(hits) == 0 || res.Page != 2 || res.HitsPerPage != 5 || res.TotalHits == 0 {
		t.Fatalf("%v %+v", err, res)
	}
	for _, h := range hits {
		if h.ID == "" || h.Score <= 0 || len(h.Matches) == 0 || h.Formatted == nil ||
			!slices.ContainsFunc(h.States, func(s string) bool { return s == "TX" || s == "CA" }) {
			t.Fatalf("hit %+v", h)
		}
	}
	// The same page from the host directly: the same hits.
	raw := rawHost(t, srv, "/indexes/originators/search", `{"q":"smi","filter":[["states = \"TX\"","states = \"CA\""]],`+
		`"sort":["lastName:asc"],"hitsPerPage":5,"page":2,"attributesToRetrieve":["id","lastName","states"],"matchingStrategy":"all","distinct":"cities"}`)
	var direct []hit
	_ = json.Unmarshal(raw["hits"], &direct)
	if len(direct) != len(hits) {
		t.Fatalf("%d hits through the SDK, %d from the host", len(hits), len(direct))
	}
	for i := range direct {
		if direct[i].ID != hits[i].ID {
			t.Fatalf("hit %d: %s through the SDK, %s from the host", i, hits[i].ID, direct[i].ID)
		}
	}
	// The host saw the token, never the API key, and no other credential.
	key := srv.DefaultCaller().Key
	reqs := hostRequests(srv)
	if len(reqs) != 2 { // ours and rawHost's
		t.Fatalf("%d host requests", len(reqs))
	}
	tok, _ := c.Search.TokenSource().Token(ctx)
	r := reqs[0]
	if r.Header.Get("Authorization") != "Bearer "+tok.Token || r.Header.Get("x-api-key") != "" || bytes.Contains(r.Body, []byte(key)) {
		t.Fatalf("sent %v %s", r.Header, r.Body)
	}
	for _, vs := range r.Header {
		for _, v := range vs {
			if strings.Contains(v, key) {
				t.Fatal("the API key reached the search host")
			}
		}
	}
}

// TestNew_MultiSearchAndFacets: multi-search across two indexes and facet
// counts, compared with what the host answers to the same queries.
func TestNew_MultiSearchAndFacets(t *testing.T) {
	srv, _, ms := newHost(t)
	ctx := context.Background()
	res, err := ms.MultiSearch(ctx, &meilisearch.MultiSearchRequest{Queries: []*meilisearch.SearchRequest{
		{IndexUID: "agents", Query: "jo", Limit: 3, Facets: []string{"states", "cities"}},
		{IndexUID: "companies", Query: "sum", Limit: 2},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 2 || res.Results[0].IndexUID != "agents" || res.Results[1].IndexUID != "companies" ||
		len(res.Results[0].Hits) != 3 || len(res.Results[1].Hits) != 2 {
		t.Fatalf("%+v", res)
	}
	var got map[string]map[string]int64
	if err := json.Unmarshal(res.Results[0].FacetDistribution, &got); err != nil || len(got["states"]) == 0 || len(got["cities"]) == 0 {
		t.Fatalf("facets %s: %v", res.Results[0].FacetDistribution, err)
	}
	raw := rawHost(t, srv, "/indexes/agents/search", `{"q":"jo","limit":3,"facets":["states","cities"]}`)
	var want map[string]map[string]int64
	if err := json.Unmarshal(raw["facetDistribution"], &want); err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("facets through the SDK %v, from the host %v (%v)", got, want, err)
	}
	if n := srv.CountRequests(http.MethodPost, "/multi-search"); n != 1 {
		t.Fatalf("%d multi-search requests", n)
	}
	// A facet the host cannot count: its refusal, as the client's own error.
	_, err = ms.Index("agents").Search(ctx, "jo", &meilisearch.SearchRequest{Facets: []string{"firstName"}})
	var me *meilisearch.Error
	if !errors.As(err, &me) || me.StatusCode != 400 || me.APIError.Code != "invalid_search_facets" {
		t.Fatalf("err = %v", err)
	}
}

// TestNew_TokenExpiresMidUse: a token the host refuses (expired by the
// host's clock, then revoked) is replaced and the query sent once more:
// counted at the server, the retry carrying the new token.
func TestNew_TokenExpiresMidUse(t *testing.T) {
	ctx := context.Background()
	var srv *lendgraphtest.Server
	var ms meilisearch.ServiceReader
	search := func() {
		t.Helper()
		if _, err := ms.Index("companies").Search(ctx, "sum", &meilisearch.SearchRequest{Limit: 2}); err != nil {
			t.Fatal(err)
		}
	}
	// Each on a client of its own: a third mint within a second would wait
	// for the mint-storm guard (lendgraph.SearchTokenSource).
	for _, refuse := range []struct {
		name string
		do   func(*lendgraphtest.Server)
	}{
		{"expired by the host's clock", func(s *lendgraphtest.Server) { s.Advance(time.Hour) }},
		{"revoked", (*lendgraphtest.Server).RevokeSearchTokens},
	} {
		srv, _, ms = newHost(t)
		search()
		srv.ResetRequests()
		refuse.do(srv)
		search()
		reqs := hostRequests(srv)
		if len(reqs) != 2 || srv.SearchTokenMints() != 2 {
			t.Fatalf("%s: %d host requests, %d mints; want 2 and 2", refuse.name, len(reqs), srv.SearchTokenMints())
		}
		if a, b := reqs[0].Header.Get("Authorization"), reqs[1].Header.Get("Authorization"); a == b || !strings.HasPrefix(b, "Bearer lgs_") {
			t.Fatalf("%s: the retry sent %q after %q", refuse.name, b, a)
		}
		if !bytes.Equal(reqs[0].Body, reqs[1].Body) {
			t.Fatalf("%s: the retry sent %s, the first %s", refuse.name, reqs[1].Body, reqs[0].Body)
		}
	}
	// Transient failures are retried underneath (the client's own retries
	// are off): a 503, then the answer.
	srv.ResetRequests()
	srv.InjectFault(http.MethodPost, "/indexes/*/search", lendgraphtest.Fault{Status: 503, Header: map[string]string{"Retry-After": "0"},
		Body: `{"message":"busy","code":"internal","type":"internal","link":""}`})
	search()
	if n := len(hostRequests(srv)); n != 2 {
		t.Fatalf("%d host requests for a 503 then the answer", n)
	}
}

// TestNew_TokenNeverInErrors: a host echoing the token, in an error body or
// in a 200 body the client cannot read, puts it in no error text.
func TestNew_TokenNeverInErrors(t *testing.T) {
	srv, c, ms := newHost(t)
	ctx := context.Background()
	tok, err := c.Search.TokenSource().Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []lendgraphtest.Fault{
		{Status: 400, Header: map[string]string{"Content-Type": "application/json", "X-Request-Id": tok.Token},
			Body: `{"message":"bad token ` + tok.Token + `","code":"bad_request","type":"invalid_request","link":""}`},
		{Status: 200, Header: map[string]string{"Content-Type": "application/json"}, Body: `{"hits":"` + tok.Token + `"}`},
		{Status: 401, Times: 2, Header: map[string]string{"Content-Type": "application/json"},
			Body: `{"message":"unknown ` + tok.Token + `","code":"invalid_api_key","type":"auth","link":""}`},
	} {
		srv.InjectFault(http.MethodPost, "/indexes/*/search", f)
		_, err := ms.Index("agents").Search(ctx, "jo", &meilisearch.SearchRequest{})
		if err == nil {
			t.Fatalf("status %d: no error", f.Status)
		}
		for _, s := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
			if strings.Contains(s, tok.Token) {
				t.Fatalf("status %d: the token is in the error: %s", f.Status, s)
			}
		}
		var me *meilisearch.Error
		if !errors.As(err, &me) || strings.Contains(me.ResponseToString, tok.Token) || strings.Contains(me.APIError.Message, tok.Token) {
			t.Fatalf("status %d: %#v", f.Status, me)
		}
	}
}

// TestNew_Refusals: what the SDK refuses is refused before any request:
// an index outside the token's scope, a token naming a plain-http host
// under an https API (ErrUnsafeLink), an unusable client.
func TestNew_Refusals(t *testing.T) {
	srv, _, ms := newHost(t)
	srv.ResetRequests()
	_, err := ms.Index("loans").Search(context.Background(), "x", &meilisearch.SearchRequest{})
	var ia *lendgraph.InvalidArgumentError
	if !errors.As(err, &ia) || ia.Arg != "index" || len(hostRequests(srv)) != 0 {
		t.Fatalf("index outside the token: %v, %d host requests", err, len(hostRequests(srv)))
	}

	var hostHits int
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hostHits++ }))
	defer plain.Close()
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"token":"lgs_0123456789abcdef","host":%q,"indexes":["agents"],"expiresAt":%q}`,
			plain.URL, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	}))
	defer api.Close()
	c, err := lendgraph.NewClient(lendgraph.WithAPIKey("lg_test_key_0123456789"), lendgraph.WithBaseURL(api.URL), lendgraph.WithHTTPClient(api.Client()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := searchhost.New(context.Background(), c); !errors.Is(err, lendgraph.ErrUnsafeLink) || hostHits != 0 {
		t.Fatalf("http host under an https API: %v, %d host requests", err, hostHits)
	}
	if _, err := searchhost.New(context.Background(), nil); !errors.As(err, &ia) {
		t.Fatalf("nil client: %v", err)
	}
	if _, err := searchhost.New(context.Background(), &lendgraph.Client{}); !errors.As(err, &ia) {
		t.Fatalf("zero client: %v", err)
	}
}

// TestNew_MultiSearchOutOfScope: a multi-search whose queries name an
// index outside the token's scope fails before it is sent, as a search on
// that index does: nothing reaches the host, no token is minted again.
func TestNew_MultiSearchOutOfScope(t *testing.T) {
	srv, _, ms := newHost(t)
	srv.ResetRequests()
	mints := srv.SearchTokenMints()
	_, err := ms.MultiSearch(context.Background(), &meilisearch.MultiSearchRequest{Queries: []*meilisearch.SearchRequest{
		{IndexUID: "originators", Query: "smi"},
		{IndexUID: "loans", Query: "x"},
	}})
	var ia *lendgraph.InvalidArgumentError
	if !errors.As(err, &ia) || ia.Arg != "indexUid" || !strings.Contains(ia.Problem, `queries[1] names index "loans"`) {
		t.Fatalf("err = %v", err)
	}
	if n := len(hostRequests(srv)); n != 0 || srv.SearchTokenMints() != mints {
		t.Fatalf("%d host requests, %d mints (was %d)", n, srv.SearchTokenMints(), mints)
	}
}

// TestNew_FacetSearch: the official client's FacetSearch reaches the fake
// host's POST /indexes/{index}/facet-search through the SDK's transport:
// the values of a facet among the matches of q and filter that start with
// facetQuery, each counted as the host's own facet distribution counts it.
func TestNew_FacetSearch(t *testing.T) {
	srv, _, ms := newHost(t)
	srv.ResetRequests()
	raw, err := ms.Index("agents").FacetSearch(context.Background(), &meilisearch.FacetSearchRequest{
		FacetName: "cities", FacetQuery: "s", Q: "jo", Filter: `states = "TX"`})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		FacetHits []struct {
			Value string `json:"value"`
			Count int64  `json:"count"`
		} `json:"facetHits"`
		FacetQuery       *string `json:"facetQuery"`
		ProcessingTimeMs *int64  `json:"processingTimeMs"`
	}
	if err := json.Unmarshal(*raw, &got); err != nil || got.FacetQuery == nil || *got.FacetQuery != "s" || got.ProcessingTimeMs == nil {
		t.Fatalf("%s: %v", *raw, err)
	}
	if n := srv.CountRequests(http.MethodPost, "/indexes/*/facet-search"); n != 1 {
		t.Fatalf("%d facet-search requests", n)
	}
	dist := rawHost(t, srv, "/indexes/agents/search", `{"q":"jo","filter":"states = \"TX\"","facets":["cities"],"limit":0}`)
	var want map[string]map[string]int64
	if err := json.Unmarshal(dist["facetDistribution"], &want); err != nil {
		t.Fatal(err)
	}
	var wantHits []string
	for v, n := range want["cities"] {
		if strings.HasPrefix(strings.ToLower(v), "s") {
			wantHits = append(wantHits, fmt.Sprintf("%s=%d", v, n))
		}
	}
	slices.Sort(wantHits)
	var gotHits []string
	for _, h := range got.FacetHits {
		gotHits = append(gotHits, fmt.Sprintf("%s=%d", h.Value, h.Count))
	}
	if len(gotHits) == 0 || !slices.Equal(gotHits, wantHits) {
		t.Fatalf("facet hits %v, want %v", gotHits, wantHits)
	}
	// A facet the index cannot filter on: the host's refusal.
	_, err = ms.Index("agents").FacetSearch(context.Background(), &meilisearch.FacetSearchRequest{FacetName: "firstName"})
	var me *meilisearch.Error
	if !errors.As(err, &me) || me.StatusCode != 400 || me.APIError.Code != "invalid_facet_search_facet_name" {
		t.Fatalf("err = %v", err)
	}
}
