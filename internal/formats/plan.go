package formats

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/parquet-go/parquet-go"
)

// RowDecoder returns a factory of row decoders for T, one per worker
// goroutine. For struct rows of plain fields (and map[string]json.RawMessage
// rows) it scans the JSON object once, sets scalar fields directly and
// keeps unknown members as sub-slices of one per-row buffer with interned
// names; csv records set scalar fields straight from their cells. Anything
// it does not handle exactly as slow would (escapes that do not unquote
// cleanly, a type mismatch, invalid JSON, unusual tags, a row type with its
// own unmarshal methods unless trusted) goes to slow, which decodes the
// whole row as JSON: the result and every error are slow's.
//
// slow decodes a whole JSON value into a pointer; trusted means T's own
// unmarshal methods (if any) decode exactly like its fields would.
func RowDecoder[T any](slow func([]byte, any) error, trusted bool) func() *RowDec[T] {
	p := newPlan(reflect.TypeFor[T](), trusted)
	if p != nil {
		p.slow = slow
	}
	return func() *RowDec[T] {
		return &RowDec[T]{plan: p, slow: slow, s: &scratch{names: map[string]string{}}}
	}
}

// RowDec decodes rows into T on one worker goroutine.
type RowDec[T any] struct {
	plan *plan // nil: always slow
	slow func([]byte, any) error
	s    *scratch
	buf  []byte
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
	if d.buf, bad = c.appendJSON(d.buf[:0], rec); bad >= 0 {
		return fmt.Errorf("csv: row %d, column %q: %q is not a valid %s", row, c.header[bad], rec[bad], kindName[c.kinds[bad]])
	}
	if err := d.JSON(d.buf, v); err != nil {
		return fmt.Errorf("csv: row %d: %w", row, err)
	}
	return nil
}

// parquet decodes row number n of row group g into v.
func (d *RowDec[T]) parquet(c *pqColumns, g int, row parquet.Row, n int64, v *T) error {
	if d.plan != nil && d.plan.setParquet(c, row, unsafe.Pointer(v), d.s) {
		return nil
	}
	var zero T
	*v = zero
	var err error
	if d.buf, err = c.appendJSON(d.buf[:0], g, row, n); err != nil {
		return err
	}
	if err := d.JSON(d.buf, v); err != nil {
		return fmt.Errorf("parquet: row %d: %w", n, err)
	}
	return nil
}

type setKind uint8

const (
	setOther setKind = iota // decoded by slow into the field
	setString
	setInt
	setUint
	setFloat
	setBool
)

type planField struct {
	offset uintptr
	typ    reflect.Type
	kind   setKind
	bits   int
}

type plan struct {
	fields  map[string]*planField
	extra   int // offset of the unknown-members map, or -1
	rootMap bool
	slow    func([]byte, any) error
}

var fieldsType = reflect.TypeFor[map[string]json.RawMessage]()

func hasUnmarshaler(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	for _, m := range []string{"UnmarshalJSON", "UnmarshalJSONFrom", "UnmarshalText"} {
		if _, ok := pt.MethodByName(m); ok {
			return true
		}
	}
	return false
}

// newPlan returns nil when t is not a type the plan decodes exactly as the
// slow path does.
func newPlan(t reflect.Type, trusted bool) *plan {
	if t.Kind() == reflect.Map && t.ConvertibleTo(fieldsType) && t.Key() == fieldsType.Key() && t.Elem() == fieldsType.Elem() {
		if !trusted && hasUnmarshaler(t) {
			return nil
		}
		return &plan{extra: 0, rootMap: true}
	}
	if t.Kind() != reflect.Struct || !trusted && hasUnmarshaler(t) {
		return nil
	}
	p := &plan{fields: map[string]*planField{}, extra: -1}
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
			if p.extra >= 0 || f.Type.Kind() != reflect.Map || !f.Type.ConvertibleTo(fieldsType) ||
				f.Type.Key() != fieldsType.Key() || f.Type.Elem() != fieldsType.Elem() || hasUnmarshaler(f.Type) {
				return nil
			}
			p.extra = int(f.Offset)
			continue
		}
		if !hasTag || name == "" {
			name = f.Name
		}
		if _, dup := p.fields[name]; dup {
			return nil
		}
		pf := &planField{offset: f.Offset, typ: f.Type}
		if !hasUnmarshaler(f.Type) {
			switch f.Type.Kind() {
			case reflect.String:
				pf.kind = setString
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
				pf.kind, pf.bits = setInt, f.Type.Bits()
			case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
				pf.kind, pf.bits = setUint, f.Type.Bits()
			case reflect.Float32, reflect.Float64:
				pf.kind, pf.bits = setFloat, f.Type.Bits()
			case reflect.Bool:
				pf.kind = setBool
			}
		}
		p.fields[name] = pf
	}
	return p
}

