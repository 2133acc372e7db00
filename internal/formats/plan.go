package formats

import (
	"encoding"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/bits"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
	"unsafe"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// RowDecoder returns a factory of row decoders for T, one per worker
// goroutine. For struct rows of plain fields (and rows that are a JSON
// object kept whole, or a map of raw JSON values) it scans the JSON
// object once, sets scalar fields directly, decodes nested structs,
// pointers and slices of them in the same scan, and keeps unknown members
// in one new buffer per row (see setExtra); csv cells and parquet values set fields straight from
// the cell or value (a JSON-encoded nested field straight into the nested
// field). Anything it does not handle exactly as slow would (escapes that
// do not unquote cleanly, a type mismatch, invalid JSON, unusual tags, a
// type with its own unmarshal methods unless trusted) goes to slow, which
// decodes the whole row, or the one field, as JSON: the result and every
// error are slow's.
//
// slow decodes a whole JSON value into a pointer; trusted means T's own
// unmarshal methods (if any) decode exactly like its fields would.
func RowDecoder[T any](slow func([]byte, any) error, trusted bool) func() *RowDec[T] {
	p := newPlan(reflect.TypeFor[T](), trusted, false, slow)
	return func() *RowDec[T] { return &RowDec[T]{plan: p, slow: slow, s: newScratch(p)} }
}

func newScratch(p *plan) *scratch {
	s := &scratch{names: map[string]string{}}
	if p != nil {
		s.pos = make([][]posEntry, p.nplans)
	}
	return s
}

// ObjectDecoder decodes JSON objects into values of one struct type, as
// RowDecoder's decoders do rows, from any number of goroutines at once.
// The package lendgraph's records decode through it.
type ObjectDecoder struct {
	p    *plan
	pool sync.Pool // of *scratch
}

// NewObjectDecoder returns a decoder of JSON objects into values of the
// struct type t, or nil when the direct scan does not decode t (see
// RowDecoder). With exact, a member sets only the field of exactly its
// name (the SDK's rules for API answers); without, also one whose name
// folds alike (its rules for rows and Fields.Decode). slow decodes a
// field the scan leaves to it (a type with its own unmarshal methods) and
// must follow the same rules. t's own unmarshal methods, if any, are
// bypassed: they must decode exactly like its fields.
func NewObjectDecoder(t reflect.Type, exact bool, slow func([]byte, any) error) *ObjectDecoder {
	p := newPlan(t, true, exact, slow)
	if p == nil || p.rootMap || p.rootRaw {
		return nil
	}
	d := &ObjectDecoder{p: p}
	d.pool.New = func() any { return newScratch(p) }
	return d
}

// Decode decodes the JSON object b into the value of the decoder's type
// at v and reports true, or reports false when b must be decoded by the
// full decoder instead (anything unusual, and every error): v may then
// hold some of b's members, which the full decoder sets again.
func (d *ObjectDecoder) Decode(b []byte, v unsafe.Pointer) bool {
	s := d.pool.Get().(*scratch)
	ok := d.p.decode(b, v, s)
	d.pool.Put(s)
	return ok
}

// RowDec decodes rows into T on one worker goroutine.
type RowDec[T any] struct {
	plan *plan // nil: always slow
	slow func([]byte, any) error
	s    *scratch
	buf  []byte
	// lenient passes a csv cell that is not valid for its column to slow
	// as text instead of failing the row (see LenientRowDecoder).
	lenient bool
}

// LenientRowDecoder is RowDecoder for a lenient slow decoder: a row that
// the direct scan cannot take goes to slow, and a csv cell that is not
// valid for its column goes to slow as a JSON string.
func LenientRowDecoder[T any](slow func([]byte, any) error, trusted bool) func() *RowDec[T] {
	mk := RowDecoder[T](slow, trusted)
	return func() *RowDec[T] {
		d := mk()
		d.lenient = true
		return d
	}
}

// JSON decodes one row's JSON object into v.
func (d *RowDec[T]) JSON(b []byte, v *T) error {
	if d.plan != nil && d.plan.decode(b, unsafe.Pointer(v), d.s) {
		return nil
	}
	var zero T
	*v = zero
	return d.slow(b, v)
}

// csv decodes one csv record into v; row numbers its errors.
func (d *RowDec[T]) csv(c *csvColumns, rec []string, row int64, v *T) error {
	if d.plan != nil && d.plan.setCSV(c, rec, unsafe.Pointer(v), d.s) {
		return nil
	}
	var zero T
	*v = zero
	var bad int
	if d.buf, bad = c.appendJSON(d.buf[:0], rec, d.lenient); bad >= 0 {
		return &RowError{Row: row, Column: c.header[bad], Err: fmt.Errorf("%q is not a valid %s", rec[bad], kindName[c.kinds[bad]])}
	}
	if err := d.JSON(d.buf, v); err != nil {
		return rowErr(row, err)
	}
	return nil
}

type setKind uint8

const (
	setOther  setKind = iota // decoded by slow into the field
	setString                // string kinds
	setInt                   // signed integer kinds
	setUint                  // unsigned integer kinds
	setFloat                 // float kinds
	setBool                  // bool kinds
	setStruct                // a struct the plan decodes: sub
	setPtr                   // a pointer: elem is the pointee
	setSlice                 // a slice (not of bytes): elem is the element
)

type planField struct {
	offset uintptr
	typ    reflect.Type
	kind   setKind
	bits   int
	sub    *plan      // setStruct
	elem   *planField // setPtr, setSlice (at offset 0)
	size   uintptr    // setSlice: the element size
	// How a setSlice field's backing array is allocated: mk for elements
	// of a basic kind, or arrays[n], the type [n]E of its elements E, for
	// short slices.
	mk     func(n int) unsafe.Pointer
	arrays []reflect.Type
}

// sliceMaker allocates the backing array of n elements of type t with
// make, for the basic kinds (the memory of a named string or number type
// is that of its kind); nil for others.
func sliceMaker(t reflect.Type) func(n int) unsafe.Pointer {
	switch t.Kind() {
	case reflect.String:
		return makeSlice[string]
	case reflect.Bool, reflect.Int8, reflect.Uint8:
		return makeSlice[uint8]
	case reflect.Int16, reflect.Uint16:
		return makeSlice[uint16]
	case reflect.Int32, reflect.Uint32, reflect.Float32:
		return makeSlice[uint32]
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64, reflect.Float64, reflect.Uintptr:
		if t.Size() == 8 {
			return makeSlice[uint64]
		}
	}
	return nil
}

func makeSlice[E any](n int) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(make([]E, n))) }

