package lendgraphtest

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The search host's filter language, ported from Meilisearch's filter
// parser (crates/filter-parser): the same grammar, keywords, precedence
// and error messages, with the error's columns and the filter on a second
// line ("Was expecting a value but instead got nothing.\n9:9 states === ").
//
//	filter     = expression EOF
//	expression = or
//	or         = and ("OR" and)*
//	and        = not ("AND" not)*
//	not        = "NOT" not | primary
//	primary    = "(" expression ")" | geo | in | condition | exists | to | ...
//	condition  = value ("=" | "!=" | ">" | ">=" | "<" | "<=") value
//	in         = value ["NOT"] "IN" "[" value ("," value)* ","? "]"
//	to         = value value "TO" value
//	exists     = value ["NOT"] "EXISTS" | value "IS" ["NOT"] ("NULL" | "EMPTY")
//	value      = word | 'single quoted' | "double quoted"
//
// Keywords are upper case. Matching is case-insensitive on values, as on
// Meilisearch. The differences: geo filters (_geoRadius, _geoBoundingBox,
// _geoPolygon) parse but are refused at evaluation (the indexes have no
// _geo attribute), CONTAINS and STARTS WITH are refused as Meilisearch
// refuses them without its experimental feature, and vector and _foreign
// filters are not recognised.

// maxFilterDepth is Meilisearch's nesting limit.
const maxFilterDepth = 150

type filterOp int

const (
	fAnd filterOp = iota
	fOr
	fNot
	fCond
)

type condKind int

const (
	cEq condKind = iota
	cNe
	cGt
	cGte
	cLt
	cLte
	cBetween
	cIn
	cExists
	cNull
	cEmpty
	cContains // refused: an experimental feature on Meilisearch
	cGeo      // refused: no _geo attribute
)

// ftoken is a value of a filter with its place in the filter string.
type ftoken struct {
	text       string // unescaped
	start, end int    // byte span in the filter string
}

// filterExpr is a parsed filter.
type filterExpr struct {
	op   filterOp
	kids []*filterExpr
	attr ftoken
	cond condKind
	vals []ftoken
	kw   ftoken // the operator keyword (for CONTAINS's error)
	src  string // the filter string this node came from
}

type perrKind int

const (
	eExpectedValue perrKind = iota
	eExpectedValueKeyword
	eMalformedValue
	eMissingDelimiter
	eInvalidPrimary
	eExpectedEOF
	eInOpeningBracket
	eInClosingBracket
	eInExpectedValue
	eReservedKeyword
	eDepth
	eReservedGeo
	eMisusedGeoRadius
	eMisusedGeoBoundingBox
	eGeoRadius
	eGeoRadiusArgs
	eGeoBoundingBox
	eGeoPolygon
	eIncomplete
	eTag // an internal mismatch, never shown
)

// perr is a parse error: soft errors let an alternative be tried (nom's
// Error), hard ones end the parse (nom's Failure).
type perr struct {
	kind       perrKind
	start, end int
	hard       bool
	arg        string // the keyword, the delimiter, the geo name
	n          int
}

// filterError is a filter the search host cannot use; its message is
// Meilisearch's, with the columns and the filter on a second line.
type filterError struct {
	msg  string
	code string // invalid_search_filter or feature_not_enabled
}

func (e *filterError) Error() string { return e.msg }

type fparser struct{ src string }

func (p *fparser) errAt(kind perrKind, start int, hard bool) *perr {
	return &perr{kind: kind, start: start, end: len(p.src), hard: hard}
}

