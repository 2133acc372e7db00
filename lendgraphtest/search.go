package lendgraphtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Instant search and the search host.
//
// GET /v1/search-token mints a token valid for the search-token lifetime
// (SetSearchTokenTTL, default 5 minutes, judged by the server clock) and
// scoped to the four indexes. The search host (SearchHostURL, its own
// listener, "search" in the request log) is Meilisearch-compatible for
// POST /indexes/{index}/search: it accepts only such tokens (401 when the
// Authorization header is missing, the token unknown or revoked, or an API
// key is sent; 403 when the token expired or does not cover the index) and
// refuses unknown or mistyped body members like Meilisearch does.
//
// Matching, on the route and the host alike: each query word must match a
// word of a searchable attribute (originators and agents: firstName and
// lastName; companies and offices: name) by prefix, or with one typo (one
// letter inserted, deleted or changed) when the query word has 5 letters or
// more. Hits without a typo rank first, then in dataset order.
//
// Filters: the host takes `states = "TX"`, `cities = "Austin"` and clauses
// of them joined with AND (quotes optional). The route's filter strings use
// the same syntax with the singular names too: "state = TX AND city = Austin".
//
// The route's entity types map to the indexes: offices are branches.

// searchState is the area's in-memory store (see areaState).
type searchState struct {
	searchTTL      time.Duration
	searchGrants   map[string]searchGrant // by token
	searchMints    int
	searchDisabled bool
	searchHostAddr string // advertised host override; "" for the search listener
	searchHost     *httptest.Server
	searchIndexes  map[string]*hostIndex
}

type searchGrant struct {
	expires time.Time
	indexes []string
}

func (st *searchState) init() {
	st.searchTTL = 5 * time.Minute
	st.searchGrants = map[string]searchGrant{}
	st.searchIndexes = map[string]*hostIndex{
		"originators": {resource: "originators", searchable: []string{"firstName", "lastName"}},
		"companies":   {resource: "companies", searchable: []string{"name"}},
		"agents":      {resource: "agents", searchable: []string{"firstName", "lastName"}},
		"offices":     {resource: "branches", searchable: []string{"name"}},
	}
}

// searchIndexNames are the indexes of the search host, in the route's order.
var searchIndexNames = []string{"originators", "companies", "agents", "offices"}

// SetSearchTokenTTL sets the lifetime of the search tokens minted from now on.
func (s *Server) SetSearchTokenTTL(d time.Duration) {
	s.mu.Lock()
	s.area.searchTTL = d
	s.mu.Unlock()
}

// SearchTokenMints counts the tokens GET /v1/search-token has minted.
func (s *Server) SearchTokenMints() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.area.searchMints
}

// SetSearchConfigured switches the search backend off (false: instant search
// and the search token answer 503 "search backend not configured") or back on.
func (s *Server) SetSearchConfigured(ok bool) {
	s.mu.Lock()
	s.area.searchDisabled = !ok
	s.mu.Unlock()
}

// SearchHostURL is the address of the fake search host.
func (s *Server) SearchHostURL() string { return s.area.searchHost.URL }

// SetSearchTokenHost makes token responses name host instead of the fake
// search host (a proxy in front of it, say); "" restores the default.
func (s *Server) SetSearchTokenHost(host string) {
	s.mu.Lock()
	s.area.searchHostAddr = host
	s.mu.Unlock()
}

// RevokeSearchTokens makes every token minted so far unknown to the host (401).
func (s *Server) RevokeSearchTokens() {
	s.mu.Lock()
	clear(s.area.searchGrants)
	s.mu.Unlock()
}

