package lendgraphtest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// defaultPageSize is the page size when a list request sets none.
const defaultPageSize = 25

// listQuery is the common list request as the fake reads it.
type listQuery struct {
	FlatFilters     map[string]any `json:"flatFilters,omitempty"`
	AdvancedFilters *filterNode    `json:"advancedFilters,omitempty"`
	Period          string         `json:"period,omitempty"`
	Sort            []sortSpec     `json:"sort,omitempty"`
	Pagination      *struct {
		Size   int    `json:"size"`
		Cursor string `json:"cursor"`
	} `json:"pagination,omitempty"`
}

type sortSpec struct {
	Field string `json:"field"`
	Order string `json:"order"`
}

// filterNode is one node of an advancedFilters tree.
type filterNode struct {
	And   []*filterNode `json:"and,omitempty"`
	Or    []*filterNode `json:"or,omitempty"`
	Not   *filterNode   `json:"not,omitempty"`
	Field string        `json:"field,omitempty"`
	Op    string        `json:"op,omitempty"`
	Value any           `json:"value,omitempty"`
}

func (f *filterNode) validate() error {
	if f == nil {
		return fmt.Errorf("null filter node")
	}
	n := 0
	for _, set := range []bool{f.And != nil, f.Or != nil, f.Not != nil, f.Field != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("a filter node must have exactly one of and, or, not, field")
	}
	for _, c := range append(append([]*filterNode{}, f.And...), f.Or...) {
		if err := c.validate(); err != nil {
			return err
		}
	}
	if f.Not != nil {
		return f.Not.validate()
	}
	if f.Field != "" {
		switch f.Op {
		case "eq", "ne", "gt", "gte", "lt", "lte":
		case "in":
			if _, ok := f.Value.([]any); !ok {
				return fmt.Errorf("op in on %q needs an array value", f.Field)
			}
		default:
			return fmt.Errorf("unknown op %q on %q", f.Op, f.Field)
		}
	}
	return nil
}

func (f *filterNode) match(r Record) bool {
	switch {
	case f.And != nil:
		for _, c := range f.And {
			if !c.match(r) {
				return false
			}
		}
		return true
	case f.Or != nil:
		for _, c := range f.Or {
			if c.match(r) {
				return true
			}
		}
		return false
	case f.Not != nil:
		return !f.Not.match(r)
	}
	v, ok := r[f.Field]
	if !ok {
		// An absent field equals null, and nothing else.
		switch f.Op {
		case "eq":
			return f.Value == nil
		case "ne":
			return f.Value != nil
		case "in":
			return slices.Contains(f.Value.([]any), nil)
		}
		return false
	}
	switch f.Op {
	case "eq":
		return equal(v, f.Value)
	case "ne":
		return !equal(v, f.Value)
	case "in":
		for _, x := range f.Value.([]any) {
			if equal(v, x) {
				return true
			}
		}
		return false
	}
	c, ok := compare(v, f.Value)
	if !ok {
		return false
	}
	switch f.Op {
	case "gt":
		return c > 0
	case "gte":
		return c >= 0
	case "lt":
		return c < 0
	case "lte":
		return c <= 0
	}
	return false
}

// equal compares a record value with a filter value: numbers numerically,
// strings exactly, and a record array matches when any element does.
func equal(v, want any) bool {
	if arr, ok := v.([]any); ok {
		for _, e := range arr {
			if equal(e, want) {
				return true
			}
		}
		return false
	}
	c, ok := compare(v, want)
	return ok && c == 0
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// compare orders two values of the same kind; ok is false across kinds.
func compare(a, b any) (int, bool) {
	if fa, ok := toFloat(a); ok {
		fb, ok := toFloat(b)
		if !ok {
			return 0, false
		}
		switch {
		case fa < fb:
			return -1, true
		case fa > fb:
			return 1, true
		}
		return 0, true
	}
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		if !ok {
			return 0, false
		}
		return strings.Compare(x, y), true
	case bool:
		y, ok := b.(bool)
		if !ok {
			return 0, false
		}
		switch {
		case x == y:
			return 0, true
		case !x:
			return -1, true
		}
		return 1, true
	}
	return 0, false
}

// flatMatch applies flatFilters: equality, or any-of for a list value.
func flatMatch(r Record, ff map[string]any) bool {
	for k, want := range ff {
		v, ok := r[k]
		if !ok {
			// An absent field matches null (alone or in a list), only.
			if list, isList := want.([]any); want != nil && (!isList || !slices.Contains(list, nil)) {
				return false
			}
			continue
		}
		if list, isList := want.([]any); isList {
			hit := false
			for _, w := range list {
				if equal(v, w) {
					hit = true
					break
				}
			}
			if !hit {
				return false
			}
			continue
		}
		if !equal(v, want) {
			return false
		}
	}
	return true
}