// message renders e as Meilisearch does.
func (p *fparser) message(e *perr) string {
	frag := p.src[e.start:e.end]
	esc := escapeDebug(frag)
	var m string
	switch e.kind {
	case eExpectedValue, eExpectedValueKeyword:
		switch {
		case strings.TrimSpace(frag) == "":
			m = "Was expecting a value but instead got nothing."
		case e.kind == eExpectedValueKeyword:
			m = fmt.Sprintf("Was expecting a value but instead got `%s`, which is a reserved keyword. To use `%s` as a field name or a value, surround it by quotes.", esc, esc)
		default:
			m = fmt.Sprintf("Was expecting a value but instead got `%s`.", esc)
		}
	case eMalformedValue:
		m = fmt.Sprintf("Malformed value: `%s`.", esc)
	case eMissingDelimiter:
		m = fmt.Sprintf("Expression `%s` is missing the following closing delimiter: `%s`.", esc, e.arg)
	case eInvalidPrimary:
		text := "but instead got nothing."
		if strings.TrimSpace(frag) != "" {
			text = fmt.Sprintf("at `%s`.", esc)
		}
		m = "Was expecting an operation `=`, `!=`, `>=`, `>`, `<=`, `<`, `IN`, `NOT IN`, `TO`, `EXISTS`, `NOT EXISTS`, `IS NULL`, `IS NOT NULL`, `IS EMPTY`, `IS NOT EMPTY`, `CONTAINS`, `NOT CONTAINS`, `STARTS WITH`, `NOT STARTS WITH`, `_geoRadius`, `_geoBoundingBox` or `_geoPolygon` " + text
	case eExpectedEOF:
		m = fmt.Sprintf("Found unexpected characters at the end of the filter: `%s`. You probably forgot an `OR` or an `AND` rule.", esc)
	case eInOpeningBracket:
		m = "Expected `[` after `IN` keyword."
	case eInClosingBracket:
		m = "Expected matching `]` after the list of field names given to `IN[`"
	case eInExpectedValue:
		m = fmt.Sprintf("Expected only comma-separated field names inside `IN[..]` but instead found `%s`.", esc)
	case eReservedKeyword:
		m = fmt.Sprintf("`%s` is a reserved keyword and thus cannot be used as a field name unless it is put inside quotes. Use \"%s\" or '%s' instead.", e.arg, e.arg, e.arg)
	case eDepth:
		m = "The filter exceeded the maximum depth limit. Try rewriting the filter so that it contains fewer nested conditions."
	case eReservedGeo:
		m = fmt.Sprintf("`%s` is a reserved keyword and thus can't be used as a filter expression. Use the `_geoRadius(latitude, longitude, distance)` or `_geoBoundingBox([latitude, longitude], [latitude, longitude])` built-in rules to filter on `_geo` coordinates.", e.arg)
	case eMisusedGeoRadius:
		m = "The `_geoRadius` filter is an operation and can't be used as a value."
	case eMisusedGeoBoundingBox:
		m = "The `_geoBoundingBox` filter is an operation and can't be used as a value."
	case eGeoRadius:
		m = "The `_geoRadius` filter must be in the form: `_geoRadius(latitude, longitude, radius, optionalResolution)`."
	case eGeoRadiusArgs:
		m = fmt.Sprintf("Was expecting 3 or 4 arguments for `_geoRadius`, but instead found %d.", e.n)
	case eGeoBoundingBox:
		m = "The `_geoBoundingBox` filter expects two pairs of arguments: `_geoBoundingBox([latitude, longitude], [latitude, longitude])`."
	case eGeoPolygon:
		m = "The `_geoPolygon` filter doesn't match the expected format: `_geoPolygon([latitude, longitude], [latitude, longitude])`."
	case eIncomplete:
		m = "The filter is incomplete and requires Unknown additional bytes to be parsed."
	default:
		m = fmt.Sprintf("Encountered an internal error while parsing your filter at `%s`.", esc)
	}
	return m + "\n" + p.columns(e.start, e.end)
}

// columns is Meilisearch's "start:end filter" line: 1-based character
// columns of the span, then the whole filter.
func (p *fparser) columns(start, end int) string {
	c := utf8.RuneCountInString(p.src[:start]) + 1
	return fmt.Sprintf("%d:%d %s", c, c+utf8.RuneCountInString(p.src[start:end]), p.src)
}

// escapeDebug is Rust's str::escape_debug.
func escapeDebug(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		case '\n':
			b.WriteString(`\n`)
		case '\\', '\'', '"':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			if unicode.IsPrint(r) || r == ' ' {
				b.WriteRune(r)
			} else {
				fmt.Fprintf(&b, `\u{%x}`, r)
			}
		}
	}
	return b.String()
}

func isValueComponent(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || r == '_' || r == '-' || r == '.'
}

func isSyntaxComponent(r rune) bool {
	return unicode.IsSpace(r) || strings.ContainsRune("()=<>!", r)
}

