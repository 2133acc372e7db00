package lendgraphtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// The search parameters of the search host, read as Meilisearch reads them
// (its deserr rules): unknown members and wrong types are refused with
// Meilisearch's codes and messages, the first in the body's order.

// hostError is an error answer in Meilisearch's shape.
type hostError struct {
	status             int
	code, typ, message string
}

func badRequest(code, msg string) *hostError {
	return &hostError{status: 400, code: code, typ: "invalid_request", message: msg}
}

// hostParams are the search parameters the host knows, in Meilisearch's
// order (its "expected one of" list).
var hostParams = []string{"q", "vector", "offset", "limit", "page", "hitsPerPage", "attributesToRetrieve",
	"retrieveVectors", "attributesToCrop", "cropLength", "cropMarker", "attributesToHighlight", "highlightPreTag",
	"highlightPostTag", "showMatchesPosition", "showRankingScore", "showRankingScoreDetails", "showPerformanceDetails",
	"filter", "sort", "distinct", "facets", "matchingStrategy", "attributesToSearchOn", "hybrid",
	"rankingScoreThreshold", "locales", "media"}

// maxTotalHits is Meilisearch's default pagination.maxTotalHits: no hit
// past it is returned, and the totals are capped at it.
const maxTotalHits = 1000

// maxValuesPerFacet is Meilisearch's default faceting.maxValuesPerFacet.
const maxValuesPerFacet = 100

type sortRule struct {
	attr string
	desc bool
	raw  string
}

type cropRule struct {
	attr   string
	length int
}

// hostQuery is a search request after validation.
type hostQuery struct {
	q                   string
	terms               []qterm
	offset, limit       int
	page, hitsPerPage   *int
	retrieve            []string // nil: every attribute
	crop                []cropRule
	cropLength          int
	cropMarker          string
	highlight           []string
	preTag, postTag     string
	showMatchesPosition bool
	showRankingScore    bool
	showScoreDetails    bool
	filter              *filterExpr
	sort                []sortRule
	distinct            string
	facets              []string // nil: none asked for
	facetsAsked         bool
	strategy            string
	searchOn            []string
	threshold           *float64
}

// member is one member of a JSON object, in the body's order.
type member struct {
	key string
	val json.RawMessage
}

// objectMembers reads a JSON object keeping its members' order.
func objectMembers(b []byte) ([]member, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var out []member
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		out = append(out, member{k, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); err == nil {
		return nil, false // trailing data
	}
	return out, true
}

// jsonKind describes a JSON value as deserr does.
func jsonKind(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '"':
		return "a string"
	case '[':
		return "an array"
	case '{':
		return "an object"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '-':
		if bytes.ContainsAny(v, ".eE") {
			return "a number"
		}
		return "a negative integer"
	}
	if bytes.ContainsAny(v, ".eE") {
		return "a number"
	}
	return "a positive integer"
}

func compact(v json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return string(v)
	}
	return b.String()
}

// typeError is deserr's "Invalid value type" error.
func typeError(code, at, want string, v json.RawMessage) *hostError {
	return badRequest(code, fmt.Sprintf("Invalid value type at `%s`: expected %s, but found %s: `%s`", at, want, jsonKind(v), compact(v)))
}

