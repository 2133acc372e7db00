package formats

import (
	"math"
	"reflect"
	"unicode/utf8"
	"unsafe"

	"github.com/go-json-experiment/json/jsontext"
)

// Setter sets the fields of a row one typed value at a time, for formats
// whose values carry types (parquet): each value lands in its field as the
// JSON the value converts to would decode, or the setter reports false and
// the caller decodes the row from that JSON instead (RowDec.JSON), which
// then gives the result and words the error. A Setter belongs to one
// goroutine.
type Setter struct {
	p       *plan
	s       *scratch
	v       unsafe.Pointer
	unknown int // the unknown members a row has in all (ExpectUnknown)
}

// Setter returns d's setter, or nil when rows of T are always decoded from
// JSON (a map row type, or a type the plan does not decode).
func (d *RowDec[T]) Setter() *Setter {
	if d.plan == nil || d.plan.rootMap || d.plan.rootRaw {
		return nil
	}
	return &Setter{p: d.plan, s: d.s}
}

// Field is how one field of a row (or of a nested struct, or an element
// of a slice) is set.
type Field = planField

// FieldKind is what a Field holds.
type FieldKind uint8

// Field kinds.
const (
	FieldOther  FieldKind = iota // set only through JSON
	FieldString                  // a string
	FieldInt                     // a signed integer of Bits bits
	FieldUint                    // an unsigned integer of Bits bits
	FieldFloat                   // a float of Bits bits
	FieldBool                    // a bool
	FieldStruct                  // a struct: Sub names its fields
	FieldPtr                     // a pointer: Elem is the pointee (Deref allocates it)
	FieldSlice                   // a slice: Elem is the element (MakeSlice allocates them)
)

// Kind is what f holds.
func (f *Field) Kind() FieldKind { return FieldKind(f.kind) }

// Bits is the size of a number field.
func (f *Field) Bits() int { return f.bits }

// Sub is the field called name (or folding alike) of a struct field, nil
// when it has none.
func (f *Field) Sub(name string) *Field {
	if f.kind != setStruct {
		return nil
	}
	return f.sub.field(name)
}

// Elem is the pointee of a pointer field, the element of a slice field.
func (f *Field) Elem() *Field { return f.elem }

// At is the address of f in the struct at base.
func (f *Field) At(base unsafe.Pointer) unsafe.Pointer { return unsafe.Add(base, f.offset) }

// Field is the row's field called name (or, failing that, whose name
// folds alike: see plan.field), nil when the row type has none.
func (st *Setter) Field(name string) *Field { return st.p.field(name) }

// KeepsUnknown reports whether the row type keeps columns it does not
// declare (see Unknown).
func (st *Setter) KeepsUnknown() bool { return st.p.extra >= 0 }

// Begin starts the row at v, whose fields this setter sets must be zero
// (another setter may have set others: a parquet row group's columns are
// read by several goroutines in turn).
func (st *Setter) Begin(v unsafe.Pointer) {
	st.v = v
	st.s.unknown, st.s.ebuf = st.s.unknown[:0], st.s.ebuf[:0]
	st.s.resetStrings()
}

// End stores the row's strings and unknown members.
func (st *Setter) End() {
	st.s.setStrings()
	st.p.setExtra(st.v, st.s.ebuf, st.s.unknown, st.unknown)
	st.v = nil
}

// ExpectUnknown says that a row has n unknown members in all, of which
// this setter may keep only some: the setter that keeps a row's first
// ones makes its map with room for n, and the others add theirs to it.
func (st *Setter) ExpectUnknown(n int) { st.unknown = n }

// UnknownBuffer is the row's buffer of unknown members: append a column's
// JSON value to it and pass the result to KeepUnknown.
func (st *Setter) UnknownBuffer() []byte { return st.s.ebuf }

// KeepUnknown keeps buf[start:], appended to UnknownBuffer, as the value
// of the column called name, which the row type does not declare (when it
// keeps unknown members).
func (st *Setter) KeepUnknown(name string, buf []byte, start int) {
	st.s.ebuf = buf
	if st.p.extra < 0 {
		return
	}
	q := st.s.quoted[name]
	if q == nil {
		if st.s.quoted == nil {
			st.s.quoted = map[string][]byte{}
		}
		q, _ = jsontext.AppendQuote(nil, name)
		if len(st.s.quoted) < 4096 {
			st.s.quoted[name] = q
		}
	}
	st.s.unknown = append(st.s.unknown, span{name, q, start, len(buf)})
}

