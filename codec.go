package lendgraph

//go:generate go run ./internal/gen/jsongen

import (
	"encoding/json"
	"io"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// jsonOptions are the rules for everything the SDK writes and reads:
// requests, responses, records, rows and error bodies. There is one JSON
// story: a struct tag means what encoding/json says it means, in both
// directions (omitempty omits a zero number, false and an empty string, as
// it does for a request), and leniency where a server may be sloppy (invalid
// UTF-8, duplicate names; the case of names is still exact).
//
// The experimental encoding/json/v2 implementation behind it stays
// internal: records expose only the standard MarshalJSON and UnmarshalJSON,
// and the SDK's own decoding reaches their streaming form through
// recordMarshalers and recordUnmarshalers (json_gen.go).
var jsonOptions = jsonv2.JoinOptions(
	jsontext.AllowInvalidUTF8(true),
	jsontext.AllowDuplicateNames(true),
	jsonv2.FormatNilSliceAsNull(true),
	jsonv2.FormatNilMapAsNull(true),
	jsonv1.OmitEmptyWithLegacySemantics(true),
	// Unknown members are written back in sorted order, so the same record
	// always marshals to the same bytes (diffable CLI output, stable tests).
	jsonv2.Deterministic(true),
	jsonv2.WithMarshalers(jsonv2.JoinMarshalers(recordMarshalers, rawMarshaler)),
	jsonv2.WithUnmarshalers(jsonv2.JoinUnmarshalers(recordUnmarshalers, rawUnmarshaler)),
)

// rawMarshaler and rawUnmarshaler handle json.RawMessage (the type of
// Fields' values and of members kept as sent) as a JSON value, without
// going through its encoding/json methods: one copy, validated once.
var (
	rawMarshaler = jsonv2.MarshalToFunc(func(e *jsontext.Encoder, v json.RawMessage) error {
		if v == nil {
			return e.WriteToken(jsontext.Null)
		}
		return e.WriteValue(jsontext.Value(v))
	})
	rawUnmarshaler = jsonv2.UnmarshalFromFunc(func(d *jsontext.Decoder, v *json.RawMessage) error {
		val, err := d.ReadValue()
		if err != nil {
			return err
		}
		*v = append((*v)[:0], val...)
		return nil
	})
)

var decodeFieldOptions = jsonv2.JoinOptions(jsonOptions, jsonv2.MatchCaseInsensitiveNames(true))

// unmarshalRead decodes exactly one JSON value from r into out; anything but
// whitespace after it is an error.
func unmarshalRead(r io.Reader, out any) error {
	return jsonv2.UnmarshalRead(r, out, jsonOptions)
}

// unmarshal decodes one JSON value from b into out.
func unmarshal(b []byte, out any) error { return jsonv2.Unmarshal(b, out, jsonOptions) }

// marshal encodes v the way the SDK writes requests and records: unknown
// members kept.
func marshal(v any) ([]byte, error) { return jsonv2.Marshal(v, jsonOptions) }

// decodeFrom decodes the next JSON value of dec into out.
func decodeFrom(dec *jsontext.Decoder, out any) error {
	return jsonv2.UnmarshalDecode(dec, out, jsonOptions)
}

// kindOf returns the kind of the JSON value v: '"', '0', '{', '[', 't', 'f',
// 'n', or 0 when v is empty or invalid.
func kindOf(v json.RawMessage) jsontext.Kind { return jsontext.Value(v).Kind() }