// periodRange turns a period into an inclusive date range (YYYY-MM-DD).
func periodRange(p string, now time.Time) (from, to string, err error) {
	day := "2006-01-02"
	switch {
	case p == "" || p == "allTime":
		return "", "", nil
	case p == "yearToDate":
		return time.Date(now.Year(), 1, 1, 0, 0, 0, 0, time.UTC).Format(day), now.Format(day), nil
	case strings.HasPrefix(p, "last") && strings.HasSuffix(p, "Months"):
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(p, "last"), "Months"))
		if err != nil || n < 1 {
			return "", "", fmt.Errorf("unknown period %q", p)
		}
		return now.AddDate(0, -n, 0).Format(day), now.Format(day), nil
	case len(p) == 4:
		y, err := strconv.Atoi(p)
		if err != nil {
			return "", "", fmt.Errorf("unknown period %q", p)
		}
		return fmt.Sprintf("%04d-01-01", y), fmt.Sprintf("%04d-12-31", y), nil
	}
	return "", "", fmt.Errorf("unknown period %q", p)
}

// selection is the ordered set of record indexes a query matches.
type selection struct {
	idx []int // nil: every record 0..n-1 in order
	n   int
}

func (s selection) Len() int { return s.n }

func (s selection) At(k int) int {
	if s.idx == nil {
		return k
	}
	return s.idx[k]
}

// queryCache keeps recent selections so that paging through a sorted or
// filtered list evaluates the query once.
type queryCache struct {
	mu    sync.Mutex
	max   int
	order []string
	sels  map[string]selection
}

func newQueryCache(max int) *queryCache { return &queryCache{max: max, sels: map[string]selection{}} }

func (c *queryCache) get(k string) (selection, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.sels[k]
	return s, ok
}

