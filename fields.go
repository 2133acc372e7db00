package lendgraph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/lendgraph/lendgraph-go/internal/formats"
)

// Fields holds the members of a JSON object: the members of a record that
// the SDK has no typed field for (every record's Extra), or every column
// of an untyped delivery row (Row). The reference shows only some fields
// of each record; the rest arrive here, without a second request, and are
// written back when the record is marshalled again.
//
// Fields keeps the members as the bytes the server sent and decodes one
// only when it is read (Get, Decode, All, marshalling): a program that
// never reads Extra pays for a copy of the bytes, not for decoding them.
// A read scans the members, so its cost grows with their size; read a
// record's Extra once into your own struct (Decode, or encoding/json on
// the record) when you need many of them.
//
// Each member's value is its JSON text as sent (numbers keep their exact
// digits, integers above 2^53 included). A name sent twice counts once,
// with its last value, as encoding/json keeps it in a map.
//
// The zero value holds no members. Fields is a value: copying a record
// copies its Extra, and Set and Delete change only the Fields they are
// called on. Compare two with Equal (go-cmp uses it).
type Fields struct {
	// obj is the members as one JSON object, names and values as sent;
	// nil when there are none. Never changed in place: Set and Delete
	// build a new one, so copies may share it.
	obj []byte
}

// member is one member of a Fields: its name unquoted and its value.
type member struct {
	name  string
	value []byte
}

// Len returns the number of members.
func (f Fields) Len() int {
	if len(f.obj) <= 2 {
		return 0
	}
	return len(f.members())
}

// Has reports whether the server sent a member called name.
func (f Fields) Has(name string) bool { _, ok := f.Get(name); return ok }

// Get returns the JSON text of the member called name, as the server sent
// it, and whether there is one. The bytes belong to f: do not modify
// them.
func (f Fields) Get(name string) (json.RawMessage, bool) {
	var out json.RawMessage
	found := false
	formats.EachMember(f.obj, func(q, v []byte) bool {
		if formats.NameIs(q, name) {
			out, found = v, true // the last one wins
		}
		return true
	})
	return out, found
}

// Decode decodes the member called name into v. A missing member leaves v
// untouched and returns nil; use Has to tell the two apart. Like
// encoding/json, names match struct fields without regard to case.
//
// A JSON string that v cannot hold is decoded from its text: csv carries
// no types, so a csv cell that is not a JSON object or array or a boolean
// column's arrives as a string (see DecodeRows), and "12.5" decodes into a
// float64, "true" (or "True", "FALSE": true or false in any case) into a
// bool, `["a","b"]` into a []string and a JSON object into a struct or
// map, as the same column of an ndjson, json or parquet file would; an
// empty string decodes as null (the zero value). Text that is not such a
// value is the original error.
func (f Fields) Decode(name string, v any) error {
	raw, ok := f.Get(name)
	if !ok {
		return nil
	}
	err := unshapeErr(jsonv2.Unmarshal(raw, shaped(v), decodeFieldOptions))
	if err != nil && len(raw) > 0 && raw[0] == '"' {
		if text, uerr := jsontext.AppendUnquote(nil, raw); uerr == nil {
			if len(text) == 0 {
				text = []byte("null")
			} else if b, ok := formats.BoolWord(string(text)); ok {
				text = strconv.AppendBool(text[:0], b) // "True", "FALSE"
			}
			// Into a copy, so that text that fails leaves v as it was.
			if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && !rv.IsNil() {
				tmp := reflect.New(rv.Elem().Type())
				tmp.Elem().Set(rv.Elem())
				if jsonv2.Unmarshal(text, shaped(tmp.Interface()), decodeFieldOptions) == nil {
					rv.Elem().Set(tmp.Elem())
					return nil
				}
			}
		}
	}
	if err != nil {
		return fmt.Errorf("lendgraph: field %q: %w", name, err)
	}
	return nil
}

// Names returns the member names in sorted order.
func (f Fields) Names() []string {
	ms := f.members()
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.name
	}
	return names
}

// All yields each member once, in the order of Names (sorted by name),
// with its JSON text as the server sent it. The bytes belong to f: do not
// modify them.
func (f Fields) All() iter.Seq2[string, json.RawMessage] {
	return func(yield func(string, json.RawMessage) bool) {
		for _, m := range f.members() {
			if !yield(m.name, m.value) {
				return
			}
		}
	}
}

// members returns the members sorted by name, each name once (its last
// value).
func (f Fields) members() []member {
	var ms []member
	sorted := true
	formats.EachMember(f.obj, func(q, v []byte) bool {
		m := member{formats.UnquoteName(q), v}
		if n := len(ms); n > 0 && ms[n-1].name >= m.name {
			sorted = false
		}
		ms = append(ms, m)
		return true
	})
	if sorted {
		return ms
	}
	// Stable, so that of a name sent twice the last comes last.
	slices.SortStableFunc(ms, func(a, b member) int { return strings.Compare(a.name, b.name) })
	out := ms[:0]
	for i, m := range ms {
		if i+1 < len(ms) && ms[i+1].name == m.name {
			continue
		}
		out = append(out, m)
	}
	return out
}

// Equal reports whether f and g hold the same members, each with the same
// JSON text.
func (f Fields) Equal(g Fields) bool {
	a, b := f.members(), g.members()
	return slices.EqualFunc(a, b, func(x, y member) bool { return x.name == y.name && string(x.value) == string(y.value) })
}

