package lendgraph_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// Parallel ranged downloads from a real object store: MinIO on loopback
// (see minio_test.go for the binary), presigned SigV4 links, through a
// toxiproxy-server process (internal/toxitest) whose bandwidth toxic caps
// every connection, as object stores cap them. Files are csv deliveries
// of about 16, 24, 40, 64 and 256 MiB (a little over each: the fake
// writes whole rows), each download checked byte for byte (sha256 against
// a download over one connection without the cap).
//
//	LENDGRAPH_MINIO=$(go env GOPATH)/bin/minio-... \
//	go test -run '^$' -bench 'MinIODownload' -benchmem -benchtime 1x -count 3 -timeout 60m .
//
// Settings (environment):
//   - LENDGRAPH_BENCH_RATE_KBS: the cap of each connection in KB/s (4000;
//     0: no proxy, MinIO straight over loopback);
//   - LENDGRAPH_BENCH_SIZES_MIB: the file sizes (16,24,40,64,256);
//   - LENDGRAPH_BENCH_CONNS: the connection counts of Download
//     (1 and the default); DownloadFile and Rows run at the largest;
//   - LENDGRAPH_BENCH_FORMATS: the formats of the Rows against Download
//     comparison (csv,ndjson,json), each a file of the rows of the first
//     size's csv file (the fake's ndjson.gz files are much smaller, under
//     the 16 MiB of a parallel download: its rows compress about 20-fold).
//     Parquet rows are the parquet module's (its BenchmarkMinIORows);
//   - LENDGRAPH_BENCH_CONTROL=1: a third run beside Discard and Rows,
//     DiscardWhileDecoding (ndjson, json and csv): Download to io.Discard
//     while the same rows are decoded from memory in the same process,
//     the CPU of Rows without its pipeline.
//
// Sub-benchmarks: Download/conns=N (to io.Discard through sha256),
// DownloadFile/conns=N, Rows/conns=N (csv, Agent rows), and per format
// Discard and Rows (Rows against Download to io.Discard over the same
// capped link, conns = the largest).
func BenchmarkMinIODownload(b *testing.B) {
	store := startMinIO(b)
	sizes := envInts(b, "LENDGRAPH_BENCH_SIZES_MIB", []int{16, 24, 40, 64, 256})
	most := 0
	for _, mib := range sizes {
		most = max(most, mib)
	}
	// Rows are generated on demand: room for the largest file.
	srv, err := lendgraphtest.Start(lendgraphtest.WithS3Store(store), lendgraphtest.WithJobRate("delivery", 1e12),
		lendgraphtest.WithRows("agents", most<<20/200))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	srv.SetEntitlement(lendgraphtest.DefaultOrg, "agents", lendgraphtest.Entitlement{MaxRows: 10_000_000})
	host := strings.TrimPrefix(store.Endpoint, "http://")
	var dial dialer
	if rate := envInt("LENDGRAPH_BENCH_RATE_KBS", 4000); rate > 0 {
		p, err := toxiServer(b).NewProxy(fmt.Sprintf("p%d", toxiProxies.Add(1)), host)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = p.Delete() })
		if err := p.AddToxic("bandwidth", "downstream", map[string]any{"rate": rate}); err != nil {
			b.Fatal(err)
		}
		dial.divert(store.Endpoint, p.Listen)
	}
	conns := envInts(b, "LENDGRAPH_BENCH_CONNS", []int{1, lendgraph.DefaultDownloadConnections})
	most = conns[len(conns)-1]
	client := func(b *testing.B, n int) *lendgraph.Client {
		tr := &http.Transport{DialContext: dial.dial, MaxIdleConnsPerHost: 64}
		b.Cleanup(tr.CloseIdleConnections)
		return srv.Client(lendgraph.WithDownloadConnections(n), lendgraph.WithHTTPClient(&http.Client{Transport: tr}))
	}
	direct := srv.Client(lendgraph.WithDownloadConnections(1))
	// sized delivers a file of a little over mib MiB in format (16 MiB is
	// the parallel threshold): rows in proportion to a smaller file's size,
	// until it is large enough (gzip packs more rows a byte in a larger
	// file).
	sized := func(format lendgraph.Format, mib int) (string, *benchFile) {
		want := int64(mib) << 20
		rows := 10_000
		for {
			job, f := deliverFile(b, direct, format, rows)
			if f.size >= want {
				return job, f
			}
			rows = int(float64(rows)*float64(want)/float64(f.size)*1.005) + 1
		}
	}
	formats := strings.Split(envString("LENDGRAPH_BENCH_FORMATS", "csv,ndjson,json"), ",")
	if slices.Contains(formats, "parquet") {
		b.Fatal("LENDGRAPH_BENCH_FORMATS: parquet rows are measured by the parquet module's BenchmarkMinIORows")
	}
	for i, mib := range sizes {
		job, f := sized(lendgraph.FormatCSV, mib)
		name := fmt.Sprintf("MiB=%d", mib)
		for _, n := range conns {
			b.Run(name+fmt.Sprintf("/Download/conns=%d", n), func(b *testing.B) {
				j := client(b, n).Agents.DeliveryJob(job)
				f.bench(b, func() {
					h := sha256.New()
					got, err := j.Download(context.Background(), h)
					f.check(b, got, h, err)
				})
			})
		}
		b.Run(name+fmt.Sprintf("/DownloadFile/conns=%d", most), func(b *testing.B) {
			j := client(b, most).Agents.DeliveryJob(job)
			path := filepath.Join(b.TempDir(), "agents.csv")
			f.bench(b, func() {
				got, err := j.DownloadFile(context.Background(), path)
				b.StopTimer()
				h := sha256.New()
				if r, err := os.Open(path); err == nil {
					_, _ = io.Copy(h, r)
					r.Close()
				}
				f.check(b, got, h, err)
				_ = os.Remove(path)
				b.StartTimer()
			})
		})
		b.Run(name+fmt.Sprintf("/Rows/conns=%d", most), func(b *testing.B) {
			j := client(b, most).Agents.DeliveryJob(job)
			f.bench(b, func() { f.countRows(b, jobRows(context.Background(), j, lendgraph.FormatCSV)) })
		})
		if i > 0 || len(formats) == 0 || formats[0] == "" {
			continue
		}
		// Decoding never slows a capped download: Rows against Download to
		// io.Discard, every format, alternately.
		for _, format := range formats {
			fj, ff := deliverFile(b, direct, lendgraph.Format(format), f.rows)
			whats := []string{"Discard", "Rows"}
			var mem []byte
			if envInt("LENDGRAPH_BENCH_CONTROL", 0) != 0 {
				whats = append(whats, "DiscardWhileDecoding")
				var buf bytes.Buffer
				if _, err := direct.Agents.DeliveryJob(fj).Download(context.Background(), &buf); err != nil {
					b.Fatal(err)
				}
				mem = buf.Bytes()
			}
			for _, what := range whats {
				b.Run(fmt.Sprintf("%s/format=%s/%s/conns=%d", name, format, what, most), func(b *testing.B) {
					j := client(b, most).Agents.DeliveryJob(fj)
					ff.bench(b, func() {
						if what == "Rows" {
							ff.countRows(b, jobRows(context.Background(), j, lendgraph.Format(format)))
							return
						}
						var wg sync.WaitGroup
						if what == "DiscardWhileDecoding" {
							wg.Add(1)
							go func() {
								defer wg.Done()
								if err := ff.checkRows(lendgraph.DecodeRows[lendgraph.Agent](bytes.NewReader(mem), lendgraph.Format(format))); err != nil {
									b.Error(err) // not Fatal: another goroutine
								}
							}()
						}
						got, err := j.Download(context.Background(), io.Discard)
						wg.Wait()
						if err != nil || got != ff.size {
							b.Fatalf("%d bytes of %d: %v", got, ff.size, err)
						}
					})
				})
			}
		}
	}
}

