package main

import (
	"bufio"
	"fmt"
	"io"
	"iter"
	"math"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	pq "github.com/parquet-go/parquet-go"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// parquetHelp is how rows --to parquet types its columns (the command's
// help and the README say the same).
const parquetHelp = `With --to parquet the rows are written as a parquet file (snappy, row
groups of --row-group-size rows written as they fill, so memory stays
flat). A parquet input keeps its schema: its row groups are copied, value
for value (--fields selects top-level columns). Any other input is read twice: the first pass types each column
from every row, the second writes (stdin is spooled to a temporary file
first). Every column is OPTIONAL (null where a row lacks it) and typed by
the values it holds, nulls aside:

  only true and false                  BOOLEAN
  only integers that fit 64 bits       INT64
  only numbers                         DOUBLE
  only JSON objects or arrays          STRING (JSON logical type), compact JSON text
  anything else, or no value at all    STRING; a value that is no string keeps its JSON text

A csv cell is text, so for a csv input the cell's text is typed the same
way: "true"/"false", integers without a sign or leading zero other than
"-" ("42", "-7"; "007" and "02134" stay text), JSON numbers ("1.50" is
DOUBLE 1.5) and JSON objects or arrays; an empty cell is null. The
columns are in the order --fields gives; without it, a parquet input keeps
its own order and the columns of any other input are in name order.`

// colKind is what values a column holds; a column's kinds are a bit set.
type colKind uint8

const (
	kBool colKind = 1 << iota
	kInt
	kDouble
	kJSON
	kString
)

// parquet column types
type pqType uint8

const (
	pqString pqType = iota
	pqBool
	pqInt
	pqDouble
	pqJSON
)

func typeOf(kinds colKind) pqType {
	switch kinds {
	case kBool:
		return pqBool
	case kInt:
		return pqInt
	case kDouble, kInt | kDouble:
		return pqDouble
	case kJSON:
		return pqJSON
	}
	return pqString
}

// classify is the kind of a JSON value; text reports a csv cell (a JSON
// string whose text is typed). ok is false for null (and an empty cell).
func classify(v jsontext.Value, text bool) (k colKind, s []byte, ok bool) {
	switch v.Kind() {
	case 0, 'n':
		return 0, nil, false
	case 't', 'f':
		return kBool, v, true
	case '0':
		if _, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return kInt, v, true
		}
		return kDouble, v, true
	case '{', '[':
		return kJSON, v, true
	}
	s, err := jsontext.AppendUnquote(nil, v)
	if err != nil || !text {
		return kString, s, true
	}
	if len(s) == 0 {
		return 0, nil, false
	}
	switch t := jsontext.Value(s); {
	case string(s) == "true" || string(s) == "false":
		return kBool, s, true
	case (t.Kind() == '{' || t.Kind() == '[') && t.IsValid(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)):
		return kJSON, s, true
	case isJSONNumber(s):
		if _, err := strconv.ParseInt(string(s), 10, 64); err == nil {
			return kInt, s, true
		}
		return kDouble, s, true
	}
	return kString, s, true
}

// isJSONNumber reports whether s is one JSON number (no sign but '-', no
// leading zero).
func isJSONNumber(s []byte) bool {
	v := jsontext.Value(s)
	return len(s) > 0 && (s[0] == '-' || s[0] >= '0' && s[0] <= '9') && v.Kind() == '0' && v.IsValid()
}

// rowsToParquet writes the rows of the file at path (stdin for "-") in
// format (auto: detected) to w as parquet.
func (a *app) rowsToParquet(w io.Writer, path, format string, fields []string, groupRows int64) error {
	f, size, cleanup, err := a.seekableInput(path)
	if err != nil {
		return err
	}
	defer cleanup()
	if format == "auto" {
		head := make([]byte, 512)
		n, _ := f.ReadAt(head, 0)
		format = detectFormat(path, head[:n])
	}
	return writeParquetTo(w, func(w io.Writer, opts []pq.WriterOption) error {
		if format == "parquet" {
			return a.copyParquet(w, f, size, fields, opts)
		}
		rows := func() (iter.Seq2[lendgraph.Row, error], error) {
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return nil, err
			}
			return lendgraph.DecodeRows[lendgraph.Row](bufio.NewReaderSize(f, 256<<10), lendgraph.Format(format)), nil
		}
		return writeInferred(w, rows, format == "csv", fields, opts)
	}, groupRows)
}

