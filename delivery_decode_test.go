package lendgraph_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

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

var testFiles = map[lendgraph.Format]string{
	lendgraph.FormatNDJSON: "agents.ndjson.gz", lendgraph.FormatJSON: "agents.json",
	lendgraph.FormatCSV: "agents.csv",
}

func TestDecodeRows_FilesFromOtherWriters(t *testing.T) {
	want := wantFileRows()
	for f, name := range testFiles {
		rows, err := decodeAll[fileRow](t, readTestFile(t, name), f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for i := range rows {
			rows[i].Extra = lendgraph.Fields{}
		}
		if d := cmp.Diff(want, rows); d != "" {
			t.Errorf("%s rows: %s", f, d)
		}
	}
}

func TestDecodeRows_UntypedKeepLargeIntegers(t *testing.T) {
	for f, name := range testFiles {
		rows, err := decodeAll[lendgraph.Row](t, readTestFile(t, name), f)
		if err != nil || len(rows) != 3 {
			t.Fatalf("%s: %d rows, %v", f, len(rows), err)
		}
		var big int64
		wantRaw := "9007199254740993"
		if f == lendgraph.FormatCSV {
			wantRaw = `"9007199254740993"` // a csv cell is text; Decode converts it
		}
		if err := rows[0].Decode("bigId", &big); err != nil || big != 9007199254740993 || (member(rows[0], "bigId")) != wantRaw {
			t.Errorf("%s: bigId %s", f, member(rows[0], "bigId"))
		}
		var office struct {
			City string `json:"city"`
		}
		if err := rows[0].Decode("office", &office); err != nil || office.City != "Austin" {
			t.Errorf("%s: office %s (%v)", f, member(rows[0], "office"), err)
		}
	}
}

func TestDecodeRows_TruncatedAndCorrupt(t *testing.T) {
	// Truncated: every whole row before the cut, then an error naming the
	// format and where.
	nd := gzipBytes(strings.Repeat(`{"id":"a","transactionCount":1}`+"\n", 1000))
	js := []byte("[" + strings.Repeat(`{"id":"a","transactionCount":1},`, 999) + `{"id":"a","transactionCount":1}]`)
	cs := []byte("id,transactionCount\n" + strings.Repeat("a,1\n", 1000))
	for _, c := range []struct {
		f       lendgraph.Format
		b       []byte
		atLeast int
		where   string
	}{
		{lendgraph.FormatNDJSON, nd[:len(nd)*2/3], 1, "line"},
		{lendgraph.FormatNDJSON, nd[:len(nd)-4], 1000, "truncated"},
		{lendgraph.FormatJSON, js[:len(js)/2], 400, "byte"},
		{lendgraph.FormatCSV, cs[:len(cs)/2-1], 400, ""}, // a cut csv is a short last row
	} {
		n, err := cut[lendgraph.Agent](t, c.b, c.f)
		if err == nil || !strings.Contains(err.Error(), string(c.f)) || !strings.Contains(err.Error(), c.where) || n < c.atLeast {
			t.Errorf("%s truncated to %d bytes: %d rows, %v", c.f, len(c.b), n, err)
		}
	}
	// Corrupt.
	bad := bytes.Clone(nd)
	bad[len(bad)-6] ^= 0xff // the CRC32 of the gzip trailer
	if n, err := cut[lendgraph.Agent](t, bad, lendgraph.FormatNDJSON); n != 1000 || err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("bad checksum: %d rows, %v", n, err)
	}
	if n, err := cut[lendgraph.Agent](t, gzipBytes("{\"id\":\"a\"}\n{\"id\":\"b\"\n{\"id\":\"c\"}\n"), lendgraph.FormatNDJSON); n != 1 || err == nil || !strings.Contains(err.Error(), "ndjson file: row 2") {
		t.Errorf("bad line: %d rows, %v", n, err)
	}
	if n, err := cut[lendgraph.Agent](t, []byte(`[{"id":"a"},{"id":"b",}]`), lendgraph.FormatJSON); n != 1 || err == nil || !strings.Contains(err.Error(), "json") {
		t.Errorf("bad json: %d rows, %v", n, err)
	}
	for _, c := range []struct{ body, where string }{
		{"id,transactionCount\na,1\nb,2,3\n", "row 2"},                                         // ragged
		{"id,transactionCount\na,1\nb\"x,2\nc,3\n", "row 2"},                                   // bare quote
		{"id,transactionCount\na,1\n\"b,2\nc,3\n", "row 2"},                                    // unterminated quote
		{"id,office\na,\"{\"\"city\"\":\"\"Austin\"\"}\"\nb,\"{\"\"city\"\":\"\"Ida", "row 2"}, // cut inside a quoted cell
		{"id,transactionCount\na,1\nb,two\n", `row 2 (column "transactionCount")`},             // not an integer
	} {
		if n, err := cut[lendgraph.Agent](t, []byte(c.body), lendgraph.FormatCSV); n != 1 || err == nil || !strings.Contains(err.Error(), c.where) {
			t.Errorf("csv %q: %d rows, %v", c.body, n, err)
		}
	}
	// The rows before a malformed csv record are whole.
	if rows, err := decodeAll[lendgraph.Agent](t, []byte("id,transactionCount\na,1\nb,2\nc\"x,3\n"), lendgraph.FormatCSV); err == nil ||
		len(rows) != 2 || rows[0].ID != "a" || rows[1].ID != "b" || rows[1].TransactionCount != 2 {
		t.Errorf("csv rows before a bad record: %+v, %v", rows, err)
	}
}

