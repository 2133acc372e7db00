package lendgraphtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"time"
)

// The search host's routes: search on one index (POST, and GET with the
// parameters in the query string), facet search, multi-search, and health, behind
// Meilisearch's CORS layer.

// startSearchHost starts the search host listener.
func (s *Server) startSearchHost() {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /indexes/{index}/search", s.serveHostSearch)
	mux.HandleFunc("GET /indexes/{index}/search", s.serveHostSearch)
	mux.HandleFunc("POST /multi-search", s.serveMultiSearch)
	mux.HandleFunc("POST /indexes/{index}/facet-search", s.serveFacetSearch)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "available"})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		meiliError(w, &hostError{status: http.StatusNotFound, code: "not_found", typ: "invalid_request",
			message: "Route not found: " + r.Method + " " + r.URL.Path})
	})
	s.area.searchHost = httptest.NewServer(s.wrap("search", meiliCORS(mux)))
	s.extra = append(s.extra, s.area.searchHost)
}

// corsMethods are the methods Meilisearch's CORS layer allows (actix-cors'
// allow_any_method).
const corsMethods = "GET, POST, PUT, DELETE, HEAD, OPTIONS, CONNECT, PATCH, TRACE"

// meiliCORS is Meilisearch's CORS layer (actix-cors with send_wildcard,
// allow_any_origin, allow_any_header, allow_any_method and a max age of a
// day): a preflight (OPTIONS with Access-Control-Request-Method) on any
// path is answered 200 with the allowed methods, the requested headers
// echoed back and Access-Control-Max-Age: 86400; any other request with an
// Origin gets Access-Control-Allow-Origin: *; every response varies on the
// CORS request headers.
func meiliCORS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Add("Vary", "Origin, Access-Control-Request-Method, Access-Control-Request-Headers")
		if m := r.Header.Get("Access-Control-Request-Method"); r.Method == http.MethodOptions && m != "" {
			if !slices.Contains(strings.Split(corsMethods, ", "), m) {
				http.Error(w, "Requested method is not allowed", http.StatusBadRequest)
				return
			}
			h.Set("Access-Control-Allow-Origin", "*")
			h.Set("Access-Control-Allow-Methods", corsMethods)
			if rh := r.Header.Values("Access-Control-Request-Headers"); len(rh) > 0 {
				h.Set("Access-Control-Allow-Headers", strings.Join(rh, ", "))
			}
			h.Set("Access-Control-Max-Age", "86400")
			h.Set("Content-Length", "0")
			w.WriteHeader(http.StatusOK)
			return
		}
		if r.Header.Get("Origin") != "" {
			h.Set("Access-Control-Allow-Origin", "*")
		}
		next.ServeHTTP(w, r)
	})
}

// meiliError writes an error body in Meilisearch's format.
func meiliError(w http.ResponseWriter, e *hostError) {
	writeJSON(w, e.status, map[string]string{"message": e.message, "code": e.code, "type": e.typ,
		"link": "https://docs.meilisearch.com/errors#" + e.code})
}

func (s *Server) isAPIKey(tok string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.callers[tok]
	return ok
}

// hostToken checks the request's search token and returns the indexes it
// covers: 401 when the Authorization header is missing, the token unknown
// or revoked, or an API key is sent; 403 when the token expired.
func (s *Server) hostToken(r *http.Request) ([]string, *hostError) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		return nil, &hostError{status: 401, code: "missing_authorization_header", typ: "auth",
			message: "The Authorization header is missing. It must use the bearer authorization method."}
	}
	if s.isAPIKey(tok) || r.Header.Get("x-api-key") != "" {
		return nil, &hostError{status: 401, code: "invalid_api_key", typ: "auth",
			message: "The search host takes search tokens from GET /v1/search-token, never the API key."}
	}
	s.mu.Lock()
	g, known := s.area.searchGrants[tok]
	now := s.nowLocked()
	s.mu.Unlock()
	switch {
	case !known:
		return nil, &hostError{status: 401, code: "invalid_api_key", typ: "auth", message: "The provided API key is invalid."}
	case !now.Before(g.expires):
		return nil, &hostError{status: 403, code: "invalid_api_key", typ: "auth", message: "The provided search token has expired; mint a new one."}
	}
	return g.indexes, nil
}