// scratch is one worker's reusable state.
type scratch struct {
	names   map[string]string // interned unknown member names
	unknown []span
	// pos remembers, per member position, the last name seen there and its
	// field: rows of one file list their members in the same order.
	pos []posEntry
	// csvFields maps the columns of csvCols to fields.
	csvCols   *csvColumns
	csvFields []*planField
	pqCols    *pqColumns
	pqFields  []*planField
	// A row's string fields are built in sbuf and made one string at the
	// end of the row (one allocation a row, not one a field).
	sbuf []byte
	strs []strSpan
	ebuf []byte
}

type posEntry struct {
	name string
	f    *planField
}

type strSpan struct {
	ptr  unsafe.Pointer // *string
	a, n int            // in sbuf
}

// addString queues the field at ptr to get bytes b (appended to sbuf).
func (s *scratch) addString(ptr unsafe.Pointer, b []byte) {
	a := len(s.sbuf)
	s.sbuf = append(s.sbuf, b...)
	s.strs = append(s.strs, strSpan{ptr, a, len(b)})
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
	clear(s.strs)
	s.strs = s.strs[:0]
}

func (s *scratch) resetStrings() {
	clear(s.strs)
	s.strs, s.sbuf = s.strs[:0], s.sbuf[:0]
}

type span struct {
	name       string
	start, end int
}

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

// decode reports false when the row must go to the slow path.
func (p *plan) decode(b []byte, v unsafe.Pointer, s *scratch) bool {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipWS(b, i+1)
	s.unknown = s.unknown[:0]
	s.resetStrings()
	var unq []byte
	k := 0 // member position
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			if i >= len(b) || b[i] != '"' {
				return false
			}
			ne, esc, hi, ok := scanString(b, i)
			if !ok {
				return false
			}
			name := b[i+1 : ne-1]
			if esc || hi && !utf8.Valid(name) {
				var err error
				if unq, err = jsontext.AppendUnquote(unq[:0], b[i:ne]); err != nil {
					return false
				}
				name = unq
			}
			i = skipWS(b, ne)
			if i >= len(b) || b[i] != ':' {
				return false
			}
			vs := skipWS(b, i+1)
			ve, ok := skipValue(b, vs, 0)
			if !ok {
				return false
			}
			if k >= len(s.pos) {
				s.pos = append(s.pos, posEntry{})
			}
			pe := &s.pos[k]
			if pe.name != string(name) {
				*pe = posEntry{s.intern(name), p.fields[string(name)]}
			}
			k++
			if f := pe.f; f != nil {
				if !p.set(f, unsafe.Add(v, f.offset), b[vs:ve], s) {
					return false
				}
			} else if p.extra >= 0 {
				s.unknown = append(s.unknown, span{pe.name, vs, ve})
			}
			i = skipWS(b, ve)
			if i < len(b) && b[i] == ',' {
				i = skipWS(b, i+1)
				continue
			}
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			return false
		}
	}
	if skipWS(b, i) != len(b) {
		return false
	}
	if p.rootMap && len(s.unknown) == 0 {
		*(*map[string]json.RawMessage)(v) = map[string]json.RawMessage{}
	}
	s.setStrings()
	p.setExtra(v, b, s.unknown)
	return true
}

// setExtra stores the unknown members (spans of b) in one new buffer.
func (p *plan) setExtra(v unsafe.Pointer, b []byte, unknown []span) {
	if len(unknown) == 0 {
		return
	}
	n := 0
	for _, u := range unknown {
		n += u.end - u.start
	}
	buf := make([]byte, 0, n)
	m := make(map[string]json.RawMessage, len(unknown))
	for _, u := range unknown {
		a := len(buf)
		buf = append(buf, b[u.start:u.end]...)
		m[u.name] = buf[a:len(buf):len(buf)]
	}
	*(*map[string]json.RawMessage)(unsafe.Add(v, p.extra)) = m
}