// NewSearchToken mints a token for the given indexes (all four when none)
// valid for ttl, without going through the API (not counted by
// SearchTokenMints).
func (s *Server) NewSearchToken(ttl time.Duration, indexes ...string) string {
	if len(indexes) == 0 {
		indexes = searchIndexNames
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.grantLocked(ttl, indexes)
}

func (s *Server) grantLocked(ttl time.Duration, indexes []string) string {
	now := s.nowLocked()
	if len(s.area.searchGrants) > 10_000 {
		maps.DeleteFunc(s.area.searchGrants, func(_ string, g searchGrant) bool { return now.After(g.expires) })
	}
	tok := "lgs_" + randHex(24)
	s.area.searchGrants[tok] = searchGrant{expires: now.Add(ttl), indexes: slices.Clone(indexes)}
	return tok
}

func (s *Server) routeSearch(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/search-token", s.authed(s.serveSearchToken))
	mux.HandleFunc("POST /v1/instant-search", s.authed(s.serveInstantSearch))
}

// startSearchHost starts the search host listener.
func (s *Server) startSearchHost() {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /indexes/{index}/search", s.serveHostSearch)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "available"})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		meiliError(w, http.StatusNotFound, "not_found", "invalid_request", "Route not found: "+r.Method+" "+r.URL.Path)
	})
	s.area.searchHost = httptest.NewServer(s.wrap("search", mux))
	s.extra = append(s.extra, s.area.searchHost)
}

func (s *Server) serveSearchToken(w http.ResponseWriter, r *http.Request, _ Caller) {
	s.mu.Lock()
	if s.area.searchDisabled {
		s.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, "search backend not configured", nil)
		return
	}
	tok := s.grantLocked(s.area.searchTTL, searchIndexNames)
	s.area.searchMints++
	g := s.area.searchGrants[tok]
	host := s.area.searchHostAddr
	s.mu.Unlock()
	if host == "" {
		host = s.SearchHostURL()
	}
	writeJSON(w, http.StatusOK, map[string]any{"token": tok, "host": host, "indexes": g.indexes,
		"expiresAt": g.expires.UTC().Format(time.RFC3339Nano)})
}

// --- the instant-search route ---

var entityIndex = map[string]string{"originators": "originators", "companies": "companies", "agents": "agents", "offices": "offices"}

func (s *Server) serveInstantSearch(w http.ResponseWriter, r *http.Request, _ Caller) {
	var body struct {
		Query    *string           `json:"query"`
		Entities []string          `json:"entities"`
		Limit    *int              `json:"limit"`
		Filters  map[string]string `json:"filters"`
	}
	if !readJSON(w, r, &body) {
		return
	}
	s.mu.Lock()
	disabled := s.area.searchDisabled
	s.mu.Unlock()
	if disabled {
		writeError(w, http.StatusServiceUnavailable, "search backend not configured", nil)
		return
	}
	if body.Query == nil || *body.Query == "" {
		writeError(w, http.StatusBadRequest, "query is required (at least 1 character)", nil)
		return
	}
	limit := 5
	if body.Limit != nil {
		limit = *body.Limit
	}
	if limit < 1 || limit > 50 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("limit must be between 1 and 50, got %d", limit), nil)
		return
	}
	entities := body.Entities
	if len(entities) == 0 {
		entities = searchIndexNames
	}
	for _, e := range entities {
		if _, ok := entityIndex[e]; !ok {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("unknown entity type %q: expected originators, companies, agents or offices", e), nil)
			return
		}
	}
	filters := map[string][]filterClause{}
	for e, f := range body.Filters {
		if !slices.Contains(entities, e) {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("filters: %q is not among the searched entity types", e), nil)
			return
		}
		cl, err := parseFilter(f, true)
		if err != nil {
			writeError(w, http.StatusBadRequest, "filters."+e+": "+err.Error(), nil)
			return
		}
		filters[e] = cl
	}
	results := map[string]any{}
	for _, e := range searchIndexNames {
		out := []any{}
		if slices.Contains(entities, e) {
			ix := s.hostIndex(entityIndex[e])
			for _, m := range ix.search(*body.Query, ix.searchable, filters[e], limit) {
				out = append(out, ix.docs[m.i].instant())
			}
		}
		results[e] = out
	}
	writeJSON(w, http.StatusOK, map[string]any{"results": results})
}

