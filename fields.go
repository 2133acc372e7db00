package lendgraph

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	jsonv2 "github.com/go-json-experiment/json"
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
func (f Fields) Decode(name string, v any) error {
	raw, ok := f[name]
	if !ok {
		return nil
	}
	if err := jsonv2.Unmarshal(raw, v, decodeFieldOptions); err != nil {
		return fmt.Errorf("lendgraph: field %q: %w", name, err)
	}
	return nil
}

// Names returns the member names in sorted order.
func (f Fields) Names() []string { return slices.Sorted(maps.Keys(f)) }