// nested reports whether f holds a JSON object or array (a struct, a
// slice, a pointer to either): in csv and parquet, a JSON-encoded string.
func (f *planField) nested() bool {
	for f.kind == setPtr {
		f = f.elem
	}
	return f.kind == setStruct || f.kind == setSlice
}

type plan struct {
	id     int // index of this plan's member-position cache in scratch.pos
	nplans int // of the row type (root plan): the nested ones included
	fields map[string]*planField
	// folded are the fields by folded name (foldName): a member that
	// names no field exactly matches one whose name folds alike, as
	// encoding/json and the SDK's slow path (MatchCaseInsensitiveNames)
	// match them.
	folded map[string]*planField
	extra  int // offset of the unknown-members field, or -1
	// extraRaw: the unknown-members field is a JSON object kept whole
	// (isRawObject), not a map.
	extraRaw bool
	// rootMap: the row is a map of raw JSON values; rootRaw: the row is a
	// JSON object kept whole.
	rootMap, rootRaw bool
	slow             func([]byte, any) error
}

// rawValue is the element type of the maps of unknown members the plan
// builds (a row type's own map[string]json.RawMessage).
type rawValue = json.RawMessage

// fieldsMap is the map type the plan stores unknown members in.
type fieldsMap = map[string]rawValue

var fieldsType = reflect.TypeFor[fieldsMap]()

// rawType is the type jsonv2 collects unknown members into as one JSON
// object; the SDK's Fields has its memory layout (see isRawObject).
var rawType = reflect.TypeFor[jsontext.Value]()

var numberType = reflect.TypeFor[json.Number]()

// isRawObject reports whether t holds a JSON object as its bytes (a
// []byte at offset 0): jsontext.Value, or the SDK's Fields. The plan keeps
// unknown members in one, as jsonv2 does in a jsontext.Value field tagged
// unknown: '{', each member's name as sent, ':', its value as sent, ','
// between members, '}'.
func isRawObject(t reflect.Type) bool { return t == rawType || t == sdkCodec.fields && t != nil }

// unmarshalerTypes are the interfaces through which a type decodes itself.
// (Implements, not MethodByName, which would keep every exported method of
// every type in a program that links this package.)
var unmarshalerTypes = []reflect.Type{reflect.TypeFor[json.Unmarshaler](), reflect.TypeFor[jsonv2.UnmarshalerFrom](),
	reflect.TypeFor[encoding.TextUnmarshaler]()}

func hasUnmarshaler(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	for _, u := range unmarshalerTypes {
		if pt.Implements(u) {
			return true
		}
	}
	return false
}

func isFieldsMap(t reflect.Type) bool {
	return t.Kind() == reflect.Map && t.ConvertibleTo(fieldsType) && t.Key() == fieldsType.Key() && t.Elem() == fieldsType.Elem()
}

// newPlan returns nil when t is not a type the plan decodes exactly as the
// slow path does. exact: names match fields exactly only (see
// NewObjectDecoder).
func newPlan(t reflect.Type, trusted, exact bool, slow func([]byte, any) error) *plan {
	if isRawObject(t) {
		return &plan{extra: 0, rootRaw: true, slow: slow, nplans: 1}
	}
	if isFieldsMap(t) {
		if !trusted && hasUnmarshaler(t) {
			return nil
		}
		return &plan{extra: 0, rootMap: true, slow: slow, nplans: 1}
	}
	if t.Kind() != reflect.Struct || !trusted && hasUnmarshaler(t) {
		return nil
	}
	b := &planBuilder{plans: map[reflect.Type]*plan{}, slow: slow, exact: exact}
	p := b.structPlan(t, true)
	if p != nil {
		p.nplans = len(b.plans)
	}
	return p
}

type planBuilder struct {
	plans map[reflect.Type]*plan
	slow  func([]byte, any) error
	exact bool
}

// structPlan returns the plan of struct type t; nil when one of its fields
// has something the plan does not decode as slow does (an embedded field,
// an unusual tag option, a second unknown-members field; an unknown-members
// field at all below the row).
func (b *planBuilder) structPlan(t reflect.Type, root bool) *plan {
	if p, ok := b.plans[t]; ok {
		return p // built, or being built (a recursive type)
	}
	type member struct {
		name string
		f    reflect.StructField
	}
	var members []member
	extra, extraRaw := -1, false
	for i := range t.NumField() {
		f := t.Field(i)
		tag, hasTag := f.Tag.Lookup("json")
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous || strings.Contains(tag, "'") {
			return nil
		}
		if !f.IsExported() || name == "-" && opts == "" {
			continue
		}
		unknown := false
		for o := range strings.SplitSeq(opts, ",") {
			switch o {
			case "", "omitempty", "omitzero":
			case "unknown":
				unknown = true
			default: // string, inline, nocase, case:, format:, ...
				return nil
			}
		}
		if unknown {
			raw := isRawObject(f.Type)
			if !root || extra >= 0 || !raw && (!isFieldsMap(f.Type) || hasUnmarshaler(f.Type)) {
				return nil
			}
			extra, extraRaw = int(f.Offset), raw
			continue
		}
		if !hasTag || name == "" {
			name = f.Name
		}
		for _, m := range members {
			if m.name == name {
				return nil
			}
		}
		members = append(members, member{name, f})
	}
	p := &plan{id: len(b.plans), fields: map[string]*planField{}, extra: extra, extraRaw: extraRaw, slow: b.slow}
	if !b.exact {
		p.folded = map[string]*planField{}
	}
	b.plans[t] = p
	for _, m := range members {
		pf := b.field(m.f.Type)
		pf.offset = m.f.Offset
		p.fields[m.name] = pf
		if k := foldName(m.name); p.folded != nil && p.folded[k] == nil {
			p.folded[k] = pf // the first field declared wins, as in jsonv2
		}
	}
	return p
}

// field returns the field a member called name sets: the field of that
// exact name, else (unless the plan matches names exactly) one whose name
// folds alike; nil for an unknown member.
func (p *plan) field(name string) *planField {
	if f := p.fields[name]; f != nil || p.folded == nil {
		return f
	}
	return p.folded[foldName(name)]
}

