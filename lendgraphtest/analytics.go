package lendgraphtest

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// The analytics of the resources: counts, the title-company breakdown,
// company branches, the property chart, related records, and the summary,
// time-series and chart of agents, originators, loans, sales and market.
func (s *Server) routeAnalytics(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/originators/count", s.authed(s.handleOriginatorCount))
	mux.HandleFunc("POST /v1/lenders/count", s.authed(s.countOf("companies")))
	mux.HandleFunc("POST /v1/properties/count", s.authed(s.countOf("properties")))
	mux.HandleFunc("POST /v1/originators/{nmlsId}/breakdowns/title-companies", s.authed(s.handleTitleCompanies))
	mux.HandleFunc("POST /v1/companies/{nmlsId}/branches", s.authed(s.handleBranches))
	mux.HandleFunc("POST /v1/properties/analytics/chart", s.authed(s.handlePropertyChart))
	// Every more specific GET pattern of three segments after /v1 (job
	// status routes) wins over this one, so it cannot conflict with them.
	mux.HandleFunc("GET /v1/{resource}/{id}/{sub}", s.authed(s.handleSubresource))
	for _, kind := range []string{"summary", "time-series", "chart"} {
		mux.HandleFunc("POST /v1/{resource}/analytics/"+kind, s.authed(s.handleAnalytics(kind)))
	}
}

// analyticsResources offer /analytics/summary, /time-series and /chart.
var analyticsResources = []string{"agents", "originators", "loans", "sales", "market"}

// normalizeLocations rewrites the city filter values to the dictionary's
// spelling (by id, name or alias, ignoring case) and reports each.
func (s *Server) normalizeLocations(q *listQuery) []map[string]any {
	norms := []map[string]any{}
	v, ok := q.FlatFilters["city"]
	if !ok {
		return norms
	}
	vals, isList := v.([]any)
	if !isList {
		vals = []any{v}
	}
	out := make([]any, 0, len(vals))
	for _, x := range vals {
		str, _ := x.(string)
		found := s.lookupCity(str)
		if len(found) == 0 {
			out = append(out, x)
			continue
		}
		p := found[0]
		cands := []string{}
		for _, f := range found {
			cands = append(cands, f.ID)
		}
		conf := "normalized"
		if str == p.Name {
			conf = "exact"
		}
		norms = append(norms, map[string]any{"candidates": cands, "confidence": conf, "displayName": p.Name + ", " + p.State,
			"field": "city", "id": p.ID, "normalized": p.Name, "original": str, "variants": append([]string{p.Name}, p.Aliases...)})
		out = append(out, p.Name)
	}
	if q.FlatFilters != nil {
		ff := map[string]any{}
		for k, v := range q.FlatFilters {
			ff[k] = v
		}
		if isList {
			ff["city"] = out
		} else {
			ff["city"] = out[0]
		}
		q.FlatFilters = ff
	}
	return norms
}

// normalizeLenders reports how company NMLS id filter values were matched.
func (s *Server) normalizeLenders(q listQuery, total int) []map[string]any {
	norms := []map[string]any{}
	v, ok := q.FlatFilters["companyNmlsId"]
	if !ok {
		return norms
	}
	vals, isList := v.([]any)
	if !isList {
		vals = []any{v}
	}
	for _, x := range vals {
		str, _ := x.(string)
		if i, ok := s.data.Index("companies", str); ok {
			norms = append(norms, map[string]any{"aliasCount": 1, "displayName": s.data.companyName(i), "id": str,
				"matchedVia": "id", "original": str, "totalDocuments": total})
		}
	}
	return norms
}

