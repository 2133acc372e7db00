package parquet_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/parquet"
)

// Parquet's cases of the root package's file-decoding tests
// (delivery_decode_test.go there): the files of testdata/delivery that
// DuckDB wrote, checked against the rows the other formats' files hold.

// fileRow is the rows of testdata/delivery, written by Python (ndjson.gz,
// json, csv) and DuckDB (parquet).
type fileRow struct {
	ID               string  `json:"id"`
	FullName         string  `json:"fullName"`
	City             string  `json:"city"`
	State            string  `json:"state"`
	TransactionCount int64   `json:"transactionCount"`
	Volume           float64 `json:"volume"`
	IsTeamLead       bool    `json:"isTeamLead"`
	Office           struct {
		Name  string `json:"name"`
		City  string `json:"city"`
		State string `json:"state"`
	} `json:"office"`
	Tags  []string `json:"tags"`
	BigID int64    `json:"bigId"`
	Note  string   `json:"note"`
	// Extra holds the columns this type does not declare.
	Extra lendgraph.Fields `json:",unknown"`
}

func wantFileRows() []fileRow {
	rows := []fileRow{
		{ID: "agt_0000001", FullName: "Ana Lima", City: "Austin", State: "TX", TransactionCount: 42, Volume: 12345678.5, IsTeamLead: true,
			Tags: []string{"luxury", "investors"}, BigID: 9007199254740993, Note: "line one\nline two, with comma"},
		{ID: "agt_0000002", FullName: "Bo Chen", City: "Fresno", State: "CA", Volume: 0.25, Tags: []string{}, BigID: 1, Note: "café ☃"},
		{ID: "agt_0000003", FullName: "Cy D'Souza", State: "NY", TransactionCount: 7, Volume: 1e-7, Tags: []string{"relocation"}, BigID: -12},
	}
	rows[0].Office.Name, rows[0].Office.City, rows[0].Office.State = `Lima "Best" Homes`, "Austin", "TX"
	rows[1].Office.Name, rows[1].Office.City, rows[1].Office.State = "Chen Realty", "Fresno", "CA"
	return rows
}

// TestDecode_FilesFromOtherWriters: agents.parquet (DuckDB) holds the rows
// the other formats' files hold, and DuckDB's extra columns land in Extra:
// DECIMAL scaled exactly, DATE and UUID as text.
func TestDecode_FilesFromOtherWriters(t *testing.T) {
	rows, err := decodeAll[fileRow](readTestFile(t, "agents.parquet"), lendgraph.FormatParquet)
	if err != nil {
		t.Fatal(err)
	}
	want := wantFileRows()
	if len(rows) != 3 {
		t.Fatalf("%d rows", len(rows))
	}
	wantExtra := fieldsOf(t, map[string]string{"price": "0.02", "wide": "123456789012345678901234.5678",
		"listedOn": `"2024-02-29"`, "uid": `"6ba7b810-9dad-11d1-80b4-00c04fd430c8"`})
	if d := cmp.Diff(wantExtra, rows[0].Extra); d != "" {
		t.Errorf("parquet extra columns: %s", d)
	}
	if extra := rows[1].Extra; member(extra, "price") != "-1.50" || member(extra, "wide") != "-0.0001" || member(extra, "listedOn") != `"1969-12-31"` || member(extra, "uid") != "null" {
		t.Errorf("parquet row 2 extra: %s %s %s %s", member(extra, "price"), member(extra, "wide"), member(extra, "listedOn"), member(extra, "uid"))
	}
	for i := range rows {
		rows[i].Extra = lendgraph.Fields{}
	}
	if d := cmp.Diff(want, rows); d != "" {
		t.Errorf("parquet rows: %s", d)
	}
}