// foldName is jsonv2's folding of names for MatchCaseInsensitiveNames:
// '_' and '-' dropped, letters folded to the smallest of their case folds.
func foldName(name string) string {
	out := make([]byte, 0, len(name))
	for _, r := range name {
		switch {
		case r == '_' || r == '-':
		case r < utf8.RuneSelf:
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
			out = append(out, byte(r))
		default:
			out = utf8.AppendRune(out, foldRune(r))
		}
	}
	return string(out)
}

// foldRune is the smallest rune of r's case-fold set.
func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}

// field returns how a value of type t is set (at offset 0).
func (b *planBuilder) field(t reflect.Type) *planField {
	f := &planField{typ: t}
	if hasUnmarshaler(t) || t == numberType {
		return f // the slow path's (the SDK decodes json.Number its own way)
	}
	switch t.Kind() {
	case reflect.String:
		f.kind = setString
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		f.kind, f.bits = setInt, t.Bits()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		f.kind, f.bits = setUint, t.Bits()
	case reflect.Float32, reflect.Float64:
		f.kind, f.bits = setFloat, t.Bits()
	case reflect.Bool:
		f.kind = setBool
	case reflect.Struct:
		if sub := b.structPlan(t, false); sub != nil {
			f.kind, f.sub = setStruct, sub
		}
	case reflect.Pointer:
		if e := b.field(t.Elem()); e.kind != setOther {
			f.kind, f.elem = setPtr, e
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			break // base64 text, or raw JSON
		}
		if e := b.field(t.Elem()); e.kind != setOther {
			f.kind, f.elem, f.size = setSlice, e, t.Elem().Size()
			f.mk = sliceMaker(t.Elem())
			if f.mk == nil {
				for n := range 9 {
					f.arrays = append(f.arrays, reflect.ArrayOf(n, t.Elem()))
				}
			}
		}
	}
	return f
}

// scratch is one worker's reusable state.
type scratch struct {
	names   map[string]string // interned unknown member names
	unknown []span
	runk    []rspan           // a JSON row's unknown members, when kept whole
	quoted  map[string][]byte // names quoted, for Setter.KeepUnknown
	unq     []byte
	// pos remembers, per plan and member position, the last name seen
	// there and its field: rows of one file list their members in the
	// same order.
	pos [][]posEntry
	// csvFields maps the columns of csvCols to fields.
	csvCols   *csvColumns
	csvFields []*planField
	// A row's string fields (nested ones included) are queued as they are
	// found, as spans of the JSON row being decoded (row) or of sbuf (an
	// unescaped string, a csv cell, a parquet value), and set at the end of
	// the row from one new buffer (one allocation a row, not one a field:
	// see finishRow).
	row  []byte
	sbuf []byte
	strs []strSpan
	// lo, hi: the part of row the queued spans cover; need: their total.
	lo, hi, need int
	ebuf         []byte
	// elems holds the elements of the arrays being decoded (array).
	elems []elemSpan
}

type posEntry struct {
	name string
	f    *planField
	// q is the member's name as JSON text followed by ':' (`"name":`)
	// when the name is printable ASCII without '"' or '\\' (its JSON text is
	// then exactly that), else "". A member whose raw bytes start with q
	// is the member called name: w holds q's bytes as little-endian words
	// (zero past its end) and m masks them, for a compare of up to 24
	// bytes without a call.
	q string
	w [3]uint64
	m [3]uint64
}

func newPosEntry(name string, f *planField) posEntry {
	pe := posEntry{name: name, f: f}
	for i := range len(name) {
		if c := name[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return pe
		}
	}
	pe.q = `"` + name + `":`
	for k := 0; k < len(pe.q) && k < 24; k++ {
		pe.w[k/8] |= uint64(pe.q[k]) << (8 * (k % 8))
		pe.m[k/8] |= 0xff << (8 * (k % 8))
	}
	return pe
}

// atEnd reports whether the member at b[i] starts with pe.q, for a member
// near the end of b, or a long name (object compares others as words).
func (pe *posEntry) atEnd(b []byte, i int) bool {
	n := len(pe.q)
	return n > 0 && n <= len(b)-i && string(b[i:i+n]) == pe.q
}

func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

type strSpan struct {
	ptr  unsafe.Pointer // *string
	a, n int            // in sbuf, or in the row
	row  bool
}

// addRowString queues the field at ptr to get bytes b[a:e] of the JSON
// text b: of the row being decoded when b is it (a span: see finishRow),
// else (a csv cell, a parquet string) a copy appended to sbuf.
func (s *scratch) addRowString(ptr unsafe.Pointer, b []byte, a, e int) {
	if s.row == nil || e == a {
		s.addString(ptr, b[a:e])
		return
	}
	s.strs = append(s.strs, strSpan{ptr, a, e - a, true})
	s.lo, s.hi, s.need = min(s.lo, a), max(s.hi, e), s.need+e-a
}

// addString queues the field at ptr to get bytes b: a span of the row
// being decoded when b is in it, else a copy appended to sbuf.
func (s *scratch) addString(ptr unsafe.Pointer, b []byte) {
	if len(b) > 0 && s.row != nil {
		if off := uintptr(unsafe.Pointer(unsafe.SliceData(b))) - uintptr(unsafe.Pointer(unsafe.SliceData(s.row))); off < uintptr(len(s.row)) {
			s.addRowString(ptr, s.row, int(off), int(off)+len(b))
			return
		}
	}
	a := len(s.sbuf)
	s.sbuf = append(s.sbuf, b...)
	s.strs = append(s.strs, strSpan{ptr, a, len(b), false})
}

// setStrings sets the queued string fields, in order (the last of a
// duplicated member wins), from one new string.
func (s *scratch) setStrings() {
	if len(s.strs) == 0 {
		return
	}
	all := string(s.sbuf)
	for _, sp := range s.strs {
		if sp.n == 0 {
			*(*string)(sp.ptr) = ""
		} else {
			*(*string)(sp.ptr) = all[sp.a : sp.a+sp.n]
		}
	}
	// Not cleared: the stale pointers keep at most this row's memory
	// alive until the next row overwrites them, and clearing costs a
	// write barrier each while the GC runs.
	s.strs = s.strs[:0]
}

func (s *scratch) resetStrings() {
	s.strs, s.sbuf, s.elems = s.strs[:0], s.sbuf[:0], s.elems[:0]
	s.lo, s.hi, s.need = int(^uint(0)>>1), 0, 0
}