// writeParquetTo runs write with a buffered w and the writer options of
// rows --to parquet (snappy, row groups of groupRows rows), then flushes.
func writeParquetTo(w io.Writer, write func(io.Writer, []pq.WriterOption) error, groupRows int64) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	if err := write(bw, []pq.WriterOption{pq.MaxRowsPerRowGroup(groupRows), pq.Compression(&pq.Snappy)}); err != nil {
		return err
	}
	return bw.Flush()
}

// seekableInput opens path, spooling stdin ("-") to a temporary file.
func (a *app) seekableInput(path string) (*os.File, int64, func(), error) {
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("input: %w", err)
		}
		fi, err := f.Stat()
		if err != nil {
			_ = f.Close()
			return nil, 0, nil, fmt.Errorf("input: %w", err)
		}
		return f, fi.Size(), func() { _ = f.Close() }, nil
	}
	tmp, err := os.CreateTemp("", "lendgraph-rows-*")
	if err != nil {
		return nil, 0, nil, err
	}
	cleanup := func() { _ = tmp.Close(); _ = os.Remove(tmp.Name()) }
	n, err := io.Copy(tmp, a.stdin)
	if err != nil {
		cleanup()
		return nil, 0, nil, fmt.Errorf("input: %w", err)
	}
	return tmp, n, cleanup, nil
}

// copyParquet copies a parquet file's rows, narrowed to fields, keeping
// its schema.
func (a *app) copyParquet(w io.Writer, f *os.File, size int64, fields []string, opts []pq.WriterOption) error {
	pf, err := pq.OpenFile(f, size)
	if err != nil {
		return fmt.Errorf("input: not a readable parquet file: %w", err)
	}
	from := pf.Schema()
	to := from
	if fields != nil {
		g := pq.Group{}
		for _, name := range fields {
			for _, c := range from.Fields() {
				if c.Name() == name {
					g[name] = c
				}
			}
			if g[name] == nil {
				var have []string
				for _, c := range from.Fields() {
					have = append(have, c.Name())
				}
				return fmt.Errorf("--fields: the input has no column %q (its columns: %s)", name, strings.Join(have, ", "))
			}
		}
		to = pq.NewSchema(from.Name(), inOrder(g, fields))
	}
	pw := pq.NewWriter(w, append(opts, to)...)
	for _, rg := range pf.RowGroups() {
		if to != from {
			conv, err := pq.Convert(to, from)
			if err != nil {
				return err
			}
			rg = pq.ConvertRowGroup(rg, conv)
		}
		rows := rg.Rows()
		_, err := pq.CopyRows(pw, rows)
		_ = rows.Close()
		if err != nil {
			return fmt.Errorf("copying rows: %w", err)
		}
	}
	return pw.Close()
}