// --- the search host ---

// meiliError writes an error body in Meilisearch's format.
func meiliError(w http.ResponseWriter, status int, code, typ, msg string) {
	writeJSON(w, status, map[string]string{"message": msg, "code": code, "type": typ,
		"link": "https://docs.meilisearch.com/errors#" + code})
}

func (s *Server) isAPIKey(tok string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.callers[tok]
	return ok
}

// hostAuth checks the search token for index, answering 401 or 403 itself.
func (s *Server) hostAuth(w http.ResponseWriter, r *http.Request, index string) bool {
	auth := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || tok == "" {
		meiliError(w, http.StatusUnauthorized, "missing_authorization_header", "auth",
			"The Authorization header is missing. It must use the bearer authorization method.")
		return false
	}
	if s.isAPIKey(tok) || r.Header.Get("x-api-key") != "" {
		meiliError(w, http.StatusUnauthorized, "invalid_api_key", "auth",
			"The search host takes search tokens from GET /v1/search-token, never the API key.")
		return false
	}
	s.mu.Lock()
	g, known := s.area.searchGrants[tok]
	now := s.nowLocked()
	s.mu.Unlock()
	switch {
	case !known:
		meiliError(w, http.StatusUnauthorized, "invalid_api_key", "auth", "The provided API key is invalid.")
		return false
	case !now.Before(g.expires):
		meiliError(w, http.StatusForbidden, "invalid_api_key", "auth", "The provided search token has expired; mint a new one.")
		return false
	case !slices.Contains(g.indexes, index):
		meiliError(w, http.StatusForbidden, "invalid_api_key", "auth", "The provided search token is not scoped to index `"+index+"`.")
		return false
	}
	return true
}

// hostParams are the standard search parameters Meilisearch knows; others
// are refused with bad_request, as Meilisearch does.
var hostParams = []string{"q", "vector", "offset", "limit", "page", "hitsPerPage", "attributesToRetrieve",
	"retrieveVectors", "attributesToCrop", "cropLength", "cropMarker", "attributesToHighlight", "highlightPreTag",
	"highlightPostTag", "showMatchesPosition", "showRankingScore", "showRankingScoreDetails", "showPerformanceDetails",
	"filter", "sort", "distinct", "facets", "matchingStrategy", "attributesToSearchOn", "hybrid",
	"rankingScoreThreshold", "locales", "media"}

type hostQuery struct {
	q                             string
	limit, offset                 int
	retrieve, searchOn, highlight []string
	filter                        []filterClause
}

func (s *Server) serveHostSearch(w http.ResponseWriter, r *http.Request) {
	index := r.PathValue("index")
	if !s.hostAuth(w, r, index) {
		return
	}
	if _, ok := s.area.searchIndexes[index]; !ok {
		meiliError(w, http.StatusNotFound, "index_not_found", "invalid_request", "Index `"+index+"` not found.")
		return
	}
	ix := s.hostIndex(index)
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		meiliError(w, http.StatusUnsupportedMediaType, "invalid_content_type", "invalid_request",
			"The Content-Type `"+r.Header.Get("Content-Type")+"` is invalid. Accepted values for the Content-Type header are: `application/json`")
		return
	}
	b, _ := io.ReadAll(r.Body)
	q, code, msg := ix.parseQuery(b)
	if code != "" {
		meiliError(w, http.StatusBadRequest, code, "invalid_request", msg)
		return
	}
	matches := ix.search(q.q, q.searchOn, q.filter, -1)
	hits := []any{}
	for _, m := range matches[min(q.offset, len(matches)):min(q.offset+q.limit, len(matches))] {
		hits = append(hits, ix.docs[m.i].hit(q))
	}
	writeJSON(w, http.StatusOK, map[string]any{"hits": hits, "query": q.q, "processingTimeMs": 0,
		"limit": q.limit, "offset": q.offset, "estimatedTotalHits": len(matches)})
}

