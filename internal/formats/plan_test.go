package formats

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"reflect"
	"slices"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"
)

var planOpts = jsonv2.JoinOptions(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))

func slowUnmarshal(b []byte, v any) error { return jsonv2.Unmarshal(b, v, planOpts) }

type planRow struct {
	ID    string                     `json:"id"`
	N     int64                      `json:"n,omitempty"`
	N8    int8                       `json:"n8"`
	U     uint32                     `json:"u"`
	F     float64                    `json:"f"`
	F32   float32                    `json:"f32"`
	B     bool                       `json:"b"`
	P     *int64                     `json:"p"`
	Tags  []string                   `json:"tags"`
	Raw   jsontext.Value             `json:"raw"`
	Sub   struct{ A int }            `json:"sub"`
	Name  string                     // no tag: the Go name
	Skip  string                     `json:"-"`
	Extra map[string]json.RawMessage `json:",unknown"`
}

var planInputs = []string{
	`{}`, ` { } `, `{"id":"a","n":1,"n8":-3,"u":7,"f":1.5e3,"f32":0.1,"b":true,"p":5,"tags":["x","y"],"raw":{"k": [1, 2]},"sub":{"A":2},"Name":"nm","x":1,"y":{"z":null}}`,
	`{"id":"\u00e9\"q\\","n":null,"b":null,"id":"dup"}`, `{"id":"caf\xe9"}`, `{"x":"caf\xe9","x":2}`,
	`{"n":1.5}`, `{"n":1e3}`, `{"n8":300}`, `{"u":-1}`, `{"n":"12"}`, `{"id":12}`, `{"b":"true"}`, `{"f":1e400}`,
	`{"id":"a",}`, `{"id":"a"} x`, `[1]`, `null`, `{"id":"a"`, `{"a":01}`, `{"a":-}`, `{"a":[1,]}`, `{"a":{"b"}}`,
	`{"a":tru}`, `{"a":"\x01"}`, `{"a":"\uZZZZ"}`, `{"\u0041":1}`, `{"Skip":"s","ID":"case"}`, `{"":1}`,
	`{"sub":{"A":"x"}}`, `{"p":null,"tags":null}`, `{"raw":   [ 1 , {"a" : "b"} ]  }`,
}

// TestPlanMatchesSlowPath: the direct scan gives the same row, or the same
// error, as the full unmarshal for every input.
func TestPlanMatchesSlowPath(t *testing.T) {
	for _, in := range planInputs {
		checkPlan[planRow](t, []byte(in))
		checkPlan[map[string]json.RawMessage](t, []byte(in))
	}
}

func checkPlan[T any](t *testing.T, in []byte) {
	t.Helper()
	var fast, slow T
	ferr := RowDecoder[T](slowUnmarshal, false)().JSON(in, &fast)
	serr := slowUnmarshal(in, &slow)
	if (ferr == nil) != (serr == nil) || ferr != nil && ferr.Error() != serr.Error() {
		t.Errorf("%T %q: error %v, want %v", fast, in, ferr, serr)
	}
	if serr == nil {
		if d := cmp.Diff(slow, fast); d != "" {
			t.Errorf("%T %q: %s", fast, in, d)
		}
	}
}

func FuzzPlan(f *testing.F) {
	for _, in := range planInputs {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkPlan[planRow](t, in)
		checkPlan[map[string]json.RawMessage](t, in)
	})
}

type csvRow struct {
	ID    string                     `json:"id"`
	N     int64                      `json:"n"`
	U     uint8                      `json:"u"`
	F     float64                    `json:"f"`
	B     bool                       `json:"b"`
	P     *int64                     `json:"p"`
	Tags  []string                   `json:"tags"`
	Extra map[string]json.RawMessage `json:",unknown"`
}

// TestCSVDirectMatchesJSON: setting fields from cells gives the row (or
// the error) that converting the record to JSON gives.
func TestCSVDirectMatchesJSON(t *testing.T) {
	for _, rec := range [][]string{
		{"a", "1", "2", "1.5", "true", "3", `["x"]`, "12", "007"},
		{"", "", "", "", "", "", "", "", ""},
		{"caf\xe9", "+1", "300", "1e400", "1", "x", "[", "1.50", `{"k":1}`},
		{"é", "007", "-1", "0x1p3", "maybe", "", "null", "true", "-0"},
		{"b", "1.0", "1e2", "Inf", "T", "1", `[]`, "x\ny", `"q"`},
	} {
		checkCSV[csvRow](t, rec)
		checkCSV[struct{ ID string }](t, rec)
	}
}

func checkCSV[T any](t *testing.T, rec []string) {
	t.Helper()
	c, err := newCSVColumns([]string{"id", "n", "u", "f", "b", "p", "tags", "x", "y"}, SchemaOf(reflect.TypeFor[T]()))
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
		checkCSV[csvRow](t, []string{a, b, c, d, e, "", "", g, b})
	})
}

// FuzzSplitCSV: whenever splitCSV takes a record, encoding/csv reads the
// same single record.
func FuzzSplitCSV(f *testing.F) {
	for _, s := range []string{"a,b,c\n", "\"a\"\"b\",\"x\ny\",\r\n", "a,\"b\",c", "a,b\"c,d\n", "\"a\"x,b,c\n", ",,\n", "a,b,\"c\r\nd\"\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, ok := splitCSV(b, make([]string, 0, 3), make([]bool, 3))
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