// zero clears the value of type t at ptr (a JSON null into a struct),
// dropping the strings queued for it.
func (s *scratch) zero(t reflect.Type, ptr unsafe.Pointer) {
	reflect.NewAt(t, ptr).Elem().SetZero()
	lo, hi := uintptr(ptr), uintptr(ptr)+t.Size()
	k := 0
	for _, sp := range s.strs {
		if a := uintptr(sp.ptr); a < lo || a >= hi {
			s.strs[k] = sp
			k++
		}
	}
	clear(s.strs[k:])
	s.strs = s.strs[:k]
}

// span is an unknown member: its name (name unquoted, qname as JSON
// text) and its value, b[start:end] of the buffer at hand.
type span struct {
	name       string
	qname      []byte
	start, end int
}

// rspan is an unknown member of a JSON row kept whole: b[ns:ne] is its
// name as JSON text, b[vs:ve] its value.
type rspan struct{ ns, ne, vs, ve int }

func (s *scratch) intern(b []byte) string {
	if n, ok := s.names[string(b)]; ok {
		return n
	}
	n := string(b)
	if len(s.names) < 4096 {
		s.names[n] = n
	}
	return n
}

// sliceHeader is the memory layout of a slice.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// maxDepth bounds the nesting the direct scan follows (deeper values go to
// the slow path).
const maxDepth = 64

// decode reports false when the row must go to the slow path.
func (p *plan) decode(b []byte, v unsafe.Pointer, s *scratch) bool {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	if p.rootRaw {
		end, ok := skipValue(b, i, 0)
		if !ok || skipWS(b, end) != len(b) {
			return false
		}
		*(*[]byte)(v) = append([]byte(nil), b[i:end]...)
		return true
	}
	s.unknown, s.runk = s.unknown[:0], s.runk[:0]
	s.resetStrings()
	s.row = b
	end, ok := p.object(b, i, v, s, 0)
	s.row = nil
	if !ok || skipWS(b, end) != len(b) {
		return false
	}
	if p.rootMap && len(s.unknown) == 0 {
		*(*fieldsMap)(v) = fieldsMap{}
	}
	p.finishRow(v, b, end, s)
	return true
}

// finishRow sets the strings of the row b (its object ends at end) and its
// unknown members, from one new buffer: a copy of the part of b that holds
// the strings when they fill at least about half of it (so that a string
// is a slice of it), else the strings one after another; the unescaped
// strings; and the unknown members, when the row keeps them whole. Those
// are the copy's own bytes, the first changed to '{', when they are one
// run of members written as jsonv2 writes them (no space around ':' or
// ','), ending the object: as a file writes the columns a row type does
// not declare after those it does. A map of unknown members is built
// apart (setExtra).
func (p *plan) finishRow(v unsafe.Pointer, b []byte, end int, s *scratch) {
	var obj *[]byte
	x0, extraLen := -1, 0
	if len(s.runk) > 0 {
		obj = (*[]byte)(unsafe.Add(v, p.extra))
		if len(*obj) == 0 && trailingRun(b, end, s.runk) {
			x0 = s.runk[0].ns - 1
		} else {
			extraLen = rowExtraLen(*obj, s.runk)
		}
	}
	lo, hi, need := s.lo, s.hi, s.need
	if x0 >= 0 {
		lo, hi, need = min(lo, x0), end, need+end-x0
	}
	window := hi > lo && hi-lo <= 2*need+64
	size := len(s.sbuf) + extraLen
	if window {
		size += hi - lo
	} else {
		size += need
	}
	if size > 0 {
		var buf []byte
		pos := 0
		base := 0 // where the copy of the row's byte at 0 would be
		if window {
			// One allocation, clearing only what the copy does not fill
			// (append to a full slice always allocates; to nothing, it
			// would not).
			if n := size - (hi - lo); n == 0 {
				buf = append([]byte(nil), b[lo:hi]...)
			} else {
				buf = append(b[lo:hi:hi], make([]byte, n)...)
			}
			pos, base = hi-lo, -lo
			if x0 >= 0 {
				buf[x0-lo] = '{'
				*obj = buf[x0-lo : end-lo : end-lo]
			}
		} else {
			buf = make([]byte, size)
			for k, sp := range s.strs {
				if sp.row {
					s.strs[k].a = pos // base 0
					pos += copy(buf[pos:], b[sp.a:sp.a+sp.n])
				}
			}
			if x0 >= 0 {
				n := copy(buf[pos:], b[x0:end])
				buf[pos] = '{'
				*obj = buf[pos : pos+n : pos+n]
				pos += n
			}
		}
		sb := pos
		pos += copy(buf[pos:], s.sbuf)
		if extraLen > 0 {
			*obj = appendRowExtra(buf[pos:pos:pos+extraLen], *obj, b, s.runk)
		}
		all := unsafe.String(unsafe.SliceData(buf), len(buf))
		for _, sp := range s.strs {
			switch {
			case sp.n == 0:
				*(*string)(sp.ptr) = ""
			case sp.row:
				*(*string)(sp.ptr) = all[base+sp.a : base+sp.a+sp.n]
			default:
				*(*string)(sp.ptr) = all[sb+sp.a : sb+sp.a+sp.n]
			}
		}
	} else {
		for _, sp := range s.strs {
			*(*string)(sp.ptr) = ""
		}
	}
	s.strs = s.strs[:0]
	if len(s.unknown) > 0 {
		p.setExtra(v, b, s.unknown, 0)
	}
}

// trailingRun reports whether the unknown members of the JSON row b are
// one run of members that ends its object at end, each written as jsonv2
// writes a member it keeps whole (the name, ':', the value), one ','
// between them (see finishRow).
func trailingRun(b []byte, end int, unknown []rspan) bool {
	for k, u := range unknown {
		if u.vs != u.ne+1 || k > 0 && u.ns != unknown[k-1].ve+1 {
			return false
		}
	}
	last := unknown[len(unknown)-1].ve
	return last == end-1
}

// appendRowExtra is appendRawExtra for the members of a JSON row; rowExtraLen
// is its length.
func appendRowExtra(dst, obj, b []byte, unknown []rspan) []byte {
	dst = openObject(dst, obj)
	for k, u := range unknown {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = append(append(append(dst, b[u.ns:u.ne]...), ':'), b[u.vs:u.ve]...)
	}
	return append(dst, '}')
}

func rowExtraLen(obj []byte, unknown []rspan) int {
	n := len(trimmedObject(obj)) + 2 + len(unknown)
	for _, u := range unknown {
		n += u.ne - u.ns + 1 + u.ve - u.vs
	}
	return n
}

