package pqrows

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"
	"github.com/parquet-go/parquet-go"

	"github.com/lendgraph/lendgraph-go/internal/formats"
)

var jsonOpts = jsonv2.JoinOptions(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))

func slow(b []byte, v any) error { return jsonv2.Unmarshal(b, v, jsonOpts) }

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../../../testdata/delivery/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeParquet writes rows to a parquet file with parquet-go.
func writeParquet[T any](t testing.TB, rows []T, opts ...parquet.WriterOption) []byte {
	t.Helper()
	var b bytes.Buffer
	w := parquet.NewGenericWriter[T](&b, opts...)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

type office struct {
	Name string `json:"name"`
	Zip  string `json:"zip"`
	Geo  *struct {
		Lat float64  `json:"lat"`
		Lon *float32 `json:"lon"`
	} `json:"geo"`
	Agents int64  `json:"agents"`
	Opened string `json:"opened"`
	Fee    string `json:"fee"` // a DECIMAL into a string: an error, both ways
}

// Row types of other shapes over the same columns (testdata/delivery/
// nested.parquet): the values set directly must be what the row's JSON
// decodes to, errors included.
type (
	nestedA struct {
		ID     int64                     `json:"id"`
		Office office                    `json:"office"`
		Tags   []*string                 `json:"tags"`
		Pairs  []map[string]any          `json:"pairs"`
		Grid   [][]float64               `json:"grid"`
		Counts map[string]int            `json:"counts"`
		Note   *string                   `json:"note"`
		Extra  map[string]jsontext.Value `json:",unknown"`
	}
	nestedB struct {
		ID     int8           `json:"id"`
		Office jsontext.Value `json:"office"`
		Tags   any            `json:"tags"`
		Pairs  []struct {
			K string `json:"k"`
		} `json:"pairs"`
		Grid  []*[]int8                 `json:"grid"`
		Extra map[string]jsontext.Value `json:",unknown"`
	}
	nestedC struct { // type mismatches: every row fails, both ways
		Office string `json:"office"`
	}
	nestedD struct {
		Tags []int `json:"tags"`
	}
	zipsA struct {
		ID     string  `json:"id"`
		Zip    string  `json:"zip"`
		Deals  float64 `json:"deals"`
		Score  float64 `json:"score"`
		Active *bool   `json:"active"`
		Tags   []string
		Office struct {
			Zip string `json:"zip"`
		} `json:"office"`
	}
	zipsB struct {
		Zip   int64  `json:"zip"` // "02134" is no integer
		Deals uint8  `json:"deals"`
		Score string `json:"score"`
	}
	agentsA struct {
		ID               string                    `json:"id"`
		TransactionCount int32                     `json:"transactionCount"`
		Volume           float32                   `json:"volume"`
		Office           *struct{ Name string }    `json:"office"`
		Tags             []string                  `json:"tags"`
		BigID            float64                   `json:"bigId"`
		Extra            map[string]jsontext.Value `json:",unknown"`
	}
)

func TestSetRowMatchesJSON(t *testing.T) {
	for _, name := range []string{"nested.parquet", "zips.parquet", "agents.parquet"} {
		b := readFile(t, name)
		checkRows[nestedA](t, name, b)
		checkRows[nestedB](t, name, b)
		checkRows[nestedC](t, name, b)
		checkRows[nestedD](t, name, b)
		checkRows[zipsA](t, name, b)
		checkRows[zipsB](t, name, b)
		checkRows[agentsA](t, name, b)
		checkRows[map[string]jsontext.Value](t, name, b)
	}
}

// checkRows decodes every row of the file both ways: set directly (when
// the setter takes it) and from its JSON.
func checkRows[T any](t *testing.T, name string, file []byte) {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	cols := newColumns(f.Schema(), formats.SchemaOf(reflect.TypeFor[T]()))
	dec := formats.RowDecoder[T](slow, false)()
	a := newAssembler(cols, dec.Setter())
	direct := 0
	for g, rg := range f.RowGroups() {
		rr := parquet.NewRowGroupRowReader(rg)
		buf := make([]parquet.Row, 10)
		for {
			n, err := rr.ReadRows(buf)
			for i, row := range buf[:n] {
				var fast, slow T
				ok := a.st != nil && a.setRow(row, reflect.ValueOf(&fast).UnsafePointer())
				if ok {
					direct++
				} else {
					fast = *new(T)
				}
				js, jerr := a.appendRow(nil, row)
				if jerr != nil {
					t.Fatalf("%s %T row %d: %v", name, fast, i, jerr)
				}
				serr := dec.JSON(js, &slow)
				if ok && serr != nil {
					t.Errorf("%s %T group %d row %d: set directly, but its JSON %s fails: %v", name, fast, g, i, js, serr)
				}
				if d := cmp.Diff(slow, fast); ok && d != "" {
					t.Errorf("%s %T group %d row %d: %s\nJSON %s", name, fast, g, i, d, js)
				}
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		rr.Close()
	}
	t.Logf("%s %T: %d rows set directly", name, *new(T), direct)
}

// TestNativeNestedIsDirect: a row type made for nested.parquet is set
// without JSON.
func TestNativeNestedIsDirect(t *testing.T) {
	type row struct {
		ID     int64   `json:"id"`
		Office *office `json:"office"`
		Tags   []string
		Grid   [][]int `json:"grid"`
		Note   string  `json:"note"`
	}
	calls := 0
	count := func(b []byte, v any) error { calls++; return slow(b, v) }
	file := readFile(t, "nested.parquet")
	n := 0
	for r, err := range Decode(bytes.NewReader(file), int64(len(file)), formats.RowDecoder[row](count, false), false) {
		if err != nil && (n != 0 || calls == 0) {
			t.Fatal(err)
		}
		_ = r
		n++
	}
	if calls != 1 { // the first row's DECIMAL fee into a string is an error, found by the JSON path
		t.Fatalf("%d rows, %d JSON decodes", n, calls)
	}
}

// TestSplitRowGroupsMatchWholeRows: a row group read by several
// goroutines (each some columns), with a value deep in a row group that
// only the JSON path takes (an integer above 2^53 into a float64), gives
// the rows that decoding each whole row from its JSON gives.
func TestSplitRowGroupsMatchWholeRows(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	type in struct {
		ID     string  `parquet:"id"`
		N      int64   `parquet:"n"`
		Big    int64   `parquet:"big"`
		X      float64 `parquet:"x,optional"`
		Office string  `parquet:"office"`
		Tags   string  `parquet:"tags,optional"`
		Other  string  `parquet:"other"`
	}
	var rows []in
	for i := range 2000 {
		r := in{ID: fmt.Sprintf("r%04d", i), N: int64(i), Big: int64(i) * 3, X: float64(i) / 4,
			Office: fmt.Sprintf(`{"name":"o%d","zip":"%05d"}`, i, i*7), Tags: `["a","b"]`, Other: fmt.Sprint(i % 3)}
		if i == 1100 || i == 1999 {
			r.Big = 1<<53 + 1
		}
		if i%5 == 0 {
			r.Tags = ""
		}
		rows = append(rows, r)
	}
	file := writeParquet(t, rows, parquet.MaxRowsPerRowGroup(700))
	type out struct {
		ID     string  `json:"id"`
		N      int32   `json:"n"`
		Big    float64 `json:"big"`
		X      float64 `json:"x"`
		Office struct {
			Name string `json:"name"`
			Zip  string `json:"zip"`
		} `json:"office"`
		Tags  []string                  `json:"tags"`
		Extra map[string]jsontext.Value `json:",unknown"`
	}
	var got []out
	for r, err := range Decode(bytes.NewReader(file), int64(len(file)), formats.RowDecoder[out](slow, false), false) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	// Each row from its JSON.
	f, err := parquet.OpenFile(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.RowGroups()) != 3 {
		t.Fatalf("%d row groups", len(f.RowGroups()))
	}
	want := rowsFromJSON[out](t, f)
	if len(want) != 2000 || want[1100].Big != 1<<53 || want[1100].Office.Zip != "07700" || want[5].Tags != nil {
		t.Fatalf("want: %d rows, %+v", len(want), want[1100])
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatal(d)
	}
}

// TestManyRowGroupsSlowReader: row groups handed to workers in any order
// never wait on each other in a cycle (a group waiting for the reader
// while the one before it waits for the group).
func TestManyRowGroupsSlowReader(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	type in struct {
		ID     int64  `parquet:"id"`
		Office string `parquet:"office"`
	}
	var b bytes.Buffer
	const rows = 40000 // in groups of more batches than a worker buffers
	w := parquet.NewGenericWriter[in](&b, parquet.MaxRowsPerRowGroup(4000))
	for i := range rows {
		if _, err := w.Write([]in{{int64(i), `{"n":1}`}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	type out struct {
		ID     int64 `json:"id"`
		Office struct {
			N int `json:"n"`
		} `json:"office"`
	}
	file := b.Bytes()
	for round := range 5 {
		done := make(chan int)
		go func() {
			n := 0
			for r, err := range Decode(bytes.NewReader(file), int64(len(file)), formats.RowDecoder[out](slow, false), false) {
				if err != nil || r.ID != int64(n) || r.Office.N != 1 {
					break
				}
				if n++; n%(3000+round*700) == 0 {
					time.Sleep(50 * time.Millisecond) // let the workers run ahead
				}
			}
			done <- n
		}()
		select {
		case n := <-done:
			if n != rows {
				t.Fatalf("round %d: %d rows", round, n)
			}
		case <-time.After(time.Minute):
			t.Fatalf("round %d: stuck", round)
		}
	}
}

// TestDecode_FooterLengthBeyondFile: a footer length larger than the file
// is refused before anything is allocated for it (parquet-go would
// allocate the 4 GB it says).
func TestDecode_FooterLengthBeyondFile(t *testing.T) {
	file := bytes.Clone(readFile(t, "zips.parquet"))
	copy(file[len(file)-8:], []byte{0xf0, 0xff, 0xff, 0xff})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var err error
	for _, e := range Decode(bytes.NewReader(file), int64(len(file)), formats.RowDecoder[map[string]any](slow, false), false) {
		err = e
	}
	runtime.ReadMemStats(&after)
	var re *formats.RowError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "the footer is said to be 4294967280 bytes long") {
		t.Fatalf("%v", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
		t.Fatalf("allocated %d bytes", n)
	}
}

// TestSplitRowGroupsKeepEveryUnknownMember: the columns a row type keeps
// as unknown members are spread over the goroutines that read a row group
// (split), and every row still has every one of them, in one map, as
// decoding the row from its JSON gives them.
func TestSplitRowGroupsKeepEveryUnknownMember(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	type in struct {
		ID      string  `parquet:"id"`
		Name    string  `parquet:"name"`
		City    string  `parquet:"city"`
		Email   string  `parquet:"email,optional"`
		Phone   string  `parquet:"phone"`
		Office  string  `parquet:"office"`
		Tags    string  `parquet:"tags,optional"`
		Volume  float64 `parquet:"volume"`
		Count   int64   `parquet:"count"`
		Lead    bool    `parquet:"lead"`
		License string  `parquet:"license"`
	}
	var rows []in
	for i := range 3000 {
		r := in{ID: fmt.Sprintf("r%05d", i), Name: strings.Repeat("n", i%40), City: fmt.Sprint("city", i%17),
			Email: fmt.Sprintf("someone%d@example.com", i), Phone: fmt.Sprintf("+1555%07d", i),
			Office: fmt.Sprintf(`{"name":"o%d","zip":"%05d"}`, i, i*7), Tags: `["a","b"]`, Volume: float64(i) * 1.5,
			Count: int64(i), Lead: i%3 == 0, License: fmt.Sprintf("XX%08d", i*13)}
		if i%7 == 0 {
			r.Email, r.Tags = "", ""
		}
		rows = append(rows, r)
	}
	file := writeParquet(t, rows, parquet.MaxRowsPerRowGroup(1000))
	type out struct {
		ID    string                     `json:"id"`
		Count int64                      `json:"count"`
		Extra map[string]json.RawMessage `json:",unknown"`
	}
	f, err := parquet.OpenFile(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	// The unknown members go to more than one part: else this test tests
	// nothing new.
	schema := formats.SchemaOf(reflect.TypeFor[out]())
	cols := newColumns(f.Schema(), schema)
	var keep []int
	var sizes []int64
	for c, meta := range f.Metadata().RowGroups[0].Columns {
		keep, sizes = append(keep, c), append(sizes, meta.MetaData.TotalUncompressedSize)
	}
	withUnknown := 0
	for _, part := range split(cols, schema, keep, sizes, 4) {
		for _, c := range part {
			if _, known := schema.Lookup(cols.cols[cols.byLeaf[c]].name); !known {
				withUnknown++
				break
			}
		}
	}
	if withUnknown < 2 {
		t.Fatalf("the unknown members are read by %d of the goroutines", withUnknown)
	}
	var got []out
	for r, err := range Decode(bytes.NewReader(file), int64(len(file)), formats.RowDecoder[out](slow, false), false) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	want := rowsFromJSON[out](t, f)
	if len(want) != 3000 || len(want[1].Extra) != 9 || string(want[1].Extra["office"]) != `{"name":"o1","zip":"00007"}` {
		t.Fatalf("want: %d rows, %+v", len(want), want[1])
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatal(d)
	}
}

// rowsFromJSON decodes each row of f from its JSON: the reference rows.
func rowsFromJSON[T any](t *testing.T, f *parquet.File) []T {
	t.Helper()
	a := newAssembler(newColumns(f.Schema(), formats.SchemaOf(reflect.TypeFor[T]())), nil)
	var rows []T
	for _, rg := range f.RowGroups() {
		rr := parquet.NewRowGroupRowReader(rg)
		buf := make([]parquet.Row, 100)
		for {
			n, err := rr.ReadRows(buf)
			for _, row := range buf[:n] {
				js, jerr := a.appendRow(nil, row)
				var r T
				if jerr != nil || slow(js, &r) != nil {
					t.Fatalf("%s: %v", js, jerr)
				}
				rows = append(rows, r)
			}
			if err != nil {
				break
			}
		}
		rr.Close()
	}
	return rows
}

// TestSplitRunsOfAdjacentColumns: split cuts the columns into runs of
// adjacent columns, the last run first (readRowGroup's pipeline starts
// with the last part, and the first columns of a row group land first),
// each run's cost within one column's of its share.
func TestSplitRunsOfAdjacentColumns(t *testing.T) {
	type in struct {
		A, B, C, D, E, F, G, H string
	}
	file := writeParquet(t, []in{{}}, parquet.MaxRowsPerRowGroup(1))
	f, err := parquet.OpenFile(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	type out struct {
		A, C, E, G string
		Extra      map[string]json.RawMessage `json:",unknown"`
	}
	schema := formats.SchemaOf(reflect.TypeFor[out]())
	cols := newColumns(f.Schema(), schema)
	keep := []int{0, 1, 2, 3, 4, 5, 6, 7}
	sizes := []int64{99, 9, 99, 9, 99, 9, 99, 9} // a column costs 1 more; the unknown B, D, F, H twice: 480 in all
	for ways, want := range map[int][][]int{
		1: {keep},
		2: {{4, 5, 6, 7}, {0, 1, 2, 3}},
		3: {{5, 6, 7}, {2, 3, 4}, {0, 1}}, // 140, 220, 120: the cuts nearest 160 and 320
		8: {{7}, {6}, {5}, {4}, {3}, {2}, {1}, {0}},
		9: {{7}, {6}, {5}, {4}, {3}, {2}, {1}, {0}},
	} {
		if got := split(cols, schema, keep, sizes, ways); !reflect.DeepEqual(got, want) {
			t.Errorf("%d ways: %v, want %v", ways, got, want)
		}
	}
}
