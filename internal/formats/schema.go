package formats

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"unsafe"

	"github.com/go-json-experiment/json/jsontext"
)

// Kind is what a row field holds, as far as converting text to JSON goes.
type Kind uint8

// Field kinds.
const (
	Unknown Kind = iota // not a field of the row: kept as an unknown member
	String
	Int
	Float
	Bool
	Nested // a struct, slice, map or anything else: JSON-encoded in csv and parquet
)

// Schema maps a row type's JSON member names to kinds. The key "" is
// Unknown when the type keeps unknown members (a map row type, or a struct
// with a `json:",unknown"` field) and absent when it drops them: columns
// it lacks are then not converted at all.
type Schema map[string]Kind

// keepsUnknown reports whether columns outside the schema are decoded.
func (s Schema) keepsUnknown() bool { _, ok := s[""]; return ok }

// KeepsUnknown reports whether columns outside the schema are decoded.
func (s Schema) KeepsUnknown() bool { return s.keepsUnknown() }

// Lookup returns the kind of the member called name: that of the field of
// that exact name, else of one whose name folds alike (foldName), as the
// row decoders match members to fields.
func (s Schema) Lookup(name string) (Kind, bool) {
	if k, ok := s[name]; ok || name == "" {
		return k, ok
	}
	folded := foldName(name)
	for n, k := range s {
		if n != "" && foldName(n) == folded {
			return k, true
		}
	}
	return Unknown, false
}

// SchemaOf reads the JSON member names of a struct type t (tags as in
// encoding/json/v2: the name in the tag, else the Go name; "-" skipped;
// embedded structs without a name are inlined). A row type that is not a
// struct (a map), or that holds a JSON object whole (isRawObject), gives
// an empty schema: every column is then inferred.
func SchemaOf(t reflect.Type) Schema {
	s := Schema{}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || isRawObject(t) {
		s[""] = Unknown
		return s
	}
	s.add(t, 0)
	return s
}

func (s Schema) add(t reflect.Type, depth int) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || depth > 8 {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" && opts == "" || !f.IsExported() && !f.Anonymous {
			continue
		}
		if strings.Contains(","+opts+",", ",unknown,") {
			s[""] = Unknown
			continue
		}
		if f.Anonymous && name == "" || strings.Contains(","+opts+",", ",inline,") {
			s.add(f.Type, depth+1)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if strings.Contains(","+opts+",", ",string,") {
			s[name] = String
			continue
		}
		s[name] = kindOf(f.Type)
	}
}

var jsonValueType = reflect.TypeFor[jsontext.Value]()

func kindOf(t reflect.Type) Kind {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == jsonValueType {
		return Nested
	}
	switch t.Kind() {
	case reflect.String:
		return String
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return Int
	case reflect.Float32, reflect.Float64:
		return Float
	case reflect.Bool:
		return Bool
	}
	return Nested
}

// appendText appends the JSON for a text value (a csv cell) of a member of
// kind k. ok is false when the text cannot be that kind. Empty text of a
// typed field gives nothing (the field stays zero).
func appendText(dst []byte, k Kind, text string) (out []byte, ok bool) {
	switch k {
	case Int, Float:
		if !isNumber(text) {
			return dst, false
		}
		return append(dst, text...), true
	case Bool:
		b, ok := parseBoolCell(text)
		if !ok {
			return dst, false
		}
		return strconv.AppendBool(dst, b), true
	case Nested:
		if isJSONComposite(text) {
			return append(dst, text...), true
		}
	}
	return appendCell(dst, text), true
}

// appendCell appends text as a JSON string holding exactly the text (a
// csv cell of a string field, or of a column the row type does not declare
// that is neither a JSON object or array nor a boolean column's; see
// csvColumns.appendUnknown). Invalid UTF-8 becomes U+FFFD.
func appendCell(dst []byte, text string) []byte {
	out, _ := jsontext.AppendQuote(dst, text)
	return out
}

// parseBoolCell reports the boolean a csv cell of a bool field spells:
// what strconv.ParseBool takes ("1", "t", "T", "TRUE", "true", "True" and
// their false counterparts) and true or false in any case. The row type
// says the field is a bool, so every spelling of a boolean is taken, as
// DuckDB casts text to a column declared BOOLEAN.
func parseBoolCell(text string) (v, ok bool) {
	if b, err := strconv.ParseBool(text); err == nil {
		return b, true
	}
	return BoolWord(text)
}

// BoolWord reports the boolean text spells when it is true or false in
// any case ("True" as pandas writes it, "TRUE", "false"): the spellings
// that both DuckDB's csv sniffer and polars' csv reader infer as boolean.
// DuckDB's sniffer also takes t/f and yes/no, polars' reader does not; a
// column of single letters or yes/no answers is left as text, and "1"/"0"
// is a number to both.
func BoolWord(text string) (v, ok bool) {
	switch {
	case len(text) == 4 && strings.EqualFold(text, "true"):
		return true, true
	case len(text) == 5 && strings.EqualFold(text, "false"):
		return false, true
	}
	return false, false
}

// isJSONComposite reports whether text is one JSON object or array, with
// no space around it (ValidJSON's rules). csv checks every cell of an
// undeclared column.
func isJSONComposite(text string) bool {
	if len(text) < 2 || (text[0] != '{' || text[len(text)-1] != '}') && (text[0] != '[' || text[len(text)-1] != ']') {
		return false
	}
	return ValidJSON(unsafe.Slice(unsafe.StringData(text), len(text))) // only read
}

// ValidJSON reports whether b is one JSON value, space around it allowed.
// It accepts what the SDK's JSON decoding accepts (duplicate names, invalid
// UTF-8), as encoding/json's Valid does. The cells of csv columns and the
// values of parquet JSON columns that the row type does not declare are
// all checked, so the row decoder's own scan (skipValue) checks them, at
// 2.5 times Valid's speed; Valid has the last word on what that scan
// refuses, since it follows no value deeper than maxDepth.
func ValidJSON(b []byte) bool {
	if end, ok := skipValue(b, skipWS(b, 0), 0); ok {
		return skipWS(b, end) == len(b)
	}
	return json.Valid(b)
}

// isNumber reports whether text is a JSON number.
func isNumber(text string) bool {
	i := 0
	if i < len(text) && text[i] == '-' {
		i++
	}
	start := i
	if i = skipDigits(text, i); i == start || text[start] == '0' && i-start > 1 {
		return false // no integer part, or a leading zero
	}
	if i < len(text) && text[i] == '.' {
		d := i + 1
		if i = skipDigits(text, d); i == d {
			return false
		}
	}
	if i < len(text) && (text[i] == 'e' || text[i] == 'E') {
		i++
		if i < len(text) && (text[i] == '+' || text[i] == '-') {
			i++
		}
		d := i
		if i = skipDigits(text, d); i == d {
			return false
		}
	}
	return i == len(text)
}

// skipDigits returns the index of the first non-digit at or after i.
func skipDigits(text string, i int) int {
	for i < len(text) && text[i] >= '0' && text[i] <= '9' {
		i++
	}
	return i
}
