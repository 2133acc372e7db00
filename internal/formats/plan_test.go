package formats

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"testing"
	"unsafe"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"
)

// planOpts are the SDK's rules for rows (its decodeFieldOptions) as far as
// the plan must follow them: names matched up to case, '_' and '-'.
var planOpts = jsonv2.JoinOptions(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true), jsonv2.MatchCaseInsensitiveNames(true))

func slowUnmarshal(b []byte, v any) error { return jsonv2.Unmarshal(b, v, planOpts) }

// planRowOf is a row with every kind of field, keeping unknown members in
// E: a jsontext.Value (one JSON object, the form of the SDK's Fields) or a
// map of raw values.
type planRowOf[E any] struct {
	ID    string          `json:"id"`
	N     int64           `json:"n,omitempty"`
	N8    int8            `json:"n8"`
	U     uint32          `json:"u"`
	U64   uint64          `json:"u64"`
	F     float64         `json:"f"`
	F32   float32         `json:"f32"`
	B     bool            `json:"b"`
	P     *int64          `json:"p"`
	Tags  []string        `json:"tags"`
	Raw   jsontext.Value  `json:"raw"`
	Sub   struct{ A int } `json:"sub"`
	Name  string          // no tag: the Go name
	Skip  string          `json:"-"`
	Extra E               `json:",unknown"`
	// nested values the direct scan decodes itself
	Office  planOffice     `json:"office"`
	POffice *planOffice    `json:"pOffice"`
	List    []planOffice   `json:"list"`
	PList   []*planOffice  `json:"pList"`
	Ints    []int32        `json:"ints"`
	Grid    [][]float64    `json:"grid"`
	PS      *string        `json:"ps"`
	Tree    *planTree      `json:"tree"`
	Odd     planOdd        `json:"odd"`
	Bytes   []byte         `json:"bytes"`
	M       map[string]int `json:"m"`
	Arr     [2]int         `json:"arr"`
	Num     json.Number    `json:"num"`
}

type (
	planRow    = planRowOf[jsontext.Value]
	planRowMap = planRowOf[map[string]json.RawMessage]
)

type planOffice struct {
	Name  string   `json:"name"`
	Zip   string   `json:"zip"`
	N     int64    `json:"n"`
	F     float32  `json:"f"`
	OK    bool     `json:"ok"`
	Tags  []string `json:"tags"`
	Inner struct {
		Deep []uint16 `json:"deep"`
	} `json:"inner"`
}

type planTree struct {
	V    string      `json:"v"`
	Kids []*planTree `json:"kids"`
}

// planOdd has what a nested plan leaves to the slow path: unknown members
// and a string option.
type planOdd struct {
	A     int                        `json:"a,string"`
	Extra map[string]json.RawMessage `json:",unknown"`
}