// Set sets the member called name to value: its JSON text when value is
// a json.RawMessage (which must be valid JSON), else value marshalled as
// the SDK marshals records (encoding/json's rules for struct tags).
func (f *Fields) Set(name string, value any) error {
	var text []byte
	if raw, ok := value.(json.RawMessage); ok {
		if !json.Valid(raw) {
			return invalidArg("value", "the json.RawMessage for %q is not valid JSON", name)
		}
		text = raw
	} else {
		var err error
		if text, err = marshal(value); err != nil {
			return fmt.Errorf("lendgraph: Fields.Set %q: %w", name, err)
		}
	}
	q, err := jsontext.AppendQuote(nil, name)
	if err != nil {
		return invalidArg("name", "%q is not valid UTF-8", name)
	}
	obj := f.without(name, len(q)+1+len(text)+2)
	if len(obj) > 1 {
		obj = append(obj, ',')
	}
	obj = append(append(append(obj, q...), ':'), text...)
	f.obj = append(obj, '}')
	return nil
}

// Delete removes the member called name, if there is one.
func (f *Fields) Delete(name string) {
	if f.Has(name) {
		f.obj = append(f.without(name, 1), '}')
	}
}

// without returns a new object holding f's members but those called name,
// without its closing '}', with room for extra more bytes.
func (f Fields) without(name string, extra int) []byte {
	obj := make([]byte, 1, len(f.obj)+extra)
	obj[0] = '{'
	formats.EachMember(f.obj, func(q, v []byte) bool {
		if !formats.NameIs(q, name) {
			if len(obj) > 1 {
				obj = append(obj, ',')
			}
			obj = append(append(append(obj, q...), ':'), v...)
		}
		return true
	})
	return obj
}

// MarshalJSON implements json.Marshaler: the members as one JSON object,
// sorted by name (as encoding/json writes a map), each value as sent;
// "null" for the zero Fields.
func (f Fields) MarshalJSON() ([]byte, error) {
	if f.obj == nil {
		return []byte("null"), nil
	}
	return canonicalObject(f.obj), nil
}

// UnmarshalJSON implements json.Unmarshaler: b must be a JSON object, or
// null (the zero Fields). The object replaces the members f held.
func (f *Fields) UnmarshalJSON(b []byte) error { return unmarshal(b, f) }

// fieldsMarshaler and fieldsUnmarshaler are how the SDK's JSON options
// write and read a Fields that is a value of its own (a Row, a field not
// tagged unknown): as one JSON object. Fields tagged unknown are inlined
// by jsonv2 through the shape of their struct (see shapeOf).
var (
	fieldsMarshaler = jsonv2.MarshalToFunc(func(e *jsontext.Encoder, f *Fields) error {
		if f.obj == nil {
			return e.WriteToken(jsontext.Null)
		}
		if err := e.WriteToken(jsontext.BeginObject); err != nil {
			return err
		}
		for _, m := range f.members() {
			if err := e.WriteToken(jsontext.String(m.name)); err != nil {
				return err
			}
			if err := e.WriteValue(m.value); err != nil {
				return err
			}
		}
		return e.WriteToken(jsontext.EndObject)
	})
	fieldsUnmarshaler = jsonv2.UnmarshalFromFunc(func(d *jsontext.Decoder, f *Fields) error {
		v, err := d.ReadValue()
		if err != nil {
			return err
		}
		switch v.Kind() {
		case '{':
			f.obj = slices.Clone([]byte(v))
		case 'n':
			f.obj = nil
		default:
			return errNotObject
		}
		return nil
	})
)

var errNotObject = errors.New("want a JSON object")

// canonical reports whether obj's members are written back as they are:
// names sorted, each once, with no escapes and valid UTF-8 (what jsonv2
// writes for a map's keys).
func canonical(obj []byte) bool {
	ok := true
	var prev []byte
	formats.EachMember(obj, func(q, _ []byte) bool {
		if !formats.PlainName(q) || prev != nil && string(prev) >= string(q[1:len(q)-1]) {
			ok = false
			return false
		}
		prev = q[1 : len(q)-1]
		return true
	})
	return ok
}

// canonicalObject returns obj with its members as jsonv2 writes a map of
// them: sorted by name, each once (its last value), names quoted anew.
func canonicalObject(obj []byte) []byte {
	out := []byte{'{'}
	for i, m := range (Fields{obj}).members() {
		if i > 0 {
			out = append(out, ',')
		}
		out, _ = jsontext.AppendQuote(out, m.name)
		out = append(append(out, ':'), m.value...)
	}
	return append(out, '}')
}

// appendMember returns the object obj with the member name: value added
// after its members, in a new buffer (as jsonv2 adds an unknown member).
func appendMember(obj []byte, name string, value []byte) []byte {
	q, _ := jsontext.AppendQuote(nil, name)
	out := make([]byte, 0, len(obj)+len(q)+len(value)+3)
	if len(obj) == 0 {
		out = append(out, '{')
	} else {
		out = append(out, bytes.TrimRight(obj, " \t\r\n")...)
		out = bytes.TrimRight(out[:len(out)-1], " \t\r\n") // less the '}'
		if c := out[len(out)-1]; c != '{' && c != ',' {
			out = append(out, ',')
		}
	}
	out = append(append(append(out, q...), ':'), value...)
	return append(out, '}')
}