func TestDecodeRows_NDJSONLongLines(t *testing.T) {
	long := strings.Repeat("x", 10<<20)
	body := `{"id":"a"}` + "\r\n" + `{"id":"b","fullName":"` + long + `"}` + "\n\n" + `{"id":"c"}`
	rows, err := decodeAll[lendgraph.Agent](t, gzipBytes(body), lendgraph.FormatNDJSON)
	if err != nil || len(rows) != 3 || len(rows[1].FullName) != 10<<20 || rows[2].ID != "c" {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	n := 0
	var last error
	for _, err := range lendgraph.DecodeRows[lendgraph.Agent](bytes.NewReader(gzipBytes(body)), lendgraph.FormatNDJSON, lendgraph.WithMaxLineSize(1<<20)) {
		if err != nil {
			last = err
			break
		}
		n++
	}
	if n != 1 || last == nil || !strings.Contains(last.Error(), "line 2") {
		t.Fatalf("max line: %d rows, %v", n, last)
	}
	// A plain (not gzipped) ndjson stream is read too.
	if rows, err := decodeAll[lendgraph.Agent](t, []byte(`{"id":"a"}`+"\n"), lendgraph.FormatNDJSON); err != nil || len(rows) != 1 {
		t.Fatalf("plain ndjson: %v", err)
	}
}

func TestDecodeRows_CSVConversions(t *testing.T) {
	body := "\uFEFFid,transactionCount,isTeamLead,volume,office,extraNum,extraZip,extraObj\r\n" +
		"a,,,,,12,00123,\"{\"\"k\"\":1}\"\r\n"
	type row struct {
		ID               string                 `json:"id"`
		TransactionCount *int64                 `json:"transactionCount"`
		IsTeamLead       bool                   `json:"isTeamLead"`
		Volume           float64                `json:"volume"`
		Office           *struct{ Name string } `json:"office"`
		Extra            lendgraph.Fields       `json:",unknown"`
	}
	rows, err := decodeAll[row](t, []byte(body), lendgraph.FormatCSV)
	if err != nil || len(rows) != 1 {
		t.Fatal(err)
	}
	r := rows[0]
	// Cells of columns the row lacks keep their text, as JSON strings,
	// except a JSON object or array, which is that value.
	if r.ID != "a" || r.TransactionCount != nil || r.Office != nil || (member(r.Extra, "extraNum")) != `"12"` ||
		(member(r.Extra, "extraZip")) != `"00123"` || (member(r.Extra, "extraObj")) != `{"k":1}` {
		t.Fatalf("%+v %v", r, r.Extra)
	}
	var n float64
	var zip string
	var obj struct{ K int }
	if r.Extra.Decode("extraNum", &n) != nil || n != 12 || r.Extra.Decode("extraZip", &zip) != nil || zip != "00123" ||
		r.Extra.Decode("extraObj", &obj) != nil || obj.K != 1 {
		t.Fatalf("Decode: %v %q %+v", n, zip, obj)
	}
	if err := r.Extra.Decode("extraZip", &obj); err == nil {
		t.Fatal("a zip decoded into a struct")
	}
	if _, err := decodeAll[row](t, []byte("id,isTeamLead\na,maybe\n"), lendgraph.FormatCSV); err == nil || !strings.Contains(err.Error(), "boolean") {
		t.Fatalf("bad bool: %v", err)
	}
	if _, err := decodeAll[row](t, []byte("id,id\na,b\n"), lendgraph.FormatCSV); err == nil {
		t.Fatal("duplicate header accepted")
	}
}

func TestDecodeRows_UnknownFormat(t *testing.T) {
	for _, err := range lendgraph.DecodeRows[lendgraph.Agent](strings.NewReader(""), "xlsx") {
		var ia *lendgraph.InvalidArgumentError
		if !errors.As(err, &ia) {
			t.Fatal(err)
		}
	}
	// Parquet is read by the parquet package; the error says so.
	for _, err := range lendgraph.DecodeRows[lendgraph.Agent](bytes.NewReader(readTestFile(t, "agents.parquet")), lendgraph.FormatParquet) {
		var ia *lendgraph.InvalidArgumentError
		if !errors.As(err, &ia) || !strings.Contains(err.Error(), "parquet.Decode") {
			t.Fatal(err)
		}
	}
}

func ExampleDecodeRows() {
	csv := "id,fullName,state,transactionCount\nagt_1,Ana Lima,TX,42\nagt_2,Bo Chen,CA,7\n"
	for a, err := range lendgraph.DecodeRows[lendgraph.Agent](strings.NewReader(csv), lendgraph.FormatCSV) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Println(a.ID, a.FullName, a.State, a.TransactionCount)
	}
	// Output:
	// agt_1 Ana Lima TX 42
	// agt_2 Bo Chen CA 7
}