var planInputs = []string{
	`{}`, ` { } `, `{"id":"a","n":1,"n8":-3,"u":7,"f":1.5e3,"f32":0.1,"b":true,"p":5,"tags":["x","y"],"raw":{"k": [1, 2]},"sub":{"A":2},"Name":"nm","x":1,"y":{"z":null}}`,
	`{"id":"\u00e9\"q\\","n":null,"b":null,"id":"dup"}`, `{"id":"caf\xe9"}`, `{"x":"caf\xe9","x":2}`,
	`{"n":1.5}`, `{"n":1e3}`, `{"n8":300}`, `{"u":-1}`, `{"n":"12"}`, `{"id":12}`, `{"b":"true"}`, `{"f":1e400}`,
	`{"id":"a",}`, `{"id":"a"} x`, `[1]`, `null`, `{"id":"a"`, `{"a":01}`, `{"a":-}`, `{"a":[1,]}`, `{"a":{"b"}}`,
	`{"a":tru}`, `{"a":"\x01"}`, `{"a":"\uZZZZ"}`, `{"\u0041":1}`, `{"Skip":"s","ID":"case"}`, `{"":1}`,
	`{"sub":{"A":"x"}}`, `{"p":null,"tags":null}`, `{"raw":   [ 1 , {"a" : "b"} ]  }`,
	`{"office":{"name":"O \"1\"","zip":"02134","n":3,"f":0.1,"ok":true,"tags":["a","b\u00e9"],"inner":{"deep":[1,2]}},"pOffice":{"zip":"00501"},"list":[{"name":"x"},{}],"pList":[null,{"n":-1}],"ints":[1,-2],"grid":[[1.5],[],[2e3,-0.5]],"ps":"s","tree":{"v":"r","kids":[{"v":"k","kids":[]},null]}}`,
	`{"office":null}`, `{"office":{"name":"a"},"office":null,"office":{"zip":"z"}}`, `{"office":{"name":"a"},"office":{"zip":"z"}}`,
	`{"pOffice":{"name":"a"},"pOffice":{"zip":"z"}}`, `{"pOffice":{"name":"a"},"pOffice":null}`, `{"list":[{"name":"a"}],"list":[{"zip":"b"}]}`,
	`{"list":[]}`, `{"list":null}`, `{"list":[null]}`, `{"ints":[]}`, `{"ints":[1.5]}`, `{"ints":[3000000000]}`, `{"ints":["1"]}`, `{"ints":[1,]}`, `{"ints":[,1]}`, `{"ints":[1 2]}`,
	`{"ints" : [ 1 , 2 ] , "grid" : [ [ ] ] }`, `{"office":[]}`, `{"list":{}}`, `{"office":{"name":1}}`, `{"office":{"Name":"case"}}`, `{"office":{"x":1,"name":"a","x":{"y":[]}}}`,
	`{"office":{"tags":["a",null,"c"]}}`, `{"office":{"inner":{"deep":[65536]}}}`, `{"office":{"name":"caf\xe9"}}`, `{"office":{"name":"\ud800"}}`,
	`{"ps":null}`, `{"ps":1}`, `{"tree":{"kids":[{"kids":[{"kids":[{"v":"deep"}]}]}]}}`, `{"odd":{"a":"7","b":2}}`, `{"odd":{"a":7}}`,
	`{"bytes":"aGk=","m":{"a":1},"arr":[1,2]}`, `{"office":{"n":1e2}}`, `{"office":{"f":1e40}}`, `{"pList":[{"name":"a"},{"name":"b"}],"pList":[{"zip":"c"}]}`,
	`{"office":{"name":"a"}`, `{"office":{"name":"a"}}}`, `{"list":[{"name":"a"}`, `{"office":{"name":"a",}}`,
	// numbers: the one-pass parse and where it leaves them to strconv
	`{"n":-0,"f":-0,"u64":0}`, `{"f":0.1,"n":-12,"u64":18446744073709551615}`, `{"f":123456789012345.6}`, `{"f":9007199254740.993}`, `{"f":0.9007199254740993}`, `{"f":12345678901234.5}`,
	`{"f":-1.25}`, `{"f":79.19}`, `{"f":1.}`, `{"f":.5}`, `{"f":1.5e}`, `{"f":1.5e2}`, `{"f":1.5E-2}`, `{"f":00.5}`, `{"f":-01}`,
	`{"f":0.30000000000000004}`, `{"f":9007199254740993}`, `{"f":1-2}`, `{"f":1+2}`, `{"f":1.2.3}`, `{"f":2,"f":-}`,
	`{"n":999999999999999999}`, `{"n":9223372036854775807}`, `{"n":9223372036854775808}`, `{"n":-9223372036854775808}`,
	`{"n":12x}`, `{"n":1-}`, `{"n":-0.0}`, `{"u64":-0}`, `{"u64":-1}`, `{"u":4294967296}`, `{"u64":1.5}`, `{"p":7,"p":-7}`,
	// member names the previous row had at the same position, or nearly
	`{"id\u0022":1}`, `{"i\u0064":"x"}`, `{"id" :"x"}`, `{"id\\":"x"}`, `{"idx":"x"}`, `{"i":"x"}`, `{"ID":"x"}`, `{"id`, `{"id"`,
	// unknown members kept whole, as sent
	`{"x" : 1 , "y":[ 1 ,2 ],"x":{"a" :null}}`, `{"caf\u00e9":1,"\u0041":"b","A":2}`, `{"b":1,"a":2,"id":"i","c":{}}`,
	`{"n":1,"NUM":2,"num":"12","Num":3}`, `{"num":"x"}`, `{"num":1.5e3}`, `{"num":null}`,
}

// TestPlanAfterOtherRows: a decoder remembers the member names of the
// rows before (per position) and compares the next row's names to them
// without a scan; whatever came before, every row decodes as the full
// unmarshal does.
func TestPlanAfterOtherRows(t *testing.T) {
	for _, prev := range planInputs {
		for _, in := range planInputs {
			checkPlanAfter[planRow](t, prev, []byte(in))
		}
	}
}

// TestPlanMatchesSlowPath: the direct scan gives the same row, or the same
// error, as the full unmarshal for every input.
func TestPlanMatchesSlowPath(t *testing.T) {
	for _, in := range planInputs {
		checkPlan[planRow](t, []byte(in))
		checkPlan[planRowMap](t, []byte(in))
		checkPlan[map[string]json.RawMessage](t, []byte(in))
		checkPlan[jsontext.Value](t, []byte(in))
		checkExact[planRow](t, []byte(in))
	}
}

