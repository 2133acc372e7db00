package formats

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"runtime"
	"strconv"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"
)

// Parquet reads a parquet file one row group at a time. Its columns must be
// top-level (the API writes nested fields as JSON strings). Each row
// becomes one JSON object: integers, floats and booleans as JSON numbers
// and booleans; DECIMAL columns scaled; DATE and TIMESTAMP as strings;
// UUID formatted; strings quoted, except JSON-annotated columns and
// JSON-encoded strings of the row type's nested fields, which are
// inlined. The file is opened (and its footer checked) before any row: a
// corrupt file is an error, never a panic.
func Parquet(r io.ReaderAt, size int64, schema Schema) Producer {
	return func(e *emitter) error {
		f, err := parquet.OpenFile(r, size, parquet.SkipBloomFilters(true), parquet.SkipPageIndex(true))
		if err != nil {
			return fmt.Errorf("parquet: not a readable parquet file: %w", err)
		}
		list, err := parquetColumns(f.Schema(), schema)
		if err != nil {
			return err
		}
		cols := &pqColumns{list}
		if len(f.RowGroups()) == 0 {
			return nil
		}
		var chunks []parquet.ColumnChunk
		for c, cc := range f.RowGroups()[0].ColumnChunks() {
			if !list[c].skip || c == len(list)-1 && len(chunks) == 0 {
				chunks = append(chunks, cc) // at least one column, to count rows
			}
		}
		// Row groups are decoded in parallel on the workers, in file order,
		// reading only the columns the row type needs.
		for g, rg := range f.RowGroups() {
			proj := projected{rg, chunks}
			if g > 0 {
				proj.chunks = make([]parquet.ColumnChunk, 0, len(chunks))
				for _, cc := range chunks {
					proj.chunks = append(proj.chunks, rg.ColumnChunks()[cc.Column()])
				}
			}
			run := func(e *emitter) error { return readRowGroup(proj, g, cols, make([]parquet.Row, 256), e) }
			// A worker decoding ahead may buffer (workers-1)/workers of a
			// row group (enough to keep every worker busy), at most
			// maxAhead batches (to bound memory for wide rows).
			w := int64(max(runtime.GOMAXPROCS(0), 1))
			if !e.later(run, rg.NumRows(), int(min((rg.NumRows()/batchRows+1)*(w-1)/w, maxAhead))+1) {
				return errStopped
			}
		}
		return nil
	}
}

// ParquetInFlight bounds the row groups queued behind the one being
// yielded: with the one a worker decodes ahead, at most three row groups
// of rows exist at once.
const ParquetInFlight = 1

// maxAhead bounds the batches a parquet worker decodes ahead of the reader.
const maxAhead = 16

// projected is a row group narrowed to some of its columns.
type projected struct {
	parquet.RowGroup
	chunks []parquet.ColumnChunk
}

func (p projected) ColumnChunks() []parquet.ColumnChunk { return p.chunks }

func readRowGroup(rg parquet.RowGroup, g int, cols *pqColumns, buf []parquet.Row, e *emitter) error {
	rr := parquet.NewRowGroupRowReader(rg)
	defer rr.Close()
	for {
		n, err := rr.ReadRows(buf)
		// The emitter runs on a worker and decodes each batch before
		// returning, so the rows (reused by the next read) are done with.
		if n > 0 && !e.parquetRows(cols, g, buf[:n]) {
			return errStopped
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("parquet: row group %d, near row %d: %w", g, e.next, err)
		}
	}
}

// pqColumns are a file's columns as the row type sees them.
type pqColumns struct{ cols []column }

// appendJSON appends the JSON object of row number n (of row group g).
func (c *pqColumns) appendJSON(out []byte, g int, row parquet.Row, n int64) ([]byte, error) {
	cols := c.cols
	out = append(out, '{')
	first := true
	for _, v := range row {
		c := v.Column()
		if c < 0 || c >= len(cols) {
			return out, fmt.Errorf("parquet: row %d: value of unknown column %d", n, c)
		}
		if cols[c].skip || v.IsNull() && cols[c].kind != Unknown {
			continue // a typed field keeps its zero value
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, cols[c].name...)
		var err error
		if out, err = cols[c].conv(out, v); err != nil {
			return out, fmt.Errorf("parquet: row %d (row group %d), column %s: %w", n, g, cols[c].name[:len(cols[c].name)-1], err)
		}
	}
	return append(out, '}'), nil
}

type column struct {
	key    string // the name
	direct direct // how a value sets a field of the matching kind without JSON
	name   []byte // quoted, with the colon
	kind   Kind   // of the row type's field; Unknown when it has none
	skip   bool   // the row type neither has the field nor keeps unknown ones
	conv   func(dst []byte, v parquet.Value) ([]byte, error)
}