// object decodes the JSON object at b[i] == '{' into the struct at v (the
// row map of a root map plan: every member unknown) and returns the index
// after it; members the plan does not know are queued in s.unknown (or,
// kept whole, s.runk) when it keeps them.
func (p *plan) object(b []byte, i int, v unsafe.Pointer, s *scratch, depth int) (int, bool) {
	if depth > maxDepth {
		return 0, false
	}
	pos := s.pos[p.id]
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for k := 0; ; k++ { // k: member position
		if k >= len(pos) {
			pos = append(pos, posEntry{})
			s.pos[p.id] = pos
		}
		pe, ns := &pos[k], i
		// Rows of a file list their members in the same order: the name
		// at this position is most often the previous row's, compared
		// as bytes (with the ':' after it) without a scan.
		var ne, vs int
		var hit bool // whether the member starts with pe.q (in line: a call costs as much)
		if uint(len(pe.q)-1) < 24 && len(b)-i >= 24 {
			w := b[i : i+24 : i+24]
			hit = le64(w)&pe.m[0] == pe.w[0] && le64(w[8:])&pe.m[1] == pe.w[1] && le64(w[16:])&pe.m[2] == pe.w[2]
		} else {
			hit = pe.atEnd(b, i)
		}
		if hit {
			ne = i + len(pe.q) - 1
			vs = skipWS(b, ne+1)
		} else {
			if i >= len(b) || b[i] != '"' {
				return 0, false
			}
			var esc, hi, ok bool
			if ne, esc, hi, ok = scanString(b, i); !ok {
				return 0, false
			}
			name := b[i+1 : ne-1]
			if esc || hi && !utf8.Valid(name) {
				var err error
				if s.unq, err = jsontext.AppendUnquote(s.unq[:0], b[i:ne]); err != nil {
					return 0, false
				}
				name = s.unq
			}
			if pe.name != string(name) {
				n := s.intern(name)
				*pe = newPosEntry(n, p.field(n))
			}
			i = skipWS(b, ne)
			if i >= len(b) || b[i] != ':' {
				return 0, false
			}
			vs = skipWS(b, i+1)
		}
		f := pe.f
		var ok bool
		var ve int
		if f != nil {
			ve, ok = p.value(f, b, vs, unsafe.Add(v, f.offset), s, depth)
		} else {
			ve, ok = skipValue(b, vs, depth)
			if ok && p.extra >= 0 {
				if p.extraRaw {
					s.runk = append(s.runk, rspan{ns, ne, vs, ve})
				} else {
					s.unknown = append(s.unknown, span{pe.name, b[ns:ne], vs, ve})
				}
			}
		}
		if !ok {
			return 0, false
		}
		if ve < len(b) && b[ve] == ',' {
			i = skipWS(b, ve+1)
			continue
		}
		i = skipWS(b, ve)
		if i < len(b) && b[i] == ',' {
			i = skipWS(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		return 0, false
	}
}

// value decodes the JSON value at b[i] into the field f at ptr and returns
// the index after it.
func (p *plan) value(f *planField, b []byte, i int, ptr unsafe.Pointer, s *scratch, depth int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch f.kind {
	case setStruct:
		switch b[i] {
		case '{':
			return f.sub.object(b, i, ptr, s, depth+1)
		case 'n':
			end, ok := literal(b, i, "null")
			if ok {
				s.zero(f.typ, ptr)
			}
			return end, ok
		}
		return 0, false
	case setPtr:
		if b[i] == 'n' {
			end, ok := literal(b, i, "null")
			if ok {
				*(*unsafe.Pointer)(ptr) = nil
			}
			return end, ok
		}
		q := *(*unsafe.Pointer)(ptr)
		if q == nil {
			q = reflect.New(f.elem.typ).UnsafePointer()
			*(*unsafe.Pointer)(ptr) = q
		}
		return p.value(f.elem, b, i, q, s, depth)
	case setSlice:
		switch b[i] {
		case '[':
			return p.array(f, b, i, ptr, s, depth)
		case 'n':
			end, ok := literal(b, i, "null")
			if ok {
				*(*sliceHeader)(ptr) = sliceHeader{}
			}
			return end, ok
		}
		return 0, false
	}
	if f.kind == setString && b[i] == '"' {
		// One scan: a plain string is queued as it is.
		if ve := shortString(b, i); ve > 0 {
			s.addRowString(ptr, b, i+1, ve-1)
			return ve, true
		}
		ve, esc, hi, ok := scanString(b, i)
		if !ok {
			return 0, false
		}
		if body := b[i+1 : ve-1]; !esc && (!hi || utf8.Valid(body)) {
			s.addRowString(ptr, b, i+1, ve-1)
			return ve, true
		}
		return ve, p.set(f, ptr, b[i:ve], s)
	}
	if f.kind == setInt || f.kind == setUint || f.kind == setFloat {
		if ve, ok := fastNumber(f, b, i, ptr); ok {
			return ve, true
		}
	}
	ve, ok := skipValue(b, i, depth)
	if !ok || !p.set(f, ptr, b[i:ve], s) {
		return 0, false
	}
	return ve, true
}

// pow10 holds the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// fastNumber sets the 64-bit number field f at ptr from the JSON number at
// b[i] in one pass, for the common spellings: an integer of at most 18
// digits, or (into a float64) at most 15 digits with a fraction and no
// exponent, whose value float64 division gives exactly as
// strconv.ParseFloat rounds it (both operands are exact, and IEEE division
// rounds correctly). Anything else reports false, for the general path.
func fastNumber(f *planField, b []byte, i int, ptr unsafe.Pointer) (int, bool) {
	if f.bits != 64 {
		return 0, false
	}
	j := i
	neg := j < len(b) && b[j] == '-'
	if neg {
		j++
	}
	start := j
	var m uint64
	for j < len(b) && b[j]-'0' <= 9 {
		m = m*10 + uint64(b[j]-'0')
		j++
	}
	digits := j - start
	if digits == 0 || digits > 18 || digits > 1 && b[start] == '0' {
		return 0, false
	}
	frac := 0
	if j < len(b) && b[j] == '.' {
		if f.kind != setFloat {
			return 0, false
		}
		j++
		fs := j
		for j < len(b) && b[j]-'0' <= 9 {
			m = m*10 + uint64(b[j]-'0')
			j++
		}
		if frac = j - fs; frac == 0 || digits+frac > 15 {
			return 0, false
		}
	}
	if j < len(b) {
		switch b[j] {
		case '.', 'e', 'E', '+', '-':
			return 0, false
		}
	}
	switch f.kind {
	case setInt:
		n := int64(m)
		if neg {
			n = -n
		}
		*(*int64)(ptr) = n
	case setUint:
		if neg {
			return 0, false
		}
		*(*uint64)(ptr) = m
	case setFloat:
		if digits > 15 {
			return 0, false
		}
		x := float64(m) / pow10[frac]
		if neg {
			x = -x
		}
		*(*float64)(ptr) = x
	}
	return j, true
}

// array decodes the JSON array at b[i] == '[' into a new slice of exactly
// its length (counted first, so that queued strings point into the final
// backing array). The first pass records where each element is (and
// whether a string element is plain), so the second scans only elements
// that are not plain strings again.
func (p *plan) array(f *planField, b []byte, i int, ptr unsafe.Pointer, s *scratch, depth int) (int, bool) {
	if depth > maxDepth {
		return 0, false
	}
	base := len(s.elems) // nested arrays push their elements after ours
	end := 0
	j := skipWS(b, i+1)
	if j < len(b) && b[j] == ']' {
		end = j + 1
	} else {
		for {
			var e int
			plain := false
			if j < len(b) && b[j] == '"' {
				ne, esc, hi, ok := scanString(b, j)
				if !ok {
					return 0, false
				}
				e, plain = ne, !esc && (!hi || utf8.Valid(b[j+1:ne-1]))
			} else {
				ne, ok := skipValue(b, j, depth+1)
				if !ok {
					return 0, false
				}
				e = ne
			}
			s.elems = append(s.elems, elemSpan{j, e, plain})
			j = skipWS(b, e)
			if j < len(b) && b[j] == ',' {
				j = skipWS(b, j+1)
				continue
			}
			if j < len(b) && b[j] == ']' {
				end = j + 1
				break
			}
			return 0, false
		}
	}
	n := len(s.elems) - base
	data := f.newSlice(n)
	*(*sliceHeader)(ptr) = sliceHeader{data, n, n}
	for k := range n {
		el, at := s.elems[base+k], unsafe.Add(data, uintptr(k)*f.size)
		if el.plain && f.elem.kind == setString {
			s.addRowString(at, b, el.start+1, el.end-1)
			continue
		}
		if e, ok := p.value(f.elem, b, el.start, at, s, depth+1); !ok || e != el.end {
			return 0, false
		}
	}
	s.elems = s.elems[:base]
	return end, true
}

// elemSpan is where an array element is in the row: b[start:end].
type elemSpan struct {
	start, end int
	plain      bool // a string without escapes, valid UTF-8
}

// newSlice allocates the backing array of a slice of n elements of the
// slice field f (reflect.MakeSlice would allocate its header too).
func (f *planField) newSlice(n int) unsafe.Pointer {
	if f.mk != nil {
		return f.mk(n)
	}
	if n < len(f.arrays) {
		return reflect.New(f.arrays[n]).UnsafePointer()
	}
	return reflect.MakeSlice(f.typ, n, n).UnsafePointer()
}

// setExtra stores the unknown members (spans of b) in one new buffer: a
// JSON object, when the row keeps them whole (extraRaw), with the members
// it holds already first (a parquet row group's columns are read by
// several goroutines in turn, each of which may keep some: see
// Setter.ExpectUnknown); else in the row's map, the one there or a new one
// with room for hint members, or for these.
func (p *plan) setExtra(v unsafe.Pointer, b []byte, unknown []span, hint int) {
	if len(unknown) == 0 {
		return
	}
	if p.extraRaw {
		obj := (*[]byte)(unsafe.Add(v, p.extra))
		*obj = appendRawExtra(make([]byte, 0, rawExtraLen(*obj, unknown)), *obj, b, unknown)
		return
	}
	n := 0
	for _, u := range unknown {
		n += u.end - u.start
	}
	buf := make([]byte, 0, n)
	ptr := (*fieldsMap)(unsafe.Add(v, p.extra))
	m := *ptr
	if m == nil {
		m = make(fieldsMap, max(len(unknown), hint))
		*ptr = m
	}
	for _, u := range unknown {
		a := len(buf)
		buf = append(buf, b[u.start:u.end]...)
		m[u.name] = buf[a:len(buf):len(buf)]
	}
}

// appendRawExtra appends to dst the JSON object obj with the unknown
// members (spans of b) added, as jsonv2 adds each member to a
// jsontext.Value field tagged unknown: obj less its closing '}' (and the
// space around it), a ',' unless it then ends in '{' or ',', and the
// members, each its name and value as sent, then '}'. rawExtraLen is its
// length.
func appendRawExtra(dst, obj, b []byte, unknown []span) []byte {
	dst = openObject(dst, obj)
	for k, u := range unknown {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = append(append(append(dst, u.qname...), ':'), b[u.start:u.end]...)
	}
	return append(dst, '}')
}

func rawExtraLen(obj []byte, unknown []span) int {
	n := len(trimmedObject(obj)) + 2 + len(unknown)
	for _, u := range unknown {
		n += len(u.qname) + 1 + u.end - u.start
	}
	return n
}

// openObject appends the object obj without its closing '}' (and the
// space around it), then a ',' unless it ends in '{' or ','; or '{' for
// no object.
func openObject(dst, obj []byte) []byte {
	old := trimmedObject(obj)
	if len(old) == 0 {
		return append(dst, '{')
	}
	dst = append(dst, old...)
	if c := old[len(old)-1]; c != '{' && c != ',' {
		dst = append(dst, ',')
	}
	return dst
}

// trimmedObject is obj without its closing '}' and the space around it.
func trimmedObject(obj []byte) []byte {
	if len(obj) == 0 {
		return obj
	}
	obj = trimWSRight(obj)
	return trimWSRight(obj[:len(obj)-1])
}

func trimWSRight(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// setCSV sets the fields of the row at v from a csv record, as the JSON
// the record converts to would; false means use that JSON instead.
func (p *plan) setCSV(c *csvColumns, rec []string, v unsafe.Pointer, s *scratch) bool {
	if p.rootMap || p.rootRaw {
		return false
	}
	if s.csvCols != c {
		s.csvCols, s.csvFields = c, make([]*planField, len(c.header))
		for i, h := range c.header {
			s.csvFields[i] = p.field(h)
		}
	}
	s.unknown, s.ebuf = s.unknown[:0], s.ebuf[:0]
	s.resetStrings()
	for i, cell := range rec {
		if c.skip[i] {
			continue
		}
		f := s.csvFields[i]
		if f == nil {
			if p.extra < 0 {
				continue
			}
			a := len(s.ebuf)
			s.ebuf = c.appendUnknown(s.ebuf, i, cell)
			q := c.names[i]
			s.unknown = append(s.unknown, span{c.header[i], q[:len(q)-1], a, len(s.ebuf)})
			continue
		}
		if !p.cell(f, unsafe.Add(v, f.offset), cell, s) {
			return false
		}
	}
	s.setStrings()
	p.setExtra(v, s.ebuf, s.unknown, 0)
	return true
}

// cell sets the field f at ptr from a csv cell as the JSON the cell
// converts to (appendText) would.
func (p *plan) cell(f *planField, ptr unsafe.Pointer, cell string, s *scratch) bool {
	switch f.kind {
	case setString:
		if !utf8.ValidString(cell) {
			return false
		}
		*(*string)(ptr) = cell
		return true
	case setInt, setUint, setFloat, setBool:
		if cell == "" {
			return true // the zero value
		}
		return setText(f, ptr, cell)
	case setPtr:
		if f.nested() {
			break
		}
		if cell == "" {
			return true // nil, as a null is in the other formats
		}
		q := *(*unsafe.Pointer)(ptr)
		if q == nil {
			q = reflect.New(f.elem.typ).UnsafePointer()
			*(*unsafe.Pointer)(ptr) = q
		}
		return p.cell(f.elem, q, cell, s)
	case setOther:
		return false
	}
	// A JSON-encoded nested value.
	if cell == "" {
		return true // the zero value
	}
	if cell[0] != '{' && cell[0] != '[' {
		return false
	}
	return p.nestedText(f, ptr, unsafe.Slice(unsafe.StringData(cell), len(cell)), s)
}

// nestedText decodes a JSON-encoded nested value (a csv cell, a parquet
// string) into the field f at ptr.
func (p *plan) nestedText(f *planField, ptr unsafe.Pointer, b []byte, s *scratch) bool {
	end, ok := p.value(f, b, 0, ptr, s, 0)
	return ok && end == len(b)
}

// setText sets a scalar field from text (a csv cell) that must spell a
// value of its kind.
func setText(f *planField, ptr unsafe.Pointer, text string) bool {
	switch f.kind {
	case setInt:
		n, err := strconv.ParseInt(text, 10, f.bits)
		if err != nil || !isNumber(text) {
			return false
		}
		setNumber(f, ptr, n, 0, 0)
	case setUint:
		n, err := strconv.ParseUint(text, 10, f.bits)
		if err != nil || !isNumber(text) {
			return false
		}
		setNumber(f, ptr, 0, n, 0)
	case setFloat:
		x, err := strconv.ParseFloat(text, f.bits)
		if err != nil || !isNumber(text) {
			return false
		}
		setNumber(f, ptr, 0, 0, x)
	case setBool:
		b, ok := parseBoolCell(text)
		if !ok {
			return false
		}
		*(*bool)(ptr) = b
	default:
		return false
	}
	return true
}

// set stores the JSON value raw into the field at ptr.
func (p *plan) set(f *planField, ptr unsafe.Pointer, raw []byte, s *scratch) bool {
	if f.kind == setOther {
		return p.slow(raw, reflect.NewAt(f.typ, ptr).Interface()) == nil
	}
	if raw[0] == 'n' { // null: the zero value
		switch f.kind {
		case setString:
			s.addString(ptr, nil)
		case setBool:
			*(*bool)(ptr) = false
		default:
			setNumber(f, ptr, 0, 0, 0)
		}
		return true
	}
	switch f.kind {
	case setString:
		if raw[0] != '"' {
			return false
		}
		body := raw[1 : len(raw)-1]
		if !needsUnquote(body) {
			s.addString(ptr, body)
			return true
		}
		a := len(s.sbuf)
		var err error
		if s.sbuf, err = jsontext.AppendUnquote(s.sbuf, raw); err != nil {
			return false
		}
		s.strs = append(s.strs, strSpan{ptr, a, len(s.sbuf) - a, false})
	case setBool:
		switch raw[0] {
		case 't':
			*(*bool)(ptr) = true
		case 'f':
			*(*bool)(ptr) = false
		default:
			return false
		}
	case setInt:
		n, err := strconv.ParseInt(unsafe.String(&raw[0], len(raw)), 10, f.bits)
		if err != nil || raw[0] == '+' {
			return false
		}
		setNumber(f, ptr, n, 0, 0)
	case setUint:
		n, err := strconv.ParseUint(unsafe.String(&raw[0], len(raw)), 10, f.bits)
		if err != nil || raw[0] == '+' {
			return false
		}
		setNumber(f, ptr, 0, n, 0)
	case setFloat:
		if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
			return false
		}
		x, err := strconv.ParseFloat(unsafe.String(&raw[0], len(raw)), f.bits)
		if err != nil {
			return false
		}
		setNumber(f, ptr, 0, 0, x)
	}
	return true
}

func setNumber(f *planField, ptr unsafe.Pointer, i int64, u uint64, x float64) {
	switch f.kind {
	case setInt:
		switch f.bits {
		case 8:
			*(*int8)(ptr) = int8(i)
		case 16:
			*(*int16)(ptr) = int16(i)
		case 32:
			*(*int32)(ptr) = int32(i)
		default:
			*(*int64)(ptr) = i
		}
	case setUint:
		switch f.bits {
		case 8:
			*(*uint8)(ptr) = uint8(u)
		case 16:
			*(*uint16)(ptr) = uint16(u)
		case 32:
			*(*uint32)(ptr) = uint32(u)
		default:
			*(*uint64)(ptr) = u
		}
	case setFloat:
		if f.bits == 32 {
			*(*float32)(ptr) = float32(x)
		} else {
			*(*float64)(ptr) = x
		}
	}
}

// needsUnquote reports whether a JSON string body has escapes or bytes
// that are not plain valid UTF-8.
func needsUnquote(body []byte) bool {
	hi := false
	for _, c := range body {
		if c == '\\' {
			return true
		}
		hi = hi || c >= 0x80
	}
	return hi && !utf8.Valid(body)
}

const (
	lo8 = 0x0101010101010101
	hi8 = 0x8080808080808080
)

// hasZero has the top bit set in (at least) the first zero byte of x; a
// false positive only follows a true one, so it is exact as a test.
func hasZero(x uint64) uint64 { return (x - lo8) & ^x & hi8 }

// skipWS returns the index of the first byte at or after i that is not
// JSON whitespace. Compact JSON has none: one comparison decides.
func skipWS(b []byte, i int) int {
	if i < len(b) && b[i] > ' ' {
		return i
	}
	return skipWSLoop(b, i)
}

func skipWSLoop(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// scanString scans the JSON string starting at b[i] == '"' and returns the
// index after its closing quote, whether it has escapes and bytes >= 0x80.
func scanString(b []byte, i int) (end int, esc, hi, ok bool) {
	for i++; i < len(b); {
		// 8 bytes at a time: jump to the first quote, backslash, control
		// character or byte above 0x7f (a borrow can only mark bytes after
		// the first such byte, so the lowest mark is exact).
		for i+8 <= len(b) {
			if m := special(le64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1, esc, hi, true
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				return 0, false, false, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return 0, false, false, false
				}
				for _, h := range b[i+2 : i+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return 0, false, false, false
					}
				}
				i += 6
			default:
				return 0, false, false, false
			}
		case c < 0x20:
			return 0, false, false, false
		default:
			hi = hi || c >= 0x80
			i++
		}
	}
	return 0, false, false, false
}

// shortString returns the end of the JSON string at b[i] == '"' when it
// closes within 16 bytes of printable ASCII without '\\' (a plain string,
// which scanString would scan the same), else 0. It reads 17 bytes or
// returns 0.
func shortString(b []byte, i int) int {
	if len(b)-i < 17 {
		return 0
	}
	w := b[i+1 : i+17 : i+17] // one bounds check for both words
	if m := special(le64(w)); m != 0 {
		j := bits.TrailingZeros64(m) >> 3
		if w[j] == '"' {
			return i + 2 + j
		}
		return 0
	}
	if m := special(le64(w[8:])); m != 0 {
		j := 8 + bits.TrailingZeros64(m)>>3
		if w[j&15] == '"' { // j&15 == j, which the compiler then knows is in w
			return i + 2 + j
		}
	}
	return 0
}

// special marks (its top bit set) the first byte of x, at least, that a
// JSON string's scan stops at: '"', '\\', a control character or a byte
// above 0x7f (a borrow can only mark bytes after the first such byte, so
// the lowest mark is exact).
func special(x uint64) uint64 {
	return (x - lo8*0x20 | hasZero(x^(lo8*'"')) | hasZero(x^(lo8*'\\')) | x) & hi8
}

// skipString returns the end of the JSON string at b[i] == '"', checking
// its syntax (not its UTF-8).
func skipString(b []byte, i int) (int, bool) {
	if end := shortString(b, i); end > 0 {
		return end, true
	}
	end, _, _, ok := scanString(b, i)
	return end, ok
}

// skipValue returns the end of the JSON value starting at b[i], checking
// its syntax (strings may hold invalid UTF-8, as the SDK's options allow;
// duplicate names inside nested objects are allowed too).
func skipValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) || depth > maxDepth {
		return 0, false
	}
	switch c := b[i]; {
	case c == '"':
		return skipString(b, i)
	case c == '{' || c == '[':
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == closer {
			return i + 1, true
		}
		for {
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return 0, false
				}
				end, ok := skipString(b, i)
				if !ok {
					return 0, false
				}
				i = skipWS(b, end)
				if i >= len(b) || b[i] != ':' {
					return 0, false
				}
				i = skipWS(b, i+1)
			}
			end, ok := skipValue(b, i, depth+1)
			if !ok {
				return 0, false
			}
			i = skipWS(b, end)
			if i >= len(b) {
				return 0, false
			}
			if b[i] == closer {
				return i + 1, true
			}
			if b[i] != ',' {
				return 0, false
			}
			i = skipWS(b, i+1)
		}
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '-' || '0' <= c && c <= '9':
		return skipNumber(b, i)
	}
	return 0, false
}

