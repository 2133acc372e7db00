package parquet_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/internal/miniotest"
	"github.com/lendgraph/lendgraph-go/internal/toxitest"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
	"github.com/lendgraph/lendgraph-go/parquet"
)

// BenchmarkMinIORows is parquet.Rows of a parquet delivery against
// job.Download of the same file to io.Discard, over the same capped link,
// alternated in one process: what decoding as the row groups land costs
// beyond the download. The fake keeps its delivery files in MinIO on
// loopback (internal/miniotest) and each connection to the store goes
// through a toxiproxy-server whose bandwidth toxic caps it, as object
// stores cap connections (the root package's BenchmarkMinIODownload is the
// same setup).
//
//	LENDGRAPH_MINIO=$(go env GOPATH)/bin/minio-... \
//	go test -run '^$' -bench 'MinIORows' -benchmem -benchtime 1x -timeout 60m .
//
// Each size's parquet file (a little over LENDGRAPH_BENCH_SIZES_MIB MiB:
// the fake writes whole rows) comes from each writer:
//   - pqwrite: the fake's own file (internal/pqwrite: snappy, PLAIN, row
//     groups of 20,000 rows), from MinIO;
//   - duckdb: the same rows rewritten by DuckDB (row groups of 122,880
//     rows; testdata/bench/rewrite_parquet.sh, which needs node and npm),
//     served by a Go file server (http.ServeContent: Range, ETag) with a
//     stub of the API's status call, behind the same cap.
//
// Settings (environment): LENDGRAPH_BENCH_SIZES_MIB (16,256);
// LENDGRAPH_BENCH_WRITERS (pqwrite,duckdb); LENDGRAPH_BENCH_ROUNDS (3):
// the rounds of Discard then Rows of every writer, one after another;
// LENDGRAPH_BENCH_RATE_KBS, the cap of each connection in KB/s (4000);
// LENDGRAPH_BENCH_CONNS, the connections (the default, 8);
// LENDGRAPH_BENCH_TYPES, the row types of Rows (Agent,plain);
// LENDGRAPH_BENCH_CONTROL=0 leaves out DiscardWhileDecoding (run with
// Agent).
//
// Sub-benchmarks, per size, round and writer: Discard (Download to
// io.Discard through sha256), Rows/type=Agent (parquet.Rows into the
// SDK's Agent: typed fields, every other column kept in Extra),
// Rows/type=plain (five typed fields, no Extra: what the landing costs
// when decoding costs little), DiscardWhileDecoding/type=Agent (Download
// to io.Discard while parquet.Decode decodes the same file from disk:
// Rows' CPU without its pipeline).
//
// Metrics: cpu-ms/op and peak-heap-MiB (the process), MiB/s, and for
// Rows first-row-s (the first row, from the call) and tail-ms (the last
// row, from the store's last byte: the decoding left once the download
// is in).
func BenchmarkMinIORows(b *testing.B) {
	store := miniotest.Start(b)
	sizes := envInts(b, "LENDGRAPH_BENCH_SIZES_MIB", []int{16, 256})
	writers := strings.Split(envString("LENDGRAPH_BENCH_WRITERS", "pqwrite,duckdb"), ",")
	rounds := envInt("LENDGRAPH_BENCH_ROUNDS", 3)
	conns := envInt("LENDGRAPH_BENCH_CONNS", lendgraph.DefaultDownloadConnections)
	most := 0
	for _, mib := range sizes {
		most = max(most, mib)
	}
	// Rows are generated on demand: room for the largest file (a parquet
	// row of the fake's is about 90 bytes).
	srv, err := lendgraphtest.Start(lendgraphtest.WithS3Store(store), lendgraphtest.WithJobRate("delivery", 1e12),
		lendgraphtest.WithRows("agents", most<<20/40))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	srv.SetEntitlement(lendgraphtest.DefaultOrg, "agents", lendgraphtest.Entitlement{MaxRows: 10_000_000})
	files := newFileStore(b)
	var dial dialer
	if rate := envInt("LENDGRAPH_BENCH_RATE_KBS", 4000); rate > 0 {
		toxi := toxitest.New(b)
		for i, host := range []string{strings.TrimPrefix(store.Endpoint, "http://"), files.host} {
			p, err := toxi.NewProxy(fmt.Sprintf("p%d", i), host)
			if err != nil {
				b.Fatal(err)
			}
			if err := p.AddToxic("bandwidth", "downstream", map[string]any{"rate": rate}); err != nil {
				b.Fatal(err)
			}
			dial.divert(host, p.Listen)
		}
	}
	tr := &http.Transport{DialContext: dial.dial, MaxIdleConnsPerHost: 64}
	b.Cleanup(tr.CloseIdleConnections)
	last := &lastByte{next: tr}
	capped := func(opts ...lendgraph.Option) *lendgraph.Client {
		return srv.Client(append([]lendgraph.Option{lendgraph.WithDownloadConnections(conns), lendgraph.WithHTTPClient(&http.Client{Transport: last})}, opts...)...)
	}
	direct := srv.Client(lendgraph.WithDownloadConnections(1))

	type delivery struct {
		writer string
		path   string // the file on disk
		job    *lendgraph.DeliveryJob[lendgraph.Agent]
		size   int64
		sum    []byte
		rows   int
	}
	var all [][]*delivery // by size
	for _, mib := range sizes {
		want := int64(mib) << 20
		id, size, rows := sizedParquet(b, direct, want, 10_000)
		fake := filepath.Join(b.TempDir(), "pqwrite.parquet")
		sum := downloadTo(b, direct.Agents.DeliveryJob(id), fake)
		var ds []*delivery
		for _, w := range writers {
			d := &delivery{writer: w, path: fake, size: size, sum: sum, rows: rows}
			switch w {
			case "pqwrite":
				d.job = capped().Agents.DeliveryJob(id)
			case "duckdb":
				// DuckDB's file of the same rows is smaller: rewrite more
				// of the fake's rows until it is large enough.
				src, srcSize, n := fake, size, rows
				d.path = filepath.Join(b.TempDir(), "duckdb.parquet")
				for {
					if out, err := exec.Command("../testdata/bench/rewrite_parquet.sh", src, d.path).CombinedOutput(); err != nil {
						b.Fatalf("rewriting the file with DuckDB (node and npm needed; LENDGRAPH_BENCH_WRITERS=pqwrite leaves it out): %v\n%s", err, out)
					}
					if d.size, d.sum = fileSum(b, d.path); d.size >= want {
						break
					}
					scale := float64(want) / float64(d.size) * 1.005
					var more string
					more, srcSize, n = sizedParquet(b, direct, int64(float64(srcSize)*scale), int(float64(n)*scale)+1)
					src = filepath.Join(b.TempDir(), "more.parquet")
					downloadTo(b, direct.Agents.DeliveryJob(more), src)
				}
				d.rows = n
				id, base := files.add(b, d.path)
				d.job = capped(lendgraph.WithBaseURL(base)).Agents.DeliveryJob(id)
			default:
				b.Fatalf("LENDGRAPH_BENCH_WRITERS: no writer %q (pqwrite, duckdb)", w)
			}
			b.Logf("%d MiB, %s: %d bytes, %d rows", mib, w, d.size, d.rows)
			ds = append(ds, d)
		}
		all = append(all, ds)
	}

	control := envInt("LENDGRAPH_BENCH_CONTROL", 1) != 0
	types := map[string]bool{}
	for _, t := range strings.Split(envString("LENDGRAPH_BENCH_TYPES", "Agent,plain"), ",") {
		types[t] = true
	}
	for i, mib := range sizes {
		for round := 1; round <= rounds; round++ {
			for _, d := range all[i] {
				name := fmt.Sprintf("MiB=%d/round=%d/writer=%s/conns=%d", mib, round, d.writer, conns)
				b.Run(name+"/Discard", func(b *testing.B) {
					benchFile(b, d.size, func() {
						h := sha256.New()
						n, err := d.job.Download(context.Background(), h)
						if err != nil || n != d.size || string(h.Sum(nil)) != string(d.sum) {
							b.Fatalf("downloaded %d bytes of %d (%v), or other bytes", n, d.size, err)
						}
					})
				})
				if types["Agent"] {
					b.Run(name+"/Rows/type=Agent", func(b *testing.B) { benchRows(b, d.job, d.size, d.rows, last) })
				}
				if types["plain"] {
					b.Run(name+"/Rows/type=plain", func(b *testing.B) {
						benchRows(b, lendgraph.DeliveryJobAs[plainAgent](d.job), d.size, d.rows, last)
					})
				}
				if !control || !types["Agent"] {
					continue
				}
				// Rows' CPU without its pipeline: the download to
				// io.Discard while the same rows are decoded from the
				// file on disk.
				b.Run(name+"/DiscardWhileDecoding/type=Agent", func(b *testing.B) {
					benchFile(b, d.size, func() {
						var wg sync.WaitGroup
						wg.Go(func() {
							f, err := os.Open(d.path)
							if err != nil {
								b.Error(err)
								return
							}
							defer f.Close()
							n := 0
							for _, err := range parquet.Decode[lendgraph.Agent](f, d.size) {
								if err != nil {
									b.Error(err) // not Fatal: another goroutine
									return
								}
								n++
							}
							if n != d.rows {
								b.Errorf("%d rows, want %d", n, d.rows)
							}
						})
						n, err := d.job.Download(context.Background(), io.Discard)
						wg.Wait()
						if err != nil || n != d.size {
							b.Fatalf("downloaded %d bytes of %d: %v", n, d.size, err)
						}
					})
				})
			}
		}
	}
}

