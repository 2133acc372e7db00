package parquet_test

import (
	"bytes"
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/parquet"
)

// FuzzDecodeParquet checks that no input panics or hangs the decoder, and
// that rows yielded before an error are whole rows (decoding stops at the
// error), as the root package's fuzz targets do for the other formats.
func FuzzDecodeParquet(f *testing.F) {
	pq := readTestFile(f, "agents.parquet")
	for _, s := range [][]byte{pq, pq[:len(pq)/2], pq[len(pq)/2:], []byte("PAR1\x00\x00\x00\x00PAR1")} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		errs := 0
		for _, err := range parquet.Decode[lendgraph.Row](bytes.NewReader(b), int64(len(b))) {
			if err != nil {
				errs++
			}
			if errs > 1 {
				t.Fatal("rows after an error")
			}
		}
	})
}