func (c *queryCache) put(k string, s selection) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.sels[k]; !ok {
		c.order = append(c.order, k)
		if len(c.order) > c.max {
			delete(c.sels, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.sels[k] = s
}

// queryKey identifies a query's result set (everything but pagination).
func queryKey(resource string, q listQuery, extra map[string]any) string {
	q.Pagination = nil
	b, _ := json.Marshal(struct {
		R     string
		Q     listQuery
		Extra map[string]any
	}{resource, q, extra})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// selectRecords evaluates the query (filters, period, sort) plus extra
// equality filters (entitlement row filters) over the resource.
func (s *Server) selectRecords(resource string, q listQuery, extra map[string]any) (selection, error) {
	if err := s.data.checkQuery(resource, q); err != nil {
		return selection{}, err
	}
	from, to, err := periodRange(q.Period, s.Now())
	if err != nil {
		return selection{}, err
	}
	n := s.data.Len(resource)
	df := dateField[resource]
	if len(q.FlatFilters) == 0 && q.AdvancedFilters == nil && len(q.Sort) == 0 && len(extra) == 0 && (from == "" || df == "") {
		return selection{n: n}, nil
	}
	key := queryKey(resource, q, extra)
	if sel, ok := s.queries.get(key); ok {
		return sel, nil
	}
	idx, ok := s.data.lookup(resource, q, extra, df, from, to)
	if !ok {
		idx = s.data.scan(resource, q, extra, df, from, to)
	}
	if len(q.Sort) > 0 {
		s.data.sortRecords(resource, idx, q.Sort, s.data.index(resource))
	}
	sel := selection{idx: idx, n: len(idx)}
	s.queries.put(key, sel)
	return sel, nil
}

// scan is the filtering part of selectRecords done by generating every
// record of the resource and testing it: the answer record for record, for
// the queries the index cannot answer (see lookup).
func (d *Dataset) scan(resource string, q listQuery, extra map[string]any, df, from, to string) []int {
	return scanRecords(d.Len(resource), func(i int) Record { return d.Summary(resource, i) }, q, extra, df, from, to)
}

// scanRecords tests records 0..n-1, as rec returns them, against the
// filters of a query (see scan).
func scanRecords(n int, rec func(i int) Record, q listQuery, extra map[string]any, df, from, to string) []int {
	idx := []int{}
	for i := range n {
		r := rec(i)
		if !flatMatch(r, q.FlatFilters) || !flatMatch(r, extra) {
			continue
		}
		if q.AdvancedFilters != nil && !q.AdvancedFilters.match(r) {
			continue
		}
		if from != "" && df != "" {
			day, _ := r[df].(string)
			if day < from || day > to {
				continue
			}
		}
		idx = append(idx, i)
	}
	return idx
}

// sortRecords orders the records idx by the sort fields (stable: ties keep
// their order), reading the values from cols (the index), or from the
// generated records for a field cols does not hold.
func (d *Dataset) sortRecords(resource string, idx []int, by []sortSpec, cols map[string]*column) {
	get := make([]func(k int) any, len(by))
	var keep []Record
	for n, sp := range by {
		if c, ok := cols[sp.Field]; ok {
			get[n] = func(k int) any { v, _ := c.value(idx[k]); return v }
			continue
		}
		if keep == nil {
			keep = make([]Record, len(idx))
			for k, i := range idx {
				keep[k] = d.Summary(resource, i)
			}
		}
		get[n] = func(k int) any { return keep[k][sp.Field] }
	}
	order := make([]int, len(idx))
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(a, b int) int {
		for n, sp := range by {
			c := sortCompare(get[n](a), get[n](b))
			if sp.Order == "desc" {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return 0
	})
	sorted := make([]int, len(idx))
	for k, o := range order {
		sorted[k] = idx[o]
	}
	copy(idx, sorted)
}

// sortCompare orders values for sorting; missing values sort first.
func sortCompare(a, b any) int {
	if a == nil || b == nil {
		switch {
		case a == nil && b == nil:
			return 0
		case a == nil:
			return -1
		}
		return 1
	}
	c, ok := compare(a, b)
	if !ok {
		return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
	}
	return c
}

// cursor encodes where the next page starts and which query it belongs to.
func encodeCursor(key string, offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte(key + ":" + strconv.Itoa(offset)))
}

func decodeCursor(c, key string) (int, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, fmt.Errorf("malformed cursor")
	}
	k, off, ok := strings.Cut(string(b), ":")
	if !ok || k != key {
		return 0, fmt.Errorf("cursor does not belong to this query")
	}
	n, err := strconv.Atoi(off)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("malformed cursor")
	}
	return n, nil
}

// pageOf validates a page request and returns the window [start, end) of
// the selection plus the next cursor. It writes the error response itself.
func pageOf(w http.ResponseWriter, sel selection, key string, size int, cursor string) (start, end int, next string, ok bool) {
	if size == 0 {
		size = defaultPageSize
	}
	if size < 0 || size > 100 {
		writeError(w, http.StatusBadRequest, "page size exceeds limit", map[string]any{"limit": 100, "size": size})
		return 0, 0, "", false
	}
	if cursor != "" {
		var err error
		if start, err = decodeCursor(cursor, key); err != nil {
			writeError(w, http.StatusBadRequest, err.Error(), nil)
			return 0, 0, "", false
		}
	}
	end = min(start+size, sel.Len())
	start = min(start, end)
	if end < sel.Len() {
		next = encodeCursor(key, end)
	}
	return start, end, next, true
}

func (s *Server) routeResources(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/{resource}", s.authed(s.handleList))
	mux.HandleFunc("GET /v1/{resource}/{id}", s.authed(s.handleDetail))
}

func knownResource(r string) bool { return slices.Contains(Resources, r) }

func (s *Server) handleList(w http.ResponseWriter, r *http.Request, _ Caller) {
	res := r.PathValue("resource")
	if !knownResource(res) {
		writeError(w, http.StatusNotFound, "unknown resource "+res, nil)
		return
	}
	var q listQuery
	if !readJSON(w, r, &q) {
		return
	}
	sel, err := s.selectRecords(res, q, nil)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), nil)
		return
	}
	size, cursor := 0, ""
	if q.Pagination != nil {
		size, cursor = q.Pagination.Size, q.Pagination.Cursor
	}
	start, end, next, ok := pageOf(w, sel, queryKey(res, q, nil), size, cursor)
	if !ok {
		return
	}
	data := make([]Record, 0, end-start)
	for k := start; k < end; k++ {
		data = append(data, s.data.Summary(res, sel.At(k)))
	}
	body := map[string]any{"data": data, "total": sel.Len()}
	if next != "" {
		body["cursor"] = next
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) handleDetail(w http.ResponseWriter, r *http.Request, _ Caller) {
	res := r.PathValue("resource")
	if !knownResource(res) {
		writeError(w, http.StatusNotFound, "unknown resource "+res, nil)
		return
	}
	i, ok := s.data.Index(res, r.PathValue("id"))
	if !ok {
		writeError(w, http.StatusNotFound, res+" record not found", nil)
		return
	}
	writeJSON(w, http.StatusOK, s.data.Record(res, i))
}