// writeInferred writes rows as parquet with column types inferred from
// every row (see parquetHelp); text reports csv rows, whose cells are typed
// by their text. rows is called twice: it must yield the same rows again
// (in any order).
func writeInferred(w io.Writer, rows func() (iter.Seq2[lendgraph.Row, error], error), text bool, fields []string, opts []pq.WriterOption) error {
	// Pass 1: the columns and what each holds.
	kinds := map[string]colKind{}
	for _, name := range fields {
		kinds[name] = 0
	}
	seq, err := rows()
	if err != nil {
		return err
	}
	check := newFieldCheck(fields)
	for row, err := range seq {
		if err != nil {
			return err
		}
		check.see(row)
		for name, v := range row.All() {
			if _, want := kinds[name]; !want && fields != nil {
				continue
			}
			k, _, _ := classify(jsontext.Value(v), text)
			kinds[name] |= k
		}
	}
	if err := check.err(); err != nil {
		return err
	}
	names := fields
	if names == nil {
		names = slices.Sorted(func(yield func(string) bool) {
			for n := range kinds {
				if !yield(n) {
					return
				}
			}
		})
	}
	// The schema: the columns in the order of names; the leaf index of
	// each column is its place in that order.
	g := pq.Group{}
	types := map[string]pqType{}
	for _, name := range names {
		t := typeOf(kinds[name])
		types[name] = t
		var node pq.Node
		switch t {
		case pqBool:
			node = pq.Leaf(pq.BooleanType)
		case pqInt:
			node = pq.Int(64)
		case pqDouble:
			node = pq.Leaf(pq.DoubleType)
		case pqJSON:
			node = pq.JSON()
		default:
			node = pq.String()
		}
		g[name] = pq.Optional(node)
	}
	schema := pq.NewSchema("row", inOrder(g, names))
	cols := make([]string, 0, len(g))
	for _, fld := range schema.Fields() {
		cols = append(cols, fld.Name())
	}
	// Pass 2: the rows.
	pw := pq.NewWriter(w, append(opts, schema)...)
	batch := make([]pq.Row, 0, 256)
	flush := func() error {
		if _, err := pw.WriteRows(batch); err != nil {
			return err
		}
		for i := range batch {
			batch[i] = batch[i][:0]
		}
		batch = batch[:0]
		return nil
	}
	if seq, err = rows(); err != nil {
		return err
	}
	n := int64(0)
	for row, err := range seq {
		if err != nil {
			return err
		}
		n++
		out := batch[len(batch):cap(batch)][:1][0][:0]
		for i, name := range cols {
			v, err := parquetValue(jsontext.Value(column(row, name)), types[name], text)
			if err != nil {
				return fmt.Errorf("row %d, column %q: %w", n, name, err)
			}
			out = append(out, v.Level(0, v.DefinitionLevel(), i))
		}
		batch = append(batch, out)
		if len(batch) == cap(batch) {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	return pw.Close()
}

// parquetValue is the value of raw in a column of type t (definition level
// 1, or 0 for null).
func parquetValue(raw jsontext.Value, t pqType, text bool) (pq.Value, error) {
	k, s, ok := classify(raw, text)
	if !ok {
		return pq.NullValue().Level(0, 0, 0), nil
	}
	var v pq.Value
	switch t {
	case pqBool:
		v = pq.BooleanValue(string(s) == "true")
	case pqInt:
		n, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil {
			return v, err
		}
		v = pq.Int64Value(n)
	case pqDouble:
		x, err := strconv.ParseFloat(string(s), 64)
		if err != nil || math.IsInf(x, 0) {
			return v, fmt.Errorf("%s is not a finite number", s)
		}
		v = pq.DoubleValue(x)
	case pqJSON:
		c := slices.Clone(jsontext.Value(s))
		if err := c.Compact(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)); err != nil {
			return v, err
		}
		v = pq.ByteArrayValue(c)
	default:
		if !text && k != kString {
			s = appendCompact(nil, raw) // a value that is no string keeps its JSON text
		}
		v = pq.ByteArrayValue(s)
	}
	return v.Level(0, 1, 0), nil
}

// orderedGroup is a parquet group whose fields come in a given order
// (pq.Group sorts them by name).
type orderedGroup struct {
	pq.Group
	fields []pq.Field // the fields of Group, in order
}

// inOrder is g with its fields in the order of names (names g lacks are
// skipped).
func inOrder(g pq.Group, names []string) pq.Node {
	byName := map[string]pq.Field{}
	for _, f := range g.Fields() {
		byName[f.Name()] = f
	}
	fields := make([]pq.Field, 0, len(byName))
	for _, name := range names {
		if f, ok := byName[name]; ok {
			fields = append(fields, f)
			delete(byName, name)
		}
	}
	return orderedGroup{Group: g, fields: fields}
}

// Fields returns the group's fields in the given order.
func (g orderedGroup) Fields() []pq.Field { return slices.Clone(g.fields) }

// String prints the group with its fields in order.
func (g orderedGroup) String() string {
	var b strings.Builder
	_ = pq.PrintSchema(&b, "", g)
	return b.String()
}

// GoType is the struct type of the group's rows, its fields in order (as
// pq.Group builds it, but without sorting).
func (g orderedGroup) GoType() reflect.Type {
	fields := g.Fields()
	sf := make([]reflect.StructField, len(fields))
	for i, f := range fields {
		sf[i] = reflect.StructField{Name: "F" + strconv.Itoa(i), Type: f.GoType(), Tag: reflect.StructTag(`parquet:` + strconv.Quote(f.Name()))}
	}
	return reflect.StructOf(sf)
}
