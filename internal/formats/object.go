package formats

import (
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// EachMember calls fn with each member of the JSON object obj, in order:
// its name as JSON text (quoted, as it is in obj) and its value, until fn
// returns false. obj must be valid JSON (as the SDK's decoders keep it:
// space between tokens allowed, a value of any depth); anything else ends
// the walk where it stops making sense.
func EachMember(obj []byte, fn func(name, value []byte) bool) {
	i := skipWS(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return
	}
	i = skipWS(obj, i+1)
	for i < len(obj) && obj[i] == '"' {
		ne, _, _, ok := scanString(obj, i)
		if !ok {
			return
		}
		name := obj[i:ne]
		i = skipWS(obj, ne)
		if i >= len(obj) || obj[i] != ':' {
			return
		}
		vs := skipWS(obj, i+1)
		if vs >= len(obj) {
			return
		}
		ve, complete := elementEnd(obj, vs)
		if !complete {
			if c := obj[vs]; c == '{' || c == '[' || c == '"' {
				return
			}
			ve = len(obj)
		}
		if ve <= vs {
			return
		}
		// A number or literal ends at the delimiter elementEnd stops at;
		// drop the space before it.
		end := ve
		for end > vs && (obj[end-1] == ' ' || obj[end-1] == '\n' || obj[end-1] == '\r' || obj[end-1] == '\t') {
			end--
		}
		if !fn(name, obj[vs:end:end]) {
			return
		}
		i = skipWS(obj, ve)
		if i < len(obj) && obj[i] == ',' {
			i = skipWS(obj, i+1)
		}
	}
}

// PlainName reports whether the quoted name q (JSON text) reads as its
// bytes between the quotes: no escapes, valid UTF-8.
func PlainName(q []byte) bool {
	body := q[1 : len(q)-1]
	hi := false
	for _, c := range body {
		if c == '\\' {
			return false
		}
		hi = hi || c >= utf8.RuneSelf
	}
	return !hi || utf8.Valid(body)
}

// NameIs reports whether the quoted name q (JSON text) is name once
// unquoted, as jsonv2 unquotes a member's name (invalid UTF-8 becomes
// U+FFFD).
func NameIs(q []byte, name string) bool {
	if len(q)-2 == len(name) && string(q[1:len(q)-1]) == name && PlainName(q) {
		return true
	}
	if PlainName(q) {
		return false
	}
	return UnquoteName(q) == name
}

// UnquoteName is the quoted name q (JSON text) unquoted, as jsonv2
// unquotes a member's name (invalid UTF-8 becomes U+FFFD).
func UnquoteName(q []byte) string {
	if PlainName(q) {
		return string(q[1 : len(q)-1])
	}
	b, _ := jsontext.AppendUnquote(nil, q)
	return string(b)
}
