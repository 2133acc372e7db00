// Package pqwrite writes parquet files of flat, optional columns: the files
// of the fake server's parquet deliveries (package lendgraphtest). It
// depends on nothing outside the standard library but klauspost/compress's
// snappy encoder, so that the root module, which lendgraphtest is part of,
// requires no parquet library: a program importing only package lendgraph
// keeps parquet-go out of its module graph.
//
// What it writes is the subset of the format those files need: one
// optional column per field, of the physical types BYTE_ARRAY (annotated
// STRING or JSON), INT64 (INTEGER(64, signed)), DOUBLE and BOOLEAN; row
// groups of a set number of rows (the last one shorter), each column chunk
// one version-1 data page in PLAIN encoding, definition levels in the
// RLE/bit-packing hybrid, compressed with snappy or not at all; the footer
// in Thrift's compact protocol. No statistics, dictionaries or page
// indexes. The parquet module's tests read its files back with parquet-go
// and cmd/lendgraph's with DuckDB.
package pqwrite

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/klauspost/compress/s2"
)

// Kind is a column's type.
type Kind int

// The kinds of column.
const (
	String  Kind = iota // BYTE_ARRAY, logical type STRING: a string or []byte value
	Int64               // INT64, logical type INTEGER(64, signed): an int64 or int value
	Double              // DOUBLE: a float64 value
	Boolean             // BOOLEAN: a bool value
	JSON                // BYTE_ARRAY, logical type JSON: the value's JSON text, a string or []byte
)

// Codec is how pages are compressed.
type Codec int

// The codecs.
const (
	Uncompressed Codec = 0 // the format's UNCOMPRESSED
	Snappy       Codec = 1 // the format's SNAPPY: snappy's block format
)

// Column is one column of a file.
type Column struct {
	Name string
	Kind Kind
}

// Options are a writer's settings.
type Options struct {
	// RowGroupRows is the most rows a row group holds (default 20,000).
	RowGroupRows int
	// Codec compresses the pages (default Uncompressed).
	Codec Codec
}

// Writer writes one parquet file. Rows are buffered until a row group is
// full; Close writes the last one and the footer. A Writer is not safe for
// concurrent use.
type Writer struct {
	w      *countWriter
	name   string
	cols   []Column
	opts   Options
	bufs   []column
	rows   int // in the current row group
	total  int64
	groups []rowGroup
	err    error
	closed bool
}

// column is a column's part of the current row group.
type column struct {
	defs   []byte // 1: a value, 0: null
	values []byte // PLAIN-encoded non-null values (booleans: bools)
	bools  []bool
}

type rowGroup struct {
	rows        int64
	total, comp int64 // uncompressed and compressed bytes of its chunks
	chunks      []chunk
}

type chunk struct {
	offset, uncompressed, compressed int64
}