// benchRows ranges parquet.Rows of job (a file of size bytes and rows
// rows) b.N times; last notes the store's last byte.
func benchRows[T any](b *testing.B, job *lendgraph.DeliveryJob[T], size int64, rows int, last *lastByte) {
	var first, tail time.Duration
	benchFile(b, size, func() {
		start := time.Now()
		n := 0
		for _, err := range parquet.Rows(context.Background(), job) {
			if err != nil {
				b.Fatalf("after %d rows: %v", n, err)
			}
			if n++; n == 1 {
				first += time.Since(start)
			}
		}
		tail += time.Since(last.at())
		if n != rows {
			b.Fatalf("%d rows, want %d", n, rows)
		}
	})
	b.ReportMetric(first.Seconds()/float64(b.N), "first-row-s")
	b.ReportMetric(float64(tail.Milliseconds())/float64(b.N), "tail-ms")
}

// sizedParquet delivers a parquet file of at least want bytes over c and
// returns its job, size and rows: rows (first guess rows) in proportion to
// a smaller file's size, until it is large enough.
func sizedParquet(b *testing.B, c *lendgraph.Client, want int64, rows int) (id string, size int64, n int) {
	for {
		job, err := c.Agents.Deliver(context.Background(), &lendgraph.DeliveryRequest{Format: lendgraph.FormatParquet, Limit: int64(rows)})
		if err != nil {
			b.Fatal(err)
		}
		st, err := job.Wait(context.Background(), lendgraph.WithPollInterval(50*time.Millisecond, 500*time.Millisecond))
		if err != nil {
			b.Fatal(err)
		}
		if st.Bytes >= want {
			return job.ID, st.Bytes, rows
		}
		if st.Processed < int64(rows) {
			b.Fatalf("%d rows make %d bytes: the fake holds too few", st.Processed, st.Bytes)
		}
		rows = int(float64(rows)*float64(want)/float64(st.Bytes)*1.005) + 1
	}
}