// Deref returns the pointee of the pointer field f at ptr, allocated when
// nil.
func (st *Setter) Deref(f *Field, ptr unsafe.Pointer) unsafe.Pointer {
	q := *(*unsafe.Pointer)(ptr)
	if q == nil {
		q = reflect.New(f.elem.typ).UnsafePointer()
		*(*unsafe.Pointer)(ptr) = q
	}
	return q
}

// MakeSlice sets the slice field f at ptr to n new elements (an empty,
// non-nil slice for 0) and returns the address of the first; element i is
// at Index(data, i).
func (st *Setter) MakeSlice(f *Field, ptr unsafe.Pointer, n int) unsafe.Pointer {
	data := reflect.MakeSlice(f.typ, n, n).UnsafePointer()
	*(*sliceHeader)(ptr) = sliceHeader{data, n, n}
	return data
}

// Index is the address of element i of the slice field f whose elements
// are at data.
func (f *Field) Index(data unsafe.Pointer, i int) unsafe.Pointer {
	return unsafe.Add(data, uintptr(i)*f.size)
}

// target follows pointers to the scalar a value sets, allocating them.
func (st *Setter) target(f *Field, ptr unsafe.Pointer) (*Field, unsafe.Pointer) {
	for f.kind == setPtr {
		ptr = st.Deref(f, ptr)
		f = f.elem
	}
	return f, ptr
}

// String sets a string field (through pointers) to text b; false when f
// is not a string or b is not valid UTF-8.
func (st *Setter) String(f *Field, ptr unsafe.Pointer, b []byte) bool {
	if f.kind != setString && (f.kind != setPtr || f.elem.kind != setString) || !utf8.Valid(b) {
		return false
	}
	_, ptr = st.target(f, ptr)
	st.s.addString(ptr, b)
	return true
}

// Int sets an integer or float64 field (through pointers) to n; false when
// n does not fit it.
func (st *Setter) Int(f *Field, ptr unsafe.Pointer, n int64) bool {
	g := f
	for g.kind == setPtr {
		g = g.elem
	}
	switch {
	case g.kind == setInt && (g.bits == 64 || n >= -1<<(g.bits-1) && n < 1<<(g.bits-1)):
	case g.kind == setUint && n >= 0 && (g.bits == 64 || n < 1<<g.bits):
	case g.kind == setFloat && g.bits == 64 && n > -1<<53 && n < 1<<53:
	default:
		return false
	}
	f, ptr = st.target(f, ptr)
	setNumber(f, ptr, n, uint64(n), float64(n))
	return true
}

// Uint sets an integer or float64 field (through pointers) to n; false
// when n does not fit it.
func (st *Setter) Uint(f *Field, ptr unsafe.Pointer, n uint64) bool {
	if n <= math.MaxInt64 {
		return st.Int(f, ptr, int64(n))
	}
	g := f
	for g.kind == setPtr {
		g = g.elem
	}
	if g.kind != setUint || g.bits != 64 {
		return false
	}
	f, ptr = st.target(f, ptr)
	setNumber(f, ptr, 0, n, 0)
	return true
}

// Float sets a float field of the same size (through pointers) to x, a
// value of bits bits; false for another field, NaN or an infinity.
func (st *Setter) Float(f *Field, ptr unsafe.Pointer, x float64, bits int) bool {
	g := f
	for g.kind == setPtr {
		g = g.elem
	}
	if g.kind != setFloat || g.bits != bits || math.IsNaN(x) || math.IsInf(x, 0) {
		return false
	}
	f, ptr = st.target(f, ptr)
	setNumber(f, ptr, 0, 0, x)
	return true
}

// Bool sets a bool field (through pointers); false for another field.
func (st *Setter) Bool(f *Field, ptr unsafe.Pointer, b bool) bool {
	if f.kind != setBool && (f.kind != setPtr || f.elem.kind != setBool) {
		return false
	}
	_, ptr = st.target(f, ptr)
	*(*bool)(ptr) = b
	return true
}

// JSON decodes the JSON value raw into field f at ptr (a JSON-encoded
// nested field, or a value built as JSON); false when it does not decode
// there.
func (st *Setter) JSON(f *Field, ptr unsafe.Pointer, raw []byte) bool {
	return st.p.nestedText(f, ptr, raw, st.s)
}

// Nested reports whether f holds a JSON object or array (a struct, a
// slice, or a pointer to one).
func (f *Field) Nested() bool { return f.nested() }