// TestDecodeRows_CSVCellsKeepTheirText: zips.csv and zips.ndjson hold
// the same rows (DuckDB, make_nested.mjs; zips.parquet too, whose case is
// in the parquet module's tests). A csv text cell never changes
// (zips with leading zeros, numbers); a JSON object or array is that value
// and a column of true/false is booleans, as in the other formats; and
// Extra.Decode gives every format's value.
func TestDecodeRows_CSVCellsKeepTheirText(t *testing.T) {
	rows, err := decodeAll[lendgraph.Row](t, readTestFile(t, "zips.csv"), lendgraph.FormatCSV)
	if err != nil || len(rows) != 3 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	if (member(rows[0], "zip")) != `"02134"` || (member(rows[1], "zip")) != `"90210"` || (member(rows[0], "score")) != `"1.50"` {
		t.Fatalf("cells changed: %s %s %s", member(rows[0], "zip"), member(rows[1], "zip"), member(rows[0], "score"))
	}
	ndjson, err := decodeAll[lendgraph.Row](t, readTestFile(t, "zips.ndjson"), lendgraph.FormatNDJSON)
	if err != nil || len(ndjson) != 3 {
		t.Fatalf("%d rows, %v", len(ndjson), err)
	}
	for i, r := range rows {
		for name, v := range r.All() {
			switch name {
			case "active", "tags", "office": // the values ndjson holds
				if string(v) != member(ndjson[i], name) {
					t.Errorf("row %d column %s: %s, want %s", i+1, name, v, member(ndjson[i], name))
				}
			default: // text
				if v[0] != '"' {
					t.Errorf("row %d column %s: %s is not a JSON string", i+1, name, v)
				}
			}
		}
	}
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
	}{{lendgraph.FormatCSV, "zips.csv"}, {lendgraph.FormatNDJSON, "zips.ndjson"}} {
		rows, err := decodeAll[idOnly](t, readTestFile(t, c.file), c.f)
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
	if d := cmp.Diff(want, byFormat[0][0]); d != "" {
		t.Fatalf("csv row 1: %s", d)
	}
	for i := 1; i < len(byFormat); i++ {
		if d := cmp.Diff(byFormat[0], byFormat[i]); d != "" {
			t.Errorf("format %d differs from csv: %s", i, d)
		}
	}
}

