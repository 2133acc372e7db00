package export_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"gocloud.dev/blob/fileblob"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/export"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// BenchmarkLandObject lands one shard (the Californian agents among
// 1,000,000: one delivery of tens of MB), by format, into a bucket
// (fileblob: the file streams from its link into the store, hashed and
// decoded on the way, parquet checked with ranged reads) and into a
// directory (a temporary file beside its final name).
// peak-heap-MiB is the most heap in use while the run went, above the heap
// before it (the in-process fake's own files are part of it alike in both).
//
//	go test -run '^$' -bench LandObject -benchtime 1x ./export
func BenchmarkLandObject(b *testing.B) {
	const rows = 1_000_000
	for _, f := range []lendgraph.Format{lendgraph.FormatCSV, lendgraph.FormatParquet} {
		for _, dest := range []string{"bucket", "dir"} {
			b.Run(string(f)+"/"+dest, func(b *testing.B) {
				srv := lendgraphtest.NewServer(b, lendgraphtest.WithRows("agents", rows), lendgraphtest.WithNoStateShare(0))
				srv.SetEntitlement(lendgraphtest.DefaultOrg, "agents", lendgraphtest.Entitlement{MaxRows: rows})
				c := srv.Client()
				ctx := context.Background()
				// One shard: the agents of California.
				p, err := export.NewPlan(ctx, c.Agents, &lendgraph.DeliveryRequest{Format: f, FlatFilters: map[string]any{"state": "CA"}},
					&export.PlanOptions{By: []string{"state"}})
				if err != nil || len(p.Shards) != 1 {
					b.Fatalf("%d shards, %v", len(p.Shards), err)
				}
				var peak uint64
				for range b.N {
					o := &export.RunOptions{WaitOptions: fastPoll, Concurrency: 1}
					st := openDest(b, b.TempDir())
					if dest == "bucket" {
						bk, err := fileblob.OpenBucket(b.TempDir(), nil)
						if err != nil {
							b.Fatal(err)
						}
						st = export.BucketStorage(bk, "file bucket")
						defer st.Close()
					}
					runtime.GC()
					stop := sampleHeap()
					res, err := export.Run(ctx, c.Agents, p, st, o)
					peak = max(peak, stop())
					if err != nil || !res.Complete || res.LandedRows != p.Total {
						b.Fatalf("%+v, %v", res, err)
					}
				}
				b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
				b.ReportMetric(float64(p.Total), "rows")
			})
		}
	}
}

// sampleHeap samples the heap in use every millisecond until the returned
// stop, which gives the most seen above the heap at the start.
func sampleHeap() (stop func() uint64) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	done := make(chan struct{})
	var wg sync.WaitGroup
	var peak uint64
	wg.Go(func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > base {
				peak = max(peak, ms.HeapInuse-base)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak
	}
}