type countWriter struct {
	w *bufio.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

const magic = "PAR1"

// NewWriter returns a writer of a file with the columns, in that order,
// under a root schema element called name.
func NewWriter(w io.Writer, name string, cols []Column, opts Options) (*Writer, error) {
	if opts.RowGroupRows <= 0 {
		opts.RowGroupRows = 20_000
	}
	if opts.Codec != Uncompressed && opts.Codec != Snappy {
		return nil, fmt.Errorf("pqwrite: unknown codec %d", opts.Codec)
	}
	seen := map[string]bool{}
	for _, c := range cols {
		if c.Name == "" || seen[c.Name] {
			return nil, fmt.Errorf("pqwrite: column name %q is empty or repeated", c.Name)
		}
		if c.Kind < String || c.Kind > JSON {
			return nil, fmt.Errorf("pqwrite: column %q has unknown kind %d", c.Name, c.Kind)
		}
		seen[c.Name] = true
	}
	pw := &Writer{w: &countWriter{w: bufio.NewWriterSize(w, 64<<10)}, name: name, cols: slices.Clone(cols), opts: opts, bufs: make([]column, len(cols))}
	if _, err := io.WriteString(pw.w, magic); err != nil {
		return nil, err
	}
	return pw, nil
}

// Write adds a row: one value a column, in the columns' order; nil is a
// null. A row with a value of the wrong type for its column is refused
// whole, with an error; the writer goes on.
func (p *Writer) Write(row []any) error {
	if p.err != nil {
		return p.err
	}
	if p.closed {
		return errors.New("pqwrite: write after Close")
	}
	if len(row) != len(p.cols) {
		return fmt.Errorf("pqwrite: a row of %d values for %d columns", len(row), len(p.cols))
	}
	for i, v := range row {
		if !fits(p.cols[i].Kind, v) {
			return fmt.Errorf("pqwrite: column %q takes %s values, not %T", p.cols[i].Name, kindNames[p.cols[i].Kind], v)
		}
	}
	for i, v := range row {
		p.bufs[i].add(p.cols[i].Kind, v)
	}
	p.rows++
	if p.rows == p.opts.RowGroupRows {
		return p.flush()
	}
	return nil
}

// fits reports whether v is a value of a column of kind k (nil fits all).
func fits(k Kind, v any) bool {
	switch v.(type) {
	case nil:
		return true
	case string, []byte:
		return k == String || k == JSON
	case int64, int:
		return k == Int64
	case float64:
		return k == Double
	case bool:
		return k == Boolean
	}
	return false
}

// add appends v, a value that fits the column's kind.
func (c *column) add(k Kind, v any) {
	if v == nil {
		c.defs = append(c.defs, 0)
		return
	}
	c.defs = append(c.defs, 1)
	switch x := v.(type) {
	case string:
		c.values = binary.LittleEndian.AppendUint32(c.values, uint32(len(x)))
		c.values = append(c.values, x...)
	case []byte:
		c.values = binary.LittleEndian.AppendUint32(c.values, uint32(len(x)))
		c.values = append(c.values, x...)
	case int64:
		c.values = binary.LittleEndian.AppendUint64(c.values, uint64(x))
	case int:
		c.values = binary.LittleEndian.AppendUint64(c.values, uint64(int64(x)))
	case float64:
		c.values = binary.LittleEndian.AppendUint64(c.values, math.Float64bits(x))
	case bool:
		c.bools = append(c.bools, x)
	}
}

var kindNames = [...]string{String: "string", Int64: "int64", Double: "float64", Boolean: "bool", JSON: "JSON text"}

// flush writes the buffered rows as a row group.
func (p *Writer) flush() error {
	if p.rows == 0 {
		return nil
	}
	g := rowGroup{rows: int64(p.rows)}
	for i := range p.cols {
		ch, err := p.writeChunk(&p.bufs[i], p.cols[i].Kind)
		if err != nil {
			p.err = err
			return err
		}
		g.chunks = append(g.chunks, ch)
		g.total += ch.uncompressed
		g.comp += ch.compressed
		p.bufs[i] = column{defs: p.bufs[i].defs[:0], values: p.bufs[i].values[:0], bools: p.bufs[i].bools[:0]}
	}
	p.groups = append(p.groups, g)
	p.total += int64(p.rows)
	p.rows = 0
	return nil
}

// writeChunk writes a column chunk: one data page of the column's buffered
// values.
func (p *Writer) writeChunk(c *column, kind Kind) (chunk, error) {
	body := encodeLevels(nil, c.defs)
	if kind == Boolean {
		body = appendBools(body, c.bools)
	} else {
		body = append(body, c.values...)
	}
	page := body
	if p.opts.Codec == Snappy {
		page = s2.EncodeSnappy(nil, body)
	}
	var h thrift
	h.field(1, tI32).i32(0) // DATA_PAGE
	h.field(2, tI32).i32(int32(len(body)))
	h.field(3, tI32).i32(int32(len(page)))
	h.field(5, tStruct).begin()
	h.field(1, tI32).i32(int32(len(c.defs)))
	h.field(2, tI32).i32(0) // PLAIN
	h.field(3, tI32).i32(3) // RLE
	h.field(4, tI32).i32(3) // RLE
	h.end()
	h.end()
	ch := chunk{offset: p.w.n, uncompressed: int64(len(h.b) + len(body)), compressed: int64(len(h.b) + len(page))}
	if _, err := p.w.Write(h.b); err != nil {
		return ch, err
	}
	_, err := p.w.Write(page)
	return ch, err
}

// encodeLevels appends definition levels (bit width 1) in the
// RLE/bit-packing hybrid, prefixed with their length as version-1 pages
// have them: one RLE run when every level is the same, else one
// bit-packed run.
func encodeLevels(dst, defs []byte) []byte {
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	same := true
	for _, d := range defs {
		if d != defs[0] {
			same = false
			break
		}
	}
	switch {
	case len(defs) == 0:
	case same:
		dst = binary.AppendUvarint(dst, uint64(len(defs))<<1)
		dst = append(dst, defs[0])
	default:
		groups := (len(defs) + 7) / 8
		dst = binary.AppendUvarint(dst, uint64(groups)<<1|1)
		packed := make([]byte, groups)
		for i, d := range defs {
			packed[i/8] |= d << (i % 8)
		}
		dst = append(dst, packed...)
	}
	binary.LittleEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
	return dst
}

// appendBools appends PLAIN booleans: bit-packed, the first in the lowest
// bit.
func appendBools(dst []byte, bs []bool) []byte {
	packed := make([]byte, (len(bs)+7)/8)
	for i, b := range bs {
		if b {
			packed[i/8] |= 1 << (i % 8)
		}
	}
	return append(dst, packed...)
}

// Close writes the last row group and the footer, and flushes. It does not
// close the underlying writer.
func (p *Writer) Close() error {
	if p.closed || p.err != nil {
		return p.err
	}
	if err := p.flush(); err != nil {
		return err
	}
	p.closed = true
	footer := p.footer()
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], uint32(len(footer)))
	for _, b := range [][]byte{footer, n[:], []byte(magic)} {
		if _, err := p.w.Write(b); err != nil {
			p.err = err
			return err
		}
	}
	p.err = p.w.w.Flush()
	return p.err
}