// checkExact checks an ObjectDecoder that matches names exactly against
// the full unmarshal under the same rule.
func checkExact[T any](t *testing.T, in []byte) {
	t.Helper()
	opts := jsonv2.JoinOptions(planOpts, jsonv2.MatchCaseInsensitiveNames(false))
	slow := func(b []byte, v any) error { return jsonv2.Unmarshal(b, v, opts) }
	d := NewObjectDecoder(reflect.TypeFor[T](), true, slow)
	var fast, want T
	serr := slow(in, &want)
	if d.Decode(in, unsafe.Pointer(&fast)) {
		if serr != nil {
			t.Errorf("exact %T %q: decoded, want error %v", fast, in, serr)
		} else if d := cmp.Diff(want, fast); d != "" {
			t.Errorf("exact %T %q: %s", fast, in, d)
		}
	}
}

func checkPlan[T any](t *testing.T, in []byte) { t.Helper(); checkPlanAfter[T](t, "", in) }

// checkPlanAfter checks the row in decoded by a decoder that decoded the
// row prev before it ("": none).
func checkPlanAfter[T any](t *testing.T, prev string, in []byte) {
	t.Helper()
	d := RowDecoder[T](slowUnmarshal, false)()
	var fast, slow T
	what := fmt.Sprintf("%T %q", fast, in)
	if prev != "" {
		var p T
		_ = d.JSON([]byte(prev), &p)
		what += fmt.Sprintf(" after %q", prev)
	}
	ferr := d.JSON(in, &fast)
	serr := slowUnmarshal(in, &slow)
	if (ferr == nil) != (serr == nil) || ferr != nil && ferr.Error() != serr.Error() {
		t.Errorf("%s: error %v, want %v", what, ferr, serr)
	}
	if serr == nil {
		if d := cmp.Diff(slow, fast); d != "" {
			t.Errorf("%s: %s", what, d)
		}
	}
}

func FuzzPlan(f *testing.F) {
	for _, in := range planInputs {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkPlan[planRow](t, in)
		checkPlan[planRowMap](t, in)
		checkPlan[map[string]json.RawMessage](t, in)
		checkPlan[jsontext.Value](t, in)
		checkExact[planRow](t, in)
		checkPlanAfter[planRow](t, string(in), in)
		checkPlanAfter[planRow](t, planInputs[2], in)
	})
}

type csvRow struct {
	ID    string         `json:"id"`
	N     int64          `json:"n"`
	U     uint8          `json:"u"`
	F     float64        `json:"f"`
	B     bool           `json:"b"`
	P     *int64         `json:"p"`
	Tags  []string       `json:"tags"`
	Extra jsontext.Value `json:",unknown"`
	// JSON-encoded cells
	Office *planOffice    `json:"office"`
	PS     *string        `json:"ps"`
	Raw    jsontext.Value `json:"raw"`
}

// TestCSVDirectMatchesJSON: setting fields from cells gives the row (or
// the error) that converting the record to JSON gives.
func TestCSVDirectMatchesJSON(t *testing.T) {
	for _, rec := range [][]string{
		{"a", "1", "2", "1.5", "true", "3", `["x"]`, "12", "007", `{"name":"n","zip":"02134","tags":["t"]}`, "s", `{"k":1}`},
		{"", "", "", "", "", "", "", "", "", "", "", ""},
		{"caf\xe9", "+1", "300", "1e400", "1", "x", "[", "1.50", `{"k":1}`, `{"name":1}`, "caf\xe9", "12"},
		{"é", "007", "-1", "0x1p3", "maybe", "", "null", "true", "-0", "null", "null", "x"},
		{"b", "1.0", "1e2", "Inf", "T", "1", `[]`, "x\ny", `"q"`, `{"name":"a"} `, `""`, `[1]`},
		{"c", "2", "3", "4", "false", "5", `["a",null]`, "", "", `[]`, "", "true"},
		{"d", "2", "3", "4", "false", "5", `[1]`, "", "", ` {"zip":"1"}`, "x", `{`},
		{"d", "2", "3", "4", "false", "5", `["a"]x`, "", "", `{"zip":"1","zip":"2"}`, "x", ``},
	} {
		checkCSV[csvRow](t, rec)
		checkCSV[struct{ ID string }](t, rec)
	}
}