func isFilterKeyword(s string) bool {
	switch s {
	case "AND", "OR", "IN", "NOT", "TO", "EXISTS", "IS", "NULL", "EMPTY", "CONTAINS", "STARTS", "WITH", "_geoRadius", "_geoBoundingBox":
		return true
	}
	return false
}

// multispace skips ASCII white space (nom's multispace0).
func (p *fparser) multispace(i int) int {
	for i < len(p.src) && strings.IndexByte(" \t\r\n", p.src[i]) >= 0 {
		i++
	}
	return i
}

// multispace1 is multispace requiring at least one.
func (p *fparser) multispace1(i int) (int, bool) {
	j := p.multispace(i)
	return j, j > i
}

// takeWhile returns the end of the run of f-runes from i.
func (p *fparser) takeWhile(i int, f func(rune) bool) int {
	for i < len(p.src) {
		r, n := utf8.DecodeRuneInString(p.src[i:])
		if !f(r) {
			break
		}
		i += n
	}
	return i
}

// word is the value-component word at i (nom's word_exact reads it whole).
func (p *fparser) word(i int) string { return p.src[i:p.takeWhile(i, isValueComponent)] }

func (p *fparser) tag(i int, t string) (int, bool) {
	if strings.HasPrefix(p.src[i:], t) {
		return i + len(t), true
	}
	return i, false
}