// parseQuery checks a search body the way Meilisearch does: unknown members
// and wrong types are errors (code and message returned).
func (ix *hostIndex) parseQuery(b []byte) (q hostQuery, code, msg string) {
	q.limit = 20
	if len(bytes.TrimSpace(b)) == 0 {
		return q, "missing_payload", "A json payload is missing."
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&raw); err != nil || raw == nil {
		return q, "bad_request", "The json payload provided is malformed."
	}
	keys := slices.Sorted(maps.Keys(raw))
	for _, k := range keys {
		if !slices.Contains(hostParams, k) {
			return q, "bad_request", "Unknown field `" + k + "`: expected one of `" + strings.Join(hostParams, "`, `") + "`"
		}
	}
	isNull := func(k string) bool { v, ok := raw[k]; return !ok || string(bytes.TrimSpace(v)) == "null" }
	strList := func(k string) ([]string, bool) {
		if isNull(k) {
			return nil, true
		}
		var out []string
		return out, json.Unmarshal(raw[k], &out) == nil
	}
	if !isNull("q") && json.Unmarshal(raw["q"], &q.q) != nil {
		return q, "invalid_search_q", "Invalid value type at `.q`: expected a string, but found " + string(raw["q"])
	}
	for _, p := range []struct {
		key, code string
		dst       *int
	}{{"limit", "invalid_search_limit", &q.limit}, {"offset", "invalid_search_offset", &q.offset}} {
		if isNull(p.key) {
			continue
		}
		var n int
		if json.Unmarshal(raw[p.key], &n) != nil || n < 0 {
			return q, p.code, "Invalid value type at `." + p.key + "`: expected a positive integer, but found " + string(raw[p.key])
		}
		*p.dst = n
	}
	var ok bool
	for _, p := range []struct {
		key, code string
		dst       *[]string
	}{{"attributesToRetrieve", "invalid_search_attributes_to_retrieve", &q.retrieve},
		{"attributesToSearchOn", "invalid_search_attributes_to_search_on", &q.searchOn},
		{"attributesToHighlight", "invalid_search_attributes_to_highlight", &q.highlight}} {
		if *p.dst, ok = strList(p.key); !ok {
			return q, p.code, "Invalid value type at `." + p.key + "`: expected an array of strings, but found " + string(raw[p.key])
		}
	}
	if q.searchOn == nil {
		q.searchOn = ix.searchable
	}
	for _, a := range q.searchOn {
		if !slices.Contains(ix.searchable, a) {
			return q, "invalid_search_attributes_to_search_on", "Attribute `" + a + "` is not searchable. Available searchable attributes are: `" + strings.Join(ix.searchable, ", ") + "`."
		}
	}
	if !isNull("hybrid") {
		return q, "invalid_search_hybrid_query", "No embedder is configured on this index: `hybrid` must be null or absent."
	}
	if !isNull("filter") {
		var f string
		var parts []string
		switch {
		case json.Unmarshal(raw["filter"], &f) == nil:
		case json.Unmarshal(raw["filter"], &parts) == nil:
			f = strings.Join(parts, " AND ")
		default:
			return q, "invalid_search_filter", "Invalid value type at `.filter`: expected a string or an array of strings, but found " + string(raw["filter"])
		}
		cl, err := parseFilter(f, false)
		if err != nil {
			return q, "invalid_search_filter", err.Error()
		}
		q.filter = cl
	}
	return q, "", ""
}

// --- the index ---

type hostIndex struct {
	once       sync.Once
	resource   string
	searchable []string
	docs       []hostDoc
	vocab      map[string]map[string][]int32 // searchable attribute → lower-case word → documents
}

type hostDoc struct {
	doc            map[string]any // as the host serves it
	states, cities []string
	city, state    string
	multi          bool // states and cities are the record's own lists (originators)
}