// Physical types and repetitions of the format.
const (
	typeBoolean   = 0
	typeInt64     = 2
	typeDouble    = 5
	typeByteArray = 6
	optional      = 1
)

// footer is the file's FileMetaData.
func (p *Writer) footer() []byte {
	var t thrift
	t.field(1, tI32).i32(1) // version
	t.field(2, tList).list(tStruct, len(p.cols)+1)
	t.begin()
	t.field(4, tBinary).str(p.name)
	t.field(5, tI32).i32(int32(len(p.cols)))
	t.end()
	for _, c := range p.cols {
		t.begin()
		t.field(1, tI32).i32(physical(c.Kind))
		t.field(3, tI32).i32(optional)
		t.field(4, tBinary).str(c.Name)
		switch c.Kind {
		case String:
			t.field(6, tI32).i32(0) // UTF8
			t.field(10, tStruct).begin()
			t.field(1, tStruct).begin() // StringType
			t.end()
			t.end()
		case JSON:
			t.field(6, tI32).i32(19) // JSON
			t.field(10, tStruct).begin()
			t.field(12, tStruct).begin() // JsonType
			t.end()
			t.end()
		case Int64:
			t.field(6, tI32).i32(18) // INT_64
			t.field(10, tStruct).begin()
			t.field(10, tStruct).begin() // IntType
			t.field(1, tByte).byte(64)
			t.boolField(2, true)
			t.end()
			t.end()
		}
		t.end()
	}
	t.field(3, tI64).i64(p.total)
	t.field(4, tList).list(tStruct, len(p.groups))
	for gi, g := range p.groups {
		t.begin()
		t.field(1, tList).list(tStruct, len(g.chunks))
		for i, ch := range g.chunks {
			c := p.cols[i]
			t.begin()
			t.field(2, tI64).i64(ch.offset)
			t.field(3, tStruct).begin()
			t.field(1, tI32).i32(physical(c.Kind))
			t.field(2, tList).list(tI32, 2)
			t.zigzag(0) // PLAIN
			t.zigzag(3) // RLE
			t.field(3, tList).list(tBinary, 1)
			t.str(c.Name)
			t.field(4, tI32).i32(int32(p.opts.Codec))
			t.field(5, tI64).i64(g.rows)
			t.field(6, tI64).i64(ch.uncompressed)
			t.field(7, tI64).i64(ch.compressed)
			t.field(9, tI64).i64(ch.offset)
			t.end()
			t.end()
		}
		t.field(2, tI64).i64(g.total)
		t.field(3, tI64).i64(g.rows)
		t.field(5, tI64).i64(g.chunks[0].offset)
		t.field(6, tI64).i64(g.comp)
		t.field(7, tI16).i16(int16(gi))
		t.end()
	}
	t.field(6, tBinary).str("lendgraph-go lendgraphtest")
	t.end()
	return t.b
}

