package lendgraph

import (
	"fmt"
	"io"
	"maps"
	"slices"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Fields holds the members of a record that the SDK has no typed field for,
// exactly as the server sent them. The reference shows only some fields of
// each record; the rest arrive here, without a second request, and are
// written back when the record is marshalled again.
type Fields map[string]jsontext.Value

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

// jsonOptions are the decoding rules for everything the SDK reads: v1-like
// leniency where the server may be sloppy (case of names is still exact).
var jsonOptions = jsonv2.JoinOptions(
	jsontext.AllowInvalidUTF8(true),
	jsontext.AllowDuplicateNames(true),
	jsonv2.FormatNilSliceAsNull(true),
	jsonv2.FormatNilMapAsNull(true),
	// Unknown members are written back in sorted order, so the same record
	// always marshals to the same bytes (diffable CLI output, stable tests).
	jsonv2.Deterministic(true),
)

var decodeFieldOptions = jsonv2.JoinOptions(jsonOptions, jsonv2.MatchCaseInsensitiveNames(true))

// unmarshalRead decodes exactly one JSON value from r into out; anything but
// whitespace after it is an error.
func unmarshalRead(r io.Reader, out any) error {
	return jsonv2.UnmarshalRead(r, out, jsonOptions)
}

// unmarshal decodes one JSON value from b into out.
func unmarshal(b []byte, out any) error { return jsonv2.Unmarshal(b, out, jsonOptions) }

// marshal encodes v the way the SDK writes records: unknown members kept.
func marshal(v any) ([]byte, error) { return jsonv2.Marshal(v, jsonOptions) }

// decodeFrom and encodeTo back the MarshalJSONTo and UnmarshalJSONFrom
// methods of record types, which make encoding/json/v2 decode them in one
// streaming pass.
func decodeFrom(dec *jsontext.Decoder, out any) error {
	return jsonv2.UnmarshalDecode(dec, out, jsonOptions)
}
func encodeTo(enc *jsontext.Encoder, v any) error { return jsonv2.MarshalEncode(enc, v, jsonOptions) }
