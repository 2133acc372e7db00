package lendgraphtest

import (
	"encoding/json"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"time"
)

func (s *Server) routeSavedFilters(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/saved-filters", s.authed(s.handleListFilters))
	mux.HandleFunc("POST /v1/saved-filters", s.authed(s.handleCreateFilter))
	mux.HandleFunc("PATCH /v1/saved-filters/{id}", s.authed(s.handleUpdateFilter))
	mux.HandleFunc("DELETE /v1/saved-filters/{id}", s.authed(s.handleDeleteFilter))
}

// savedFiltersState is the area's in-memory store (see areaState): each
// organization's saved filters in creation order.
type savedFiltersState struct {
	filters map[string][]*savedFilter
}

func (st *savedFiltersState) init() { st.filters = map[string][]*savedFilter{} }

type savedFilter struct {
	owner string
	rec   Record
}

// visibleTo: private filters are their creator's; others are the organization's.
func (f *savedFilter) visibleTo(userID string) bool {
	return f.owner == userID || f.rec["visibility"] != "private"
}

var savedFilterID = regexp.MustCompile(`^[\w-]{1,32}$`)

// filterTargets are the targets a saved filter may have.
var filterTargets = append(slices.Clone(Resources), "crm")

type issue struct {
	Message string `json:"message"`
	Path    []any  `json:"path"`
}

func writeIssues(w http.ResponseWriter, status int, code, msg string, issues []issue) {
	writeJSON(w, status, map[string]any{"code": code, "error": msg, "issues": issues})
}

// checkQuery validates a saved query as a list query of the target. It
// returns the refusals, the query members it does not map (kept), and the
// stale issues (filters on fields the target's records lack).
func (s *Server) checkQuery(target string, raw any) (issues []issue, unmapped []string, stale []issue) {
	obj, ok := raw.(map[string]any)
	if !ok {
		return []issue{{Message: "query must be an object", Path: []any{"query"}}}, nil, nil
	}
	unmapped = []string{}
	stale = []issue{}
	for k := range obj {
		switch k {
		case "flatFilters", "advancedFilters", "period", "sort", "pagination":
		default:
			unmapped = append(unmapped, k)
		}
	}
	slices.Sort(unmapped)
	b, _ := json.Marshal(obj)
	var q listQuery
	if err := json.Unmarshal(b, &q); err != nil {
		return []issue{{Message: "query is not a list query: " + err.Error(), Path: []any{"query"}}}, nil, nil
	}
	if q.AdvancedFilters != nil {
		if err := q.AdvancedFilters.validate(); err != nil {
			issues = append(issues, issue{Message: err.Error(), Path: []any{"query", "advancedFilters"}})
		}
	}
	if _, _, err := periodRange(q.Period, time.Now()); err != nil {
		issues = append(issues, issue{Message: err.Error(), Path: []any{"query", "period"}})
	}
	if q.Pagination != nil && (q.Pagination.Size < 0 || q.Pagination.Size > 100) {
		issues = append(issues, issue{Message: "page size must be at most 100", Path: []any{"query", "pagination", "size"}})
	}
	if knownResource(target) && s.data.Len(target) > 0 {
		sample := s.data.Summary(target, 0)
		for _, k := range slices.Sorted(maps.Keys(q.FlatFilters)) {
			if _, ok := sample[k]; !ok {
				stale = append(stale, issue{Message: "field " + k + " does not exist on " + target, Path: []any{"query", "flatFilters", k}})
			}
		}
	}
	return issues, unmapped, stale
}

// setQuery stores a validated query and what checkQuery found.
func setQuery(rec Record, query any, unmapped []string, stale []issue) {
	rec["query"] = query
	rec["unmapped"] = unmapped
	rec["stale"] = len(stale) > 0
	rec["staleIssues"] = stale
	rec["fidelity"] = "exact"
	if len(unmapped) > 0 {
		rec["fidelity"] = "partial"
	}
}

