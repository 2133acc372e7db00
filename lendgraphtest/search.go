package lendgraphtest

import (
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
)

// Instant search and the search host.
//
// GET /v1/search-token mints a token valid for the search-token lifetime
// (SetSearchTokenTTL, default 5 minutes, judged by the server clock) and
// scoped to the four indexes. The search host (SearchHostURL, its own
// listener, "search" in the request log) follows Meilisearch for every
// parameter it accepts and refuses the others with Meilisearch's error
// shape; SEARCH_HOST.md lists each choice. Its files: searchhost.go (routes,
// tokens, CORS, multi-search), searchquery.go (the search parameters),
// searchrun.go (ranking, filters, sort, facets, pagination, formatting),
// searchfilter.go (the filter language).
//
// Matching, on the route and the host alike: each query word must match a
// word of a searchable attribute (originators and agents: firstName and
// lastName; companies and offices: name), the last word of the query as a
// prefix; a word of 5 letters or more also matches with one typo (one
// letter inserted, deleted or changed).
//
// The route (POST /v1/instant-search) runs the same engine: its filter
// strings are host filters, where state and city also name the states and
// cities attributes. The route's entity types map to the indexes: offices
// are branches.

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
	person := func(resource string) *hostIndex {
		return &hostIndex{resource: resource, searchable: []string{"firstName", "lastName"},
			filterable: []string{"cities", "states"}, sortable: []string{"firstName", "lastName"}}
	}
	org := func(resource string) *hostIndex {
		return &hostIndex{resource: resource, searchable: []string{"name"},
			filterable: []string{"cities", "states"}, sortable: []string{"name"}}
	}
	st.searchIndexes = map[string]*hostIndex{
		"originators": person("originators"),
		"companies":   org("companies"),
		"agents":      person("agents"),
		"offices":     org("branches"),
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

// routeFilterAliases are the route's singular names of the host's
// filterable attributes.
var routeFilterAliases = map[string]string{"state": "states", "city": "cities"}

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
	filters := map[string]*filterExpr{}
	for e, f := range body.Filters {
		if !slices.Contains(entities, e) {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("filters: %q is not among the searched entity types", e), nil)
			return
		}
		ix := s.hostIndex(entityIndex[e])
		fe, ferr := parseFilterString(f)
		if ferr == nil {
			ferr = fe.check(ix.filterable, routeFilterAliases)
		}
		if ferr != nil {
			writeError(w, http.StatusBadRequest, "filters."+e+": "+ferr.msg, nil)
			return
		}
		filters[e] = fe
	}
	results := map[string]any{}
	for _, e := range searchIndexNames {
		out := []any{}
		if slices.Contains(entities, e) {
			ix := s.hostIndex(entityIndex[e])
			for _, m := range ix.match(parseQ(*body.Query), ix.searchable, strategyLast) {
				if len(out) == limit {
					break
				}
				if d := &ix.docs[m.i]; filters[e].matches(d.doc) {
					out = append(out, d.instant())
				}
			}
		}
		results[e] = out
	}
	writeJSON(w, http.StatusOK, map[string]any{"results": results})
}

// --- the index ---

type hostIndex struct {
	once       sync.Once
	resource   string
	searchable []string // in ranking order
	filterable []string // sorted
	sortable   []string // sorted
	docs       []hostDoc
	vocab      map[string]map[string][]int32 // searchable attribute → lower-case word → documents
}

type hostDoc struct {
	doc         map[string]any // as the host serves it
	city, state string
	multi       bool // states and cities are the record's own lists (originators)
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
		for _, a := range ix.searchable {
			v, _ := doc[a].(string)
			for _, w := range tokenize(v) {
				w := strings.ToLower(v[w.start:w.end])
				if p := ix.vocab[a][w]; len(p) == 0 || p[len(p)-1] != int32(i) {
					ix.vocab[a][w] = append(p, int32(i))
				}
			}
		}
		ix.docs[i] = hostDoc{doc: doc, city: city, state: state, multi: ix.resource == "originators"}
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

// --- matching ---

// span is a word of a text: its bytes [start, end).
type span struct{ start, end int }

// tokenize splits s into words: runs of letters and digits (Meilisearch's
// tokenizer also separates on punctuation).
func tokenize(s string) []span {
	var out []span
	start := -1
	for i, r := range s {
		alnum := unicode.IsLetter(r) || unicode.IsNumber(r)
		switch {
		case alnum && start < 0:
			start = i
		case !alnum && start >= 0:
			out = append(out, span{start, i})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, span{start, len(s)})
	}
	return out
}

// qterm is a term of a query: a word, or a phrase ("..."), possibly
// negated (-word, -"phrase").
type qterm struct {
	words    []string // lower case; more than one: a phrase
	prefix   bool     // the query's last word, not followed by a space
	negative bool
}

// maxQueryWords is how many words of a query Meilisearch considers.
const maxQueryWords = 10

// parseQ splits a query into terms: words, "phrases" and negated -words
// and -"phrases", the last positive word a prefix unless the query ends
// with a space, the first 10 words only.
func parseQ(q string) []qterm {
	var out []qterm
	n := 0
	rest := q
	for rest != "" && n < maxQueryWords {
		rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
		neg := false
		if strings.HasPrefix(rest, "-") && len(rest) > 1 && !unicode.IsSpace(rune(rest[1])) {
			neg, rest = true, rest[1:]
		}
		var chunk string
		phrase := false
		if strings.HasPrefix(rest, `"`) {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				chunk, rest = rest[1:], ""
			} else {
				chunk, rest = rest[1:1+end], rest[2+end:]
			}
			phrase = true
		} else {
			end := strings.IndexFunc(rest, unicode.IsSpace)
			if end < 0 {
				end = len(rest)
			}
			chunk, rest = rest[:end], rest[end:]
		}
		var words []string
		for _, w := range tokenize(chunk) {
			words = append(words, strings.ToLower(chunk[w.start:w.end]))
		}
		if len(words) == 0 {
			continue
		}
		if phrase || neg {
			out = append(out, qterm{words: words, negative: neg})
			n += len(words)
			continue
		}
		for _, w := range words { // "o'brien" is two words
			if n < maxQueryWords {
				out = append(out, qterm{words: []string{w}})
				n++
			}
		}
	}
	for i := len(out) - 1; i >= 0; i-- {
		if !out[i].negative {
			if len(out[i].words) == 1 && !strings.HasSuffix(q, " ") && !strings.HasSuffix(q, `"`) {
				out[i].prefix = true
			}
			break
		}
	}
	return out
}