func parquetColumns(s *parquet.Schema, schema Schema) ([]column, error) {
	var cols []column
	for _, f := range s.Fields() {
		if !f.Leaf() || f.Repeated() {
			return nil, fmt.Errorf("parquet: column %q is nested or repeated; delivery files hold nested fields as JSON strings", f.Name())
		}
		name, _ := jsontext.AppendQuote(nil, f.Name())
		k, known := schema[f.Name()]
		cols = append(cols, column{key: f.Name(), direct: directOf(f.Type()), name: append(name, ':'), kind: k, conv: converter(f.Type(), k),
			skip: !known && !schema.keepsUnknown() || f.Name() == ""})
	}
	return cols, nil
}

func converter(t parquet.Type, k Kind) func([]byte, parquet.Value) ([]byte, error) {
	lt := t.LogicalType()
	var ct deprecated.ConvertedType = -1
	if p := t.ConvertedType(); p != nil {
		ct = *p
	}
	if lt != nil {
		switch l := lt.Value.(type) {
		case *format.DecimalType:
			return decimalConv(t.Kind(), int(l.Scale))
		case *format.DateType:
			return func(dst []byte, v parquet.Value) ([]byte, error) {
				if v.IsNull() {
					return append(dst, "null"...), nil
				}
				d := time.Unix(int64(v.Int32())*86400, 0).UTC().Format(time.DateOnly)
				return strconv.AppendQuote(dst, d), nil
			}
		case *format.TimestampType:
			unit := time.Millisecond
			switch l.Unit.Value.(type) {
			case *format.MicroSeconds:
				unit = time.Microsecond
			case *format.NanoSeconds:
				unit = time.Nanosecond
			}
			return func(dst []byte, v parquet.Value) ([]byte, error) {
				if v.IsNull() {
					return append(dst, "null"...), nil
				}
				ts := time.Unix(0, 0).Add(time.Duration(v.Int64()) * unit).UTC()
				return strconv.AppendQuote(dst, ts.Format(time.RFC3339Nano)), nil
			}
		case *format.UUIDType:
			return func(dst []byte, v parquet.Value) ([]byte, error) {
				if v.IsNull() {
					return append(dst, "null"...), nil
				}
				b := v.ByteArray()
				if len(b) != 16 {
					return dst, fmt.Errorf("UUID of %d bytes", len(b))
				}
				h := fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
				return strconv.AppendQuote(dst, h), nil
			}
		case *format.JsonType:
			return jsonConv(k)
		}
	}
	switch ct {
	case deprecated.Json:
		return jsonConv(k)
	}
	switch t.Kind() {
	case parquet.Boolean:
		return func(dst []byte, v parquet.Value) ([]byte, error) {
			if v.IsNull() {
				return append(dst, "null"...), nil
			}
			return strconv.AppendBool(dst, v.Boolean()), nil
		}
	case parquet.Int32, parquet.Int64:
		unsigned := false
		if lt != nil {
			if it, ok := lt.Value.(*format.IntType); ok && !it.IsSigned {
				unsigned = true
			}
		}
		return func(dst []byte, v parquet.Value) ([]byte, error) {
			switch {
			case v.IsNull():
				return append(dst, "null"...), nil
			case unsigned && v.Kind() == parquet.Int64:
				return strconv.AppendUint(dst, v.Uint64(), 10), nil
			case unsigned:
				return strconv.AppendUint(dst, uint64(v.Uint32()), 10), nil
			case v.Kind() == parquet.Int32:
				return strconv.AppendInt(dst, int64(v.Int32()), 10), nil
			}
			return strconv.AppendInt(dst, v.Int64(), 10), nil
		}
	case parquet.Float, parquet.Double:
		bits := 64
		if t.Kind() == parquet.Float {
			bits = 32
		}
		return func(dst []byte, v parquet.Value) ([]byte, error) {
			if v.IsNull() {
				return append(dst, "null"...), nil
			}
			x := v.Double()
			if bits == 32 {
				x = float64(v.Float())
			}
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return append(dst, "null"...), nil
			}
			return appendFloat(dst, x, bits), nil
		}
	case parquet.ByteArray:
		if lt == nil && ct == -1 || lt != nil && isStringish(lt) || ct == deprecated.UTF8 || ct == deprecated.Enum {
			return func(dst []byte, v parquet.Value) ([]byte, error) {
				if v.IsNull() {
					return append(dst, "null"...), nil
				}
				if k == Nested || k == Unknown {
					// Nested fields arrive as JSON-encoded strings.
					if b := v.ByteArray(); isJSONComposite(string(b)) {
						return append(dst, b...), nil
					}
				}
				out, _ := jsontext.AppendQuote(dst, v.ByteArray())
				return out, nil
			}
		}
	}
	// Anything else (INT96, BSON, fixed-length bytes): base64 of the bytes
	// for byte types, the library's text otherwise.
	return func(dst []byte, v parquet.Value) ([]byte, error) {
		if v.IsNull() {
			return append(dst, "null"...), nil
		}
		switch v.Kind() {
		case parquet.ByteArray, parquet.FixedLenByteArray:
			return strconv.AppendQuote(dst, base64.StdEncoding.EncodeToString(v.ByteArray())), nil
		}
		return strconv.AppendQuote(dst, v.String()), nil
	}
}

