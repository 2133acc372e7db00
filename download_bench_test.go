package lendgraph_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// Parallel ranged downloads against a storage host whose every connection
// is capped, as object stores cap them: a Toxiproxy proxy (in process)
// with a bandwidth toxic of 4 MB/s (LENDGRAPH_BENCH_RATE_KBS) between the
// client and the fake's storage host, and a csv delivery of about 128 MiB
// (LENDGRAPH_BENCH_DOWNLOAD_ROWS rows; 522,300 by default).
//
//	go test -run '^$' -bench 'ParallelDownload' -benchmem -benchtime 1x -count 3 -timeout 30m .

type downloadBench struct {
	srv  *lendgraphtest.Server
	job  string
	size int64
	sum  []byte // sha256 of the file
	rows int
	dial dialer
}

// setupDownloadBench starts the fake with the delivery and the proxy in
// front of its storage host, both closed when b ends, and learns the
// file's size and hash over a direct connection.
func setupDownloadBench(b *testing.B) *downloadBench {
	rows := envInt("LENDGRAPH_BENCH_DOWNLOAD_ROWS", 522_300)
	srv, err := lendgraphtest.Start(lendgraphtest.WithRows("agents", rows), lendgraphtest.WithJobRate("delivery", 1e12))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	srv.SetEntitlement(lendgraphtest.DefaultOrg, "agents", lendgraphtest.Entitlement{MaxRows: int64(rows)})
	job, f := deliverFile(b, srv.Client(), lendgraph.FormatCSV, rows)
	storage := srv.StorageURL()
	p, err := toxiServer(b).NewProxy(fmt.Sprintf("p%d", toxiProxies.Add(1)), storage[len("http://"):])
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Delete() })
	rate := envInt("LENDGRAPH_BENCH_RATE_KBS", 4000)
	if err := p.AddToxic("bandwidth", "downstream", map[string]any{"rate": rate}); err != nil {
		b.Fatal(err)
	}
	d := &downloadBench{srv: srv, job: job, size: f.size, sum: f.sum, rows: rows}
	d.dial.divert(storage, p.Listen)
	return d
}

// client returns a client whose storage connections go through the proxy;
// its idle connections are closed when b ends (before the proxy stops).
func (d *downloadBench) client(b *testing.B, conns int) *lendgraph.DeliveryJob[lendgraph.Agent] {
	tr := &http.Transport{DialContext: d.dial.dial, MaxIdleConnsPerHost: 64}
	b.Cleanup(tr.CloseIdleConnections)
	c := d.srv.Client(lendgraph.WithDownloadConnections(conns), lendgraph.WithHTTPClient(&http.Client{Transport: tr}))
	return c.Agents.DeliveryJob(d.job)
}

func (d *downloadBench) check(b *testing.B, h hash.Hash, n int64) {
	if n != d.size || !bytes.Equal(h.Sum(nil), d.sum) {
		b.Fatalf("downloaded %d bytes of %d, sha256 %x, want %x", n, d.size, h.Sum(nil), d.sum)
	}
}

func BenchmarkParallelDownload(b *testing.B) {
	d := setupDownloadBench(b)
	mib := float64(d.size) / (1 << 20)
	report := func(b *testing.B) {
		b.SetBytes(d.size)
		b.ReportMetric(mib*float64(b.N)/b.Elapsed().Seconds(), "MiB/s")
	}
	for _, conns := range []int{1, 4} {
		b.Run(fmt.Sprintf("Download/conns=%d/MiB=%.0f", conns, mib), func(b *testing.B) {
			job := d.client(b, conns)
			peakHeap(b, func() {
				for b.Loop() {
					h := sha256.New()
					n, err := job.Download(context.Background(), h)
					if err != nil {
						b.Fatal(err)
					}
					d.check(b, h, n)
				}
			})
			report(b)
		})
	}
	b.Run(fmt.Sprintf("DownloadFile/conns=4/MiB=%.0f", mib), func(b *testing.B) {
		job := d.client(b, 4)
		path := filepath.Join(b.TempDir(), "agents.csv")
		peakHeap(b, func() {
			for b.Loop() {
				n, err := job.DownloadFile(context.Background(), path)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				h := sha256.New()
				f, _ := os.Open(path)
				_, _ = io.Copy(h, f)
				f.Close()
				d.check(b, h, n)
				_ = os.Remove(path)
				b.StartTimer()
			}
		})
		report(b)
	})
	// Rows against DownloadFile followed by decoding the file from disk.
	b.Run(fmt.Sprintf("Rows/conns=4/MiB=%.0f", mib), func(b *testing.B) {
		job := d.client(b, 4)
		peakHeap(b, func() {
			for b.Loop() {
				n := 0
				for _, err := range job.Rows(context.Background()) {
					if err != nil {
						b.Fatal(err)
					}
					n++
				}
				if n != d.rows {
					b.Fatalf("%d rows, want %d", n, d.rows)
				}
			}
		})
		report(b)
	})
	b.Run(fmt.Sprintf("DownloadFileThenDecode/conns=4/MiB=%.0f", mib), func(b *testing.B) {
		job := d.client(b, 4)
		path := filepath.Join(b.TempDir(), "agents.csv")
		peakHeap(b, func() {
			for b.Loop() {
				if _, err := job.DownloadFile(context.Background(), path); err != nil {
					b.Fatal(err)
				}
				f, err := os.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for _, err := range lendgraph.DecodeRows[lendgraph.Agent](bufio.NewReaderSize(f, 1<<20), lendgraph.FormatCSV) {
					if err != nil {
						b.Fatal(err)
					}
					n++
				}
				f.Close()
				_ = os.Remove(path)
				if n != d.rows {
					b.Fatalf("%d rows, want %d", n, d.rows)
				}
			}
		})
		report(b)
	})
}