func (s *Server) handleOriginatorCount(w http.ResponseWriter, r *http.Request, _ Caller) {
	var q listQuery
	if !readJSON(w, r, &q) {
		return
	}
	q.Pagination, q.Sort = nil, nil
	locs := s.normalizeLocations(&q)
	sel, err := s.selectRecords("originators", q, nil)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), nil)
		return
	}
	prev := sel.Len()
	if y, err := strconv.Atoi(q.Period); err == nil && len(q.Period) == 4 {
		pq := q
		pq.Period = strconv.Itoa(y - 1)
		if ps, err := s.selectRecords("originators", pq, nil); err == nil {
			prev = ps.Len()
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"total": sel.Len(), "previousTotal": prev, "totalIsLowerBound": false,
		"lenderNormalizations": s.normalizeLenders(q, sel.Len()), "locationNormalizations": locs})
}

// countOf answers an exact count of a resource for a list body.
func (s *Server) countOf(resource string) func(http.ResponseWriter, *http.Request, Caller) {
	return func(w http.ResponseWriter, r *http.Request, _ Caller) {
		var q listQuery
		if !readJSON(w, r, &q) {
			return
		}
		q.Pagination, q.Sort = nil, nil
		s.normalizeLocations(&q)
		sel, err := s.selectRecords(resource, q, nil)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error(), nil)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"total": sel.Len()})
	}
}

// titleFiller are the legal-form and filler words dropped when normalizing.
var titleFiller = map[string]bool{"inc": true, "llc": true, "co": true, "company": true, "title": true, "escrow": true}

// normalizeTitle returns the id a title-company spelling is grouped under,
// or excluded for placeholders (none available and its misspellings,
// unknown, n/a) and names shorter than 3 characters.
func normalizeTitle(name string) (id string, excluded bool) {
	name = strings.TrimSpace(name)
	if len([]rune(name)) < 3 {
		return "", true
	}
	words := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < '0' || r > '9')
	})
	joined := strings.Join(words, " ")
	if joined == "unknown" || joined == "n a" || joined == "na" || joined == "none" || editDistance(joined, "none available") <= 3 {
		return "", true
	}
	keep := words[:0:0]
	for _, w := range words {
		if titleFiller[w] {
			continue
		}
		if w == "natl" {
			w = "national"
		}
		keep = append(keep, w)
	}
	if len(keep) == 0 {
		return "", true
	}
	return strings.Join(keep, " "), false
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev = cur
	}
	return prev[len(b)]
}

type titleRow struct {
	id        string
	units     int64
	volume    float64
	spellings map[string]int
}

func (t *titleRow) label() string {
	best, n := "", -1
	for sp, c := range t.spellings {
		if c > n || (c == n && sp < best) {
			best, n = sp, c
		}
	}
	return best
}

func pct(part, whole float64) float64 {
	if whole == 0 {
		return 0
	}
	return round(100*part/whole, 2)
}