// direct is a column whose values set a field without JSON in between.
type direct uint8

const (
	dNone   direct = iota
	dString        // text: a string field gets its bytes
	dInt           // signed integer, no logical type but INT
	dDouble        // plain DOUBLE
	dBool          // plain BOOLEAN
)

func directOf(t parquet.Type) direct {
	lt := t.LogicalType()
	var ct deprecated.ConvertedType = -1
	if p := t.ConvertedType(); p != nil {
		ct = *p
	}
	plain := lt == nil && ct == -1
	switch t.Kind() {
	case parquet.Boolean:
		if plain {
			return dBool
		}
	case parquet.Int32, parquet.Int64:
		if plain || lt == nil && ct >= deprecated.Int8 && ct <= deprecated.Int64 {
			return dInt
		}
		if lt != nil {
			if it, ok := lt.Value.(*format.IntType); ok && it.IsSigned {
				return dInt
			}
		}
	case parquet.Double:
		if plain {
			return dDouble
		}
	case parquet.ByteArray:
		if plain || ct == deprecated.UTF8 || ct == deprecated.Enum || ct == deprecated.Json {
			return dString
		}
		if lt != nil {
			if _, isJSON := lt.Value.(*format.JsonType); isJSON || isStringish(lt) {
				return dString
			}
		}
	}
	return dNone
}

func isStringish(lt *format.LogicalType) bool {
	switch lt.Value.(type) {
	case *format.StringType, *format.EnumType:
		return true
	}
	return false
}

// jsonConv inlines a JSON-annotated column, or quotes it for a string field.
func jsonConv(k Kind) func([]byte, parquet.Value) ([]byte, error) {
	return func(dst []byte, v parquet.Value) ([]byte, error) {
		if v.IsNull() {
			return append(dst, "null"...), nil
		}
		b := v.ByteArray()
		if k == String {
			out, _ := jsontext.AppendQuote(dst, b)
			return out, nil
		}
		if !jsontext.Value(b).IsValid() {
			return dst, errors.New("JSON column holds invalid JSON")
		}
		return append(dst, b...), nil
	}
}

// decimalConv writes the exact decimal text of an unscaled integer.
func decimalConv(kind parquet.Kind, scale int) func([]byte, parquet.Value) ([]byte, error) {
	return func(dst []byte, v parquet.Value) ([]byte, error) {
		var digits []byte
		switch {
		case v.IsNull():
			return append(dst, "null"...), nil
		case kind == parquet.Int32:
			digits = strconv.AppendInt(nil, int64(v.Int32()), 10)
		case kind == parquet.Int64:
			digits = strconv.AppendInt(nil, v.Int64(), 10)
		default: // big-endian two's complement bytes
			b := v.ByteArray()
			n := new(big.Int).SetBytes(b)
			if len(b) > 0 && b[0]&0x80 != 0 {
				n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
			}
			digits = n.Append(nil, 10)
		}
		return appendScaled(dst, digits, scale), nil
	}
}

// appendScaled writes integer digits (maybe signed) divided by 10^scale.
func appendScaled(dst, digits []byte, scale int) []byte {
	if scale <= 0 {
		dst = append(dst, digits...)
		for range -scale {
			dst = append(dst, '0')
		}
		return dst
	}
	if len(digits) > 0 && digits[0] == '-' {
		dst = append(dst, '-')
		digits = digits[1:]
	}
	for len(digits) <= scale {
		digits = append([]byte{'0'}, digits...)
	}
	dst = append(dst, digits[:len(digits)-scale]...)
	return append(append(dst, '.'), digits[len(digits)-scale:]...)
}

// appendFloat formats x as encoding/json does, so a parquet double reads
// back as the same JSON number text as in the ndjson and json files.
func appendFloat(dst []byte, x float64, bits int) []byte {
	abs := math.Abs(x)
	f := byte('f')
	if abs != 0 && (bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21)) {
		f = 'e'
	}
	dst = strconv.AppendFloat(dst, x, f, -1, bits)
	if f == 'e' {
		// clean up e-09 to e-9
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}
