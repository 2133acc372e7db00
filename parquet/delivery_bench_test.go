package parquet_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	parquetgo "github.com/parquet-go/parquet-go"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
	"github.com/lendgraph/lendgraph-go/parquet"
)

// Benchmarks of the delivery decoders over agent files written by the fake
// (realistic rows), generated once per size into a temp dir. Sizes: 100k
// rows by default; LENDGRAPH_BENCH_ROWS=1000000 for the 1M figures.
//
//	go test -run '^$' -bench 'Delivery' -benchmem -benchtime 3x .

type benchFiles struct {
	rows  int
	paths map[lendgraph.Format]string
}

var (
	benchOnce sync.Once
	bench     *benchFiles
	benchErr  error
)

func deliveryBenchRows() int {
	if n, err := strconv.Atoi(os.Getenv("LENDGRAPH_BENCH_ROWS")); err == nil && n > 0 {
		return n
	}
	return 100_000
}

// benchServer starts a fake holding n agent rows, closed when b ends, and
// delivers them in every format.
func benchServer(b *testing.B, n int) (*lendgraph.Client, map[lendgraph.Format]*lendgraph.DeliveryJob[lendgraph.Agent]) {
	srv, err := lendgraphtest.Start(lendgraphtest.WithRows("agents", n), lendgraphtest.WithJobRate("delivery", 1e12))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	srv.SetEntitlement(lendgraphtest.DefaultOrg, "agents", lendgraphtest.Entitlement{MaxRows: int64(n)})
	c := srv.Client()
	jobs := map[lendgraph.Format]*lendgraph.DeliveryJob[lendgraph.Agent]{}
	for _, f := range allFormats {
		job, err := c.Agents.Deliver(context.Background(), &lendgraph.DeliveryRequest{Format: f})
		if err == nil {
			_, err = job.Wait(context.Background(), lendgraph.WithPollInterval(50*time.Millisecond, 200*time.Millisecond))
		}
		if err != nil {
			b.Fatal(err)
		}
		jobs[f] = job
	}
	return c, jobs
}

// setupBench returns the delivery files, written once per size by the
// fake into a cache dir kept across runs (the fake's data is
// deterministic), named after the size and what the fake writes now
// (fakeFingerprint): a file of an earlier writer is never read.
func setupBench(b *testing.B) *benchFiles {
	benchOnce.Do(func() {
		n := deliveryBenchRows()
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("lendgraph-bench-%d-%s", n, fakeFingerprint(b)))
		bf := &benchFiles{rows: n, paths: map[lendgraph.Format]string{}}
		missing := false
		for _, f := range allFormats {
			bf.paths[f] = filepath.Join(dir, "agents."+string(f))
			if _, err := os.Stat(bf.paths[f]); err != nil {
				missing = true
			}
		}
		if missing {
			benchErr = func() error {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return err
				}
				_, jobs := benchServer(b, n)
				for f, job := range jobs {
					out, err := os.Create(bf.paths[f] + ".tmp")
					if err != nil {
						return err
					}
					if _, err := job.Download(context.Background(), out); err != nil {
						return err
					}
					if err := out.Close(); err != nil {
						return err
					}
					if err := os.Rename(bf.paths[f]+".tmp", bf.paths[f]); err != nil {
						return err
					}
				}
				return nil
			}()
		}
		bench = bf
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return bench
}