// skipNumber returns the end of the JSON number at b[i] ('-' or a digit),
// checking it in one pass. Like isNumber on the run of number bytes there
// (digits, '-', '+', '.', 'e', 'E'), it refuses a run that does not end
// where the number does ("01", "1-2", "1e5.3").
func skipNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		d := i + 1
		if i = digits(b, d); i == d {
			return 0, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		if i = digits(b, d); i == d {
			return 0, false
		}
	}
	if i < len(b) {
		switch c := b[i]; {
		case '0' <= c && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
			return 0, false
		}
	}
	return i, true
}

// digits returns the index of the first byte at or after i that is not a
// digit.
func digits(b []byte, i int) int {
	for i < len(b) && b[i]-'0' <= 9 {
		i++
	}
	return i
}

func literal(b []byte, i int, lit string) (int, bool) {
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return i + len(lit), true
	}
	return 0, false
}

// The SDK's JSON rules for rows, set once by package lendgraph when it is
// initialized (before any of its code, or that of a package importing it,
// runs): its JSON decoder and its record types whose unmarshal methods
// decode exactly like their fields. The SDK's parquet package, which
// cannot reach into package lendgraph, decodes rows by the same rules.
var sdkCodec struct {
	slow    func([]byte, any) error
	trusted func(reflect.Type) bool
	// rowError converts a decoding error to the SDK's exported type.
	rowError func(*RowError) error
	// fields is the SDK's Fields type (see isRawObject).
	fields reflect.Type
}

// SetSDKCodec sets the SDK's JSON rules for rows; package lendgraph calls
// it from its init function, and nothing else may. fields is its Fields
// type, which must have the memory layout of a []byte holding a JSON
// object (see isRawObject).
func SetSDKCodec(slow func([]byte, any) error, trusted func(reflect.Type) bool, rowError func(*RowError) error, fields reflect.Type) {
	if fields.Size() != rawType.Size() || fields.Kind() != reflect.Struct || fields.NumField() != 1 || fields.Field(0).Type.Kind() != reflect.Slice || fields.Field(0).Type.Elem().Kind() != reflect.Uint8 {
		panic("formats: the SDK's Fields must be a struct holding one []byte")
	}
	sdkCodec.slow, sdkCodec.trusted, sdkCodec.rowError, sdkCodec.fields = slow, trusted, rowError, fields
}

// SDKRowDecoder is RowDecoder with the SDK's JSON rules.
func SDKRowDecoder[T any]() func() *RowDec[T] {
	return RowDecoder[T](sdkCodec.slow, sdkCodec.trusted(reflect.TypeFor[T]()))
}