// TestDecodeRows_CSVBooleans: pandas.csv (written by pandas 1.5.3,
// testdata/delivery/make_pandas.py) spells booleans True/False and missing
// values as empty cells. A column the row type does not declare whose every
// non-empty cell in the first batch is true or false in any case is
// booleans (null where empty), as DuckDB's and polars' csv readers read it;
// a column where only some cells spell True, and single letters t/f, stay
// text. A typed bool field takes every spelling, cell by cell.
func TestDecodeRows_CSVBooleans(t *testing.T) {
	file := readTestFile(t, "pandas.csv")
	rows, err := decodeAll[lendgraph.Row](t, file, lendgraph.FormatCSV)
	if err != nil || len(rows) != 600 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	for i, r := range rows {
		want := map[string]string{
			"active":     strconv.FormatBool(i%3 != 0),
			"isTeamLead": strconv.FormatBool(i%2 == 0),
			"verified":   strconv.FormatBool(i%2 == 1),
			"note":       strconv.Quote(fmt.Sprintf("note %d", i)),
			"grade":      `"f"`,
			"zip":        strconv.Quote(fmt.Sprintf("%05d", (i*7919)%100000)),
		}
		if i%5 == 0 {
			want["isTeamLead"] = "null"
		}
		if i%4 == 0 {
			want["note"] = `"True"`
		}
		if i%2 == 1 {
			want["grade"] = `"t"`
		}
		for name, w := range want {
			if member(r, name) != w {
				t.Fatalf("row %d %s: %s, want %s", i+1, name, member(r, name), w)
			}
		}
		if member(r, "office")[0] != '{' || member(r, "tags")[0] != '[' {
			t.Fatalf("row %d nested: %s %s", i+1, member(r, "office"), member(r, "tags"))
		}
	}
	// Extra.Decode into a bool works on every row, and typed bool fields
	// take every spelling.
	type typed struct {
		ID       string           `json:"id"`
		Active   bool             `json:"active"`
		Verified bool             `json:"verified"`
		Grade    bool             `json:"grade"`
		Extra    lendgraph.Fields `json:",unknown"`
		TeamLead *bool            `json:"isTeamLead"`
	}
	trows, err := decodeAll[typed](t, file, lendgraph.FormatCSV)
	if err != nil || len(trows) != 600 {
		t.Fatalf("%d rows, %v", len(trows), err)
	}
	for i, r := range trows {
		var note bool
		if r.Active != (i%3 != 0) || r.Verified != (i%2 == 1) || r.Grade != (i%2 == 1) || (r.TeamLead == nil) != (i%5 == 0) {
			t.Fatalf("row %d: %+v", i+1, r)
		}
		if i%4 == 0 && (r.Extra.Decode("note", &note) != nil || !note) {
			t.Fatalf("row %d: Decode(note) %v", i+1, note)
		}
	}
	for i, r := range rows {
		var b bool
		if err := r.Decode("active", &b); err != nil || b != (i%3 != 0) {
			t.Fatalf("row %d: Decode(active) %v, %v", i+1, b, err)
		}
	}
	// The decision is the first batch's (here 512 records): a later cell of a
	// boolean column that is not a boolean keeps its text.
	var b strings.Builder
	b.WriteString("id,flag\n")
	for i := range 600 {
		cell := "TRUE"
		if i == 599 {
			cell = "maybe"
		}
		fmt.Fprintf(&b, "r%d,%s\n", i, cell)
	}
	late, err := decodeAll[lendgraph.Row](t, []byte(b.String()), lendgraph.FormatCSV)
	if err != nil || len(late) != 600 || member(late[0], "flag") != "true" || member(late[598], "flag") != "true" || member(late[599], "flag") != `"maybe"` {
		t.Fatalf("late non-boolean: %d rows, %v", len(late), err)
	}
}

// TestDecodeRows_ParquetNotLinked: a program importing only this package does
// not link a parquet library (the parquet package reads parquet).
func TestDecodeRows_ParquetNotLinked(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.Contains(p, "parquet") {
			t.Errorf("the root package imports %s", p)
		}
	}
}