func (s *Server) handleTitleCompanies(w http.ResponseWriter, r *http.Request, _ Caller) {
	id := r.PathValue("nmlsId")
	if _, ok := s.data.Index("originators", id); !ok {
		writeError(w, http.StatusNotFound, "originator not found", nil)
		return
	}
	var q listQuery
	if !readJSON(w, r, &q) {
		return
	}
	// Population: the originator's loans in the recording-date window.
	sel, err := s.selectRecords("loans", listQuery{Period: q.Period}, map[string]any{"originatorNmlsId": id})
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), nil)
		return
	}
	groups := map[string]*titleRow{}
	var units, excluded int64
	var volume float64
	for k := range sel.Len() {
		l := s.data.Summary("loans", sel.At(k))
		amt := l["mortgageAmount"].(float64)
		units++
		volume += amt
		name, _ := l["titleCompany"].(string)
		gid, ex := normalizeTitle(name)
		if ex {
			excluded++
			continue
		}
		g, ok := groups[gid]
		if !ok {
			g = &titleRow{id: gid, spellings: map[string]int{}}
			groups[gid] = g
		}
		g.units++
		g.volume += amt
		g.spellings[strings.TrimSpace(name)]++
	}
	rows := make([]*titleRow, 0, len(groups))
	for _, g := range groups {
		rows = append(rows, g)
	}
	slices.SortFunc(rows, func(a, b *titleRow) int {
		return cmp.Or(cmp.Compare(b.units, a.units), cmp.Compare(b.volume, a.volume), cmp.Compare(a.id, b.id))
	})
	size, cursor := q.page()
	start, end, next, ok := pageOf(w, selection{n: len(rows)}, queryKey("title-companies/"+id, listQuery{Period: q.Period}, nil), size, cursor)
	if !ok {
		return
	}
	data := []map[string]any{}
	for _, g := range rows[start:end] {
		lbl := g.label()
		data = append(data, map[string]any{"id": g.id, "label": lbl, "name": lbl, "units": g.units, "volume": round(g.volume, 2),
			"pctUnits": pct(float64(g.units), float64(units)), "pctVolume": pct(g.volume, volume), "excluded": false})
	}
	body := map[string]any{"data": data, "total": len(rows), "truncated": false,
		"totals": map[string]any{"excluded": excluded, "units": units, "volume": round(volume, 2), "volumePlausible": true}}
	if next != "" {
		body["cursor"] = next
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) handleBranches(w http.ResponseWriter, r *http.Request, _ Caller) {
	id := r.PathValue("nmlsId")
	if _, ok := s.data.Index("companies", id); !ok {
		writeError(w, http.StatusNotFound, "company not found", nil)
		return
	}
	var q listQuery
	if !readJSON(w, r, &q) {
		return
	}
	locs := s.normalizeLocations(&q)
	extra := map[string]any{"companyNmlsId": id}
	sel, err := s.selectRecords("branches", q, extra)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), nil)
		return
	}
	size, cursor := q.page()
	start, end, next, ok := pageOf(w, sel, queryKey("branches", q, extra), size, cursor)
	if !ok {
		return
	}
	data := make([]Record, 0, end-start)
	for k := start; k < end; k++ {
		data = append(data, s.data.Record("branches", sel.At(k)))
	}
	body := map[string]any{"data": data, "total": sel.Len(), "locationNormalizations": locs}
	if next != "" {
		body["cursor"] = next
	}
	writeJSON(w, http.StatusOK, body)
}

// page returns the requested page size and cursor.
func (q listQuery) page() (size int, cursor string) {
	if q.Pagination != nil {
		return q.Pagination.Size, q.Pagination.Cursor
	}
	return 0, ""
}

// chartQuery is a chart body: list filters plus slice, measure, segment.
type chartQuery struct {
	listQuery
	Slice   string `json:"slice"`
	Measure string `json:"measure"`
	Segment string `json:"segment"`
}

type chartBucket struct {
	id           string
	count        int64
	value        float64
	unattributed bool
	segs         map[string]*chartBucket
}

// chart groups the selection by the slice field (and the segment field).
func (s *Server) chart(resource string, q chartQuery, sel selection) ([]*chartBucket, float64, error) {
	members := []string{q.Slice}
	if q.Segment != "" {
		members = append(members, q.Segment)
	}
	if !chartCounts(q) {
		members = append(members, q.Measure)
	}
	return chartRows(resource, q, sel, s.data.rowsOf(resource, members))
}

// chartCounts reports whether a chart counts records (no measure field).
func chartCounts(q chartQuery) bool { return q.Measure == "" || q.Measure == "count" }