// hostIndex returns the named index, built on first use.
func (s *Server) hostIndex(name string) *hostIndex {
	ix := s.area.searchIndexes[name]
	ix.once.Do(func() { ix.build(s.data) })
	return ix
}

func (ix *hostIndex) build(d *Dataset) {
	n := d.Len(ix.resource)
	ix.docs = make([]hostDoc, n)
	ix.vocab = map[string]map[string][]int32{}
	for _, a := range ix.searchable {
		ix.vocab[a] = map[string][]int32{}
	}
	for i := range n {
		rec := d.Record(ix.resource, i)
		state, _ := rec["state"].(string)
		city, _ := rec["city"].(string)
		doc := map[string]any{"id": rec["id"], "states": []string{state}, "cities": []string{city}}
		switch ix.resource {
		case "originators":
			doc["states"], doc["cities"] = anyStrings(rec["states"]), anyStrings(rec["cities"])
			for _, k := range []string{"firstName", "lastName", "companyName"} {
				doc[k] = rec[k]
			}
		case "agents":
			for _, k := range []string{"firstName", "lastName", "brokerage"} {
				doc[k] = rec[k]
			}
		case "companies":
			doc["name"], doc["category"] = rec["name"], rec["category"]
		case "branches":
			doc["name"], doc["companyName"] = rec["name"], rec["companyName"]
		}
		hd := hostDoc{doc: doc, states: doc["states"].([]string),
			cities: doc["cities"].([]string), city: city, state: state, multi: ix.resource == "originators"}
		for _, a := range ix.searchable {
			v, _ := doc[a].(string)
			for _, w := range strings.Fields(strings.ToLower(v)) {
				if p := ix.vocab[a][w]; len(p) == 0 || p[len(p)-1] != int32(i) {
					ix.vocab[a][w] = append(p, int32(i))
				}
			}
		}
		ix.docs[i] = hd
	}
}