// Matching strategies (matchingStrategy).
const (
	strategyLast      = "last"
	strategyAll       = "all"
	strategyFrequency = "frequency"
)

// hostMatch is a document matching a query: the words ranking rule (how
// many of the query's terms it matched) and the typo rule (typos among
// them, out of how many the matched terms allow).
type hostMatch struct {
	i               int
	words, maxWords int
	typos, maxTypos int
	score           float64 // the ranking score, set by run
}

// match returns the documents matching terms on attrs with the strategy,
// best first: more terms matched, then fewer typos, then dataset order. A
// query without positive terms (a placeholder search) matches every
// document.
func (ix *hostIndex) match(terms []qterm, attrs []string, strategy string) []hostMatch {
	n := len(ix.docs)
	var pos []qterm
	excluded := make([]bool, n)
	for _, t := range terms {
		if !t.negative {
			pos = append(pos, t)
			continue
		}
		for i, ok := range ix.termTypos(t, attrs) {
			if ok >= 0 {
				excluded[i] = true
			}
		}
	}
	if len(pos) == 0 {
		out := make([]hostMatch, 0, n)
		for i := range n {
			if !excluded[i] {
				out = append(out, hostMatch{i: i})
			}
		}
		return out
	}
	typos := make([][]int8, len(pos)) // per term, per document: typos, -1 no match
	freq := make([]int, len(pos))
	for k, t := range pos {
		typos[k] = ix.termTypos(t, attrs)
		for _, ty := range typos[k] {
			if ty >= 0 {
				freq[k]++
			}
		}
	}
	// The order in which terms are kept as the query is relaxed.
	order := make([]int, len(pos))
	for k := range order {
		order[k] = k
	}
	if strategy == strategyFrequency {
		slices.SortStableFunc(order, func(a, b int) int { return freq[a] - freq[b] })
	}
	var out []hostMatch
	for i := range n {
		if excluded[i] {
			continue
		}
		m := hostMatch{i: i, maxWords: len(pos)}
		for _, k := range order {
			if typos[k][i] < 0 {
				break
			}
			m.words++
			m.typos += int(typos[k][i])
			if len(pos[k].words) == 1 && len(pos[k].words[0]) >= minTypoLen {
				m.maxTypos++
			}
		}
		if m.words == 0 || (strategy == strategyAll && m.words < len(pos)) {
			continue
		}
		out = append(out, m)
	}
	slices.SortStableFunc(out, func(a, b hostMatch) int {
		if a.words != b.words {
			return b.words - a.words
		}
		return a.typos - b.typos
	})
	return out
}

// minTypoLen is the shortest query word matched with a typo.
const minTypoLen = 5

// termTypos returns, per document, the fewest typos with which t matches
// one of attrs (-1: no match). A phrase matches its words in a row,
// exactly; a negated term matches exactly.
func (ix *hostIndex) termTypos(t qterm, attrs []string) []int8 {
	cur := make([]int8, len(ix.docs))
	for i := range cur {
		cur[i] = -1
	}
	if len(t.words) > 1 {
		for _, a := range attrs {
			for _, i := range ix.vocab[a][t.words[0]] {
				if containsPhrase(ix.docs[i].doc[a], t.words) {
					cur[i] = 0
				}
			}
		}
		return cur
	}
	w0 := t.words[0]
	for _, a := range attrs {
		for w, post := range ix.vocab[a] {
			m := -1
			if t.negative {
				if w == w0 {
					m = 0
				}
			} else {
				m = matchWord(w0, w, t.prefix)
			}
			if m < 0 {
				continue
			}
			for _, i := range post {
				if cur[i] < 0 || int8(m) < cur[i] {
					cur[i] = int8(m)
				}
			}
		}
	}
	return cur
}

func containsPhrase(v any, words []string) bool {
	s, _ := v.(string)
	toks := tokenize(s)
	for i := 0; i+len(words) <= len(toks); i++ {
		ok := true
		for k, w := range words {
			if strings.ToLower(s[toks[i+k].start:toks[i+k].end]) != w {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// matchWord reports how the query word t matches the document word w: 0
// exactly (or, for the prefix word, as a prefix of w), 1 with one typo
// (t of 5 letters or more), -1 not at all.
func matchWord(t, w string, prefix bool) int {
	if t == w || prefix && strings.HasPrefix(w, t) {
		return 0
	}
	if len(t) < minTypoLen {
		return -1
	}
	if !prefix {
		if oneEdit(t, w) {
			return 1
		}
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
