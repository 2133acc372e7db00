package formats

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"
)

// referenceArray is a JSON array producer on jsontext.Decoder: the
// reference the splitter is held to.
func referenceArray(r io.Reader) Producer {
	return func(e *emitter) error {
		br := io.MultiReader(r)
		head := make([]byte, 3)
		n, _ := io.ReadFull(br, head)
		if !bytes.Equal(head[:n], []byte("\xEF\xBB\xBF")) {
			br = io.MultiReader(bytes.NewReader(head[:n]), br)
		}
		dec := jsontext.NewDecoder(br, jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
		if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '[' {
			return fmt.Errorf("not an array: %v", err)
		}
		for dec.PeekKind() != ']' {
			v, err := dec.ReadValue()
			if err != nil {
				return err
			}
			if !e.add(v) {
				return errStopped
			}
		}
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		if _, err := dec.ReadToken(); err != io.EOF {
			return errors.New("more after the array")
		}
		return nil
	}
}

type arrayResult struct {
	Rows []map[string]jsontext.Value
	Err  bool
}

func decodeArray(p Producer) arrayResult {
	var out arrayResult
	for r, err := range Stream("json", p, RowDecoder[map[string]jsontext.Value](slowUnmarshal, false), 0) {
		if err != nil {
			out.Err = true
			break
		}
		out.Rows = append(out.Rows, r)
	}
	return out
}

// oneByte reads one byte at a time: elements straddle every buffer edge.
type oneByte struct{ r io.Reader }

func (o oneByte) Read(p []byte) (int, error) { return o.r.Read(p[:min(len(p), 1)]) }

func checkArray(t *testing.T, in []byte) {
	t.Helper()
	want := decodeArray(referenceArray(bytes.NewReader(in)))
	for _, r := range []io.Reader{bytes.NewReader(in), oneByte{bytes.NewReader(in)}} {
		got := decodeArray(JSONArray(r, 0))
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("%q: %s", in, d)
		}
	}
}

var arrayInputs = []string{
	`[]`, ` [ ] `, "\xEF\xBB\xBF[{}]", `[{"a":1},{"b":"x\"]}"}]`, `[{"a":[1,{"b":[]}]} , {"c":"\\"}]`, `[{"a":1}`, `[{"a":1},`, `[{"a":1},]`,
	`[,{"a":1}]`, `[{"a":1}{"b":2}]`, `[{"a":1}] x`, `[{"a":1}]  `, `[{"a":1]}`, `[{"a":1}}]`, `[1,null]`, `[{"a":01}]`, `[{"a":"\x01"}]`,
	`{"a":1}`, ``, `[`, `[{"a":"caf\xe9"}]`, `[{"a":1,"a":2}]`, `[{"a":"x\\\\"},{"b":2}]`, `["x"]`, `[{"a":1} 2]`, `[{}, {}, {}]`,
}

func TestJSONArrayMatchesReference(t *testing.T) {
	for _, in := range arrayInputs {
		checkArray(t, []byte(in))
	}
	// Rows across many buffers, and one row longer than a buffer.
	var b strings.Builder
	b.WriteString("[\n")
	for i := range 5000 {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `{"id":"r%d","s":"%s"}`, i, strings.Repeat("x", i%97))
	}
	fmt.Fprintf(&b, `,{"big":"%s"}]`, strings.Repeat("y", 3*batchBytes))
	want := decodeArray(referenceArray(strings.NewReader(b.String())))
	got := decodeArray(JSONArray(strings.NewReader(b.String()), 0))
	if len(want.Rows) != 5001 || want.Err || !cmp.Equal(want, got) {
		t.Fatalf("%d rows (%v), want %d (%v)", len(got.Rows), got.Err, len(want.Rows), want.Err)
	}
	// The row limit.
	if got := decodeArray(JSONArray(strings.NewReader(b.String()), 2*batchBytes)); len(got.Rows) != 5000 || !got.Err {
		t.Fatalf("limit: %d rows (%v)", len(got.Rows), got.Err)
	}
}

func FuzzJSONArray(f *testing.F) {
	for _, in := range arrayInputs {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkArray(t, in) })
}