func anyStrings(v any) []string {
	xs, _ := v.([]any)
	out := make([]string, 0, len(xs))
	for _, x := range xs {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// instant is the doc as the instant-search route returns it: its main
// location in city and state (originators keep every state and city too).
func (d *hostDoc) instant() map[string]any {
	out := maps.Clone(d.doc)
	if !d.multi {
		delete(out, "states")
		delete(out, "cities")
	}
	out["city"], out["state"] = d.city, d.state
	return out
}

// hit is the doc as the host returns it for q.
func (d *hostDoc) hit(q hostQuery) map[string]any {
	out := make(map[string]any, len(d.doc))
	for k, v := range d.doc {
		if len(q.retrieve) == 0 || slices.Contains(q.retrieve, "*") || slices.Contains(q.retrieve, k) {
			out[k] = v
		}
	}
	if len(q.highlight) > 0 {
		terms := strings.Fields(strings.ToLower(q.q))
		f := make(map[string]any, len(out))
		for k, v := range out {
			s, isStr := v.(string)
			if isStr && (slices.Contains(q.highlight, "*") || slices.Contains(q.highlight, k)) {
				v = highlight(s, terms)
			}
			f[k] = v
		}
		out["_formatted"] = f
	}
	return out
}

// highlight wraps the prefix of each word that a query word matches in <em>.
func highlight(s string, terms []string) string {
	words := strings.Split(s, " ")
	for i, w := range words {
		lw := strings.ToLower(w)
		for _, t := range terms {
			if strings.HasPrefix(lw, t) {
				words[i] = "<em>" + w[:len(t)] + "</em>" + w[len(t):]
				break
			}
		}
	}
	return strings.Join(words, " ")
}

type hostMatch struct{ i, typos int }

// search returns the matches of q on attrs that pass filter, best first;
// limit < 0 returns them all. Names come from short lists, so each query
// word is matched against the vocabulary of an attribute, and the postings
// of the words it matches mark the documents.
func (ix *hostIndex) search(q string, attrs []string, filter []filterClause, limit int) []hostMatch {
	terms := strings.Fields(strings.ToLower(q))
	n := len(ix.docs)
	matched := make([]uint16, n) // query words a document matched
	typos := make([]uint16, n)
	cur := make([]int8, n) // this word's fewest typos per document, -1: none
	for _, t := range terms {
		for i := range cur {
			cur[i] = -1
		}
		for _, a := range attrs {
			for w, post := range ix.vocab[a] {
				m := int8(matchWord(t, w))
				if m < 0 {
					continue
				}
				for _, i := range post {
					if cur[i] < 0 || m < cur[i] {
						cur[i] = m
					}
				}
			}
		}
		for i, c := range cur {
			if c >= 0 {
				matched[i]++
				typos[i] += uint16(c)
			}
		}
	}
	var out []hostMatch
	for i := range n {
		if int(matched[i]) == len(terms) && ix.docs[i].passes(filter) {
			out = append(out, hostMatch{i, int(typos[i])})
		}
	}
	slices.SortStableFunc(out, func(a, b hostMatch) int { return a.typos - b.typos })
	if limit >= 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// matchWord is 0 when the query word t is a prefix of w, 1 when it is one
// typo away from a prefix of w (t of 5 letters or more), -1 otherwise.
func matchWord(t, w string) int {
	if strings.HasPrefix(w, t) {
		return 0
	}
	if len(t) < 5 {
		return -1
	}
	for _, n := range []int{len(t) - 1, len(t), len(t) + 1} {
		if n <= len(w) && oneEdit(t, w[:n]) {
			return 1
		}
	}
	return -1
}

// oneEdit reports whether a and b differ by at most one insertion,
// deletion or substitution.
func oneEdit(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	if len(b)-len(a) > 1 {
		return false
	}
	i := 0
	for i < len(a) && a[i] == b[i] {
		i++
	}
	if len(a) == len(b) {
		return i >= len(a)-1 || a[i+1:] == b[i+1:]
	}
	return a[i:] == b[i+1:]
}

// --- filters ---

type filterClause struct {
	attr  string // "states" or "cities"
	value string
}

var andSplit = regexp.MustCompile(`(?i)\s+AND\s+`)

// parseFilter parses `attr = value` clauses joined by AND. The host knows
// the filterable attributes states and cities; the route (singular) also
// takes state and city.
func parseFilter(f string, singular bool) ([]filterClause, error) {
	var out []filterClause
	for _, c := range andSplit.Split(strings.TrimSpace(f), -1) {
		attr, val, ok := strings.Cut(c, "=")
		attr, val = strings.TrimSpace(attr), strings.TrimSpace(val)
		if !ok || attr == "" || val == "" || strings.HasSuffix(attr, "!") {
			return nil, fmt.Errorf("unsupported filter clause %q: write `states = \"TX\"`, joined with AND", c)
		}
		if len(val) >= 2 && (val[0] == '"' || val[0] == '\'') && val[len(val)-1] == val[0] {
			val = val[1 : len(val)-1]
		}
		switch attr {
		case "states", "cities":
		case "state", "city":
			if !singular {
				return nil, fmt.Errorf("attribute `%s` is not filterable; available filterable attributes are: `cities, states`", attr)
			}
			attr = map[string]string{"state": "states", "city": "cities"}[attr]
		default:
			return nil, fmt.Errorf("attribute `%s` is not filterable; available filterable attributes are: `cities, states`", attr)
		}
		out = append(out, filterClause{attr: attr, value: val})
	}
	return out, nil
}

func (d *hostDoc) passes(filter []filterClause) bool {
	for _, c := range filter {
		vals := d.states
		if c.attr == "cities" {
			vals = d.cities
		}
		if !slices.ContainsFunc(vals, func(v string) bool { return strings.EqualFold(v, c.value) }) {
			return false
		}
	}
	return true
}
