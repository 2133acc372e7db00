// Package peers compares the SDK's row decoder with other Go JSON decoders:
// each decodes every line of the nested-row ndjson file (inflated into
// memory first) into the same struct, one row at a time, on one core.
//
//	../make_bench.sh 1000000
//	GOWORK=off go test -run '^$' -bench . -benchmem -benchtime 2x -cpu 1
//
// BenchmarkSDK is lendgraph.DecodeRows over the whole file: line
// splitting, its pipeline and the hand-over of each row included.
package peers

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/bytedance/sonic"
	gojson "github.com/goccy/go-json"
	lendgraph "github.com/lendgraph/lendgraph-go"
	segjson "github.com/segmentio/encoding/json"
)

// nestedRow is BenchmarkDeliveryNested's row (delivery_bench_test.go).
type nestedRow struct {
	ID               string       `json:"id"`
	FullName         string       `json:"fullName"`
	City             string       `json:"city"`
	State            string       `json:"state"`
	TransactionCount int64        `json:"transactionCount"`
	Volume           float64      `json:"volume"`
	IsTeamLead       bool         `json:"isTeamLead"`
	Tags             []string     `json:"tags"`
	Office           nestedOffice `json:"office"`
}

type nestedOffice struct {
	Name   string `json:"name"`
	Phone  string `json:"phone"`
	Zip    string `json:"zip"`
	Agents int64  `json:"agents"`
}

// file is the inflated nested.ndjson.gz of make_bench.sh.
func file(b *testing.B) []byte {
	dir := os.Getenv("LENDGRAPH_BENCH_NESTED_DIR")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "lendgraph-nested-1000000")
	}
	fh, err := os.Open(filepath.Join(dir, "nested.ndjson.gz"))
	if err != nil {
		b.Skipf("%v: write it with ../make_bench.sh", err)
	}
	defer fh.Close()
	zr, err := gzip.NewReader(fh)
	if err != nil {
		b.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	return data
}

func perLine(b *testing.B, unmarshal func([]byte, any) error) {
	lines := bytes.Split(bytes.TrimSpace(file(b)), []byte{'\n'})
	for b.Loop() {
		for _, l := range lines {
			var r nestedRow
			if err := unmarshal(l, &r); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(lines)), "ns/row")
}

func BenchmarkEncodingJSON(b *testing.B) { perLine(b, json.Unmarshal) }
func BenchmarkSonic(b *testing.B)        { perLine(b, sonic.Unmarshal) }
func BenchmarkGoccy(b *testing.B)        { perLine(b, gojson.Unmarshal) }
func BenchmarkSegmentio(b *testing.B)    { perLine(b, segjson.Unmarshal) }

func BenchmarkSDK(b *testing.B) {
	data := file(b)
	rows := bytes.Count(data, []byte{'\n'})
	for b.Loop() {
		n := 0
		for _, err := range lendgraph.DecodeRows[nestedRow](bufio.NewReader(bytes.NewReader(data)), lendgraph.FormatNDJSON) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != rows {
			b.Fatal(fmt.Sprintf("%d rows of %d", n, rows))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(rows), "ns/row")
}
