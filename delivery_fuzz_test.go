package lendgraph_test

import (
	"bytes"
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// The fuzz targets check that no input panics or hangs a decoder, and that
// rows yielded before an error are whole rows (decoding stops at the error).

func fuzzDecode(f *testing.F, format lendgraph.Format, seeds ...[]byte) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		seq := lendgraph.DecodeRows[lendgraph.Row](bytes.NewReader(b), format, lendgraph.WithMaxLineSize(1<<16))
		errs := 0
		for _, err := range seq {
			if err != nil {
				errs++
			}
			if errs > 1 {
				t.Fatal("rows after an error")
			}
		}
		// A typed row type goes through the same paths.
		for range lendgraph.DecodeRows[lendgraph.Agent](bytes.NewReader(b), format) {
		}
	})
}

func FuzzDecodeNDJSON(f *testing.F) {
	fuzzDecode(f, lendgraph.FormatNDJSON, readTestFile(f, "agents.ndjson.gz"), []byte("{\"id\":\"a\"}\r\n{}"), gzipBytes("{\"id\":1}\n"),
		append(gzipBytes("{\"id\":\"a\"}\n"), gzipBytes("{\"id\":\"b\"}\n")...), gzipBytes("{\"bigId\":9007199254740993}\n"))
}

func FuzzDecodeJSON(f *testing.F) {
	fuzzDecode(f, lendgraph.FormatJSON, readTestFile(f, "agents.json"), []byte("[]"), []byte(`[{"id":"a"},1,null]`), []byte(`[{"id":"a"}] {"id":"b"}`), []byte("\xef\xbb\xbf[{}]"))
}

func FuzzDecodeCSV(f *testing.F) {
	fuzzDecode(f, lendgraph.FormatCSV, readTestFile(f, "agents.csv"), []byte("id\n\"a\"\"b\"\n"), []byte("id,transactionCount\na,1\n"),
		[]byte("\xef\xbb\xbfid\na\n"), []byte("id,x\na,1,2\n"), []byte("id\n\"a\n"), []byte("id\na\"b\n"))
}
