package lendgraphtest

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// hostReq sends a request to the fake search host and decodes its JSON.
type hostReq struct {
	method, path, token, body string
	header                    map[string]string
}

func (h hostReq) do(t *testing.T, srv *Server) (int, http.Header, map[string]any) {
	t.Helper()
	method := h.method
	if method == "" {
		method = http.MethodPost
	}
	var body io.Reader
	if h.body != "" {
		body = strings.NewReader(h.body)
	}
	req, err := http.NewRequest(method, srv.SearchHostURL()+h.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if h.token != "" {
		req.Header.Set("Authorization", "Bearer "+h.token)
	}
	if h.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range h.header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if len(b) > 0 && json.Unmarshal(b, &m) != nil {
		m = map[string]any{"raw": string(b)}
	}
	return resp.StatusCode, resp.Header, m
}

// search posts body to /indexes/{index}/search and wants a 200.
func search(t *testing.T, srv *Server, tok, index, body string) map[string]any {
	t.Helper()
	status, _, m := hostReq{path: "/indexes/" + index + "/search", token: tok, body: body}.do(t, srv)
	if status != 200 {
		t.Fatalf("%s %s: %d %v", index, body, status, m)
	}
	return m
}

// searchErr posts body and wants an error with that status and code.
func searchErr(t *testing.T, srv *Server, tok, index, body string, status int, code string) string {
	t.Helper()
	got, _, m := hostReq{path: "/indexes/" + index + "/search", token: tok, body: body}.do(t, srv)
	if got != status || m["code"] != code || m["type"] == "" || m["link"] != "https://docs.meilisearch.com/errors#"+code {
		t.Fatalf("%s: %d %v, want %d %s", body, got, m, status, code)
	}
	return m["message"].(string)
}

func hits(m map[string]any) []map[string]any {
	var out []map[string]any
	for _, h := range m["hits"].([]any) {
		out = append(out, h.(map[string]any))
	}
	return out
}

func num(v any) int { f, _ := v.(float64); return int(f) }

func TestHostPagination(t *testing.T) {
	srv := NewServer(t, WithDefaultRows(2000))
	tok := srv.NewSearchToken(time.Hour)
	// Offset mode: limit, offset, estimatedTotalHits capped at maxTotalHits.
	m := search(t, srv, tok, "agents", `{"limit":3,"offset":2}`)
	if len(hits(m)) != 3 || num(m["limit"]) != 3 || num(m["offset"]) != 2 || num(m["estimatedTotalHits"]) != 1000 || m["totalHits"] != nil || m["page"] != nil {
		t.Fatalf("offset mode: %v", m)
	}
	offsetIDs := []any{hits(m)[0]["id"], hits(m)[1]["id"]}
	// Page mode: exact totals, no limit/offset.
	m = search(t, srv, tok, "agents", `{"page":2,"hitsPerPage":2}`)
	if len(hits(m)) != 2 || num(m["page"]) != 2 || num(m["hitsPerPage"]) != 2 || num(m["totalHits"]) != 1000 || num(m["totalPages"]) != 500 ||
		m["limit"] != nil || m["offset"] != nil || m["estimatedTotalHits"] != nil {
		t.Fatalf("page mode: %v", m)
	}
	if !slices.Equal([]any{hits(m)[0]["id"], hits(m)[1]["id"]}, offsetIDs) {
		t.Fatalf("page 2 of 2 = %v, offset 2 gave %v", hits(m), offsetIDs)
	}
	// hitsPerPage alone is page 1; page alone has 20 a page.
	if m := search(t, srv, tok, "agents", `{"hitsPerPage":7}`); len(hits(m)) != 7 || num(m["page"]) != 1 || num(m["totalPages"]) != 143 {
		t.Fatalf("hitsPerPage alone: %v", m["totalPages"])
	}
	if m := search(t, srv, tok, "agents", `{"page":1}`); len(hits(m)) != 20 || num(m["hitsPerPage"]) != 20 {
		t.Fatalf("page alone: %d hits", len(hits(m)))
	}
	// Page 0 and hitsPerPage 0 return no hit, with the counts.
	if m := search(t, srv, tok, "agents", `{"q":"jo","page":0}`); len(hits(m)) != 0 || num(m["totalHits"]) == 0 {
		t.Fatalf("page 0: %v", m)
	}
	if m := search(t, srv, tok, "agents", `{"q":"jo","hitsPerPage":0}`); len(hits(m)) != 0 || num(m["totalPages"]) != 0 || num(m["totalHits"]) == 0 {
		t.Fatalf("hitsPerPage 0: %v", m)
	}
	// Nothing past maxTotalHits.
	if m := search(t, srv, tok, "agents", `{"offset":998,"limit":5}`); len(hits(m)) != 2 || num(m["limit"]) != 2 {
		t.Fatalf("past 1000: %d hits, limit %v", len(hits(m)), m["limit"])
	}
	if m := search(t, srv, tok, "agents", `{"page":51,"hitsPerPage":20}`); len(hits(m)) != 0 {
		t.Fatalf("page 51 of 50: %d hits", len(hits(m)))
	}
	// Types, as Meilisearch words them.
	if msg := searchErr(t, srv, tok, "agents", `{"page":"2"}`, 400, "invalid_search_page"); msg != "Invalid value type at `.page`: expected a positive integer, but found a string: `\"2\"`" {
		t.Fatal(msg)
	}
	searchErr(t, srv, tok, "agents", `{"hitsPerPage":-1}`, 400, "invalid_search_hits_per_page")
}

func TestHostFacets(t *testing.T) {
	srv := NewServer(t, WithDefaultRows(400))
	tok := srv.NewSearchToken(time.Hour)
	all := hits(search(t, srv, tok, "originators", `{"q":"","limit":1000,"filter":"states = TX"}`))
	want := map[string]int{}
	for _, h := range all {
		for _, c := range h["cities"].([]any) {
			want[c.(string)]++
		}
	}
	m := search(t, srv, tok, "originators", `{"q":"","limit":1,"filter":"states = TX","facets":["cities","states"]}`)
	dist := m["facetDistribution"].(map[string]any)
	cities := dist["cities"].(map[string]any)
	if len(cities) != len(want) || len(want) == 0 {
		t.Fatalf("%d cities, want %d", len(cities), len(want))
	}
	for c, n := range want {
		if num(cities[c]) != n {
			t.Fatalf("cities[%s] = %v, want %d", c, cities[c], n)
		}
	}
	if num(dist["states"].(map[string]any)["TX"]) != len(all) {
		t.Fatalf("states: %v, %d hits", dist["states"], len(all))
	}
	if fs, ok := m["facetStats"].(map[string]any); !ok || len(fs) != 0 {
		t.Fatalf("facetStats %v", m["facetStats"])
	}
	// "*" is every filterable attribute; no facets, no distribution.
	if m := search(t, srv, tok, "agents", `{"facets":["*"]}`); len(m["facetDistribution"].(map[string]any)) != 2 {
		t.Fatalf("*: %v", m["facetDistribution"])
	}
	if m := search(t, srv, tok, "agents", `{"q":"jo"}`); m["facetDistribution"] != nil || m["facetStats"] != nil {
		t.Fatalf("unasked facets: %v", m)
	}
	msg := searchErr(t, srv, tok, "agents", `{"facets":["lastName"]}`, 400, "invalid_search_facets")
	if msg != "Invalid facet distribution: Pattern `lastName` is not filterable. Available filterable attributes patterns are: `cities, states`." {
		t.Fatal(msg)
	}
	searchErr(t, srv, tok, "agents", `{"facets":"states"}`, 400, "invalid_search_facets")
}

func TestHostSort(t *testing.T) {
	srv := NewServer(t, WithDefaultRows(500))
	tok := srv.NewSearchToken(time.Hour)
	for _, order := range []string{"asc", "desc"} {
		hs := hits(search(t, srv, tok, "agents", `{"limit":200,"sort":["lastName:`+order+`","firstName:asc"]}`))
		keys := make([]string, len(hs))
		for i, h := range hs {
			keys[i] = strings.ToLower(h["lastName"].(string)) + "\x00" + strings.ToLower(h["firstName"].(string))
		}
		sorted := slices.IsSorted(keys)
		if order == "desc" {
			// Descending on lastName, ascending on firstName within one.
			sorted = sort.SliceIsSorted(hs, func(i, j int) bool {
				a, b := strings.ToLower(hs[i]["lastName"].(string)), strings.ToLower(hs[j]["lastName"].(string))
				return a > b || a == b && strings.ToLower(hs[i]["firstName"].(string)) < strings.ToLower(hs[j]["firstName"].(string))
			})
		}
		if !sorted || len(hs) != 200 {
			t.Fatalf("%s: not sorted: %v", order, keys[:10])
		}
	}
	// With a query, relevancy comes first: hits without a typo before the
	// ones with one, each group sorted.
	hs := hits(search(t, srv, tok, "originators", `{"q":"smitj","limit":50,"sort":["firstName:desc"],"showRankingScore":true}`))
	if len(hs) < 2 {
		t.Fatalf("%d hits", len(hs))
	}
	for i := 1; i < len(hs); i++ {
		a, b := hs[i-1], hs[i]
		if a["_rankingScore"].(float64) < b["_rankingScore"].(float64) ||
			a["_rankingScore"] == b["_rankingScore"] && strings.ToLower(a["firstName"].(string)) < strings.ToLower(b["firstName"].(string)) {
			t.Fatalf("hit %d out of order: %v then %v", i, a, b)
		}
	}
	if msg := searchErr(t, srv, tok, "agents", `{"sort":["states:asc"]}`, 400, "invalid_search_sort"); msg != "Attribute `states` is not sortable. Available sortable attributes are: `firstName, lastName`." {
		t.Fatal(msg)
	}
	if msg := searchErr(t, srv, tok, "agents", `{"sort":["lastName"]}`, 400, "invalid_search_sort"); msg != "Invalid syntax for the sort parameter: expected expression ending by `:asc` or `:desc`, found `lastName`." {
		t.Fatal(msg)
	}
	searchErr(t, srv, tok, "agents", `{"sort":"lastName:asc"}`, 400, "invalid_search_sort")
}

func TestHostRankingScore(t *testing.T) {
	srv := NewServer(t, WithDefaultRows(2000))
	tok := srv.NewSearchToken(time.Hour)
	// A placeholder search: every score is 1.
	for _, h := range hits(search(t, srv, tok, "agents", `{"showRankingScore":true,"limit":5}`)) {
		if h["_rankingScore"] != 1.0 {
			t.Fatalf("placeholder score %v", h["_rankingScore"])
		}
	}
	// Two words, strategy last: both words first (score 1 without typos),
	// then the first word alone; scores never increase.
	m := search(t, srv, tok, "agents", `{"q":"john smi","limit":1000,"showRankingScore":true,"showRankingScoreDetails":true}`)
	hs := hits(m)
	both, firstOnly := 0, 0
	for i, h := range hs {
		s := h["_rankingScore"].(float64)
		if i > 0 && s > hs[i-1]["_rankingScore"].(float64) {
			t.Fatalf("score rose at hit %d", i)
		}
		d := h["_rankingScoreDetails"].(map[string]any)["words"].(map[string]any)
		switch num(d["matchingWords"]) {
		case 2:
			both++
			if !strings.HasPrefix(strings.ToLower(h["lastName"].(string)), "smi") && !strings.HasPrefix(strings.ToLower(h["firstName"].(string)), "smi") {
				t.Fatalf("2 words matched by %v", h)
			}
		case 1:
			firstOnly++
		}
		if num(d["maxMatchingWords"]) != 2 {
			t.Fatalf("details %v", d)
		}
	}
	if both == 0 || firstOnly == 0 {
		t.Fatalf("%d hits with both words, %d with the first only", both, firstOnly)
	}
	// Strategy all: the hits with both words only.
	if m := search(t, srv, tok, "agents", `{"q":"john smi","limit":1000,"matchingStrategy":"all"}`); len(hits(m)) != both {
		t.Fatalf("all: %d hits, want %d", len(hits(m)), both)
	}
	// The threshold drops the hits below it, from the totals too.
	m = search(t, srv, tok, "agents", `{"q":"john smi","rankingScoreThreshold":0.9,"limit":1000}`)
	if len(hits(m)) != both || num(m["estimatedTotalHits"]) != both {
		t.Fatalf("threshold: %d hits, %v total, want %d", len(hits(m)), m["estimatedTotalHits"], both)
	}
	// A typo costs score: "smitj" matches "smith" with one typo.
	for _, h := range hits(search(t, srv, tok, "originators", `{"q":"smitj","limit":3,"showRankingScore":true}`)) {
		if h["_rankingScore"] != 0.5 {
			t.Fatalf("one typo in one word: score %v", h["_rankingScore"])
		}
	}
	searchErr(t, srv, tok, "agents", `{"rankingScoreThreshold":2}`, 400, "invalid_search_ranking_score_threshold")
	searchErr(t, srv, tok, "agents", `{"matchingStrategy":"any"}`, 400, "invalid_search_matching_strategy")
}

func TestHostFiltersAndRefusals(t *testing.T) {
	srv := NewServer(t, WithDefaultRows(500))
	tok := srv.NewSearchToken(time.Hour)
	msg := searchErr(t, srv, tok, "agents", `{"q":"jo","filter":"states === "}`, 400, "invalid_search_filter")
	if msg != "Was expecting a value but instead got nothing.\n9:9 states === " {
		t.Fatal(msg)
	}
	searchErr(t, srv, tok, "agents", `{"filter":"zip = 78701"}`, 400, "invalid_search_filter")
	searchErr(t, srv, tok, "agents", `{"filter":"states CONTAINS T"}`, 400, "feature_not_enabled")
	for _, h := range hits(search(t, srv, tok, "agents", `{"limit":200,"filter":"(states = TX OR states = CA) AND NOT cities IN [Austin, 'San Diego']"}`)) {
		st, city := h["states"].([]any)[0], h["cities"].([]any)[0]
		if st != "TX" && st != "CA" || city == "Austin" || city == "San Diego" {
			t.Fatalf("hit %v", h)
		}
	}
	// Array form: inner arrays ORed.
	if n := len(hits(search(t, srv, tok, "agents", `{"limit":1000,"filter":[["states = TX","states = CA"]]}`))); n == 0 {
		t.Fatal("array filter matched nothing")
	}
	// Parameters outside the fake's reach are refused, not ignored.
	for body, code := range map[string]string{
		`{"hybrid":{"embedder":"default"}}`:   "invalid_search_hybrid_query",
		`{"vector":[0.1]}`:                    "invalid_search_vector",
		`{"retrieveVectors":true}`:            "invalid_search_retrieve_vectors",
		`{"showPerformanceDetails":true}`:     "invalid_search_show_performance_details",
		`{"locales":["xx"]}`:                  "invalid_search_locales",
		`{"personalize":{"userContext":"x"}}`: "bad_request",
		`{"q":"jo","limit":"2"}`:              "invalid_search_limit",
		`{"attributesToRetrieve":"id"}`:       "invalid_search_attributes_to_retrieve",
	} {
		searchErr(t, srv, tok, "agents", body, 400, code)
	}
	if m := search(t, srv, tok, "agents", `{"retrieveVectors":false,"showPerformanceDetails":false,"locales":["eng"],"hybrid":null}`); len(hits(m)) != 20 {
		t.Fatalf("%d hits", len(hits(m)))
	}
	if msg := searchErr(t, srv, tok, "agents", `{"q":"jo","limit":"2"}`, 400, "invalid_search_limit"); msg != "Invalid value type at `.limit`: expected a positive integer, but found a string: `\"2\"`" {
		t.Fatal(msg)
	}
}

func TestHostFormatting(t *testing.T) {
	srv := NewServer(t, WithDefaultRows(500))
	tok := srv.NewSearchToken(time.Hour)
	m := search(t, srv, tok, "originators", `{"q":"smi","limit":5,"attributesToRetrieve":["id"],"attributesToHighlight":["lastName"],
		"highlightPreTag":"<b>","highlightPostTag":"</b>","showMatchesPosition":true,"attributesToSearchOn":["lastName"]}`)
	for _, h := range hits(m) {
		f := h["_formatted"].(map[string]any)
		last := f["lastName"].(string)
		if h["lastName"] != nil || f["id"] != h["id"] || !strings.HasPrefix(last, "<b>") || !strings.Contains(last, "</b>") {
			t.Fatalf("hit %v", h)
		}
		pos := h["_matchesPosition"].(map[string]any)["lastName"].([]any)[0].(map[string]any)
		if num(pos["start"]) != 0 || num(pos["length"]) != 3 {
			t.Fatalf("matches position %v", pos)
		}
	}
	// Cropping keeps the words around the match, marked where cut.
	srv2 := NewServer(t, WithDefaultRows(500))
	tok2 := srv2.NewSearchToken(time.Hour)
	for _, h := range hits(search(t, srv2, tok2, "companies", `{"q":"summ","limit":5,"attributesToCrop":["name:1"],"cropMarker":"~"}`)) {
		name := h["_formatted"].(map[string]any)["name"].(string)
		if strings.Count(name, " ") != 0 || !strings.HasPrefix(strings.ToLower(strings.Trim(name, "~")), "summ") {
			t.Fatalf("cropped %q from %q", name, h["name"])
		}
	}
	// Distinct: one hit per value.
	seen := map[any]bool{}
	for _, h := range hits(search(t, srv, tok, "agents", `{"limit":1000,"distinct":"states"}`)) {
		st := h["states"].([]any)[0]
		if seen[st] {
			t.Fatalf("two hits in %v", st)
		}
		seen[st] = true
	}
	if len(seen) < 10 {
		t.Fatalf("%d distinct states", len(seen))
	}
	searchErr(t, srv, tok, "agents", `{"distinct":"lastName"}`, 400, "invalid_search_distinct")
	// Phrases and negation.
	for _, h := range hits(search(t, srv, tok, "agents", `{"q":"jo -smith","limit":100}`)) {
		if strings.EqualFold(h["lastName"].(string), "smith") || strings.EqualFold(h["firstName"].(string), "smith") {
			t.Fatalf("negated word matched: %v", h)
		}
	}
}

func TestHostGETSearch(t *testing.T) {
	srv := NewServer(t, WithDefaultRows(300))
	tok := srv.NewSearchToken(time.Hour)
	status, _, m := hostReq{method: "GET", path: "/indexes/agents/search?q=jo&limit=3&facets=states,cities&sort=lastName:asc&showRankingScore=true", token: tok}.do(t, srv)
	if status != 200 || len(hits(m)) != 3 || len(m["facetDistribution"].(map[string]any)) != 2 || hits(m)[0]["_rankingScore"] == nil {
		t.Fatalf("%d %v", status, m)
	}
	status, _, m = hostReq{method: "GET", path: "/indexes/agents/search?limit=x", token: tok}.do(t, srv)
	if status != 400 || m["code"] != "invalid_search_limit" || m["message"] != "Invalid value in parameter `limit`: could not parse `x` as a positive integer" {
		t.Fatalf("%d %v", status, m)
	}
	if status, _, m = (hostReq{method: "GET", path: "/indexes/agents/search?foo=1", token: tok}).do(t, srv); status != 400 || m["code"] != "bad_request" {
		t.Fatalf("%d %v", status, m)
	}
}

func TestHostMultiSearch(t *testing.T) {
	srv := NewServer(t, WithDefaultRows(300))
	tok := srv.NewSearchToken(time.Hour)
	companies := srv.NewSearchToken(time.Hour, "companies")
	multi := func(tok, body string) (int, map[string]any) {
		status, _, m := hostReq{path: "/multi-search", token: tok, body: body}.do(t, srv)
		return status, m
	}
	status, m := multi(tok, `{"queries":[{"indexUid":"agents","q":"jo","limit":2},{"indexUid":"companies","q":"sum","page":1,"hitsPerPage":3,"facets":["states"]}]}`)
	if status != 200 {
		t.Fatalf("%d %v", status, m)
	}
	rs := m["results"].([]any)
	r0, r1 := rs[0].(map[string]any), rs[1].(map[string]any)
	if len(rs) != 2 || r0["indexUid"] != "agents" || len(hits(r0)) != 2 || r1["indexUid"] != "companies" || len(hits(r1)) != 3 ||
		r1["totalHits"] == nil || r1["facetDistribution"] == nil {
		t.Fatalf("%v", m)
	}
	// The same hits as the single-index route.
	single := search(t, srv, tok, "agents", `{"q":"jo","limit":2}`)
	if fmt.Sprint(hits(single)) != fmt.Sprint(hits(r0)) {
		t.Fatalf("multi-search %v, search %v", hits(r0), hits(single))
	}
	for _, tc := range []struct {
		name, tok, body string
		status          int
		code, message   string
	}{
		{"out of the token's scope", companies, `{"queries":[{"indexUid":"companies","q":"sum"},{"indexUid":"agents","q":"jo"}]}`, 403, "invalid_api_key",
			"Inside `.queries[1]`: The provided search token is not scoped to index `agents`."},
		{"no token", "", `{"queries":[]}`, 401, "missing_authorization_header", ""},
		{"unknown token", "lgs_nope", `{"queries":[]}`, 401, "invalid_api_key", ""},
		{"missing indexUid", tok, `{"queries":[{"q":"jo"}]}`, 400, "missing_index_uid", "Missing field `indexUid` inside `.queries[0]`"},
		{"missing queries", tok, `{}`, 400, "bad_request", "Missing field `queries`"},
		{"unknown index", tok, `{"queries":[{"indexUid":"loans"}]}`, 403, "invalid_api_key", ""},
		{"bad filter", tok, `{"queries":[{"indexUid":"agents"},{"indexUid":"agents","filter":"states === "}]}`, 400, "invalid_search_filter",
			"Inside `.queries[1]`: Was expecting a value but instead got nothing.\n9:9 states === "},
		{"unknown member", tok, `{"queries":[{"indexUid":"agents","foo":1}]}`, 400, "bad_request", ""},
		{"federation", tok, `{"federation":{},"queries":[{"indexUid":"agents"}]}`, 400, "bad_request", ""},
		{"federationOptions", tok, `{"queries":[{"indexUid":"agents","federationOptions":{"weight":2}}]}`, 400, "invalid_multi_search_federation_options", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, m := multi(tc.tok, tc.body)
			if status != tc.status || m["code"] != tc.code || tc.message != "" && m["message"] != tc.message {
				t.Fatalf("%d %v", status, m)
			}
		})
	}
	// An expired token: 403 for the whole request.
	srv.Advance(2 * time.Hour)
	if status, m := multi(tok, `{"queries":[{"indexUid":"agents"}]}`); status != 403 || m["code"] != "invalid_api_key" {
		t.Fatalf("expired: %d %v", status, m)
	}
}