// downloadTo downloads job's file to path and returns its sha256.
func downloadTo(b *testing.B, job *lendgraph.DeliveryJob[lendgraph.Agent], path string) []byte {
	if _, err := job.DownloadFile(context.Background(), path); err != nil {
		b.Fatal(err)
	}
	_, sum := fileSum(b, path)
	return sum
}

func fileSum(b *testing.B, path string) (int64, []byte) {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		b.Fatal(err)
	}
	return n, h.Sum(nil)
}

// benchFile runs op b.N times, with the peak heap, the CPU time and the
// throughput reported.
func benchFile(b *testing.B, size int64, op func()) {
	peakHeap(b, func() {
		for b.Loop() {
			op()
		}
	})
	b.SetBytes(size)
	b.ReportMetric(float64(size)/(1<<20)*float64(b.N)/b.Elapsed().Seconds(), "MiB/s")
}

// fileStore serves files of other writers as parquet deliveries: a stub of
// the API's delivery status call (a completed parquet job whose link is
// the file) on one loopback server, the files on another (the storage
// host: http.ServeContent, with Range and an ETag).
type fileStore struct {
	api, storage *httptest.Server
	host         string // the storage host's host:port
	mu           sync.Mutex
	paths        map[string]string // by job id
}

func newFileStore(b *testing.B) *fileStore {
	fs := &fileStore{paths: map[string]string{}}
	fs.storage = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fs.mu.Lock()
		path, ok := fs.paths[strings.TrimPrefix(r.URL.Path, "/files/")]
		fs.mu.Unlock()
		f, err := os.Open(path)
		if !ok || err != nil {
			http.NotFound(w, r)
			return
		}
		defer f.Close()
		st, _ := f.Stat()
		w.Header().Set("ETag", `"`+strconv.FormatInt(st.ModTime().UnixNano(), 16)+`"`)
		http.ServeContent(w, r, "", st.ModTime(), f)
	}))
	b.Cleanup(fs.storage.Close)
	fs.host = strings.TrimPrefix(fs.storage.URL, "http://")
	fs.api = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		fs.mu.Lock()
		path, ok := fs.paths[id]
		fs.mu.Unlock()
		st, err := os.Stat(path)
		if !ok || err != nil || !strings.HasPrefix(r.URL.Path, "/v1/agents/bulk-delivery/") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"jobId": id, "entityType": "agents", "format": "parquet", "status": "completed",
			"bytes": st.Size(), "resultsUrl": fs.storage.URL + "/files/" + id})
	}))
	b.Cleanup(fs.api.Close)
	return fs
}

// add serves the file at path; it returns the job id and the API's base
// address.
func (fs *fileStore) add(b *testing.B, path string) (id, base string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	id = fmt.Sprintf("dlv_file%d", len(fs.paths)+1)
	fs.paths[id] = path
	return id, fs.api.URL
}

// lastByte is a transport that notes when the last body byte of any
// response arrived.
type lastByte struct {
	next http.RoundTripper
	last atomic.Int64 // unix nanoseconds
}

func (l *lastByte) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(r)
	if err == nil {
		resp.Body = &notedBody{ReadCloser: resp.Body, l: l}
	}
	return resp, err
}

func (l *lastByte) at() time.Time { return time.Unix(0, l.last.Load()) }

type notedBody struct {
	io.ReadCloser
	l *lastByte
}

func (b *notedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.l.last.Store(time.Now().UnixNano())
	}
	return n, err
}