// TestRowError_Place: every decoding failure is a *lendgraph.RowError that
// errors.As reaches, naming the format and the place (row, line, offset,
// column) that the format can know, and the rows before it were yielded.
func TestRowError_Place(t *testing.T) {
	js := readTestFile(t, "agents.json")
	type wrongID struct {
		ID int `json:"id"`
	}
	for _, c := range []struct {
		name string
		seq  func() iter.Seq2[wrongID, error]
		rows int
		want lendgraph.RowError // Err is not compared
	}{
		{"ndjson bad line", func() iter.Seq2[wrongID, error] {
			return lendgraph.DecodeRows[wrongID](bytes.NewReader(gzipBytes("{\"id\":1}\n{\"id\":2\n")), lendgraph.FormatNDJSON)
		}, 1, lendgraph.RowError{Format: "ndjson", Row: 2}},
		{"ndjson empty", func() iter.Seq2[wrongID, error] {
			return lendgraph.DecodeRows[wrongID](bytes.NewReader(nil), lendgraph.FormatNDJSON)
		}, 0, lendgraph.RowError{Format: "ndjson"}},
		{"json cut", func() iter.Seq2[wrongID, error] {
			return lendgraph.DecodeRows[wrongID](strings.NewReader(`[{"id":1},{"id":2},{"id"`), lendgraph.FormatJSON)
		}, 2, lendgraph.RowError{Format: "json", Row: 3, Offset: 24}},
		{"json not an array", func() iter.Seq2[wrongID, error] {
			return lendgraph.DecodeRows[wrongID](strings.NewReader(`  {"id":1}`), lendgraph.FormatJSON)
		}, 0, lendgraph.RowError{Format: "json", Offset: 2}},
		{"csv cell", func() iter.Seq2[wrongID, error] {
			return lendgraph.DecodeRows[wrongID](strings.NewReader("id\n1\n\n2\nx\n"), lendgraph.FormatCSV)
		}, 2, lendgraph.RowError{Format: "csv", Row: 3, Column: "id"}},
		{"csv bare quote", func() iter.Seq2[wrongID, error] {
			return lendgraph.DecodeRows[wrongID](strings.NewReader("id\n1\n2\"x\n"), lendgraph.FormatCSV)
		}, 1, lendgraph.RowError{Format: "csv", Row: 2, Line: 3}},
		{"csv duplicate header", func() iter.Seq2[wrongID, error] {
			return lendgraph.DecodeRows[wrongID](strings.NewReader("id,id\n1,2\n"), lendgraph.FormatCSV)
		}, 0, lendgraph.RowError{Format: "csv", Line: 1, Column: "id"}},
		{"json value of the wrong type", func() iter.Seq2[wrongID, error] {
			return lendgraph.DecodeRows[wrongID](bytes.NewReader(js), lendgraph.FormatJSON)
		}, 0, lendgraph.RowError{Format: "json", Row: 1}},
	} {
		var n int
		var err error
		for _, e := range c.seq() {
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
		if got != c.want || re.Err == nil || n != c.rows {
			t.Errorf("%s: after %d rows %+v (%v); want %+v after %d rows", c.name, n, got, err, c.want, c.rows)
		}
	}
	// Enrichment results files: the entry's row and line.
	var err error
	for _, e := range lendgraph.DecodeEnrichmentResults(strings.NewReader("{\"propertyId\":\"a\"}\n\n[1]\n")) {
		err = e
	}
	var re *lendgraph.RowError
	if !errors.As(err, &re) || re.Format != "enrichment results" || re.Row != 2 || re.Line != 3 {
		t.Errorf("enrichment results: %v", err)
	}
	// A hand-built or zero RowError prints something sensible.
	for _, e := range []*lendgraph.RowError{nil, {}, {Row: 4, Err: io.ErrUnexpectedEOF}} {
		if s := e.Error(); !strings.HasPrefix(s, "lendgraph: ") || strings.Contains(s, "nil") {
			t.Errorf("%#v prints %q", e, s)
		}
	}
}

func TestDecodeRows_EdgeCases(t *testing.T) {
	// Concatenated gzip members (a file written in parts) are all read.
	two := append(gzipBytes(`{"id":"a"}`+"\n"+`{"id":"b"}`+"\n"), gzipBytes(`{"id":"c"}`+"\n")...)
	rows, err := decodeAll[lendgraph.Agent](t, two, lendgraph.FormatNDJSON)
	if err != nil || len(rows) != 3 || rows[2].ID != "c" {
		t.Errorf("concatenated gzip members: %d rows, %v", len(rows), err)
	}
	// A UTF-8 BOM before the csv header is dropped, not part of "id".
	rows, err = decodeAll[lendgraph.Agent](t, []byte("\xef\xbb\xbfid,transactionCount\na,1\n"), lendgraph.FormatCSV)
	if err != nil || len(rows) != 1 || rows[0].ID != "a" || rows[0].TransactionCount != 1 {
		t.Errorf("csv with BOM: %+v, %v", rows, err)
	}
	// Trailing garbage after a JSON array file is an error after the rows.
	rows, err = decodeAll[lendgraph.Agent](t, []byte(`[{"id":"a"}] {"id":"b"}`), lendgraph.FormatJSON)
	if err == nil || len(rows) != 1 || !strings.Contains(err.Error(), "after the array") {
		t.Errorf("json trailing garbage: %d rows, %v", len(rows), err)
	}
}

// untaggedAgent is a row type of the caller's with no json tags at all, as
// encoding/json users write them: FullName matches "fullName", Office
// "office" (a nested object; in csv and parquet a JSON text), and
// License_Number "licenseNumber" (jsonv2's folding drops '_' too).
type untaggedAgent struct {
	ID       string
	FullName string
	Office   struct {
		Name string
		City string
	}
	License_Number string //nolint:revive // a name that folds like licenseNumber
}

// A delivery's rows decoded into a type without tags land every member
// that names a field up to case (encoding/json's rule, and Fields.Decode's),
// in every format: the untagged fields are never silently left zero.
func TestDeliveryRows_UntaggedFieldsMatchUpToCase(t *testing.T) {
	_, c := newDeliveryServer(t)
	ctx := t.Context()
	for _, f := range allFormats {
		t.Run(string(f), func(t *testing.T) {
			job, _ := deliver(t, c, &lendgraph.DeliveryRequest{Format: f, Limit: 500})
			want := collect(t, jobRows(ctx, job, f))
			got := collect(t, jobRows(ctx, lendgraph.DeliveryJobAs[untaggedAgent](job), f))
			if len(got) != len(want) || len(got) == 0 {
				t.Fatalf("%d rows, want %d", len(got), len(want))
			}
			offices, licences := 0, 0
			for i, a := range want {
				g := got[i]
				var office struct{ Name, City string }
				var licence string
				_ = a.Extra.Decode("office", &office)
				_ = a.Extra.Decode("licenseNumber", &licence)
				if g.ID != a.ID || g.FullName != a.FullName || g.Office.Name != office.Name || g.Office.City != office.City || g.License_Number != licence {
					t.Fatalf("row %d: %+v, want id %s, fullName %q, office %+v, licenseNumber %q", i, g, a.ID, a.FullName, office, licence)
				}
				if office.Name != "" {
					offices++
				}
				if licence != "" {
					licences++
				}
			}
			if offices == 0 || licences == 0 {
				t.Fatalf("rows with an office: %d, with a licence number: %d: the check checks nothing", offices, licences)
			}
		})
	}
}

// The slow path (a tag option the direct scan leaves to jsonv2: ",string")
// matches names as the direct scan does.
func TestDecodeRows_SlowPathMatchesUpToCase(t *testing.T) {
	type row struct {
		ID       string
		FullName string
		Count    int `json:",string"`
	}
	in := `{"id":"a1","full_name":"Ann","Count":"5"}` + "\n"
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte(in))
	_ = zw.Close()
	got := collect(t, lendgraph.DecodeRows[row](&gz, lendgraph.FormatNDJSON))
	if len(got) != 1 || got[0] != (row{"a1", "Ann", 5}) {
		t.Fatalf("%+v", got)
	}
}