func TestHostCORS(t *testing.T) {
	srv := NewServer(t, WithDefaultRows(100))
	tok := srv.NewSearchToken(time.Hour)
	for _, path := range []string{"/indexes/agents/search", "/multi-search"} {
		status, h, _ := hostReq{method: "OPTIONS", path: path, header: map[string]string{
			"Origin": "http://localhost:3000", "Access-Control-Request-Method": "POST",
			"Access-Control-Request-Headers": "authorization,content-type,x-meilisearch-client"}}.do(t, srv)
		if status != 200 || h.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") ||
			h.Get("Access-Control-Allow-Headers") != "authorization,content-type,x-meilisearch-client" || h.Get("Access-Control-Max-Age") != "86400" {
			t.Fatalf("preflight %s: %d %v", path, status, h)
		}
	}
	// The answers themselves, errors included, are readable from any origin.
	origin := map[string]string{"Origin": "http://localhost:3000"}
	if status, h, _ := (hostReq{path: "/indexes/agents/search", token: tok, body: `{}`, header: origin}).do(t, srv); status != 200 || h.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("search: %d %v", status, h)
	}
	if status, h, _ := (hostReq{path: "/indexes/agents/search", body: `{}`, header: origin}).do(t, srv); status != 401 || h.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("401: %d %v", status, h)
	}
	if _, h, _ := (hostReq{path: "/indexes/agents/search", token: tok, body: `{}`}).do(t, srv); h.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("no Origin, yet %v", h)
	}
	// OPTIONS that is not a preflight goes to the routes: not found.
	if status, _, m := (hostReq{method: "OPTIONS", path: "/indexes/agents/search"}).do(t, srv); status != 404 || m["code"] != "not_found" {
		t.Fatalf("plain OPTIONS: %d %v", status, m)
	}
}

func TestHostScoreMath(t *testing.T) {
	// Rank::merge as Meilisearch: words 1 of 2, then typo 1 of 2 (no typo
	// out of one allowed).
	r := rank{1, 1}.merge(rank{1, 2}).merge(rank{2, 2})
	if got := float64(r.rank) / float64(r.max); math.Abs(got-0.5) > 1e-9 {
		t.Fatalf("score %v", got)
	}
	if got := rankingScore(hostMatch{words: 2, maxWords: 2, typos: 0, maxTypos: 1}); got != 1 {
		t.Fatalf("all words, no typo: %v", got)
	}
}