// TestDecode_UntypedKeepLargeIntegers: an untyped row keeps an int64 past
// 2^53 exactly, and nested members decode.
func TestDecode_UntypedKeepLargeIntegers(t *testing.T) {
	rows, err := decodeAll[lendgraph.Row](readTestFile(t, "agents.parquet"), lendgraph.FormatParquet)
	if err != nil || len(rows) != 3 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	var big int64
	if err := rows[0].Decode("bigId", &big); err != nil || big != 9007199254740993 || member(rows[0], "bigId") != "9007199254740993" {
		t.Errorf("bigId %s", member(rows[0], "bigId"))
	}
	var office struct {
		City string `json:"city"`
	}
	if err := rows[0].Decode("office", &office); err != nil || office.City != "Austin" {
		t.Errorf("office %s (%v)", member(rows[0], "office"), err)
	}
}

// TestDecode_TruncatedAndCorrupt: a cut, corrupt or foreign file is an
// error naming parquet.
func TestDecode_TruncatedAndCorrupt(t *testing.T) {
	pq := readTestFile(t, "agents.parquet")
	bad := bytes.Clone(pq)
	for i := 4; i < len(bad)/2; i += 7 {
		bad[i] ^= 0x5a
	}
	for name, b := range map[string][]byte{"half": pq[:len(pq)/2], "all but 3 bytes": pq[:len(pq)-3], "corrupt": bad} {
		if _, err := decodeAll[lendgraph.Agent](b, lendgraph.FormatParquet); err == nil || !strings.Contains(err.Error(), "parquet") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := decodeAll[lendgraph.Agent]([]byte("not parquet at all"), lendgraph.FormatParquet); err == nil {
		t.Error("garbage parquet decoded")
	}
}

// TestDecode_CellsAsOtherFormats: zips.parquet holds the rows zips.csv
// and zips.ndjson hold (DuckDB, make_nested.mjs), and Extra.Decode gives
// the same values from each.
func TestDecode_CellsAsOtherFormats(t *testing.T) {
	type office struct {
		Name string `json:"name"`
		Zip  string `json:"zip"`
	}
	type values struct {
		Zip    string
		Deals  float64
		Score  float64
		Active bool
		Tags   []string
		Office office
	}
	type idOnly struct {
		ID    string           `json:"id"`
		Extra lendgraph.Fields `json:",unknown"`
	}
	var byFormat [][]values
	for _, c := range []struct {
		f    lendgraph.Format
		file string
	}{{lendgraph.FormatCSV, "zips.csv"}, {lendgraph.FormatNDJSON, "zips.ndjson"}, {lendgraph.FormatParquet, "zips.parquet"}} {
		rows, err := decodeAll[idOnly](readTestFile(t, c.file), c.f)
		if err != nil || len(rows) != 3 {
			t.Fatalf("%s: %d rows, %v", c.f, len(rows), err)
		}
		var vs []values
		for _, r := range rows {
			var v values
			for _, err := range []error{r.Extra.Decode("zip", &v.Zip), r.Extra.Decode("deals", &v.Deals), r.Extra.Decode("score", &v.Score),
				r.Extra.Decode("active", &v.Active), r.Extra.Decode("tags", &v.Tags), r.Extra.Decode("office", &v.Office)} {
				if err != nil {
					t.Fatalf("%s row %s: %v", c.f, r.ID, err)
				}
			}
			vs = append(vs, v)
		}
		byFormat = append(byFormat, vs)
	}
	want := values{Zip: "02134", Deals: 42, Score: 1.5, Active: true, Tags: []string{"x", "y"}, Office: office{"Lima", "02134"}}
	if d := cmp.Diff(want, byFormat[2][0]); d != "" {
		t.Fatalf("parquet row 1: %s", d)
	}
	for i := range 2 {
		if d := cmp.Diff(byFormat[i], byFormat[2]); d != "" {
			t.Errorf("parquet differs from format %d: %s", i, d)
		}
	}
}

// TestRowError_Place: a parquet decoding failure is a *lendgraph.RowError
// naming the format, and the row when the file is whole.
func TestRowError_Place(t *testing.T) {
	pq := readTestFile(t, "agents.parquet")
	type wrongID struct {
		ID int `json:"id"`
	}
	for _, c := range []struct {
		name string
		b    []byte
		want lendgraph.RowError // Err is not compared
	}{
		{"corrupt", pq[:len(pq)/2], lendgraph.RowError{Format: "parquet"}},
		{"value of the wrong type", pq, lendgraph.RowError{Format: "parquet", Row: 1}},
	} {
		var n int
		var err error
		for _, e := range parquet.Decode[wrongID](bytes.NewReader(c.b), int64(len(c.b))) {
			if err = e; e != nil {
				break
			}
			n++
		}
		var re *lendgraph.RowError
		if !errors.As(err, &re) {
			t.Errorf("%s: %v (%T) is not a *RowError", c.name, err, err)
			continue
		}
		got := *re
		got.Err = nil
		if got != c.want || re.Err == nil || n != 0 {
			t.Errorf("%s: after %d rows %+v (%v); want %+v", c.name, n, got, err, c.want)
		}
	}
}

// TestDecode_EmptyFile: a 0-byte file is a *RowError at row 0 saying the
// file is empty, as in the other formats.
func TestDecode_EmptyFile(t *testing.T) {
	rows, err := decodeAll[lendgraph.Agent](nil, lendgraph.FormatParquet)
	var re *lendgraph.RowError
	if !errors.As(err, &re) || len(rows) != 0 || re.Format != "parquet" || re.Row != 0 || !strings.Contains(err.Error(), "empty") {
		t.Errorf("0 bytes: %d rows, %v; want a *RowError naming the format, at row 0, saying the file is empty", len(rows), err)
	}
}

// nestedFileRow is the rows of testdata/delivery/nested.parquet and
// nested.ndjson, written by DuckDB (make_nested.mjs): native STRUCT, LIST
// and MAP columns with nulls at every level.
type nestedFileRow struct {
	ID     int64 `json:"id"`
	Office *struct {
		Name string `json:"name"`
		Zip  string `json:"zip"`
		Geo  struct {
			Lat *float64 `json:"lat"`
			Lon float64  `json:"lon"`
		} `json:"geo"`
		Agents *int32  `json:"agents"`
		Opened string  `json:"opened"`
		Fee    float64 `json:"fee"`
	} `json:"office"`
	Tags  []string `json:"tags"`
	Pairs []struct {
		K *string `json:"k"`
		V int     `json:"v"`
	} `json:"pairs"`
	Grid   [][]int         `json:"grid"`
	Counts map[string]*int `json:"counts"`
	Note   string          `json:"note"`
}

func TestParquetDecode_NativeNested(t *testing.T) {
	pq := readTestFile(t, "nested.parquet")
	nd := readTestFile(t, "nested.ndjson")
	want, err := decodeAll[nestedFileRow](nd, lendgraph.FormatNDJSON)
	if err != nil || len(want) != 4 {
		t.Fatalf("ndjson: %d rows, %v", len(want), err)
	}
	got, err := decodeAll[nestedFileRow](pq, lendgraph.FormatParquet)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("parquet rows differ from DuckDB's JSON: %s", d)
	}
	if want[0].Office.Zip != "02134" || len(want[3].Tags) != 3 || want[1].Tags == nil || want[2].Tags != nil || want[3].Grid[0] != nil {
		t.Fatalf("rows: %+v", want)
	}
	// Untyped rows: every column as the JSON DuckDB writes for it.
	wantRows, _ := decodeAll[lendgraph.Row](nd, lendgraph.FormatNDJSON)
	gotRows, err := decodeAll[lendgraph.Row](pq, lendgraph.FormatParquet)
	if err != nil || len(gotRows) != len(wantRows) {
		t.Fatalf("%d rows, %v", len(gotRows), err)
	}
	for i := range wantRows {
		for _, name := range wantRows[i].Names() {
			var w, g any
			if err := wantRows[i].Decode(name, &w); err != nil {
				t.Fatal(err)
			}
			if err := gotRows[i].Decode(name, &g); err != nil || !cmp.Equal(w, g) {
				t.Errorf("row %d %s: %s, want %s (%v)", i+1, name, member(gotRows[i], name), member(wantRows[i], name), err)
			}
		}
	}
}