func physical(k Kind) int32 {
	switch k {
	case Int64:
		return typeInt64
	case Double:
		return typeDouble
	case Boolean:
		return typeBoolean
	}
	return typeByteArray
}

// Thrift compact protocol types.
const (
	tBoolTrue  = 1
	tBoolFalse = 2
	tByte      = 3
	tI16       = 4
	tI32       = 5
	tI64       = 6
	tBinary    = 8
	tList      = 9
	tStruct    = 12
)

// thrift appends a struct in Thrift's compact protocol. The top struct is
// open from the start; begin opens a nested one (after its field header,
// or as a list element), end closes the innermost.
type thrift struct {
	b    []byte
	last []int16 // the last field id of each open struct but the top
	id   int16   // the last field id of the innermost
}

// field writes a field header.
func (t *thrift) field(id int16, typ byte) *thrift {
	if d := id - t.id; d > 0 && d <= 15 {
		t.b = append(t.b, byte(d)<<4|typ)
	} else {
		t.b = append(t.b, typ)
		t.b = binary.AppendVarint(t.b, int64(id))
	}
	t.id = id
	return t
}

// boolField writes a boolean field, whose value is in its header.
func (t *thrift) boolField(id int16, v bool) {
	typ := byte(tBoolFalse)
	if v {
		typ = tBoolTrue
	}
	t.field(id, typ)
}

func (t *thrift) begin() {
	t.last = append(t.last, t.id)
	t.id = 0
}

func (t *thrift) end() {
	t.b = append(t.b, 0) // stop
	if n := len(t.last); n > 0 {
		t.id = t.last[n-1]
		t.last = t.last[:n-1]
	}
}

func (t *thrift) zigzag(v int64) { t.b = binary.AppendVarint(t.b, v) }

func (t *thrift) i16(v int16) { t.zigzag(int64(v)) }
func (t *thrift) i32(v int32) { t.zigzag(int64(v)) }
func (t *thrift) i64(v int64) { t.zigzag(v) }
func (t *thrift) byte(v byte) { t.b = append(t.b, v) }

func (t *thrift) str(s string) {
	t.b = binary.AppendUvarint(t.b, uint64(len(s)))
	t.b = append(t.b, s...)
}

// list writes a list header of n elements of type typ.
func (t *thrift) list(typ byte, n int) {
	if n < 15 {
		t.b = append(t.b, byte(n)<<4|typ)
		return
	}
	t.b = append(t.b, 0xf0|typ)
	t.b = binary.AppendUvarint(t.b, uint64(n))
}