func (s *Server) handleListFilters(w http.ResponseWriter, r *http.Request, c Caller) {
	target, kind := r.URL.Query().Get("target"), r.URL.Query().Get("kind")
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []Record{}
	for _, f := range s.area.filters[c.OrgID] {
		if f.visibleTo(c.UserID) && (target == "" || f.rec["target"] == target) && (kind == "" || f.rec["kind"] == kind) {
			out = append(out, f.rec)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": out})
}

func (s *Server) handleCreateFilter(w http.ResponseWriter, r *http.Request, c Caller) {
	var body map[string]any
	if !readJSON(w, r, &body) {
		return
	}
	var issues []issue
	name, _ := body["name"].(string)
	if name == "" {
		issues = append(issues, issue{Message: "name is required", Path: []any{"name"}})
	}
	target, _ := body["target"].(string)
	if !slices.Contains(filterTargets, target) {
		issues = append(issues, issue{Message: "target must be one of the resources or crm", Path: []any{"target"}})
	}
	qi, unmapped, stale := s.checkQuery(target, body["query"])
	issues = append(issues, qi...)
	if len(issues) > 0 {
		writeIssues(w, http.StatusBadRequest, "invalid_saved_filter", "the saved filter is invalid", issues)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.nowLocked().UTC().Format(time.RFC3339Nano)
	rec := Record{"id": "sf_" + randHex(8), "name": name, "kind": orDefault(body["kind"], "filter"), "target": target,
		"operationId": orDefault(body["operationId"], "list"+target), "queryVersion": 1, "uiState": orDefault(body["uiState"], map[string]any{}),
		"uiStateVersion": 1, "visibility": orDefault(body["visibility"], "private"), "createdAt": now, "updatedAt": now}
	if icon, ok := body["icon"]; ok {
		rec["icon"] = icon
	}
	setQuery(rec, body["query"], unmapped, stale)
	s.area.filters[c.OrgID] = append(s.area.filters[c.OrgID], &savedFilter{owner: c.UserID, rec: rec})
	writeJSON(w, http.StatusOK, map[string]any{"data": rec})
}

func orDefault(v, def any) any {
	if v == nil || v == "" {
		return def
	}
	return v
}

// findFilterLocked checks the id and finds the caller's filter, writing the
// error response itself. Filters another user can see but does not own
// give 403; filters the caller cannot see give 404.
func (s *Server) findFilterLocked(w http.ResponseWriter, r *http.Request, c Caller) (int, bool) {
	id := r.PathValue("id")
	if !savedFilterID.MatchString(id) {
		writeIssues(w, http.StatusBadRequest, "invalid_id", "invalid saved filter id", []issue{{Message: "id must be 1 to 32 word characters or hyphens", Path: []any{"id"}}})
		return 0, false
	}
	for i, f := range s.area.filters[c.OrgID] {
		if f.rec["id"] != id || !f.visibleTo(c.UserID) {
			continue
		}
		if f.owner != c.UserID {
			writeError(w, http.StatusForbidden, "only the creator may change this saved filter", nil)
			return 0, false
		}
		return i, true
	}
	writeError(w, http.StatusNotFound, "saved filter not found", nil)
	return 0, false
}

func (s *Server) handleUpdateFilter(w http.ResponseWriter, r *http.Request, c Caller) {
	var body map[string]any
	if !readJSON(w, r, &body) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.findFilterLocked(w, r, c)
	if !ok {
		return
	}
	rec := s.area.filters[c.OrgID][i].rec
	if t, ok := body["target"]; ok && t != rec["target"] {
		writeIssues(w, http.StatusBadRequest, "target_immutable", "the target of a saved filter cannot change", []issue{{Message: "target cannot change", Path: []any{"target"}}})
		return
	}
	if q, ok := body["query"]; ok {
		issues, unmapped, stale := s.checkQuery(rec["target"].(string), q)
		if len(issues) > 0 {
			writeIssues(w, http.StatusBadRequest, "invalid_saved_filter", "the saved filter is invalid", issues)
			return
		}
		setQuery(rec, q, unmapped, stale)
		rec["queryVersion"] = rec["queryVersion"].(int) + 1
	}
	if u, ok := body["uiState"]; ok {
		rec["uiState"] = u
		rec["uiStateVersion"] = rec["uiStateVersion"].(int) + 1
	}
	if n, ok := body["name"].(string); ok && n != "" {
		rec["name"] = n
	}
	if icon, ok := body["icon"]; ok {
		rec["icon"] = icon
	}
	rec["updatedAt"] = s.nowLocked().UTC().Format(time.RFC3339Nano)
	writeJSON(w, http.StatusOK, map[string]any{"data": rec})
}

func (s *Server) handleDeleteFilter(w http.ResponseWriter, r *http.Request, c Caller) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.findFilterLocked(w, r, c)
	if !ok {
		return
	}
	s.area.filters[c.OrgID] = slices.Delete(s.area.filters[c.OrgID], i, i+1)
	writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"deleted": true}})
}
