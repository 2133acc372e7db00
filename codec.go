package lendgraph

//go:generate go run ./internal/gen/jsongen

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/lendgraph/lendgraph-go/internal/formats"
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
	jsonv2.WithMarshalers(jsonv2.JoinMarshalers(recordMarshalers, fieldsMarshaler, rawMarshaler)),
	jsonv2.WithUnmarshalers(jsonv2.JoinUnmarshalers(recordUnmarshalers, fieldsUnmarshaler, rawUnmarshaler, numberUnmarshaler)),
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

// unmarshal decodes one JSON value from b into out.
func unmarshal(b []byte, out any) error {
	return unshapeErr(jsonv2.Unmarshal(b, shaped(out), jsonOptions))
}

// marshal encodes v the way the SDK writes requests and records: unknown
// members kept.
func marshal(v any) ([]byte, error) {
	b, err := jsonv2.Marshal(shapedValue(v), jsonOptions)
	return b, unshapeErr(err)
}

// decodeFrom decodes the next JSON value of dec into out.
func decodeFrom(dec *jsontext.Decoder, out any) error {
	return unshapeErr(jsonv2.UnmarshalDecode(dec, shaped(out), jsonOptions))
}

// kindOf returns the kind of the JSON value v: '"', '0', '{', '[', 't', 'f',
// 'n', or 0 when v is empty or invalid.
func kindOf(v json.RawMessage) jsontext.Kind { return jsontext.Value(v).Kind() }

// lenientJSONOptions are jsonOptions with the records' lenient decoders
// (WithLenientDecoding): a member of the wrong type is set aside in the
// record's Extra instead of failing the whole value.
var lenientJSONOptions = jsonv2.JoinOptions(jsonOptions,
	jsonv2.WithUnmarshalers(jsonv2.JoinUnmarshalers(recordUnmarshalersLenient, fieldsUnmarshaler, rawUnmarshaler, numberUnmarshaler)))

// lenientRowOptions are lenientJSONOptions for delivery rows, which match
// names as decodeFieldOptions do.
var lenientRowOptions = jsonv2.JoinOptions(lenientJSONOptions, jsonv2.MatchCaseInsensitiveNames(true))

// The records: every type that keeps unknown members in a field
// `Extra Fields` tagged unknown. jsonv2 inlines unknown members only into
// a map or a jsontext.Value, and Fields is neither (it is the SDK's own
// type, with methods), so jsonv2 decodes and encodes such a struct through
// its shape (shapeOf): the same struct with jsontext.Value in place of
// Fields, which has Fields' memory layout, so the shape is read and
// written at the struct's own address. The records' generated methods
// (json_gen.go) go through recordCodec: the direct scan of
// internal/formats for an object it takes, the shape for anything else.

var (
	fieldsType      = reflect.TypeFor[Fields]()
	jsonValueType   = reflect.TypeFor[jsontext.Value]()
	jsonMethodTypes = []reflect.Type{reflect.TypeFor[json.Marshaler](), reflect.TypeFor[json.Unmarshaler](),
		reflect.TypeFor[encoding.TextMarshaler](), reflect.TypeFor[encoding.TextUnmarshaler]()}
)

// Fields must have the memory layout of a jsontext.Value.
var _ [unsafe.Sizeof(Fields{}) - unsafe.Sizeof(jsontext.Value(nil))]struct{}

// shapes holds shapeOf's answers: reflect.Type -> reflect.Type; unshapes
// maps each shape built back to its type.
var shapes, unshapes sync.Map

// shapeOf returns t as jsonv2 must see it: t itself when no field of type
// Fields tagged unknown is reachable from it (through structs, pointers,
// slices, arrays and maps, but not through a type with JSON or text
// methods of its own, which decodes itself), else a type of the same
// memory layout in which each such field is a jsontext.Value.
func shapeOf(t reflect.Type) reflect.Type {
	if s, ok := shapes.Load(t); ok {
		return s.(reflect.Type)
	}
	s := buildShape(t, false, map[reflect.Type]bool{})
	shapes.Store(t, s)
	if s != t {
		unshapes.Store(s, t)
	}
	return s
}

// recordShape is shapeOf for a record's own struct type, whose methods
// (json_gen.go) are the ones that call jsonv2 with its shape.
func recordShape(t reflect.Type) reflect.Type {
	s := buildShape(t, true, map[reflect.Type]bool{})
	if s != t {
		unshapes.Store(s, t)
	}
	return s
}

func hasJSONMethods(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	for _, m := range jsonMethodTypes {
		if t.Implements(m) || pt.Implements(m) {
			return true
		}
	}
	return false
}