// value parses a value: WS* (word | 'quoted' | "quoted") WS*.
func (p *fparser) value(i int) (ftoken, int, *perr) {
	i = p.takeWhile(i, unicode.IsSpace)
	rest := p.src[i:]
	// Geo expressions used as values are errors of their own.
	switch {
	case strings.HasPrefix(rest, "_geoPoint"):
		return ftoken{}, i, &perr{kind: eReservedGeo, start: i, end: len(p.src), hard: true, arg: "_geoPoint"}
	case strings.HasPrefix(rest, "_geoDistance"):
		return ftoken{}, i, &perr{kind: eReservedGeo, start: i, end: len(p.src), hard: true, arg: "_geoDistance"}
	}
	switch p.word(i) {
	case "_geo":
		return ftoken{}, i, &perr{kind: eReservedGeo, start: i, end: len(p.src), hard: true, arg: "_geo"}
	case "_geoRadius":
		return ftoken{}, i, p.errAt(eMisusedGeoRadius, i, true)
	case "_geoBoundingBox":
		return ftoken{}, i, p.errAt(eMisusedGeoBoundingBox, i, true)
	}
	errorWord := func(kind perrKind) *perr {
		return &perr{kind: kind, start: i, end: p.takeWhile(i, func(r rune) bool { return !isSyntaxComponent(r) })}
	}
	var tok ftoken
	var end int
	if i < len(p.src) && (p.src[i] == '\'' || p.src[i] == '"') {
		q := p.src[i]
		j, escaped := i+1, false
		closed := false
		for j < len(p.src) {
			c := p.src[j]
			if c == q {
				closed = true
				break
			}
			if c == '\\' {
				if j+1 >= len(p.src) {
					return ftoken{}, i, &perr{kind: eMalformedValue, start: i + 1, end: len(p.src), hard: true}
				}
				escaped = escaped || p.src[j+1] == q
				_, n := utf8.DecodeRuneInString(p.src[j+1:])
				j += 1 + n
				continue
			}
			j++
		}
		if !closed {
			return ftoken{}, i, &perr{kind: eMissingDelimiter, start: i, end: len(p.src), hard: true, arg: string(q)}
		}
		text := p.src[i+1 : j]
		if escaped {
			text = strings.ReplaceAll(text, `\`+string(q), string(q))
		}
		tok = ftoken{text: text, start: i + 1, end: j}
		end = p.multispace(j + 1)
	} else {
		w := p.word(i)
		if w == "" {
			return ftoken{}, i, errorWord(eExpectedValue)
		}
		if isFilterKeyword(w) {
			return ftoken{}, i, errorWord(eExpectedValueKeyword)
		}
		tok = ftoken{text: w, start: i, end: i + len(w)}
		end = p.multispace(i + len(w))
	}
	if strings.Contains(tok.text, `\`) {
		u, kind := unescapeFilter(tok.text)
		switch kind {
		case eIncomplete:
			return ftoken{}, i, &perr{kind: eIncomplete, start: 0, end: len(p.src), hard: true}
		case eMalformedValue:
			return ftoken{}, i, &perr{kind: eMalformedValue, start: tok.start, end: tok.end}
		}
		tok.text = u
	}
	return tok, end, nil
}

// unescapeFilter resolves backslash escapes (the unescaper crate's):
// \n \t \r \0 \\ \' \" \/ \b \f \xHH \uHHHH \u{H..}.
func unescapeFilter(s string) (string, perrKind) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(s) {
			return "", eIncomplete
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '0':
			b.WriteByte(0)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case '\\', '\'', '"', '/':
			b.WriteByte(s[i])
		case 'x':
			if i+2 >= len(s) {
				return "", eIncomplete
			}
			n, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil {
				return "", eMalformedValue
			}
			b.WriteByte(byte(n))
			i += 2
		case 'u':
			hex := ""
			if i+1 < len(s) && s[i+1] == '{' {
				end := strings.IndexByte(s[i:], '}')
				if end < 0 {
					return "", eIncomplete
				}
				hex, i = s[i+2:i+end], i+end
			} else {
				if i+4 >= len(s) {
					return "", eIncomplete
				}
				hex, i = s[i+1:i+5], i+4
			}
			n, err := strconv.ParseUint(hex, 16, 32)
			if err != nil || !utf8.ValidRune(rune(n)) {
				return "", eMalformedValue
			}
			b.WriteRune(rune(n))
		default:
			return "", eMalformedValue
		}
	}
	return b.String(), 0
}

// parseFilterString parses one filter string; nil for a blank one.
func parseFilterString(src string) (*filterExpr, *filterError) {
	if strings.TrimSpace(src) == "" {
		return nil, nil
	}
	p := &fparser{src: src}
	e, i, err := p.or(0, 0)
	if err == nil && i != len(src) {
		err = p.errAt(eExpectedEOF, i, true)
	}
	if err != nil {
		return nil, &filterError{msg: p.message(err), code: "invalid_search_filter"}
	}
	return e, nil
}

func (p *fparser) or(i, depth int) (*filterExpr, int, *perr) {
	if depth > maxFilterDepth {
		return nil, i, p.errAt(eDepth, i, false)
	}
	return p.chain(i, depth, "OR", fOr, p.and)
}

func (p *fparser) and(i, depth int) (*filterExpr, int, *perr) {
	if depth > maxFilterDepth {
		return nil, i, p.errAt(eDepth, i, false)
	}
	return p.chain(i, depth, "AND", fAnd, p.not)
}

// chain parses next (kw next)*: once kw is read, next must follow.
func (p *fparser) chain(i, depth int, kw string, op filterOp, next func(int, int) (*filterExpr, int, *perr)) (*filterExpr, int, *perr) {
	first, i, err := next(i, depth+1)
	if err != nil {
		return nil, i, err
	}
	kids := []*filterExpr{first}
	for {
		j := p.multispace(i)
		if p.word(j) != kw {
			break
		}
		e, k, err := next(p.multispace(j+len(kw)), depth+1)
		if err != nil {
			err.hard = true
			return nil, k, err
		}
		kids = append(kids, e)
		i = k
	}
	if len(kids) == 1 {
		return first, i, nil
	}
	return &filterExpr{op: op, kids: kids, src: p.src}, i, nil
}

func (p *fparser) not(i, depth int) (*filterExpr, int, *perr) {
	if depth > maxFilterDepth {
		return nil, i, p.errAt(eDepth, i, false)
	}
	j := p.multispace(i)
	if p.word(j) == "NOT" {
		e, k, err := p.not(p.multispace(j+3), depth+1)
		if err != nil {
			err.hard = true
			return nil, k, err
		}
		if e.op == fNot {
			return e.kids[0], k, nil
		}
		return &filterExpr{op: fNot, kids: []*filterExpr{e}, src: p.src}, k, nil
	}
	return p.primary(i, depth+1)
}

func (p *fparser) primary(i, depth int) (*filterExpr, int, *perr) {
	if depth > maxFilterDepth {
		return nil, i, p.errAt(eDepth, i, false)
	}
	if j := p.multispace(i); j < len(p.src) && p.src[j] == '(' {
		e, k, err := p.or(p.multispace(j+1), depth+1)
		if err != nil {
			err.hard = true
			return nil, k, err
		}
		k = p.multispace(k)
		if k >= len(p.src) || p.src[k] != ')' {
			return nil, k, &perr{kind: eMissingDelimiter, start: i, end: len(p.src), hard: true, arg: ")"}
		}
		return e, p.multispace(k + 1), nil
	}
	if e, k, err, ok := p.geo(i); ok {
		return e, k, err
	}
	for _, alt := range []func(int) (*filterExpr, int, *perr){
		p.in, p.notIn, p.condition, p.isNull, p.isNotNull, p.isEmpty, p.isNotEmpty,
		p.exists, p.notExists, p.to, p.contains, p.notContains, p.startsWith, p.notStartsWith,
		p.reservedKeyword,
	} {
		e, k, err := alt(i)
		if err == nil || err.hard {
			return e, k, err
		}
	}
	return nil, i, p.errAt(eInvalidPrimary, i, false)
}

func (p *fparser) cond(attr ftoken, c condKind, vals ...ftoken) *filterExpr {
	return &filterExpr{op: fCond, attr: attr, cond: c, vals: vals, src: p.src}
}

func negate(e *filterExpr) *filterExpr {
	return &filterExpr{op: fNot, kids: []*filterExpr{e}, src: e.src}
}

// inBody parses "IN" "[" values "]" from i.
func (p *fparser) inBody(i int) ([]ftoken, int, *perr) {
	j := p.multispace(i)
	if p.word(j) != "IN" {
		return nil, i, p.errAt(eTag, j, false)
	}
	j = p.multispace(j + 2)
	if j >= len(p.src) || p.src[j] != '[' {
		return nil, j, p.errAt(eInOpeningBracket, j, true)
	}
	r := j + 1
	var vals []ftoken
	v, k, err := p.value(r)
	switch {
	case err != nil && err.hard:
		return nil, k, err
	case err == nil:
		vals, r = append(vals, v), k
		for {
			t := p.multispace(r)
			if t >= len(p.src) || p.src[t] != ',' {
				break
			}
			v, k, err := p.value(p.multispace(t + 1))
			if err != nil {
				if err.hard {
					return nil, k, err
				}
				break
			}
			vals, r = append(vals, v), k
		}
		if t := p.multispace(r); t < len(p.src) && p.src[t] == ',' {
			r = p.multispace(t + 1)
		}
	}
	if t := p.multispace(r); t < len(p.src) && p.src[t] == ']' {
		return vals, p.multispace(t + 1), nil
	}
	if r >= len(p.src) {
		return nil, r, p.errAt(eInClosingBracket, r, true)
	}
	return nil, r, p.errAt(eInExpectedValue, r, true)
}

func (p *fparser) in(i int) (*filterExpr, int, *perr) {
	attr, j, err := p.value(i)
	if err != nil {
		return nil, j, err
	}
	vals, k, err := p.inBody(j)
	if err != nil {
		return nil, k, err
	}
	return p.cond(attr, cIn, vals...), k, nil
}

func (p *fparser) notIn(i int) (*filterExpr, int, *perr) {
	attr, j, err := p.value(i)
	if err != nil {
		return nil, j, err
	}
	if p.word(j) != "NOT" {
		return nil, j, p.errAt(eTag, j, false)
	}
	vals, k, err := p.inBody(j + 3)
	if err != nil {
		return nil, k, err
	}
	return negate(p.cond(attr, cIn, vals...)), k, nil
}

var comparisons = []struct {
	op   string
	kind condKind
}{{"<=", cLte}, {">=", cGte}, {"!=", cNe}, {"<", cLt}, {">", cGt}, {"=", cEq}}

func (p *fparser) condition(i int) (*filterExpr, int, *perr) {
	attr, j, err := p.value(i)
	if err != nil {
		return nil, j, err
	}
	for _, c := range comparisons {
		if k, ok := p.tag(j, c.op); ok {
			v, k, err := p.value(k)
			if err != nil {
				err.hard = true
				return nil, k, err
			}
			return p.cond(attr, c.kind, v), k, nil
		}
	}
	return nil, j, p.errAt(eTag, j, false)
}

// keywords reads the attribute then the keywords, separated by at least
// one space.
func (p *fparser) keywords(i int, kws ...string) (ftoken, int, *perr) {
	attr, j, err := p.value(i)
	if err != nil {
		return ftoken{}, j, err
	}
	for n, kw := range kws {
		if n > 0 {
			var ok bool
			if j, ok = p.multispace1(j); !ok {
				return ftoken{}, j, p.errAt(eTag, j, false)
			}
		}
		var ok bool
		if j, ok = p.tag(j, kw); !ok {
			return ftoken{}, j, p.errAt(eTag, j, false)
		}
	}
	return attr, j, nil
}

func (p *fparser) isNull(i int) (*filterExpr, int, *perr) {
	attr, j, err := p.keywords(i, "IS", "NULL")
	if err != nil {
		return nil, j, err
	}
	return p.cond(attr, cNull), j, nil
}

func (p *fparser) isNotNull(i int) (*filterExpr, int, *perr) {
	attr, j, err := p.keywords(i, "IS", "NOT", "NULL")
	if err != nil {
		return nil, j, err
	}
	return negate(p.cond(attr, cNull)), j, nil
}

func (p *fparser) isEmpty(i int) (*filterExpr, int, *perr) {
	attr, j, err := p.keywords(i, "IS", "EMPTY")
	if err != nil {
		return nil, j, err
	}
	return p.cond(attr, cEmpty), j, nil
}

func (p *fparser) isNotEmpty(i int) (*filterExpr, int, *perr) {
	attr, j, err := p.keywords(i, "IS", "NOT", "EMPTY")
	if err != nil {
		return nil, j, err
	}
	return negate(p.cond(attr, cEmpty)), j, nil
}

func (p *fparser) exists(i int) (*filterExpr, int, *perr) {
	attr, j, err := p.keywords(i, "EXISTS")
	if err != nil {
		return nil, j, err
	}
	return p.cond(attr, cExists), j, nil
}

func (p *fparser) notExists(i int) (*filterExpr, int, *perr) {
	attr, j, err := p.keywords(i, "NOT", "EXISTS")
	if err != nil {
		return nil, j, err
	}
	return negate(p.cond(attr, cExists)), j, nil
}

func (p *fparser) to(i int) (*filterExpr, int, *perr) {
	attr, j, err := p.value(i)
	if err != nil {
		return nil, j, err
	}
	from, j, err := p.value(j)
	if err != nil {
		return nil, j, err
	}
	k, ok := p.tag(j, "TO")
	if !ok {
		return nil, j, p.errAt(eTag, j, false)
	}
	if k, ok = p.multispace1(k); !ok {
		return nil, k, p.errAt(eTag, k, false)
	}
	to, k, err := p.value(k)
	if err != nil {
		err.hard = true
		return nil, k, err
	}
	return p.cond(attr, cBetween, from, to), k, nil
}

// containsLike parses value [NOT] kw value: CONTAINS and STARTS WITH.
func (p *fparser) containsLike(i int, not bool, kw string) (*filterExpr, int, *perr) {
	kws := []string{kw}
	if not {
		kws = []string{"NOT", kw}
	}
	attr, j, err := p.keywords(i, kws...)
	if err != nil {
		return nil, j, err
	}
	v, k, err := p.value(j)
	if err != nil {
		err.hard = true
		return nil, k, err
	}
	e := p.cond(attr, cContains, v)
	e.kw = ftoken{text: kw, start: j - len(kw), end: j}
	if not {
		return negate(e), k, nil
	}
	return e, k, nil
}

func (p *fparser) contains(i int) (*filterExpr, int, *perr) {
	return p.containsLike(i, false, "CONTAINS")
}
func (p *fparser) notContains(i int) (*filterExpr, int, *perr) {
	return p.containsLike(i, true, "CONTAINS")
}
func (p *fparser) startsWith(i int) (*filterExpr, int, *perr) {
	return p.containsLike(i, false, "STARTS WITH")
}
func (p *fparser) notStartsWith(i int) (*filterExpr, int, *perr) {
	return p.containsLike(i, true, "STARTS WITH")
}

// reservedKeyword turns a keyword where a value belongs into a hard error.
func (p *fparser) reservedKeyword(i int) (*filterExpr, int, *perr) {
	e, j, err := p.condition(i)
	if err != nil && err.kind == eExpectedValueKeyword {
		err.hard = true
	}
	return e, j, err
}

// geo parses _geoRadius(...), _geoBoundingBox([..],[..]) and
// _geoPolygon([..],...); ok reports that one was there.
func (p *fparser) geo(i int) (e *filterExpr, end int, err *perr, ok bool) {
	j := p.multispace(i)
	name := p.word(j)
	kinds := map[string]perrKind{"_geoRadius": eGeoRadius, "_geoBoundingBox": eGeoBoundingBox, "_geoPolygon": eGeoPolygon}
	kind, found := kinds[name]
	if !found {
		return nil, i, nil, false
	}
	k := j + len(name)
	fail := func(at int) (*filterExpr, int, *perr, bool) { return nil, at, p.errAt(kind, at, true), true }
	if k >= len(p.src) || p.src[k] != '(' {
		return fail(k)
	}
	close := strings.IndexByte(p.src[k:], ')')
	if close < 0 {
		return fail(len(p.src))
	}
	args := p.src[k+1 : k+close]
	if name == "_geoRadius" {
		parts := strings.Split(args, ",")
		for _, a := range parts {
			if _, err := strconv.ParseFloat(strings.TrimSpace(a), 64); err != nil {
				return fail(k)
			}
		}
		if len(parts) < 3 || len(parts) > 4 {
			return nil, k + close + 1, &perr{kind: eGeoRadiusArgs, start: k + close + 1, end: len(p.src), hard: true, n: len(parts)}, true
		}
	} else if !strings.HasPrefix(strings.TrimSpace(args), "[") {
		return fail(k)
	}
	return &filterExpr{op: fCond, attr: ftoken{text: "_geo", start: j, end: k}, cond: cGeo, src: p.src}, k + close + 1, nil, true
}

// --- filters as the search body holds them ---

// parseFilterValue reads the filter member: a string, or an array of
// strings and arrays of strings (inner arrays are ORed, the outer one
// ANDed), as Meilisearch's Filter::from_json.
func parseFilterValue(raw json.RawMessage) (*filterExpr, *filterError) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, &filterError{code: "invalid_search_filter", msg: "Invalid syntax for the filter parameter: `expected String, Array, found: " + string(raw) + "`."}
	}
	typeErr := func(want string, found any) *filterError {
		b, _ := json.Marshal(found)
		return &filterError{code: "invalid_search_filter", msg: fmt.Sprintf("Invalid syntax for the filter parameter: `expected %s, found: %s`.", want, b)}
	}
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		return parseFilterString(v)
	case []any:
		var ands []*filterExpr
		for _, el := range v {
			switch el := el.(type) {
			case string:
				e, err := parseFilterString(el)
				if err != nil {
					return nil, err
				}
				if e != nil {
					ands = append(ands, e)
				}
			case []any:
				var ors []*filterExpr
				for _, o := range el {
					s, ok := o.(string)
					if !ok {
						return nil, typeErr("String", o)
					}
					e, err := parseFilterString(s)
					if err != nil {
						return nil, err
					}
					if e != nil {
						ors = append(ors, e)
					}
				}
				switch len(ors) {
				case 0:
				case 1:
					ands = append(ands, ors[0])
				default:
					ands = append(ands, &filterExpr{op: fOr, kids: ors})
				}
			default:
				return nil, typeErr("String, [String]", el)
			}
		}
		switch len(ands) {
		case 0:
			return nil, nil
		case 1:
			return ands[0], nil
		}
		return &filterExpr{op: fAnd, kids: ands}, nil
	default:
		return nil, typeErr("String, Array", v)
	}
}

// check refuses what Meilisearch refuses after parsing: attributes that are
// not filterable (aliases maps other names onto them), geo filters and
// CONTAINS / STARTS WITH.
func (e *filterExpr) check(filterable []string, aliases map[string]string) *filterError {
	if e == nil {
		return nil
	}
	if e.op != fCond {
		for _, k := range e.kids {
			if err := k.check(filterable, aliases); err != nil {
				return err
			}
		}
		return nil
	}
	p := &fparser{src: e.src}
	if e.cond == cContains {
		return &filterError{code: "feature_not_enabled", msg: "Using `CONTAINS` in a filter requires enabling the `contains filter` experimental feature. See https://github.com/orgs/meilisearch/discussions/763\n" + p.columns(e.kw.start, e.kw.end)}
	}
	if a, ok := aliases[e.attr.text]; ok {
		e.attr.text = a
	}
	if !slices.Contains(filterable, e.attr.text) {
		return &filterError{code: "invalid_search_filter", msg: fmt.Sprintf("Attribute `%s` is not filterable. Available filterable attribute patterns are: `%s`.\n%s",
			e.attr.text, strings.Join(filterable, ", "), p.columns(e.attr.start, e.attr.end))}
	}
	return nil
}

// matches evaluates e on a document.
func (e *filterExpr) matches(doc map[string]any) bool {
	if e == nil {
		return true
	}
	switch e.op {
	case fAnd:
		for _, k := range e.kids {
			if !k.matches(doc) {
				return false
			}
		}
		return true
	case fOr:
		for _, k := range e.kids {
			if k.matches(doc) {
				return true
			}
		}
		return false
	case fNot:
		return !e.kids[0].matches(doc)
	}
	v, present := doc[e.attr.text]
	switch e.cond {
	case cExists:
		return present
	case cNull:
		return present && v == nil
	case cEmpty:
		switch v := v.(type) {
		case string:
			return v == ""
		case []string:
			return len(v) == 0
		case []any:
			return len(v) == 0
		case map[string]any:
			return len(v) == 0
		}
		return false
	case cNe:
		return !e.anyValue(v, func(s string, n float64, isNum bool) bool { return eqFacet(e.vals[0].text, s, n, isNum) })
	case cEq:
		return e.anyValue(v, func(s string, n float64, isNum bool) bool { return eqFacet(e.vals[0].text, s, n, isNum) })
	case cIn:
		return e.anyValue(v, func(s string, n float64, isNum bool) bool {
			for _, t := range e.vals {
				if eqFacet(t.text, s, n, isNum) {
					return true
				}
			}
			return false
		})
	case cGt, cGte, cLt, cLte, cBetween:
		return e.anyValue(v, func(s string, n float64, isNum bool) bool { return e.inRange(s, n, isNum) })
	}
	return false
}

// anyValue calls f on each facet value of v (an array's elements, or v
// itself) until it returns true.
func (e *filterExpr) anyValue(v any, f func(s string, n float64, isNum bool) bool) bool {
	one := func(x any) bool {
		switch x := x.(type) {
		case string:
			return f(normalizeFacet(x), 0, false)
		case float64:
			return f("", x, true)
		case int:
			return f("", float64(x), true)
		case bool:
			return f(strconv.FormatBool(x), 0, false)
		}
		return false
	}
	switch v := v.(type) {
	case []string:
		for _, x := range v {
			if one(x) {
				return true
			}
		}
		return false
	case []any:
		for _, x := range v {
			if one(x) {
				return true
			}
		}
		return false
	}
	return one(v)
}

// normalizeFacet is how Meilisearch compares facet strings: trimmed and
// lower-cased.
func normalizeFacet(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

func finite(s string) (float64, bool) {
	n, err := strconv.ParseFloat(s, 64)
	return n, err == nil && !math.IsInf(n, 0) && !math.IsNaN(n)
}

// eqFacet: a string value equals the normalized token; a number equals a
// token that parses as the same number.
func eqFacet(tok, s string, n float64, isNum bool) bool {
	if isNum {
		t, ok := finite(tok)
		return ok && t == n
	}
	return normalizeFacet(tok) == s
}

// inRange applies a comparison: numbers numerically (when the bound is a
// number), strings in byte order of their normalized form.
func (e *filterExpr) inRange(s string, n float64, isNum bool) bool {
	cmp := func(bound string) (int, bool) {
		if isNum {
			b, ok := finite(bound)
			if !ok {
				return 0, false
			}
			switch {
			case n < b:
				return -1, true
			case n > b:
				return 1, true
			}
			return 0, true
		}
		return strings.Compare(s, normalizeFacet(bound)), true
	}
	c, ok := cmp(e.vals[0].text)
	if !ok {
		return false
	}
	switch e.cond {
	case cGt:
		return c > 0
	case cGte:
		return c >= 0
	case cLt:
		return c < 0
	case cLte:
		return c <= 0
	}
	c2, ok := cmp(e.vals[1].text)
	return ok && c >= 0 && c2 <= 0
}
