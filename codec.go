package lendgraph

import (
	"io"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

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
