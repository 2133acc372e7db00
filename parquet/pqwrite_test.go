package parquet_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	parquetgo "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/internal/pqwrite"
	"github.com/lendgraph/lendgraph-go/parquet"
)

// The fake's parquet files come from the root module's dependency-free
// writer (internal/pqwrite), so that the root module requires no parquet
// library. These tests read its files back with parquet-go, a reader
// written by others, and with this package's Decode.

// pqwriteColumns are one column of each kind the writer has.
var pqwriteColumns = []pqwrite.Column{
	{Name: "active", Kind: pqwrite.Boolean},
	{Name: "count", Kind: pqwrite.Int64},
	{Name: "id", Kind: pqwrite.String},
	{Name: "office", Kind: pqwrite.JSON},
	{Name: "score", Kind: pqwrite.Double},
}

// pqwriteRows are n rows of random values for pqwriteColumns, each value
// null with probability nulls (0: never, 1: always).
func pqwriteRows(rng *rand.Rand, n int, nulls float64) [][]any {
	rows := make([][]any, n)
	for i := range rows {
		row := []any{rng.IntN(2) == 0, rng.Int64() - math.MaxInt64/2, fmt.Sprintf("row %d ☃ %s", i, strings.Repeat("x", rng.IntN(40))),
			fmt.Sprintf(`{"name":"office %d","zip":"0%d"}`, i, rng.IntN(9999)), rng.NormFloat64() * 1e6}
		for j := range row {
			if rng.Float64() < nulls {
				row[j] = nil
			}
		}
		rows[i] = row
	}
	rows[0][1] = int64(math.MinInt64)
	if len(rows) > 1 {
		rows[1][1], rows[1][4] = int64(math.MaxInt64), -math.MaxFloat64
	}
	return rows
}

func writePqwrite(t *testing.T, cols []pqwrite.Column, rows [][]any, opts pqwrite.Options) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := pqwrite.NewWriter(&buf, "rows", cols, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestPqwrite_ParquetGoReadsIt: parquet-go reads the writer's files, every
// codec, row-group size and share of nulls, to the values written, with
// the schema the fake's files have always had (optional columns; STRING,
// JSON and INTEGER(64, signed) annotations; DOUBLE and BOOLEAN plain).
func TestPqwrite_ParquetGoReadsIt(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for _, codec := range []pqwrite.Codec{pqwrite.Uncompressed, pqwrite.Snappy} {
		for _, c := range []struct {
			rows, group int
			nulls       float64
		}{{0, 0, 0}, {1, 0, 0}, {5, 2, 0.3}, {1000, 0, 0}, {1000, 0, 1}, {45_000, 20_000, 0.2}} {
			t.Run(fmt.Sprintf("codec=%d/rows=%d/group=%d/nulls=%g", codec, c.rows, c.group, c.nulls), func(t *testing.T) {
				rows := [][]any{}
				if c.rows > 0 {
					rows = pqwriteRows(rng, c.rows, c.nulls)
				}
				file := writePqwrite(t, pqwriteColumns, rows, pqwrite.Options{RowGroupRows: c.group, Codec: codec})
				f, err := parquetgo.OpenFile(bytes.NewReader(file), int64(len(file)))
				if err != nil {
					t.Fatal(err)
				}
				if f.NumRows() != int64(c.rows) {
					t.Fatalf("%d rows, want %d", f.NumRows(), c.rows)
				}
				group := c.group
				if group == 0 {
					group = 20_000
				}
				if want := (c.rows + group - 1) / group; len(f.RowGroups()) != want {
					t.Fatalf("%d row groups, want %d", len(f.RowGroups()), want)
				}
				checkPqwriteSchema(t, f.Schema())
				for _, rg := range f.Metadata().RowGroups {
					for _, cc := range rg.Columns {
						if want := []format.CompressionCodec{format.Uncompressed, format.Snappy}[codec]; cc.MetaData.Codec != want {
							t.Fatalf("column %v: codec %v, want %v", cc.MetaData.PathInSchema, cc.MetaData.Codec, want)
						}
					}
				}
				got := make([]parquetgo.Row, c.rows+1)
				r := parquetgo.NewReader(f)
				defer r.Close()
				n := 0
				for n < len(got) {
					k, err := r.ReadRows(got[n:])
					n += k
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				if n != c.rows {
					t.Fatalf("read %d rows, want %d", n, c.rows)
				}
				for i, row := range got[:n] {
					for j, v := range row {
						if d := pqwriteDiff(rows[i][j], v); d != "" {
							t.Fatalf("row %d column %s: %s", i, pqwriteColumns[j].Name, d)
						}
					}
				}
			})
		}
	}
}

// checkPqwriteSchema checks the schema parquet-go reads from the footer.
func checkPqwriteSchema(t *testing.T, s *parquetgo.Schema) {
	t.Helper()
	want := map[string]string{
		"active": "optional boolean active",
		"count":  "optional int64 count (INT(64,true))",
		"id":     "optional binary id (STRING)",
		"office": "optional binary office (JSON)",
		"score":  "optional double score",
	}
	fields := s.Fields()
	if len(fields) != len(want) {
		t.Fatalf("%d fields: %s", len(fields), s)
	}
	for _, f := range fields {
		got := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(parquetgo.Group{f.Name(): f}.String()), ";"))
		if !strings.Contains(got, want[f.Name()]) {
			t.Errorf("field %s: %q, want %q", f.Name(), got, want[f.Name()])
		}
	}
}