// benchFile is a delivered file of the MinIO benchmark.
type benchFile struct {
	size int64
	sum  []byte // sha256
	rows int
}

// deliverFile delivers rows agents in format and learns the file's size
// and hash over c (one connection, no cap).
func deliverFile(b *testing.B, c *lendgraph.Client, format lendgraph.Format, rows int) (string, *benchFile) {
	b.Helper()
	ctx := context.Background()
	job, err := c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: format, Limit: int64(rows)})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := job.Wait(ctx, lendgraph.WithPollInterval(50*time.Millisecond, 500*time.Millisecond)); err != nil {
		b.Fatal(err)
	}
	h := sha256.New()
	n, err := job.Download(ctx, h)
	if err != nil {
		b.Fatal(err)
	}
	return job.ID, &benchFile{size: n, sum: h.Sum(nil), rows: rows}
}

func (f *benchFile) check(b *testing.B, n int64, h interface{ Sum([]byte) []byte }, err error) {
	if err != nil || n != f.size || !bytes.Equal(h.Sum(nil), f.sum) {
		b.Fatalf("downloaded %d bytes of %d (%v), sha256 %x, want %x", n, f.size, err, h.Sum(nil), f.sum)
	}
}

func (f *benchFile) countRows(b *testing.B, seq func(func(lendgraph.Agent, error) bool)) {
	if err := f.checkRows(seq); err != nil {
		b.Fatal(err)
	}
}

// checkRows ranges seq to its end: an error, or a count other than the
// file's rows, is returned.
func (f *benchFile) checkRows(seq func(func(lendgraph.Agent, error) bool)) error {
	n := 0
	for _, err := range seq {
		if err != nil {
			return err
		}
		n++
	}
	if n != f.rows {
		return fmt.Errorf("%d rows, want %d", n, f.rows)
	}
	return nil
}

// bench runs op b.N times, with the peak heap, the CPU time and the
// throughput reported.
func (f *benchFile) bench(b *testing.B, op func()) {
	peakHeap(b, func() {
		for b.Loop() {
			op()
		}
	})
	b.SetBytes(f.size)
	b.ReportMetric(float64(f.size)/(1<<20)*float64(b.N)/b.Elapsed().Seconds(), "MiB/s")
}

// envInts reads a comma-separated list of integers, ascending.
func envInts(b *testing.B, name string, def []int) []int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			b.Fatalf("%s=%q: %v", name, v, err)
		}
		out = append(out, n)
	}
	return out
}

func envString(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