// chartRows is chart reading the records' members from rows.
func chartRows(resource string, q chartQuery, sel selection, rows *rowReader) ([]*chartBucket, float64, error) {
	buckets := map[string]*chartBucket{}
	var total float64
	counted := chartCounts(q)
	sliceText := rows.texter(q.Slice, sliceKey)
	var segmentText func() string
	if q.Segment != "" {
		segmentText = rows.texter(q.Segment, segmentKey)
	}
	for k := range sel.Len() {
		rows.at(sel.At(k))
		val := 1.0
		if !counted {
			f, ok := toFloat(rows.get(q.Measure))
			if !ok {
				return nil, 0, fmt.Errorf("measure %q is not a numeric field of %s", q.Measure, resource)
			}
			val = f
		}
		key := sliceText()
		b, ok := buckets[key]
		if !ok {
			b = &chartBucket{id: key, unattributed: key == "", segs: map[string]*chartBucket{}}
			buckets[key] = b
		}
		b.count++
		b.value += val
		total += val
		if q.Segment != "" {
			sk := segmentText()
			sb, ok := b.segs[sk]
			if !ok {
				sb = &chartBucket{id: sk}
				b.segs[sk] = sb
			}
			sb.count++
			sb.value += val
		}
	}
	list := make([]*chartBucket, 0, len(buckets))
	for _, b := range buckets {
		list = append(list, b)
	}
	byValue := func(a, b *chartBucket) int { return cmp.Or(cmp.Compare(b.value, a.value), cmp.Compare(a.id, b.id)) }
	slices.SortFunc(list, byValue)
	return list, total, nil
}

// sliceKey is a chart bucket's id for a value of the slice field: ""
// (unattributed) for a record without it or with an empty one.
func sliceKey(v any, ok bool) string {
	if !ok || v == "" {
		return ""
	}
	return fmt.Sprint(v)
}

// segmentKey is a segment's id for a value of the segment field.
func segmentKey(v any, _ bool) string { return fmt.Sprint(v) }

// maxSegments is how many segments a chart row lists.
const maxSegments = 3

func (s *Server) handlePropertyChart(w http.ResponseWriter, r *http.Request, _ Caller) {
	var q chartQuery
	if !readJSON(w, r, &q) {
		return
	}
	if q.Slice == "" {
		writeError(w, http.StatusBadRequest, "slice is required", nil)
		return
	}
	s.serveChart(w, "properties", q)
}

func (s *Server) serveChart(w http.ResponseWriter, resource string, q chartQuery) {
	lq := q.listQuery
	lq.Pagination, lq.Sort = nil, nil
	for _, f := range []struct{ at, name string }{{"slice", q.Slice}, {"segment", q.Segment}} {
		if _, ok := s.data.schema(resource)[f.name]; f.name != "" && !ok {
			writeError(w, http.StatusBadRequest, s.data.unknownField(f.at, f.name, resource).Error(), nil)
			return
		}
	}
	sel, err := s.selectRecords(resource, lq, nil)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), nil)
		return
	}
	list, total, err := s.chart(resource, q, sel)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), nil)
		return
	}
	size, cursor := q.page()
	start, end, next, ok := pageOf(w, selection{n: len(list)}, queryKey("chart/"+resource, lq, map[string]any{"s": q.Slice, "m": q.Measure, "g": q.Segment}), size, cursor)
	if !ok {
		return
	}
	data := []map[string]any{}
	for _, b := range list[start:end] {
		row := map[string]any{"id": b.id, "label": b.id, "count": b.count, "excluded": 0, "value": round(b.value, 2), "unattributed": b.unattributed}
		if b.unattributed {
			row["id"], row["label"] = "unattributed", "Unattributed"
		}
		if q.Segment != "" {
			segs := make([]*chartBucket, 0, len(b.segs))
			for _, sb := range b.segs {
				segs = append(segs, sb)
			}
			slices.SortFunc(segs, func(a, b *chartBucket) int { return cmp.Or(cmp.Compare(b.value, a.value), cmp.Compare(a.id, b.id)) })
			out := []map[string]any{}
			for _, sb := range segs[:min(len(segs), maxSegments)] {
				out = append(out, map[string]any{"id": sb.id, "label": sb.id, "count": sb.count, "value": round(sb.value, 2)})
			}
			row["segments"] = out
			row["segmentsOmittedCount"] = max(0, len(segs)-maxSegments)
		}
		data = append(data, row)
	}
	measure := q.Measure
	if measure == "" {
		measure = "count"
	}
	body := map[string]any{"completeness": map[string]any{"through": epoch.Format("2006-01-02")}, "data": data,
		"measure": measure, "segment": q.Segment, "slice": q.Slice, "omittedCount": 0, "total": round(total, 2), "totalApproximate": false}
	if next != "" {
		body["nextCursor"] = next
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) handleSubresource(w http.ResponseWriter, r *http.Request, c Caller) {
	if r.PathValue("resource") != "properties" || r.PathValue("sub") != "related" {
		writeError(w, http.StatusNotFound, "no route for "+r.Method+" "+r.URL.Path, nil)
		return
	}
	s.handleRelated(w, r, c)
}