// encoding/json's Number takes a number (or a string holding one) in every
// format, as encoding/json gives it; an empty csv cell leaves a pointer nil,
// as a null does elsewhere.
func TestDeliveryRows_NumberAndNilPointers(t *testing.T) {
	type row struct {
		ID               string      `json:"id"`
		TransactionCount json.Number `json:"transactionCount"`
		State            *string     `json:"state"`
	}
	_, c := newDeliveryServer(t)
	ctx := t.Context()
	var want []row
	for _, f := range allFormats {
		job, _ := deliver(t, c, &lendgraph.DeliveryRequest{Format: f, Limit: 300})
		got := collect(t, jobRows(ctx, lendgraph.DeliveryJobAs[row](job), f))
		if len(got) == 0 {
			t.Fatalf("%s: no rows", f)
		}
		numbers, nils := 0, 0
		for _, r := range got {
			if _, err := r.TransactionCount.Int64(); err == nil {
				numbers++
			}
			if r.State == nil {
				nils++
			} else if *r.State == "" {
				t.Fatalf("%s: row %s has a pointer to an empty state", f, r.ID)
			}
		}
		if numbers == 0 || nils == 0 {
			t.Fatalf("%s: %d transactionCounts decoded into json.Number, %d rows without a state: the check checks nothing", f, numbers, nils)
		}
		if want == nil {
			want = got
			continue
		}
		if !slices.EqualFunc(got, want, func(a, b row) bool {
			return a.ID == b.ID && a.TransactionCount == b.TransactionCount && (a.State == nil) == (b.State == nil)
		}) {
			t.Fatalf("%s: the rows differ from ndjson's", f)
		}
	}
}