func checkCSV[T any](t *testing.T, rec []string) {
	t.Helper()
	c, err := newCSVColumns([]string{"id", "n", "u", "f", "b", "p", "tags", "x", "y", "office", "ps", "raw"}, SchemaOf(reflect.TypeFor[T]()))
	if err != nil {
		t.Fatal(err)
	}
	var fast, slow T
	d := RowDecoder[T](slowUnmarshal, false)()
	ferr := d.csv(c, rec, 7, &fast)
	d.plan = nil
	serr := d.csv(c, rec, 7, &slow)
	if (ferr == nil) != (serr == nil) || ferr != nil && ferr.Error() != serr.Error() {
		t.Errorf("%q: error %v, want %v", rec, ferr, serr)
	}
	if d := cmp.Diff(slow, fast); serr == nil && d != "" {
		t.Errorf("%q: %s", rec, d)
	}
}

func FuzzCSVDirect(f *testing.F) {
	f.Add("a", "1", "2", "1.5", "true", "x")
	f.Fuzz(func(t *testing.T, a, b, c, d, e, g string) {
		checkCSV[csvRow](t, []string{a, b, c, d, e, "", "", g, b, g, a, e})
	})
}

// FuzzSplitCSV: whenever splitCSV takes a record, encoding/csv reads the
// same single record.
func FuzzSplitCSV(f *testing.F) {
	for _, s := range []string{"a,b,c\n", "\"a\"\"b\",\"x\ny\",\r\n", "a,\"b\",c", "a,b\"c,d\n", "\"a\"x,b,c\n", ",,\n", "a,b,\"c\r\nd\"\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, ok := splitCSV(b, make([]string, 0, 3), make([]bool, 3), &csvScratch{})
		if !ok {
			return
		}
		cr := csv.NewReader(bytes.NewReader(b))
		cr.FieldsPerRecord = 3
		rec, err := cr.Read()
		if err != nil || !slices.Equal(rec, out) {
			t.Fatalf("%q: split %q, encoding/csv %q %v", b, out, rec, err)
		}
		if _, err := cr.Read(); err != io.EOF {
			t.Fatalf("%q: more than one record (%v)", b, err)
		}
	})
}

// TestPlanTakesNestedValues: nested structs, pointers and slices are
// decoded by the direct scan itself (no slow path for the row or field).
func TestPlanTakesNestedValues(t *testing.T) {
	type row struct {
		Office  planOffice   `json:"office"`
		POffice *planOffice  `json:"pOffice"`
		List    []planOffice `json:"list"`
		Tree    *planTree    `json:"tree"`
		PS      *string      `json:"ps"`
	}
	calls := 0
	slow := func(b []byte, v any) error { calls++; return slowUnmarshal(b, v) }
	d := RowDecoder[row](slow, false)()
	for _, in := range []string{
		`{"office":{"name":"O","zip":"02134","tags":["a","b"],"inner":{"deep":[1]}},"pOffice":null,"list":[{"n":1},{}],"tree":{"kids":[{"v":"k"}]},"ps":"x"}`,
		`{"office":null,"pOffice":{"f":1.5},"list":null,"tree":null,"ps":null}`,
	} {
		var r row
		if err := d.JSON([]byte(in), &r); err != nil || calls != 0 {
			t.Fatalf("%s: %v, %d slow calls", in, err, calls)
		}
	}
	for _, f := range []string{"office", "pOffice", "list", "tree", "ps"} {
		if k := d.plan.fields[f].kind; k == setOther {
			t.Errorf("%s: slow path", f)
		}
	}
}

// TestCSVTakesNestedCells: JSON-encoded cells decode straight into the
// nested fields, and unknown columns keep their text.
func TestCSVTakesNestedCells(t *testing.T) {
	calls := 0
	slow := func(b []byte, v any) error { calls++; return slowUnmarshal(b, v) }
	c, err := newCSVColumns([]string{"id", "tags", "office", "ps", "zip"}, SchemaOf(reflect.TypeFor[csvRow]()))
	if err != nil {
		t.Fatal(err)
	}
	var r csvRow
	if err := RowDecoder[csvRow](slow, false)().csv(c, []string{"a", `["x","y"]`, `{"zip":"02134","inner":{"deep":[1]}}`, "", "02134"}, 1, &r); err != nil || calls != 0 {
		t.Fatalf("%v, %d slow calls", err, calls)
	}
	// An empty cell leaves a pointer nil, as a null does in the other
	// formats (the same rows in every format).
	if r.Office == nil || r.Office.Zip != "02134" || len(r.Tags) != 2 || r.PS != nil || string(r.Extra) != `{"zip":"02134"}` {
		t.Fatalf("%+v", r)
	}
}
