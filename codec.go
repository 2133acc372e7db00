package lendgraph

//go:generate go run ./internal/gen/jsongen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"sync"

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
	jsonv2.WithUnmarshalers(jsonv2.JoinUnmarshalers(recordUnmarshalers, rawUnmarshaler, numberUnmarshaler)),
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

// decodeFieldOptions are the rules for values decoded into the caller's
// types (Fields.Decode, delivery rows): a member that names no field
// exactly matches one whose name differs only in case, '_' or '-', as
// encoding/json matches an untagged FullName to "fullName".
// numberUnmarshaler decodes encoding/json's Number as encoding/json does:
// from a JSON number, or a string holding one; null leaves it as it is.
// (jsonv2 knows Number only under its v1 options, which the SDK does not
// use otherwise.)
var numberUnmarshaler = jsonv2.UnmarshalFromFunc(func(d *jsontext.Decoder, n *json.Number) error {
	v, err := d.ReadValue()
	if err != nil {
		return err
	}
	switch v.Kind() {
	case '0':
		*n = json.Number(v)
		return nil
	case 'n':
		return nil
	case '"':
		var s string
		if err := jsonv2.Unmarshal(v, &s); err != nil {
			return err
		}
		if num := jsontext.Value(s); num.Kind() == '0' && num.IsValid() {
			*n = json.Number(s)
			return nil
		}
	}
	return fmt.Errorf("cannot unmarshal a JSON %v into json.Number: want a number", v.Kind())
})

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

// lenientJSONOptions are jsonOptions with the records' lenient decoders
// (WithLenientDecoding): a member of the wrong type is set aside in the
// record's Extra instead of failing the whole value.
var lenientJSONOptions = jsonv2.JoinOptions(jsonOptions,
	jsonv2.WithUnmarshalers(jsonv2.JoinUnmarshalers(recordUnmarshalersLenient, rawUnmarshaler, numberUnmarshaler)))

// lenientRowOptions are lenientJSONOptions for delivery rows, which match
// names as decodeFieldOptions do.
var lenientRowOptions = jsonv2.JoinOptions(lenientJSONOptions, jsonv2.MatchCaseInsensitiveNames(true))

// unmarshalReadMode is unmarshalRead, lenient or strict.
func unmarshalReadMode(r io.Reader, out any, lenient bool) error {
	if lenient {
		return jsonv2.UnmarshalRead(r, out, lenientJSONOptions)
	}
	return unmarshalRead(r, out)
}

// lenientDecode decodes the next value of d into the record shape r (whose
// Extra is extra) leniently: when the object does not fit r as a whole, it
// is decoded member by member; a member that does not fit its field
// leaves the field zero and is kept, as sent, in Extra under its own name,
// where InvalidFields finds it. A value that is not an object, or is not
// valid JSON, fails as in strict mode. r is a pointer to the shape; it is
// not a type parameter so that the code exists once, not once per record.
func lenientDecode(d *jsontext.Decoder, r any, extra *Fields) error {
	val, err := d.ReadValue()
	if err != nil {
		return err
	}
	opts := d.Options()
	err = jsonv2.Unmarshal(val, r, opts)
	if err == nil || val.Kind() != '{' {
		return err
	}
	reflect.ValueOf(r).Elem().SetZero()
	dec := jsontext.NewDecoder(bytes.NewReader(val), opts)
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		name := tok.String() // before the next read voids tok
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		key, err := jsontext.AppendQuote(nil, name)
		if err != nil {
			return err
		}
		member := append(append(append(append([]byte{'{'}, key...), ':'), v...), '}')
		if jsonv2.Unmarshal(member, r, opts) == nil {
			continue
		}
		null := append(append(append([]byte{'{'}, key...), ':'), "null}"...)
		_ = jsonv2.Unmarshal(null, r, opts) // the field as if never sent
		if *extra == nil {
			*extra = Fields{}
		}
		(*extra)[name] = json.RawMessage(slices.Clone(v))
	}
	return nil
}

// invalidFields returns, sorted, the members of extra that name a typed
// field of the record shape t: members a lenient decode set aside because
// their value did not fit the field.
func invalidFields(t reflect.Type, extra Fields) []string {
	if len(extra) == 0 {
		return nil
	}
	var out []string
	for _, name := range typedNames(t) {
		if extra.Has(name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// typedNamesCache holds typedNames per record shape: computed once a type.
var typedNamesCache sync.Map // reflect.Type -> []string

// typedNames returns the JSON names of t's typed fields (not Extra).
func typedNames(t reflect.Type) []string {
	if v, ok := typedNamesCache.Load(t); ok {
		return v.([]string)
	}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" && opts == "" || strings.Contains(","+opts+",", ",unknown,") {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names = append(names, name)
	}
	typedNamesCache.Store(t, names)
	return names
}

// marshalRecord encodes the record shape r, a pointer (whose Extra is
// extra), to e. A member a lenient decode set aside (see invalidFields) is
// written once, with the value as the server sent it in place of the zero
// field.
func marshalRecord(e *jsontext.Encoder, r any, extra Fields) error {
	var bad []string
	if len(extra) > 0 {
		bad = invalidFields(reflect.TypeOf(r).Elem(), extra)
	}
	if len(bad) == 0 {
		return jsonv2.MarshalEncode(e, r)
	}
	b, err := jsonv2.Marshal(r, e.Options())
	if err != nil {
		return err
	}
	// Write the members as marshalled, each typed member that did not fit
	// with its raw value, and skip the raw copy that Extra adds.
	dec := jsontext.NewDecoder(bytes.NewReader(b), e.Options())
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	if err := e.WriteToken(jsontext.BeginObject); err != nil {
		return err
	}
	written := map[string]bool{}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		name := tok.String()
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		if slices.Contains(bad, name) {
			if written[name] {
				continue
			}
			written[name] = true
			v = jsontext.Value(extra[name])
		}
		if err := e.WriteToken(jsontext.String(name)); err != nil {
			return err
		}
		if err := e.WriteValue(v); err != nil {
			return err
		}
	}
	return e.WriteToken(jsontext.EndObject)
}
