package lendgraphtest

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Running a search on an index: match, filter, rank, sort, deduplicate,
// count, facet, page and format the hits, in Meilisearch's order.

// hostResult is the answer to one search.
type hostResult struct {
	IndexUID           string                     `json:"indexUid,omitempty"`
	Hits               []map[string]any           `json:"hits"`
	Query              string                     `json:"query"`
	ProcessingTimeMs   int                        `json:"processingTimeMs"`
	Limit              *int                       `json:"limit,omitempty"`
	Offset             *int                       `json:"offset,omitempty"`
	EstimatedTotalHits *int                       `json:"estimatedTotalHits,omitempty"`
	HitsPerPage        *int                       `json:"hitsPerPage,omitempty"`
	Page               *int                       `json:"page,omitempty"`
	TotalPages         *int                       `json:"totalPages,omitempty"`
	TotalHits          *int                       `json:"totalHits,omitempty"`
	FacetDistribution  *map[string]map[string]int `json:"facetDistribution,omitempty"`
	FacetStats         *map[string]hostFacetStats `json:"facetStats,omitempty"`
}

type hostFacetStats struct {
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

// rank is a ranking rule's rank, Meilisearch's score_details::Rank.
type rank struct{ rank, max int }

// merge nests inner under outer, as Rank::merge: the global score orders
// documents as the rules do, the first rule the most significant.
func (outer rank) merge(inner rank) rank {
	return rank{rank: (outer.rank-1)*inner.max + inner.rank, max: outer.max * inner.max}
}

// relevancy returns the words and typo ranks of m (none for a placeholder
// search).
func relevancy(m hostMatch) []rank {
	if m.maxWords == 0 {
		return nil
	}
	return []rank{{m.words, m.maxWords}, {m.maxTypos + 1 - m.typos, m.maxTypos + 1}}
}

// rankingScore is the global score of m's ranks, from 0 to 1.
func rankingScore(m hostMatch) float64 {
	r := rank{1, 1}
	for _, x := range relevancy(m) {
		r = r.merge(x)
	}
	return float64(r.rank) / float64(r.max)
}

func (ix *hostIndex) run(q *hostQuery) *hostResult {
	var kept []hostMatch
	for _, m := range ix.match(q.terms, q.searchOn, q.strategy) {
		if !q.filter.matches(ix.docs[m.i].doc) {
			continue
		}
		m.score = rankingScore(m)
		if q.threshold != nil && m.score < *q.threshold {
			continue
		}
		kept = append(kept, m)
	}
	if len(q.sort) > 0 {
		// Relevancy first (Meilisearch's default ranking rules put sort
		// after words and typo), then the sort attributes, then the
		// dataset order.
		slices.SortStableFunc(kept, func(a, b hostMatch) int {
			if a.words != b.words {
				return b.words - a.words
			}
			if a.typos != b.typos {
				return a.typos - b.typos
			}
			for _, r := range q.sort {
				if c := compareSort(ix.docs[a.i].doc[r.attr], ix.docs[b.i].doc[r.attr], r.desc); c != 0 {
					return c
				}
			}
			return 0
		})
	}
	if q.distinct != "" {
		seen := map[string]bool{}
		kept = slices.DeleteFunc(kept, func(m hostMatch) bool {
			var vals []string
			(&filterExpr{}).anyValue(ix.docs[m.i].doc[q.distinct], func(s string, n float64, isNum bool) bool {
				if isNum {
					s = strconv.FormatFloat(n, 'g', -1, 64)
				}
				vals = append(vals, s)
				return false
			})
			dup := slices.ContainsFunc(vals, func(v string) bool { return seen[v] })
			for _, v := range vals {
				seen[v] = true
			}
			return dup
		})
	}
	res := &hostResult{Query: q.q, Hits: []map[string]any{}}
	total := min(len(kept), maxTotalHits)
	var offset, limit int
	if q.page != nil || q.hitsPerPage != nil {
		hpp, page := 20, 1
		if q.hitsPerPage != nil {
			hpp = *q.hitsPerPage
		}
		if q.page != nil {
			page = *q.page
		}
		if page > 0 {
			offset, limit = hpp*(page-1), hpp
		}
		pages := 0
		if hpp > 0 {
			pages = (total + hpp - 1) / hpp
		}
		res.HitsPerPage, res.Page, res.TotalPages, res.TotalHits = &hpp, &page, &pages, &total
	} else {
		offset, limit = q.offset, q.limit
	}
	offset = min(offset, maxTotalHits)
	limit = min(limit, maxTotalHits-offset)
	if res.Page == nil {
		res.Limit, res.Offset, res.EstimatedTotalHits = &limit, &offset, &total
	}
	if q.facetsAsked {
		dist, stats := ix.facets(q.facets, kept)
		res.FacetDistribution, res.FacetStats = &dist, &stats
	}
	for _, m := range kept[min(offset, len(kept)):min(offset+limit, len(kept))] {
		res.Hits = append(res.Hits, ix.format(q, m))
	}
	return res
}

// sortValue is the value a document sorts by: a number or a normalized
// string; an array sorts by its lowest value ascending, its highest
// descending.
func sortValue(v any, desc bool) (num float64, str string, isNum, ok bool) {
	var vals []any
	switch v := v.(type) {
	case []string:
		for _, x := range v {
			vals = append(vals, x)
		}
	case []any:
		vals = v
	default:
		vals = []any{v}
	}
	for _, x := range vals {
		var n float64
		var s string
		var xn bool
		switch x := x.(type) {
		case string:
			s = normalizeFacet(x)
		case float64:
			n, xn = x, true
		case int:
			n, xn = float64(x), true
		default:
			continue
		}
		better := !ok
		if ok {
			c := compareValues(n, s, xn, num, str, isNum)
			better = (c < 0) != desc && c != 0
		}
		if better {
			num, str, isNum, ok = n, s, xn, true
		}
	}
	return num, str, isNum, ok
}

// compareValues orders numbers before strings, numbers numerically and
// strings in byte order.
func compareValues(an float64, as string, aNum bool, bn float64, bs string, bNum bool) int {
	switch {
	case aNum && bNum:
		switch {
		case an < bn:
			return -1
		case an > bn:
			return 1
		}
		return 0
	case aNum:
		return -1
	case bNum:
		return 1
	}
	return strings.Compare(as, bs)
}

// compareSort orders two documents' values of a sort attribute; documents
// without a value come last either way.
func compareSort(a, b any, desc bool) int {
	an, as, aNum, aok := sortValue(a, desc)
	bn, bs, bNum, bok := sortValue(b, desc)
	switch {
	case !aok && !bok:
		return 0
	case !aok:
		return 1
	case !bok:
		return -1
	}
	c := compareValues(an, as, aNum, bn, bs, bNum)
	if desc {
		return -c
	}
	return c
}

// facets counts the matches per value of each facet: at most 100 values a
// facet, in alphabetical order, each under the spelling first met; numeric
// values also give the facet's min and max.
func (ix *hostIndex) facets(attrs []string, kept []hostMatch) (map[string]map[string]int, map[string]hostFacetStats) {
	dist := map[string]map[string]int{}
	stats := map[string]hostFacetStats{}
	for _, a := range attrs {
		counts := map[string]int{}
		spelling := map[string]string{}
		var st *hostFacetStats
		for _, m := range kept {
			seen := map[string]bool{}
			each := func(x any) {
				key, shown := "", ""
				switch x := x.(type) {
				case string:
					key, shown = normalizeFacet(x), x
				case float64:
					key = strconv.FormatFloat(x, 'g', -1, 64)
					shown = key
					if st == nil {
						st = &hostFacetStats{Min: x, Max: x}
					}
					st.Min, st.Max = math.Min(st.Min, x), math.Max(st.Max, x)
				default:
					return
				}
				if seen[key] {
					return
				}
				seen[key] = true
				counts[key]++
				if _, ok := spelling[key]; !ok {
					spelling[key] = shown
				}
			}
			switch v := ix.docs[m.i].doc[a].(type) {
			case []string:
				for _, x := range v {
					each(x)
				}
			case []any:
				for _, x := range v {
					each(x)
				}
			default:
				each(v)
			}
		}
		keys := make([]string, 0, len(counts))
		for k := range counts {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := map[string]int{}
		for _, k := range keys[:min(len(keys), maxValuesPerFacet)] {
			out[spelling[k]] = counts[k]
		}
		dist[a] = out
		if st != nil {
			stats[a] = *st
		}
	}
	return dist, stats
}

// format builds the hit of m as q asks for it.
func (ix *hostIndex) format(q *hostQuery, m hostMatch) map[string]any {
	doc := ix.docs[m.i].doc
	all := q.retrieve == nil || slices.Contains(q.retrieve, "*")
	out := make(map[string]any, len(doc)+2)
	for k, v := range doc {
		if all || slices.Contains(q.retrieve, k) {
			out[k] = v
		}
	}
	if len(q.highlight) > 0 || len(q.crop) > 0 {
		f := map[string]any{}
		add := func(k string) {
			if v, ok := doc[k]; ok {
				f[k] = q.formatValue(k, v)
			}
		}
		for k := range out {
			add(k)
		}
		for _, k := range q.highlight {
			add(k)
		}
		for _, c := range q.crop {
			add(c.attr)
		}
		delete(f, "*")
		out["_formatted"] = f
	}
	if q.showMatchesPosition {
		pos := map[string]any{}
		for k, v := range doc {
			var list []map[string]any
			switch v := v.(type) {
			case string:
				for _, s := range q.matchSpans(v) {
					list = append(list, map[string]any{"start": s.start, "length": s.end - s.start})
				}
			case []string:
				for i, x := range v {
					for _, s := range q.matchSpans(x) {
						list = append(list, map[string]any{"start": s.start, "length": s.end - s.start, "indices": []int{i}})
					}
				}
			}
			if len(list) > 0 {
				pos[k] = list
			}
		}
		out["_matchesPosition"] = pos
	}
	if q.showRankingScore {
		out["_rankingScore"] = m.score
	}
	if q.showScoreDetails {
		details := map[string]any{}
		order := 0
		if r := relevancy(m); r != nil {
			details["words"] = map[string]any{"order": 0, "matchingWords": m.words, "maxMatchingWords": m.maxWords,
				"score": float64(r[0].rank) / float64(r[0].max)}
			details["typo"] = map[string]any{"order": 1, "typoCount": m.typos, "maxTypoCount": m.maxTypos,
				"score": float64(r[1].rank) / float64(r[1].max)}
			order = 2
		}
		for _, r := range q.sort {
			if v, ok := doc[r.attr]; ok {
				details[r.raw] = map[string]any{"order": order, "value": v}
			}
			order++
		}
		out["_rankingScoreDetails"] = details
	}
	return out
}

// formatValue is v as _formatted shows it: strings highlighted and cropped
// as asked, numbers as strings, arrays element by element.
func (q *hostQuery) formatValue(attr string, v any) any {
	hl := slices.Contains(q.highlight, "*") || slices.Contains(q.highlight, attr)
	crop := -1
	for _, c := range q.crop {
		if c.attr == attr || c.attr == "*" {
			crop = c.length
		}
	}
	switch v := v.(type) {
	case string:
		return q.formatString(v, hl, crop)
	case []string:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = q.formatString(x, hl, crop)
		}
		return out
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case int:
		return strconv.Itoa(v)
	}
	return v
}

// formatString crops s to n words around its first match (n < 0: no crop)
// and wraps its matches in the highlight tags.
func (q *hostQuery) formatString(s string, hl bool, n int) string {
	spans := q.matchSpans(s)
	lo, hi := 0, len(s)
	prefix, suffix := "", ""
	if words := tokenize(s); n >= 0 && len(words) > n {
		if n == 0 {
			return ""
		}
		first := 0
		if len(spans) > 0 {
			for i, w := range words {
				if w.end > spans[0].start {
					first = i
					break
				}
			}
		}
		start := max(0, min(first-(n-1)/2, len(words)-n))
		lo, hi = words[start].start, words[start+n-1].end
		if start > 0 {
			prefix = q.cropMarker
		}
		if start+n < len(words) {
			suffix = q.cropMarker
		}
	}
	var b strings.Builder
	b.WriteString(prefix)
	at := lo
	if hl {
		for _, sp := range spans {
			if sp.start < lo || sp.end > hi {
				continue
			}
			b.WriteString(s[at:sp.start])
			b.WriteString(q.preTag)
			b.WriteString(s[sp.start:sp.end])
			b.WriteString(q.postTag)
			at = sp.end
		}
	}
	b.WriteString(s[at:hi])
	b.WriteString(suffix)
	return b.String()
}

// matchSpans returns the parts of s the query's words match: the whole
// word, or for the prefix word the part it covers.
func (q *hostQuery) matchSpans(s string) []span {
	var out []span
	for _, tok := range tokenize(s) {
		w := strings.ToLower(s[tok.start:tok.end])
	terms:
		for _, t := range q.terms {
			if t.negative {
				continue
			}
			for _, tw := range t.words {
				var m int
				if len(t.words) > 1 {
					m = -1
					if tw == w {
						m = 0
					}
				} else {
					m = matchWord(tw, w, t.prefix)
				}
				if m < 0 {
					continue
				}
				end := tok.end
				if m == 0 && tw != w && len(w) == tok.end-tok.start {
					end = tok.start + len(tw)
				}
				out = append(out, span{tok.start, end})
				break terms
			}
		}
	}
	return out
}