func buildShape(t reflect.Type, record bool, seen map[reflect.Type]bool) reflect.Type {
	switch t.Kind() {
	case reflect.Pointer:
		if e := buildShape(t.Elem(), false, seen); e != t.Elem() {
			return reflect.PointerTo(e)
		}
	case reflect.Slice:
		if e := buildShape(t.Elem(), false, seen); e != t.Elem() {
			return reflect.SliceOf(e)
		}
	case reflect.Array:
		if e := buildShape(t.Elem(), false, seen); e != t.Elem() {
			return reflect.ArrayOf(t.Len(), e)
		}
	case reflect.Map:
		if e := buildShape(t.Elem(), false, seen); e != t.Elem() {
			return reflect.MapOf(t.Key(), e)
		}
	case reflect.Struct:
		if !record && hasJSONMethods(t) || seen[t] {
			return t // decodes itself; or a recursive type, left as it is
		}
		seen[t] = true
		defer delete(seen, t)
		fields := make([]reflect.StructField, t.NumField())
		changed := false
		for i := range fields {
			f := t.Field(i)
			if f.Type == fieldsType && unknownTag(f.Tag) {
				f.Type, changed = jsonValueType, true
			} else if s := buildShape(f.Type, false, seen); s != f.Type {
				f.Type, changed = s, true
			}
			fields[i] = f
		}
		if !changed {
			return t
		}
		for i := range fields {
			f := &fields[i]
			if f.Anonymous {
				// StructOf does not promote methods: an embedded field
				// becomes a named one, inlined as jsonv2 inlines it.
				f.Anonymous = false
				if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name == "" {
					f.Tag = `json:",inline"`
				}
			}
			if !f.IsExported() {
				// StructOf refuses unexported fields: a field jsonv2
				// skips, of the same type at the same place.
				f.Name, f.PkgPath, f.Tag = "X"+strconv.Itoa(i)+"_"+f.Name, "", `json:"-"`
			}
		}
		return reflect.StructOf(fields)
	}
	return t
}

func unknownTag(tag reflect.StructTag) bool {
	_, opts, _ := strings.Cut(tag.Get("json"), ",")
	return strings.Contains(","+opts+",", ",unknown,")
}

// shaped returns v, a pointer, as a pointer to its type's shape at the
// same address (v itself when the type needs none).
func shaped(v any) any {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return v
	}
	t := rv.Type().Elem()
	if s := shapeOf(t); s != t {
		return reflect.NewAt(s, rv.UnsafePointer()).Interface()
	}
	return v
}

// shapedValue is shaped for a value to marshal, which need not be a
// pointer.
func shapedValue(v any) any {
	if v == nil {
		return v
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		return shaped(v)
	}
	t := rv.Type()
	s := shapeOf(t)
	if s == t {
		return v
	}
	p := reflect.New(t)
	p.Elem().Set(rv)
	return reflect.NewAt(s, p.UnsafePointer()).Interface()
}

// unshapeErr names the type a shape stands for in err.
func unshapeErr(err error) error {
	var se *jsonv2.SemanticError
	if errors.As(err, &se) && se.GoType != nil {
		if t, ok := unshapes.Load(se.GoType); ok {
			se.GoType = t.(reflect.Type)
		}
	}
	return err
}

// recordCodec is how one record type is decoded and encoded.
type recordCodec struct {
	shape reflect.Type
	// exact and folded decode an object directly (nil: never), matching
	// names as jsonOptions and decodeFieldOptions do.
	exact, folded *formats.ObjectDecoder
	typed         map[string]bool // the JSON names of the typed fields
	extra         uintptr         // the offset of Extra
}

var recordCodecs sync.Map // reflect.Type -> *recordCodec

// recordOptions are jsonOptions and decodeFieldOptions, for the fields the
// direct decoders leave to jsonv2; set by init, as the options refer to
// the records' codecs.
var recordOptions struct{ exact, folded jsonv2.Options }

func init() { recordOptions.exact, recordOptions.folded = jsonOptions, decodeFieldOptions }

// recordOf returns the codec of the record type t.
func recordOf(t reflect.Type) *recordCodec {
	if rc, ok := recordCodecs.Load(t); ok {
		return rc.(*recordCodec)
	}
	rc := &recordCodec{shape: recordShape(t), typed: map[string]bool{}}
	for _, name := range typedNames(t) {
		rc.typed[name] = true
	}
	if f, ok := t.FieldByName("Extra"); ok {
		rc.extra = f.Offset
	}
	slowWith := func(opts jsonv2.Options) func([]byte, any) error {
		return func(b []byte, v any) error { return jsonv2.Unmarshal(b, shaped(v), opts) }
	}
	rc.exact = formats.NewObjectDecoder(t, true, slowWith(recordOptions.exact))
	rc.folded = formats.NewObjectDecoder(t, false, slowWith(recordOptions.folded))
	v, _ := recordCodecs.LoadOrStore(t, rc)
	return v.(*recordCodec)
}

// direct returns the direct decoder for the options of d.
func (rc *recordCodec) direct(opts jsonv2.Options) *formats.ObjectDecoder {
	if folded, _ := jsonv2.GetOption(opts, jsonv2.MatchCaseInsensitiveNames); folded {
		return rc.folded
	}
	return rc.exact
}