// paramCode is the error code of a parameter: invalid_search_<snake case>.
func paramCode(name string) string {
	if name == "hybrid" {
		return "invalid_search_hybrid_query"
	}
	var b strings.Builder
	b.WriteString("invalid_search_")
	for _, r := range name {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

// parseHostQuery validates a search body. at is the members' location in
// the request ("" for a search, ".queries[0]" in a multi-search); extra
// are members the caller reads itself (indexUid).
func (ix *hostIndex) parseHostQuery(members []member, at string, extra ...string) (*hostQuery, *hostError) {
	q := &hostQuery{limit: 20, cropLength: 10, cropMarker: "…", preTag: "<em>", postTag: "</em>", strategy: strategyLast}
	known := append(slices.Clone(extra), hostParams...)
	inside := ""
	if at != "" {
		inside = " inside `" + at + "`"
	}
	var sortRaw, facetsRaw, filterRaw, distinctRaw, searchOnRaw json.RawMessage
	var crop []string
	for _, m := range members {
		path := at + "." + m.key
		code := paramCode(m.key)
		if !slices.Contains(known, m.key) {
			return nil, badRequest("bad_request", fmt.Sprintf("Unknown field `%s`%s: expected one of `%s`", m.key, inside, strings.Join(known, "`, `")))
		}
		if slices.Contains(extra, m.key) {
			continue
		}
		null := isNull(m.val)
		str := func(dst *string) *hostError {
			if null {
				return nil
			}
			if json.Unmarshal(m.val, dst) != nil {
				return typeError(code, path, "a string", m.val)
			}
			return nil
		}
		unsigned := func(dst *int) *hostError {
			var n int
			if err := json.Unmarshal(m.val, &n); err != nil || n < 0 || bytes.ContainsAny(m.val, ".eE") {
				return typeError(code, path, "a positive integer", m.val)
			}
			*dst = n
			return nil
		}
		optUint := func(dst **int) *hostError {
			if null {
				return nil
			}
			var n int
			if err := unsigned(&n); err != nil {
				return err
			}
			*dst = &n
			return nil
		}
		boolean := func(dst *bool) *hostError {
			if json.Unmarshal(m.val, dst) != nil || null {
				return typeError(code, path, "a boolean", m.val)
			}
			return nil
		}
		strList := func(dst *[]string) *hostError {
			if null {
				return nil
			}
			var raw []json.RawMessage
			if json.Unmarshal(m.val, &raw) != nil {
				return typeError(code, path, "an array", m.val)
			}
			out := make([]string, 0, len(raw))
			for i, el := range raw {
				var s string
				if json.Unmarshal(el, &s) != nil || isNull(el) {
					return typeError(code, fmt.Sprintf("%s[%d]", path, i), "a string", el)
				}
				out = append(out, s)
			}
			*dst = out
			return nil
		}
		var err *hostError
		switch m.key {
		case "q":
			err = str(&q.q)
		case "offset":
			if !null {
				err = unsigned(&q.offset)
			}
		case "limit":
			if !null {
				err = unsigned(&q.limit)
			}
		case "page":
			err = optUint(&q.page)
		case "hitsPerPage":
			err = optUint(&q.hitsPerPage)
		case "attributesToRetrieve":
			err = strList(&q.retrieve)
		case "attributesToCrop":
			err = strList(&crop)
		case "cropLength":
			err = unsigned(&q.cropLength)
		case "cropMarker":
			err = str(&q.cropMarker)
		case "attributesToHighlight":
			err = strList(&q.highlight)
		case "highlightPreTag":
			err = str(&q.preTag)
		case "highlightPostTag":
			err = str(&q.postTag)
		case "showMatchesPosition":
			err = boolean(&q.showMatchesPosition)
		case "showRankingScore":
			err = boolean(&q.showRankingScore)
		case "showRankingScoreDetails":
			err = boolean(&q.showScoreDetails)
		case "showPerformanceDetails", "retrieveVectors":
			var on bool
			if err = boolean(&on); err == nil && on {
				err = badRequest(code, fmt.Sprintf("The fake search host does not implement `%s`: send false or leave it out.", m.key))
			}
		case "filter":
			filterRaw = m.val
		case "sort":
			if !null {
				var list []string
				if err = strList(&list); err == nil {
					sortRaw = m.val
				}
			}
		case "distinct":
			if err = str(new(string)); err == nil && !null {
				distinctRaw = m.val
			}
		case "facets":
			if err = strList(&q.facets); err == nil && !null {
				facetsRaw, q.facetsAsked = m.val, true
			}
		case "matchingStrategy":
			var s string
			if json.Unmarshal(m.val, &s) != nil || null {
				err = typeError(code, path, "a string", m.val)
			} else if s != strategyLast && s != strategyAll && s != strategyFrequency {
				err = badRequest(code, fmt.Sprintf("Unknown value `%s` at `%s`: expected one of `last`, `all`, `frequency`", s, path))
			} else {
				q.strategy = s
			}
		case "attributesToSearchOn":
			if err = strList(&q.searchOn); err == nil && !null {
				searchOnRaw = m.val
			}
		case "rankingScoreThreshold":
			if !null {
				var f float64
				if json.Unmarshal(m.val, &f) != nil {
					err = typeError(code, path, "a number", m.val)
				} else if f < 0 || f > 1 || math.IsNaN(f) {
					err = badRequest(code, fmt.Sprintf("Invalid value at `%s`: the value of `rankingScoreThreshold` is invalid, expected a float between `0.0` and `1.0`.", path))
				} else {
					q.threshold = &f
				}
			}
		case "locales":
			var list []string
			if err = strList(&list); err == nil {
				for i, l := range list {
					if !isLocale(l) {
						err = badRequest(code, fmt.Sprintf("Unknown value `%s` at `%s[%d]`: expected one of the ISO 639 codes Meilisearch supports, e.g. `eng`, `fra`, `deu`, `spa`", l, path, i))
						break
					}
				}
			}
		case "hybrid", "vector", "media":
			if !null {
				err = badRequest(code, fmt.Sprintf("The search host's indexes have no embedder: `%s` must be null or left out.", m.key))
			}
		}
		if err != nil {
			return nil, err
		}
	}
	q.terms = parseQ(q.q)
	// What Meilisearch checks once the body is read, in its order.
	if searchOnRaw != nil {
		for _, a := range q.searchOn {
			if a != "*" && !slices.Contains(ix.searchable, a) {
				return nil, badRequest("invalid_search_attributes_to_search_on", fmt.Sprintf("Attribute `%s` is not searchable. Available searchable attributes are: `%s`.", a, strings.Join(sortedCopy(ix.searchable), ", ")))
			}
		}
		if slices.Contains(q.searchOn, "*") {
			q.searchOn = nil
		}
	}
	if len(q.searchOn) == 0 {
		q.searchOn = ix.searchable
	}
	if filterRaw != nil {
		f, ferr := parseFilterValue(filterRaw)
		if ferr == nil {
			ferr = f.check(ix.filterable, nil)
		}
		if ferr != nil {
			return nil, badRequest(ferr.code, ferr.msg)
		}
		q.filter = f
	}
	if sortRaw != nil {
		var list []string
		_ = json.Unmarshal(sortRaw, &list)
		for _, s := range list {
			r, err := ix.sortRule(s)
			if err != nil {
				return nil, err
			}
			q.sort = append(q.sort, r)
		}
	}
	if distinctRaw != nil {
		_ = json.Unmarshal(distinctRaw, &q.distinct)
		if !slices.Contains(ix.filterable, q.distinct) {
			return nil, badRequest("invalid_search_distinct", fmt.Sprintf("Attribute `%s` is not filterable and thus, cannot be used as distinct attribute. Available filterable attributes patterns are: `%s`.", q.distinct, strings.Join(ix.filterable, ", ")))
		}
	}
	if facetsRaw != nil {
		var out []string
		for _, f := range q.facets {
			switch {
			case f == "*":
				out = append(out, ix.filterable...)
			case slices.Contains(ix.filterable, f):
				out = append(out, f)
			default:
				return nil, badRequest("invalid_search_facets", fmt.Sprintf("Invalid facet distribution: Pattern `%s` is not filterable. Available filterable attributes patterns are: `%s`.", f, strings.Join(ix.filterable, ", ")))
			}
		}
		slices.Sort(out)
		q.facets = slices.Compact(out)
	}
	for _, c := range crop {
		attr, n := c, q.cropLength
		if a, l, ok := strings.Cut(c, ":"); ok {
			if v, err := strconv.Atoi(l); err == nil && v >= 0 {
				attr, n = a, v
			}
		}
		q.crop = append(q.crop, cropRule{attr: attr, length: n})
	}
	return q, nil
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// sortRule reads "attribute:asc" or "attribute:desc".
func (ix *hostIndex) sortRule(s string) (sortRule, *hostError) {
	attr, desc := "", false
	switch {
	case strings.HasSuffix(s, ":asc"):
		attr = strings.TrimSuffix(s, ":asc")
	case strings.HasSuffix(s, ":desc"):
		attr, desc = strings.TrimSuffix(s, ":desc"), true
	default:
		return sortRule{}, badRequest("invalid_search_sort", fmt.Sprintf("Invalid syntax for the sort parameter: expected expression ending by `:asc` or `:desc`, found `%s`.", s))
	}
	switch {
	case attr == "_geo":
		return sortRule{}, badRequest("invalid_search_sort", "`_geo` is a reserved keyword and thus can't be used as a sort expression. Use the _geoPoint(latitude, longitude) built-in rule to sort on _geo field coordinates.")
	case attr == "_geoDistance":
		return sortRule{}, badRequest("invalid_search_sort", "`_geoDistance` is a reserved keyword and thus can't be used as a sort expression.")
	case strings.HasPrefix(attr, "_geoPoint("):
		return sortRule{}, badRequest("invalid_search_sort", "Attribute `_geo` is not sortable. Available sortable attributes are: `"+strings.Join(ix.sortable, ", ")+"`.")
	case !slices.Contains(ix.sortable, attr):
		return sortRule{}, badRequest("invalid_search_sort", fmt.Sprintf("Attribute `%s` is not sortable. Available sortable attributes are: `%s`.", attr, strings.Join(ix.sortable, ", ")))
	}
	return sortRule{attr: attr, desc: desc, raw: s}, nil
}

// isLocale accepts the ISO 639-1 and 639-3 codes of the languages
// Meilisearch's tokenizer knows.
func isLocale(s string) bool {
	return slices.Contains([]string{"epo", "eng", "rus", "cmn", "spa", "por", "ita", "ben", "fra", "deu", "ukr",
		"kat", "ara", "hin", "jpn", "heb", "yid", "pol", "amh", "jav", "kor", "nob", "dan", "swe", "fin", "tur",
		"nld", "hun", "ces", "ell", "bul", "bel", "mar", "kan", "ron", "slv", "hrv", "srp", "mkd", "lit", "lav",
		"est", "tam", "vie", "urd", "tha", "guj", "uzb", "pan", "aze", "ind", "tel", "pes", "mal", "ori", "mya",
		"nep", "sin", "khm", "tuk", "aka", "zul", "sna", "afr", "lat", "slk", "cat", "tgl", "hye", "zho",
		"en", "ru", "es", "pt", "it", "bn", "fr", "de", "uk", "ka", "ar", "hi", "ja", "he", "yi", "pl", "am",
		"jv", "ko", "nb", "da", "sv", "fi", "tr", "nl", "hu", "cs", "el", "bg", "be", "mr", "kn", "ro", "sl",
		"hr", "sr", "mk", "lt", "lv", "et", "ta", "vi", "ur", "th", "gu", "uz", "pa", "az", "id", "te", "fa",
		"ml", "or", "my", "ne", "si", "km", "tk", "ak", "zu", "sn", "af", "la", "sk", "ca", "tl", "hy", "zh"}, s)
}

// queryParams turns the query string of GET /indexes/{index}/search into
// the members of a search body, as Meilisearch reads them: lists are
// comma-separated, numbers and booleans parsed.
func queryParams(v url.Values) ([]member, *hostError) {
	lists := []string{"attributesToRetrieve", "attributesToCrop", "attributesToHighlight", "facets", "sort", "attributesToSearchOn", "locales", "vector"}
	uints := []string{"offset", "limit", "page", "hitsPerPage", "cropLength"}
	bools := []string{"showMatchesPosition", "showRankingScore", "showRankingScoreDetails", "showPerformanceDetails", "retrieveVectors"}
	getParams := slices.DeleteFunc(slices.Clone(hostParams), func(p string) bool { return p == "hybrid" || p == "media" })
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []member
	for _, k := range keys {
		val := v.Get(k)
		code := paramCode(k)
		var raw any = val
		switch {
		case k == "hybridEmbedder" || k == "hybridSemanticRatio":
			return nil, badRequest("invalid_search_hybrid_query", fmt.Sprintf("The search host's indexes have no embedder: `%s` must be left out.", k))
		case !slices.Contains(getParams, k):
			return nil, badRequest("bad_request", fmt.Sprintf("Unknown parameter `%s`: expected one of `%s`", k, strings.Join(getParams, "`, `")))
		case slices.Contains(lists, k):
			parts := strings.Split(val, ",")
			for i := range parts {
				parts[i] = strings.TrimSpace(parts[i])
			}
			raw = parts
		case slices.Contains(uints, k):
			n, err := strconv.ParseUint(val, 10, 31)
			if err != nil {
				return nil, badRequest(code, fmt.Sprintf("Invalid value in parameter `%s`: could not parse `%s` as a positive integer", k, val))
			}
			raw = n
		case slices.Contains(bools, k):
			b, err := strconv.ParseBool(val)
			if err != nil || (val != "true" && val != "false") {
				return nil, badRequest(code, fmt.Sprintf("Invalid value in parameter `%s`: could not parse `%s` as a boolean, expected either `true` or `false`", k, val))
			}
			raw = b
		case k == "rankingScoreThreshold":
			f, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return nil, badRequest(code, fmt.Sprintf("Invalid value in parameter `%s`: could not parse `%s` as a number", k, val))
			}
			raw = f
		}
		b, _ := json.Marshal(raw)
		out = append(out, member{k, b})
	}
	return out, nil
}
