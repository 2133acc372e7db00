package pqwrite_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"strings"
	"testing"

	"github.com/lendgraph/lendgraph-go/internal/pqwrite"
)

// The files are read back by parquet-go in the parquet module's tests
// (TestPqwrite_*) and by DuckDB in cmd/lendgraph's
// (TestFakeParquetWithDuckDB); these check what needs no reader.

var cols = []pqwrite.Column{{Name: "id", Kind: pqwrite.String}, {Name: "n", Kind: pqwrite.Int64}, {Name: "ok", Kind: pqwrite.Boolean},
	{Name: "x", Kind: pqwrite.Double}, {Name: "j", Kind: pqwrite.JSON}}

// TestWriter_Framing: a file starts and ends with PAR1, and the footer
// length before the last magic points back past the data to the footer,
// with or without rows.
func TestWriter_Framing(t *testing.T) {
	for _, rows := range []int{0, 1, 45_000} {
		var buf bytes.Buffer
		w, err := pqwrite.NewWriter(&buf, "rows", cols, pqwrite.Options{Codec: pqwrite.Snappy})
		if err != nil {
			t.Fatal(err)
		}
		for i := range rows {
			if err := w.Write([]any{"a", int64(i), i%2 == 0, nil, []byte(`{"k":1}`)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		b := buf.Bytes()
		if len(b) < 12 || string(b[:4]) != "PAR1" || string(b[len(b)-4:]) != "PAR1" {
			t.Fatalf("%d rows: not framed by PAR1: % x ... % x", rows, b[:min(4, len(b))], b[max(0, len(b)-4):])
		}
		footer := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
		if footer <= 0 || 4+footer+8 > len(b) {
			t.Fatalf("%d rows: footer of %d bytes in a file of %d", rows, footer, len(b))
		}
		if !bytes.Contains(b[len(b)-8-footer:len(b)-8], []byte("rows")) {
			t.Fatalf("%d rows: the footer does not name the schema", rows)
		}
		if err := w.Close(); err != nil || w.Write([]any{"a", nil, nil, nil, nil}) == nil {
			t.Fatalf("%d rows: a second Close (%v) or a write after Close was accepted", rows, err)
		}
	}
}

// TestWriter_RefusesBadInput: a value of the wrong type, a row of the
// wrong length, a repeated or empty column name and an unknown codec are
// errors, not a corrupt file; a refused row leaves the writer usable.
func TestWriter_RefusesBadInput(t *testing.T) {
	for name, c := range map[string][]pqwrite.Column{
		"repeated": {{Name: "a"}, {Name: "a"}},
		"empty":    {{Name: ""}},
		"kind":     {{Name: "a", Kind: 99}},
	} {
		if _, err := pqwrite.NewWriter(io.Discard, "rows", c, pqwrite.Options{}); err == nil {
			t.Errorf("%s column accepted", name)
		}
	}
	if _, err := pqwrite.NewWriter(io.Discard, "rows", cols, pqwrite.Options{Codec: 7}); err == nil {
		t.Error("an unknown codec was accepted")
	}
	w, err := pqwrite.NewWriter(io.Discard, "rows", cols, pqwrite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write([]any{"a"}); err == nil {
		t.Error("a short row was accepted")
	}
	if err := w.Write([]any{"a", "seven", nil, nil, nil}); err == nil || !strings.Contains(err.Error(), `"n"`) {
		t.Errorf("a string in an int64 column: %v", err)
	}
	// A refused row is refused whole: the writer goes on.
	if err := w.Write([]any{"a", int64(7), true, 1.5, "{}"}); err != nil {
		t.Errorf("a good row after a refused one: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
