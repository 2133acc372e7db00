// Package peers compares the SDK's row decoder with other Go JSON decoders:
// each decodes every line of the nested-row ndjson file (inflated into
// memory first) into the same struct, one row at a time, on one core.
//
//	../make_bench.sh 1000000
//	GOWORK=off go test -run '^$' -bench . -benchmem -benchtime 2x -cpu 1
//
// Two row types: the nested row of BenchmarkDeliveryNested (a user's own
// struct, every member typed) and the SDK's lendgraph.Agent (five typed
// members; the SDK keeps the other four in Extra, which the peers, having
// no such field, drop: they decode into agentTyped, Agent's typed fields).
//
// BenchmarkSDK is lendgraph.DecodeRows over the whole inflated file: line
// splitting, its pipeline and the hand-over of each row included.
// BenchmarkInflate is the floor under every ndjson.gz figure: inflating the
// file (klauspost's gzip, which the SDK uses) into io.Discard.
//
// Each reports cpu-ms/1M-rows, the process's CPU time (user + system,
// garbage collection included) per million rows, which does not move with
// what else the machine runs as wall time does; the SDK also reports the
// most live heap it held beyond the inflated file it reads.
package peers

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bytedance/sonic"
	gojson "github.com/goccy/go-json"
	"github.com/klauspost/compress/gzip"
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

// agentTyped is lendgraph.Agent's typed fields: what the peers decode for
// the Agent rows (they cannot keep the other members).
type agentTyped struct {
	ID               string `json:"id"`
	FullName         string `json:"fullName,omitempty"`
	City             string `json:"city,omitempty"`
	State            string `json:"state,omitempty"`
	TransactionCount int64  `json:"transactionCount,omitempty"`
}

// path is nested.ndjson.gz of make_bench.sh.
func path() string {
	dir := os.Getenv("LENDGRAPH_BENCH_NESTED_DIR")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "lendgraph-nested-1000000")
	}
	return filepath.Join(dir, "nested.ndjson.gz")
}

// file is the inflated nested.ndjson.gz.
func file(b *testing.B) []byte {
	fh, err := os.Open(path())
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

// cpuTime is the CPU time the process has used (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measure runs the benchmark loop, each op handling rows rows, and reports
// CPU-ms per 1M rows and ns a row (wall).
func measure(b *testing.B, rows int, op func()) {
	runtime.GC()
	cpu0 := cpuTime()
	for b.Loop() {
		op()
	}
	cpu := cpuTime() - cpu0
	b.ReportMetric(cpu.Seconds()*1e3/float64(b.N)/float64(rows)*1e6, "cpu-ms/1M-rows")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(rows), "ns/row")
}

func perLine[T any](b *testing.B, unmarshal func([]byte, any) error) {
	lines := bytes.Split(bytes.TrimSpace(file(b)), []byte{'\n'})
	var sink T
	measure(b, len(lines), func() {
		for _, l := range lines {
			var r T
			if err := unmarshal(l, &r); err != nil {
				b.Fatal(err)
			}
			sink = r
		}
	})
	_ = sink
}

func peers[T any](b *testing.B) {
	b.Run("encoding-json", func(b *testing.B) { perLine[T](b, json.Unmarshal) })
	b.Run("sonic", func(b *testing.B) { perLine[T](b, sonic.Unmarshal) })
	b.Run("goccy", func(b *testing.B) { perLine[T](b, gojson.Unmarshal) })
	b.Run("segmentio", func(b *testing.B) { perLine[T](b, segjson.Unmarshal) })
}

// BenchmarkNested: the peers into the user's own struct.
func BenchmarkNested(b *testing.B) { peers[nestedRow](b) }

// BenchmarkAgent: the peers into Agent's typed fields.
func BenchmarkAgent(b *testing.B) { peers[agentTyped](b) }

// BenchmarkSDK is DecodeRows over the inflated file into each row type.
func BenchmarkSDK(b *testing.B) {
	b.Run("nested", func(b *testing.B) { sdk[nestedRow](b) })
	b.Run("Agent", func(b *testing.B) { sdk[lendgraph.Agent](b) })
}

func sdk[T any](b *testing.B) {
	data := file(b)
	rows := bytes.Count(data, []byte{'\n'})
	var sink T
	peak := heapPeak(func() {
		measure(b, rows, func() {
			n := 0
			for r, err := range lendgraph.DecodeRows[T](bufio.NewReader(bytes.NewReader(data)), lendgraph.FormatNDJSON) {
				if err != nil {
					b.Fatal(err)
				}
				sink = r
				n++
			}
			if n != rows {
				b.Fatal(fmt.Sprintf("%d rows of %d", n, rows))
			}
		})
	})
	_ = sink
	b.ReportMetric(float64(peak)/(1<<20), "peak-live-heap-MiB")
}

// BenchmarkInflate is the floor: the file inflated into io.Discard.
func BenchmarkInflate(b *testing.B) {
	raw, err := os.ReadFile(path())
	if err != nil {
		b.Skipf("%v: write it with ../make_bench.sh", err)
	}
	rows := bytes.Count(file(b), []byte{'\n'})
	measure(b, rows, func() {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, zr); err != nil {
			b.Fatal(err)
		}
	})
}

// heapPeak runs fn while sampling the live heap (what the last garbage
// collection kept) every 2 ms, and returns the highest sample in bytes
// above the live heap before it (the inflated file the decoder reads from
// memory is not its own). Garbage not yet collected is not counted: with
// the file in memory the collector lets it grow to the file's size.
func heapPeak(fn func()) uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	var peak atomic.Uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	fn()
	close(stop)
	<-done
	return peak.Load() - min(base, peak.Load())
}