// indexAccess checks one index against the token's indexes and the
// host's: 403 out of the token's scope, 404 unknown.
func (s *Server) indexAccess(granted []string, index string) (*hostIndex, *hostError) {
	if !slices.Contains(granted, index) {
		return nil, &hostError{status: 403, code: "invalid_api_key", typ: "auth",
			message: "The provided search token is not scoped to index `" + index + "`."}
	}
	if _, ok := s.area.searchIndexes[index]; !ok {
		return nil, &hostError{status: 404, code: "index_not_found", typ: "invalid_request", message: "Index `" + index + "` not found."}
	}
	return s.hostIndex(index), nil
}

// readPayload reads a JSON body as Meilisearch does: 415 for another
// content type, 400 missing_payload when empty, malformed_payload when not
// JSON.
func readPayload(r *http.Request) ([]byte, *hostError) {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		return nil, &hostError{status: 415, code: "invalid_content_type", typ: "invalid_request",
			message: "The Content-Type `" + r.Header.Get("Content-Type") + "` is invalid. Accepted values for the Content-Type header are: `application/json`"}
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil {
		return nil, badRequest("bad_request", "reading the payload: "+err.Error())
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, badRequest("missing_payload", "A json payload is missing.")
	}
	return b, nil
}

func (s *Server) serveHostSearch(w http.ResponseWriter, r *http.Request) {
	index := r.PathValue("index")
	granted, herr := s.hostToken(r)
	var ix *hostIndex
	if herr == nil {
		ix, herr = s.indexAccess(granted, index)
	}
	var members []member
	if herr == nil {
		if r.Method == http.MethodGet {
			members, herr = queryParams(r.URL.Query())
		} else {
			var b []byte
			if b, herr = readPayload(r); herr == nil {
				var ok bool
				if members, ok = objectMembers(b); !ok {
					herr = badRequest("bad_request", "The json payload provided is malformed.")
				}
			}
		}
	}
	var q *hostQuery
	if herr == nil {
		q, herr = ix.parseHostQuery(members, "")
	}
	if herr != nil {
		meiliError(w, herr)
		return
	}
	writeJSON(w, http.StatusOK, ix.run(q))
}

// serveMultiSearch runs the queries of {queries: [{indexUid, ...}]} in
// order, each on an index the token covers; the first failing query fails
// the request, its message prefixed with its place ("Inside
// `.queries[1]`: ..."). Federated search is not implemented.
func (s *Server) serveMultiSearch(w http.ResponseWriter, r *http.Request) {
	results, herr := s.multiSearch(r)
	if herr != nil {
		meiliError(w, herr)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"results": results})
}

func (s *Server) multiSearch(r *http.Request) ([]*hostResult, *hostError) {
	granted, herr := s.hostToken(r)
	if herr != nil {
		return nil, herr
	}
	b, herr := readPayload(r)
	if herr != nil {
		return nil, herr
	}
	top, ok := objectMembers(b)
	if !ok {
		if b = bytes.TrimSpace(b); len(b) > 0 && b[0] != '{' && jsonKind(b) != "nothing" {
			return nil, badRequest("bad_request", fmt.Sprintf("Invalid value type: expected an object, but found %s: `%s`", jsonKind(b), compact(b)))
		}
		return nil, badRequest("bad_request", "The json payload provided is malformed.")
	}
	var queries []member
	found := false
	for _, m := range top {
		switch m.key {
		case "queries":
			found = true
			var raw []json.RawMessage
			if json.Unmarshal(m.val, &raw) != nil {
				return nil, typeError("bad_request", ".queries", "an array", m.val)
			}
			for _, q := range raw {
				queries = append(queries, member{val: q})
			}
		case "federation":
			if !isNull(m.val) {
				return nil, badRequest("bad_request", "The fake search host does not implement federated search: send the queries without `federation` and merge their results.")
			}
		default:
			return nil, badRequest("bad_request", "Unknown field `"+m.key+"`: expected one of `federation`, `queries`")
		}
	}
	if !found {
		return nil, badRequest("bad_request", "Missing field `queries`")
	}
	results := make([]*hostResult, 0, len(queries))
	for i, qm := range queries {
		at := fmt.Sprintf(".queries[%d]", i)
		inside := func(e *hostError) *hostError {
			e.message = "Inside `" + at + "`: " + e.message
			return e
		}
		members, ok := objectMembers(qm.val)
		if !ok {
			return nil, typeError("bad_request", at, "an object", qm.val)
		}
		var index string
		for _, m := range members {
			switch m.key {
			case "indexUid":
				if json.Unmarshal(m.val, &index) != nil || !validIndexUID(index) {
					return nil, badRequest("invalid_index_uid", fmt.Sprintf("Invalid value at `%s.indexUid`: `%s` is not a valid index uid. Index uid can be an integer or a string containing only alphanumeric characters, hyphens (-) and underscores (_), and can not be more than 512 bytes.", at, strings.Trim(compact(m.val), `"`)))
				}
			case "federationOptions":
				if !isNull(m.val) {
					return nil, inside(badRequest("invalid_multi_search_federation_options", fmt.Sprintf("Using `federationOptions` is not allowed in a non-federated search.\n - Hint: remove `federationOptions` from query #%d or add `federation` to the request.", i)))
				}
			}
		}
		if index == "" {
			return nil, badRequest("missing_index_uid", "Missing field `indexUid` inside `"+at+"`")
		}
		ix, herr := s.indexAccess(granted, index)
		if herr != nil {
			return nil, inside(herr)
		}
		q, herr := ix.parseHostQuery(members, at, "indexUid", "federationOptions")
		if herr != nil {
			if strings.HasPrefix(herr.message, "Unknown field") || strings.HasPrefix(herr.message, "Invalid value") {
				return nil, herr // deserr's own errors name their place
			}
			return nil, inside(herr)
		}
		res := ix.run(q)
		res.IndexUID = index
		results = append(results, res)
	}
	return results, nil
}