func (s *Server) handleRelated(w http.ResponseWriter, r *http.Request, _ Caller) {
	id := r.PathValue("id")
	to := r.URL.Query().Get("to")
	if !slices.Contains([]string{"companies", "loans", "originators", "sales"}, to) {
		writeError(w, http.StatusBadRequest, "to is required: companies, loans, originators or sales", nil)
		return
	}
	limit := 25
	if l := r.URL.Query().Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 200 {
			writeError(w, http.StatusBadRequest, "limit must be an integer from 1 to 200", nil)
			return
		}
		limit = n
	}
	idx, ok := s.data.Index("properties", id)
	if !ok {
		writeError(w, http.StatusNotFound, "property not found", nil)
		return
	}
	// Loans and sales point at property i % properties.
	nProps := s.data.Len("properties")
	linked := func(res string) []int {
		var out []int
		for j := idx; j < s.data.Len(res); j += nProps {
			out = append(out, j)
		}
		return out
	}
	ids := []string{}
	quality := "primary"
	switch to {
	case "loans", "sales":
		for _, j := range linked(to) {
			ids = append(ids, s.data.ID(to, j))
		}
	case "companies", "originators":
		// Every role a company holds on a loan counts: here, lender.
		field := map[string]string{"companies": "lenderNmlsId", "originators": "originatorNmlsId"}[to]
		if to == "originators" {
			quality = "secondary"
		}
		for _, j := range linked("loans") {
			v := s.data.Summary("loans", j)[field].(string)
			if !slices.Contains(ids, v) {
				ids = append(ids, v)
			}
		}
	}
	data := []map[string]any{}
	for _, x := range ids[:min(len(ids), limit)] {
		data = append(data, map[string]any{"id": x})
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": data, "from": id, "to": to, "total": len(ids), "linkQuality": quality})
}

// amountField is the money member summed by summaries, per resource.
var amountField = map[string]string{"agents": "volume", "originators": "volume", "loans": "mortgageAmount", "sales": "saleAmount", "market": "volume"}

func (s *Server) handleAnalytics(kind string) func(http.ResponseWriter, *http.Request, Caller) {
	return func(w http.ResponseWriter, r *http.Request, _ Caller) {
		res := r.PathValue("resource")
		if !slices.Contains(analyticsResources, res) {
			writeError(w, http.StatusNotFound, res+" offers no analytics", nil)
			return
		}
		var q chartQuery
		if !readJSON(w, r, &q) {
			return
		}
		if kind == "chart" {
			if q.Slice == "" {
				q.Slice = "state"
			}
			s.serveChart(w, res, q)
			return
		}
		lq := q.listQuery
		lq.Pagination, lq.Sort = nil, nil
		sel, err := s.selectRecords(res, lq, nil)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error(), nil)
			return
		}
		var total float64
		months := map[string]int64{}
		for k := range sel.Len() {
			rec := s.data.Summary(res, sel.At(k))
			f, _ := toFloat(rec[amountField[res]])
			total += f
			if d, ok := rec[dateField[res]].(string); ok && len(d) >= 7 {
				months[d[:7]]++
			}
		}
		if kind == "summary" {
			writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"count": sel.Len(), "volume": round(total, 2)}})
			return
		}
		series := []map[string]any{}
		for _, m := range slices.Sorted(maps.Keys(months)) {
			series = append(series, map[string]any{"period": m, "count": months[m]})
		}
		writeJSON(w, http.StatusOK, map[string]any{"data": series})
	}
}
