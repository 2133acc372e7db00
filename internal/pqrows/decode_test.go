package pqrows

import (
	"bytes"
	"errors"
	"io"
	"os"
	"reflect"
	"testing"

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
	b, err := os.ReadFile("../../testdata/delivery/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
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
	for r, err := range Decode(bytes.NewReader(file), int64(len(file)), formats.RowDecoder[row](count, false)) {
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
