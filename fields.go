package lendgraph

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/lendgraph/lendgraph-go/internal/formats"
)

// Fields holds the members of a record that the SDK has no typed field for,
// exactly as the server sent them. The reference shows only some fields of
// each record; the rest arrive here, without a second request, and are
// written back when the record is marshalled again.
//
// Each value is the member's JSON text (json.RawMessage); decode it with
// Decode, or with encoding/json.
type Fields map[string]json.RawMessage

// Has reports whether the server sent a member called name.
func (f Fields) Has(name string) bool { _, ok := f[name]; return ok }

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
	raw, ok := f[name]
	if !ok {
		return nil
	}
	err := jsonv2.Unmarshal(raw, v, decodeFieldOptions)
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
				if jsonv2.Unmarshal(text, tmp.Interface(), decodeFieldOptions) == nil {
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
func (f Fields) Names() []string { return slices.Sorted(maps.Keys(f)) }