// at is the record's shape at p, for jsonv2.
func (rc *recordCodec) at(p unsafe.Pointer) any { return reflect.NewAt(rc.shape, p).Interface() }

// decodeRecord decodes the next value of d into the record of type t at
// p, with d's options: directly when it is an object the scan takes,
// through the shape otherwise (which words every error).
func decodeRecord(d *jsontext.Decoder, t reflect.Type, p unsafe.Pointer) error {
	rc := recordOf(t)
	opts := d.Options()
	dec := rc.direct(opts)
	if dec == nil || d.PeekKind() != '{' {
		return unshapeErr(jsonv2.UnmarshalDecode(d, rc.at(p)))
	}
	val, err := d.ReadValue()
	if err != nil {
		return err
	}
	if dec.Decode(val, p) {
		return nil
	}
	return inStream(d, val, jsonv2.Unmarshal(val, rc.at(p), opts))
}

// inStream places an error of decoding val, the value d has just read,
// where val is in d's input, as decoding it from d would have.
func inStream(d *jsontext.Decoder, val jsontext.Value, err error) error {
	var se *jsonv2.SemanticError
	if errors.As(err, &se) {
		se.ByteOffset += d.InputOffset() - int64(len(val))
		se.JSONPointer = d.StackPointer() + se.JSONPointer
	}
	return unshapeErr(err)
}

// unmarshalRecord is decodeRecord for the record's UnmarshalJSON: b is one
// JSON value, decoded with jsonOptions.
func unmarshalRecord(b []byte, t reflect.Type, p unsafe.Pointer) error {
	rc := recordOf(t)
	if rc.exact != nil && rc.exact.Decode(b, p) {
		return nil
	}
	return unshapeErr(jsonv2.Unmarshal(b, rc.at(p), jsonOptions))
}

// decodeRecordLenient is decodeRecord for the lenient options
// (WithLenientDecoding): when the object does not fit the record as a
// whole, it is decoded member by member; a member that does not fit its
// field leaves the field zero and is kept, as sent, in Extra under its
// own name, where InvalidFields finds it. A value that is not an object,
// or is not valid JSON, fails as in strict mode.
func decodeRecordLenient(d *jsontext.Decoder, t reflect.Type, p unsafe.Pointer) error {
	rc := recordOf(t)
	opts := d.Options()
	val, err := d.ReadValue()
	if err != nil {
		return err
	}
	if dec := rc.direct(opts); dec != nil && val.Kind() == '{' && dec.Decode(val, p) {
		return nil
	}
	r := rc.at(p)
	err = jsonv2.Unmarshal(val, r, opts)
	if err == nil || val.Kind() != '{' {
		return inStream(d, val, err)
	}
	reflect.ValueOf(r).Elem().SetZero()
	extra := (*Fields)(unsafe.Add(p, rc.extra))
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
		extra.obj = appendMember(extra.obj, name, v)
	}
	return nil
}

// invalidFields returns, sorted, the members of extra that name a typed
// field of the record type t: members a lenient decode set aside because
// their value did not fit the field.
func invalidFields(t reflect.Type, extra Fields) []string {
	if len(extra.obj) <= 2 {
		return nil
	}
	rc := recordOf(t)
	var out []string
	formats.EachMember(extra.obj, func(q, _ []byte) bool {
		if name := formats.UnquoteName(q); rc.typed[name] && !slices.Contains(out, name) {
			out = append(out, name)
		}
		return true
	})
	slices.Sort(out)
	return out
}

// typedNames returns the JSON names of the typed fields of the struct
// type t (not Extra).
func typedNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" && opts == "" || unknownTag(f.Tag) {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names = append(names, name)
	}
	return names
}

// marshalRecord encodes the record of type t at p (whose Extra is extra)
// to e: the typed members, then the unknown ones sorted by name (see
// jsonOptions). A member a lenient decode set aside (see invalidFields) is
// written once, with the value as the server sent it in place of the zero
// field.
func marshalRecord(e *jsontext.Encoder, t reflect.Type, p unsafe.Pointer, extra Fields) error {
	rc := recordOf(t)
	var bad []string
	if len(extra.obj) > 2 {
		bad = invalidFields(t, extra)
		if !canonical(extra.obj) {
			// A copy whose unknown members are sorted, each once.
			cp := reflect.New(rc.shape)
			cp.Elem().Set(reflect.NewAt(rc.shape, p).Elem())
			p = cp.UnsafePointer()
			(*Fields)(unsafe.Add(p, rc.extra)).obj = canonicalObject(extra.obj)
		}
	}
	if len(bad) == 0 {
		return unshapeErr(jsonv2.MarshalEncode(e, rc.at(p)))
	}
	b, err := jsonv2.Marshal(rc.at(p), e.Options())
	if err != nil {
		return unshapeErr(err)
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
			raw, _ := extra.Get(name)
			v = jsontext.Value(raw)
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