func validIndexUID(s string) bool {
	if s == "" || len(s) > 512 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// facetHit is one value of a facet search's answer.
type facetHit struct {
	Value string `json:"value"`
	Count int    `json:"count"`
}

// serveFacetSearch is POST /indexes/{index}/facet-search: the values of
// the filterable attribute facetName among the documents matching q and
// filter, each with its count, in alphabetical order, keeping those that
// start with facetQuery (case-insensitive; no typo tolerance). The other
// members are read as a search's; at most maxValuesPerFacet values are
// counted before facetQuery narrows them.
func (s *Server) serveFacetSearch(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	granted, herr := s.hostToken(r)
	var ix *hostIndex
	if herr == nil {
		ix, herr = s.indexAccess(granted, r.PathValue("index"))
	}
	var members []member
	if herr == nil {
		var b []byte
		if b, herr = readPayload(r); herr == nil {
			var ok bool
			if members, ok = objectMembers(b); !ok {
				herr = badRequest("bad_request", "The json payload provided is malformed.")
			}
		}
	}
	var name, query string
	var q *hostQuery
	if herr == nil {
		for _, m := range members {
			switch m.key {
			case "facetName":
				if json.Unmarshal(m.val, &name) != nil {
					herr = typeError("invalid_facet_search_facet_name", ".facetName", "a string", m.val)
				}
			case "facetQuery":
				if !isNull(m.val) && json.Unmarshal(m.val, &query) != nil {
					herr = typeError("invalid_facet_search_facet_query", ".facetQuery", "a string", m.val)
				}
			}
		}
	}
	switch {
	case herr != nil:
	case name == "":
		herr = badRequest("missing_facet_search_facet_name", "Missing field `facetName`")
	case !slices.Contains(ix.filterable, name):
		herr = badRequest("invalid_facet_search_facet_name", fmt.Sprintf("Attribute `%s` is not facet-searchable. Available facet-searchable attributes patterns are: `%s`.", name, strings.Join(ix.filterable, ", ")))
	default:
		q, herr = ix.parseHostQuery(members, "", "facetName", "facetQuery")
	}
	if herr != nil {
		meiliError(w, herr)
		return
	}
	q.limit, q.offset, q.page, q.hitsPerPage = 0, 0, nil, nil
	q.facets, q.facetsAsked = []string{name}, true
	dist := *ix.run(q).FacetDistribution
	hits := []facetHit{}
	for v, n := range dist[name] {
		if strings.HasPrefix(normalizeFacet(v), normalizeFacet(query)) {
			hits = append(hits, facetHit{Value: v, Count: n})
		}
	}
	slices.SortFunc(hits, func(a, b facetHit) int { return strings.Compare(normalizeFacet(a.Value), normalizeFacet(b.Value)) })
	var fq any
	if query != "" {
		fq = query
	}
	writeJSON(w, http.StatusOK, map[string]any{"facetHits": hits, "facetQuery": fq, "processingTimeMs": time.Since(start).Milliseconds()})
}