// fakeFingerprint is a short hash of the files the fake delivers now:
// 100 rows in every format. It changes with the fake's writers and data.
func fakeFingerprint(b *testing.B) string {
	_, jobs := benchServer(b, 100)
	h := sha256.New()
	for _, f := range allFormats {
		if _, err := jobs[f].Download(context.Background(), h); err != nil {
			b.Fatal(err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:6])
}

func reportRows(b *testing.B, rows int) {
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

func openBench(b *testing.B, f lendgraph.Format) (*os.File, int64) {
	fh, err := os.Open(setupBench(b).paths[f])
	if err != nil {
		b.Fatal(err)
	}
	st, _ := fh.Stat()
	b.SetBytes(st.Size())
	return fh, st.Size()
}

func BenchmarkDeliveryDecode(b *testing.B) {
	for _, f := range allFormats {
		b.Run(fmt.Sprintf("%s/Agent/rows=%d", f, deliveryBenchRows()), func(b *testing.B) { benchDecode[lendgraph.Agent](b, f) })
		b.Run(fmt.Sprintf("%s/plain/rows=%d", f, deliveryBenchRows()), func(b *testing.B) { benchDecode[plainAgent](b, f) })
	}
}

// benchDecode decodes the file into T: lendgraph.Agent (typed fields plus
// every other member kept in Extra) or plainAgent (the baselines' row).
func benchDecode[T any](b *testing.B, f lendgraph.Format) {
	bf := setupBench(b)
	peakHeap(b, func() {
		for b.Loop() {
			fh, size := openBench(b, f)
			n := 0
			seq := lendgraph.DecodeRows[T](bufio.NewReaderSize(fh, 1<<20), f)
			if f == lendgraph.FormatParquet {
				seq = parquet.Decode[T](fh, size)
			}
			for _, err := range seq {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			fh.Close()
			if n != bf.rows {
				b.Fatalf("%d rows", n)
			}
		}
	})
	reportRows(b, bf.rows)
}

// plainAgent is the baseline's row: the typed fields, no unknown members.
type plainAgent struct {
	ID               string `json:"id" parquet:"id,optional"`
	FullName         string `json:"fullName" parquet:"fullName,optional"`
	City             string `json:"city" parquet:"city,optional"`
	State            string `json:"state" parquet:"state,optional"`
	TransactionCount int64  `json:"transactionCount" parquet:"transactionCount,optional"`
}

// Baselines: hand-written loops over the same files, in the same run.
func BenchmarkDeliveryBaseline(b *testing.B) {
	rows := deliveryBenchRows()
	run := func(name string, f lendgraph.Format, body func(fh *os.File, size int64) int) {
		b.Run(fmt.Sprintf("%s/rows=%d", name, rows), func(b *testing.B) {
			peakHeap(b, func() {
				for b.Loop() {
					fh, size := openBench(b, f)
					if n := body(fh, size); n != rows && name != "ndjson-gunzip-discard" {
						b.Fatalf("%d rows", n)
					}
					fh.Close()
				}
			})
			reportRows(b, rows)
		})
	}
	run("ndjson-gunzip-discard", lendgraph.FormatNDJSON, func(fh *os.File, _ int64) int {
		zr, _ := gzip.NewReader(bufio.NewReaderSize(fh, 1<<20))
		_, _ = io.Copy(io.Discard, zr)
		return 0
	})
	run("ndjson-gzip+json.Unmarshal", lendgraph.FormatNDJSON, func(fh *os.File, _ int64) int {
		zr, _ := gzip.NewReader(bufio.NewReaderSize(fh, 1<<20))
		br := bufio.NewReaderSize(zr, 1<<20)
		n := 0
		for {
			line, err := br.ReadSlice('\n')
			if len(line) > 1 {
				var a plainAgent
				if json.Unmarshal(line, &a) != nil {
					b.Fatal("bad line")
				}
				n++
			}
			if err != nil {
				return n
			}
		}
	})
	run("json-Decoder-loop", lendgraph.FormatJSON, func(fh *os.File, _ int64) int {
		dec := json.NewDecoder(bufio.NewReaderSize(fh, 1<<20))
		_, _ = dec.Token()
		n := 0
		for dec.More() {
			var a plainAgent
			if err := dec.Decode(&a); err != nil {
				b.Fatal(err)
			}
			n++
		}
		return n
	})
	run("csv+strconv", lendgraph.FormatCSV, func(fh *os.File, _ int64) int {
		cr := csv.NewReader(bufio.NewReaderSize(fh, 1<<20))
		cr.ReuseRecord = true
		head, _ := cr.Read()
		col := map[string]int{}
		for i, h := range head {
			col[h] = i
		}
		n := 0
		for {
			rec, err := cr.Read()
			if err == io.EOF {
				return n
			}
			if err != nil {
				b.Fatal(err)
			}
			a := plainAgent{ID: rec[col["id"]], FullName: rec[col["fullName"]], City: rec[col["city"]], State: rec[col["state"]]}
			a.TransactionCount, _ = strconv.ParseInt(rec[col["transactionCount"]], 10, 64)
			n++
		}
	})
	run("parquet-GenericReader", lendgraph.FormatParquet, func(fh *os.File, size int64) int {
		pf, err := parquetgo.OpenFile(fh, size)
		if err != nil {
			b.Fatal(err)
		}
		r := parquetgo.NewGenericReader[plainAgent](pf)
		defer r.Close()
		buf := make([]plainAgent, 512)
		n := 0
		for {
			k, err := r.Read(buf)
			n += k
			if err == io.EOF {
				return n
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDeliveryRows is job.Rows (parquet.Rows for parquet) over
// loopback from the fake, against
// the download alone (to io.Discard) in the same run.
func BenchmarkDeliveryRows(b *testing.B) {
	rows := deliveryBenchRows()
	_, jobs := benchServer(b, rows)
	for _, f := range allFormats {
		job := jobs[f]
		b.Run(fmt.Sprintf("%s/rows=%d", f, rows), func(b *testing.B) {
			rangeRows(b, rows, func() iter.Seq2[lendgraph.Agent, error] { return jobRows(context.Background(), job, f) })
		})
		b.Run(fmt.Sprintf("%s-download-only/rows=%d", f, rows), func(b *testing.B) {
			for b.Loop() {
				if _, err := job.Download(context.Background(), io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Nested rows: the row type of a data engineer's own, with 7 scalar fields,
// a []string and a nested object, over files written by DuckDB
// (testdata/bench/make_bench.sh; csv and parquet carry tags and office as
// JSON-encoded strings, nested-native.parquet as a LIST and a STRUCT). The
// floors decode the nested JSON strings too.
//
//	testdata/bench/make_bench.sh 1000000
//	LENDGRAPH_BENCH_ROWS=1000000 go test -run '^$' -bench 'DeliveryNested' -benchmem -benchtime 1x .

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
	Name   string `json:"name" parquet:"name,optional"`
	Phone  string `json:"phone" parquet:"phone,optional"`
	Zip    string `json:"zip" parquet:"zip,optional"`
	Agents int64  `json:"agents" parquet:"agents,optional"`
}

// nestedFlat is the parquet floor's row: tags and office as the JSON text
// the file holds.
type nestedFlat struct {
	ID               string  `parquet:"id,optional"`
	FullName         string  `parquet:"fullName,optional"`
	City             string  `parquet:"city,optional"`
	State            string  `parquet:"state,optional"`
	TransactionCount int64   `parquet:"transactionCount,optional"`
	Volume           float64 `parquet:"volume,optional"`
	IsTeamLead       bool    `parquet:"isTeamLead,optional"`
	Tags             string  `parquet:"tags,optional"`
	Office           string  `parquet:"office,optional"`
}

// nestedNative is the floor's row for nested-native.parquet.
type nestedNative struct {
	ID               string       `parquet:"id,optional"`
	FullName         string       `parquet:"fullName,optional"`
	City             string       `parquet:"city,optional"`
	State            string       `parquet:"state,optional"`
	TransactionCount int64        `parquet:"transactionCount,optional"`
	Volume           float64      `parquet:"volume,optional"`
	IsTeamLead       bool         `parquet:"isTeamLead,optional"`
	Tags             []string     `parquet:"tags,optional,list"`
	Office           nestedOffice `parquet:"office,optional"`
}

var nestedFiles = []struct{ name, file string }{
	{"ndjson", "nested.ndjson.gz"}, {"json", "nested.json"}, {"csv", "nested.csv"},
	{"parquet-122880", "nested.parquet"}, {"parquet-1group", "nested-1rg.parquet"}, {"parquet-native", "nested-native.parquet"},
}

// openNested opens a benchmark file, skipping when make_bench.sh has not
// written it.
func openNested(b *testing.B, file string) (*os.File, int64) {
	rows := deliveryBenchRows()
	dir := os.Getenv("LENDGRAPH_BENCH_NESTED_DIR")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("lendgraph-nested-%d", rows))
	}
	fh, err := os.Open(filepath.Join(dir, file))
	if err != nil {
		b.Skipf("%v: write the files with testdata/bench/make_bench.sh %d", err, rows)
	}
	st, _ := fh.Stat()
	b.SetBytes(st.Size())
	return fh, st.Size()
}

func BenchmarkDeliveryNested(b *testing.B) {
	rows := deliveryBenchRows()
	for _, nf := range nestedFiles {
		b.Run(fmt.Sprintf("%s/rows=%d", nf.name, rows), func(b *testing.B) {
			peakHeap(b, func() {
				for b.Loop() {
					fh, size := openNested(b, nf.file)
					var seq func(func(nestedRow, error) bool)
					switch nf.name {
					case "ndjson", "json", "csv":
						seq = lendgraph.DecodeRows[nestedRow](bufio.NewReaderSize(fh, 1<<20), lendgraph.Format(nf.name))
					default:
						seq = parquet.Decode[nestedRow](fh, size)
					}
					n := 0
					for r, err := range seq {
						if err != nil {
							b.Fatal(err)
						}
						if n == 1 && (r.Office.Zip != "00013" || len(r.Tags) != 1 || r.Volume != 79.19) {
							b.Fatalf("row 2: %+v", r)
						}
						n++
					}
					fh.Close()
					if n != rows {
						b.Fatalf("%d rows", n)
					}
				}
			})
			reportRows(b, rows)
		})
	}
}

// BenchmarkDeliveryNestedFloor is the plain loops the decoders are held
// against: each decodes every row fully into nestedRow on one goroutine.
func BenchmarkDeliveryNestedFloor(b *testing.B) {
	rows := deliveryBenchRows()
	run := func(name, file string, body func(fh *os.File, size int64) int) {
		b.Run(fmt.Sprintf("%s/rows=%d", name, rows), func(b *testing.B) {
			peakHeap(b, func() {
				for b.Loop() {
					fh, size := openNested(b, file)
					if n := body(fh, size); n != rows && n >= 0 {
						b.Fatalf("%d rows", n)
					}
					fh.Close()
				}
			})
			reportRows(b, rows)
		})
	}
	var sink nestedRow
	run("ndjson-gunzip-discard", "nested.ndjson.gz", func(fh *os.File, _ int64) int {
		zr, _ := gzip.NewReader(bufio.NewReaderSize(fh, 1<<20))
		_, _ = io.Copy(io.Discard, zr)
		return -1
	})
	run("ndjson-gzip+json.Unmarshal", "nested.ndjson.gz", func(fh *os.File, _ int64) int {
		zr, _ := gzip.NewReader(bufio.NewReaderSize(fh, 1<<20))
		br := bufio.NewReaderSize(zr, 1<<20)
		n := 0
		for {
			line, err := br.ReadSlice('\n')
			if len(line) > 1 {
				var r nestedRow
				if json.Unmarshal(line, &r) != nil {
					b.Fatal("bad line")
				}
				sink = r
				n++
			}
			if err != nil {
				return n
			}
		}
	})
	run("json-Decoder-loop", "nested.json", func(fh *os.File, _ int64) int {
		dec := json.NewDecoder(bufio.NewReaderSize(fh, 1<<20))
		_, _ = dec.Token()
		n := 0
		for dec.More() {
			var r nestedRow
			if err := dec.Decode(&r); err != nil {
				b.Fatal(err)
			}
			sink = r
			n++
		}
		return n
	})
	run("csv+strconv+json.Unmarshal", "nested.csv", func(fh *os.File, _ int64) int {
		cr := csv.NewReader(bufio.NewReaderSize(fh, 1<<20))
		cr.ReuseRecord = true
		head, _ := cr.Read()
		col := map[string]int{}
		for i, h := range head {
			col[h] = i
		}
		n := 0
		for {
			rec, err := cr.Read()
			if err == io.EOF {
				return n
			}
			if err != nil {
				b.Fatal(err)
			}
			r := nestedRow{ID: rec[col["id"]], FullName: rec[col["fullName"]], City: rec[col["city"]], State: rec[col["state"]]}
			r.TransactionCount, _ = strconv.ParseInt(rec[col["transactionCount"]], 10, 64)
			r.Volume, _ = strconv.ParseFloat(rec[col["volume"]], 64)
			r.IsTeamLead, _ = strconv.ParseBool(rec[col["isTeamLead"]])
			if json.Unmarshal([]byte(rec[col["tags"]]), &r.Tags) != nil || json.Unmarshal([]byte(rec[col["office"]]), &r.Office) != nil {
				b.Fatal("bad nested cell")
			}
			sink = r
			n++
		}
	})
	flat := func(fh *os.File, size int64) int {
		pf, err := parquetgo.OpenFile(fh, size)
		if err != nil {
			b.Fatal(err)
		}
		pr := parquetgo.NewGenericReader[nestedFlat](pf)
		defer pr.Close()
		buf := make([]nestedFlat, 512)
		n := 0
		for {
			k, err := pr.Read(buf)
			for _, f := range buf[:k] {
				r := nestedRow{ID: f.ID, FullName: f.FullName, City: f.City, State: f.State,
					TransactionCount: f.TransactionCount, Volume: f.Volume, IsTeamLead: f.IsTeamLead}
				if json.Unmarshal([]byte(f.Tags), &r.Tags) != nil || json.Unmarshal([]byte(f.Office), &r.Office) != nil {
					b.Fatal("bad nested value")
				}
				sink = r
			}
			n += k
			if err == io.EOF {
				return n
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	run("parquet-122880-GenericReader+json.Unmarshal", "nested.parquet", flat)
	run("parquet-1group-GenericReader+json.Unmarshal", "nested-1rg.parquet", flat)
	run("parquet-native-GenericReader", "nested-native.parquet", func(fh *os.File, size int64) int {
		pf, err := parquetgo.OpenFile(fh, size)
		if err != nil {
			b.Fatal(err)
		}
		pr := parquetgo.NewGenericReader[nestedNative](pf)
		defer pr.Close()
		buf := make([]nestedNative, 512)
		n := 0
		for {
			k, err := pr.Read(buf)
			for _, f := range buf[:k] {
				sink = nestedRow(f)
			}
			n += k
			if err == io.EOF {
				return n
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	_ = sink
}

// BenchmarkDeliveryNestedRows is DeliveryJob.Rows on the nested-row
// ndjson.gz file served over loopback (a status record and the file, with
// ranges), into lendgraph.Agent (five typed fields; volume, isTeamLead,
// tags and office kept in Extra) and into nestedRow (every member typed).
// Its floor is BenchmarkDeliveryNestedFloor/ndjson-gunzip-discard.
//
//	LENDGRAPH_BENCH_ROWS=1000000 go test -run '^$' -bench 'DeliveryNestedRows|DeliveryNestedFloor/ndjson-gunzip' -benchmem -benchtime 1x -count 5 .
func BenchmarkDeliveryNestedRows(b *testing.B) {
	rows := deliveryBenchRows()
	fh, size := openNested(b, "nested.ndjson.gz")
	fh.Close()
	name := fh.Name()
	mux := http.NewServeMux()
	var base string
	mux.HandleFunc("GET /v1/agents/bulk-delivery/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jobId":%q,"entityType":"agents","format":"ndjson","status":"completed","estimatedTotal":%d,"processed":%d,"bytes":%d,"resultsUrl":%q}`,
			r.PathValue("id"), rows, rows, size, base+"/files/nested.ndjson.gz")
	})
	mux.HandleFunc("GET /files/nested.ndjson.gz", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, name) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	base = srv.URL
	c, err := lendgraph.NewClient(lendgraph.WithAPIKey("k"), lendgraph.WithBaseURL(srv.URL))
	if err != nil {
		b.Fatal(err)
	}
	job := c.Agents.DeliveryJob("nested")
	b.Run(fmt.Sprintf("Agent/rows=%d", rows), func(b *testing.B) { benchJobRows(b, job, rows, size) })
	b.Run(fmt.Sprintf("nested/rows=%d", rows), func(b *testing.B) {
		benchJobRows(b, lendgraph.DeliveryJobAs[nestedRow](job), rows, size)
	})
}

func benchJobRows[T any](b *testing.B, job *lendgraph.DeliveryJob[T], rows int, size int64) {
	b.SetBytes(size)
	rangeRows(b, rows, func() iter.Seq2[T, error] { return job.Rows(context.Background()) })
}

// rangeRows ranges over the rows seq gives, rows of them, once an op.
func rangeRows[T any](b *testing.B, rows int, seq func() iter.Seq2[T, error]) {
	peakHeap(b, func() {
		for b.Loop() {
			n := 0
			for _, err := range seq() {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			if n != rows {
				b.Fatalf("%d rows", n)
			}
		}
	})
	reportRows(b, rows)
}