// pqwriteDiff says how parquet-go's value v differs from the value written.
func pqwriteDiff(written any, v parquetgo.Value) string {
	if written == nil {
		if !v.IsNull() {
			return fmt.Sprintf("%v, want null", v)
		}
		return ""
	}
	if v.IsNull() {
		return fmt.Sprintf("null, want %v", written)
	}
	var same bool
	switch w := written.(type) {
	case bool:
		same = v.Kind() == parquetgo.Boolean && v.Boolean() == w
	case int64:
		same = v.Kind() == parquetgo.Int64 && v.Int64() == w
	case float64:
		same = v.Kind() == parquetgo.Double && (v.Double() == w || math.IsNaN(w) && math.IsNaN(v.Double()))
	case string:
		same = v.Kind() == parquetgo.ByteArray && string(v.ByteArray()) == w
	}
	if !same {
		return fmt.Sprintf("%v (%v), want %v", v, v.Kind(), written)
	}
	return ""
}

// TestPqwrite_DecodeReadsIt: this package's Decode reads the writer's
// files to the values written, JSON columns into nested fields.
func TestPqwrite_DecodeReadsIt(t *testing.T) {
	type office struct {
		Name string `json:"name"`
		Zip  string `json:"zip"`
	}
	type row struct {
		Active *bool    `json:"active"`
		Count  *int64   `json:"count"`
		ID     *string  `json:"id"`
		Office *office  `json:"office"`
		Score  *float64 `json:"score"`
	}
	rows := pqwriteRows(rand.New(rand.NewPCG(3, 5)), 2500, 0.25)
	file := writePqwrite(t, pqwriteColumns, rows, pqwrite.Options{RowGroupRows: 1000, Codec: pqwrite.Snappy})
	got := collect(t, parquet.Decode[row](bytes.NewReader(file), int64(len(file))))
	if len(got) != len(rows) {
		t.Fatalf("%d rows, want %d", len(got), len(rows))
	}
	for i, g := range got {
		w := rows[i]
		var o *office
		if w[3] != nil {
			o = &office{}
			if err := json.Unmarshal([]byte(w[3].(string)), o); err != nil {
				t.Fatal(err)
			}
		}
		if !eqPtr(g.Active, w[0]) || !eqPtr(g.Count, w[1]) || !eqPtr(g.ID, w[2]) || !eqPtr(g.Score, w[4]) || (o == nil) != (g.Office == nil) || (o != nil && *o != *g.Office) {
			t.Fatalf("row %d: %+v, want %v", i, g, w)
		}
	}
	// Untyped rows keep every int64 exactly.
	untyped := collect(t, parquet.Decode[lendgraph.Row](bytes.NewReader(file), int64(len(file))))
	if member(untyped[0], "count") != "-9223372036854775808" || member(untyped[1], "count") != "9223372036854775807" {
		t.Fatalf("int64 extremes: %s %s", member(untyped[0], "count"), member(untyped[1], "count"))
	}
}

func eqPtr[T comparable](p *T, w any) bool {
	if w == nil || p == nil {
		return w == nil && p == nil
	}
	return *p == w.(T)
}

// TestPqwrite_RefusedRowLeavesNoTrace: a row the writer refuses (a value of
// the wrong type after a good one) is refused whole: parquet-go reads the
// rows around it, their columns aligned.
func TestPqwrite_RefusedRowLeavesNoTrace(t *testing.T) {
	var buf bytes.Buffer
	w, err := pqwrite.NewWriter(&buf, "rows", pqwriteColumns, pqwrite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	good := [][]any{{true, int64(1), "a", `{"n":1}`, 1.5}, {false, int64(2), "b", nil, 2.5}}
	if err := w.Write(good[0]); err != nil {
		t.Fatal(err)
	}
	if err := w.Write([]any{true, "seven", "x", nil, nil}); err == nil || !strings.Contains(err.Error(), `"count"`) {
		t.Fatalf("a string in an int64 column: %v", err)
	}
	if err := w.Write(good[1]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := parquetgo.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]parquetgo.Row, 3)
	r := parquetgo.NewReader(f)
	defer r.Close()
	n, err := r.ReadRows(rows)
	if n != 2 || (err != nil && err != io.EOF) {
		t.Fatalf("%d rows, %v", n, err)
	}
	for i, row := range rows[:n] {
		for j, v := range row {
			if d := pqwriteDiff(good[i][j], v); d != "" {
				t.Fatalf("row %d column %s: %s", i, pqwriteColumns[j].Name, d)
			}
		}
	}
}