// setParquet sets the fields of the row at v from a parquet row, as the
// JSON the row converts to would; false means use that JSON instead.
func (p *plan) setParquet(c *pqColumns, row parquet.Row, v unsafe.Pointer, s *scratch) bool {
	if p.rootMap {
		return false
	}
	if s.pqCols != c {
		s.pqCols, s.pqFields = c, make([]*planField, len(c.cols))
		for i, col := range c.cols {
			s.pqFields[i] = p.fields[col.key]
		}
	}
	s.unknown, s.ebuf = s.unknown[:0], s.ebuf[:0]
	s.resetStrings()
	for _, val := range row {
		i := val.Column()
		if i < 0 || i >= len(c.cols) {
			return false
		}
		col := &c.cols[i]
		if col.skip {
			continue
		}
		f := s.pqFields[i]
		if f == nil {
			if p.extra < 0 {
				continue
			}
			a := len(s.ebuf)
			var err error
			if s.ebuf, err = col.conv(s.ebuf, val); err != nil {
				return false
			}
			s.unknown = append(s.unknown, span{col.key, a, len(s.ebuf)})
			continue
		}
		if val.IsNull() {
			continue // the zero value
		}
		ptr := unsafe.Add(v, f.offset)
		switch {
		case f.kind == setString && col.direct == dString:
			b := val.ByteArray()
			if !utf8.Valid(b) {
				return false
			}
			s.addString(ptr, b)
		case f.kind == setInt && col.direct == dInt:
			n := val.Int64()
			if val.Kind() == parquet.Int32 {
				n = int64(val.Int32())
			}
			if f.bits < 64 && (n < -1<<(f.bits-1) || n >= 1<<(f.bits-1)) {
				return false
			}
			setNumber(f, ptr, n, 0, 0)
		case f.kind == setFloat && f.bits == 64 && col.direct == dDouble:
			x := val.Double()
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return false
			}
			*(*float64)(ptr) = x
		case f.kind == setBool && col.direct == dBool:
			*(*bool)(ptr) = val.Boolean()
		default:
			return false
		}
	}
	s.setStrings()
	p.setExtra(v, s.ebuf, s.unknown)
	return true
}

// setCSV sets the fields of the row at v from a csv record, as the JSON
// the record converts to would; false means use that JSON instead.
func (p *plan) setCSV(c *csvColumns, rec []string, v unsafe.Pointer, s *scratch) bool {
	if p.rootMap {
		return false
	}
	if s.csvCols != c {
		s.csvCols, s.csvFields = c, make([]*planField, len(c.header))
		for i, h := range c.header {
			s.csvFields[i] = p.fields[h]
		}
	}
	s.unknown, s.ebuf = s.unknown[:0], s.ebuf[:0]
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
			s.ebuf = appendInferred(s.ebuf, cell)
			s.unknown = append(s.unknown, span{c.header[i], a, len(s.ebuf)})
			continue
		}
		if cell == "" && f.kind != setOther {
			continue // the zero value
		}
		ptr := unsafe.Add(v, f.offset)
		switch f.kind {
		case setString:
			if !utf8.ValidString(cell) {
				return false
			}
			*(*string)(ptr) = cell
		case setInt:
			n, err := strconv.ParseInt(cell, 10, f.bits)
			if err != nil || !isNumber(cell) {
				return false
			}
			setNumber(f, ptr, n, 0, 0)
		case setUint:
			n, err := strconv.ParseUint(cell, 10, f.bits)
			if err != nil || !isNumber(cell) {
				return false
			}
			setNumber(f, ptr, 0, n, 0)
		case setFloat:
			x, err := strconv.ParseFloat(cell, f.bits)
			if err != nil || !isNumber(cell) {
				return false
			}
			setNumber(f, ptr, 0, 0, x)
		case setBool:
			b, err := strconv.ParseBool(cell)
			if err != nil {
				return false
			}
			*(*bool)(ptr) = b
		default:
			return false
		}
	}
	p.setExtra(v, s.ebuf, s.unknown)
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
		s.strs = append(s.strs, strSpan{ptr, a, len(s.sbuf) - a})
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

func skipWS(b []byte, i int) int {
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
			x := binary.LittleEndian.Uint64(b[i:])
			m := (x - lo8*0x20 | hasZero(x^(lo8*'"')) | hasZero(x^(lo8*'\\')) | x) & hi8
			if m != 0 {
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

// skipValue returns the end of the JSON value starting at b[i], checking
// its syntax (strings may hold invalid UTF-8, as the SDK's options allow;
// duplicate names inside nested objects are allowed too).
func skipValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) || depth > 64 {
		return 0, false
	}
	switch c := b[i]; {
	case c == '"':
		end, _, _, ok := scanString(b, i)
		return end, ok
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
				end, _, _, ok := scanString(b, i)
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
		j := i
		for j < len(b) && (b[j] == '-' || b[j] == '+' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || '0' <= b[j] && b[j] <= '9') {
			j++
		}
		return j, isNumber(unsafe.String(&b[i], j-i))
	}
	return 0, false
}

func literal(b []byte, i int, lit string) (int, bool) {
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return i + len(lit), true
	}
	return 0, false
}
