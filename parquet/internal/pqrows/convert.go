package pqrows

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"

	"github.com/lendgraph/lendgraph-go/internal/formats"
)

// converter is how a leaf's values become JSON.
type converter func(dst []byte, v parquet.Value) ([]byte, error)

// converter returns how values of type t become JSON for a member of
// kind k: integers, floats and booleans as JSON numbers and booleans;
// DECIMAL scaled exactly; DATE and TIMESTAMP as strings; UUID formatted;
// strings quoted, except JSON-annotated columns (inlined unless k is
// String) and, for k Nested or Unknown, strings holding a JSON object or
// array (the API's JSON-encoded nested fields).
func newConverter(t parquet.Type, k formats.Kind) converter {
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
				if k == formats.Nested || k == formats.Unknown {
					// Nested fields arrive as JSON-encoded strings.
					if b := v.ByteArray(); isComposite(b) {
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
	dUint          // unsigned integer
	dFloat         // plain FLOAT
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
		if lt == nil && ct >= deprecated.Uint8 && ct <= deprecated.Uint64 {
			return dUint
		}
		if lt != nil {
			if it, ok := lt.Value.(*format.IntType); ok {
				if it.IsSigned {
					return dInt
				}
				return dUint
			}
		}
	case parquet.Double:
		if plain {
			return dDouble
		}
	case parquet.Float:
		if plain {
			return dFloat
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
func jsonConv(k formats.Kind) converter {
	return func(dst []byte, v parquet.Value) ([]byte, error) {
		if v.IsNull() {
			return append(dst, "null"...), nil
		}
		b := v.ByteArray()
		if k == formats.String {
			out, _ := jsontext.AppendQuote(dst, b)
			return out, nil
		}
		if !formats.ValidJSON(b) {
			return dst, errors.New("JSON column holds invalid JSON")
		}
		return append(dst, b...), nil
	}
}

// decimalConv writes the exact decimal text of an unscaled integer.
func decimalConv(kind parquet.Kind, scale int) converter {
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

// isComposite reports whether b is one JSON object or array.
func isComposite(b []byte) bool {
	if len(b) < 2 || (b[0] != '{' || b[len(b)-1] != '}') && (b[0] != '[' || b[len(b)-1] != ']') {
		return false
	}
	return jsontext.Value(b).IsValid(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
}
