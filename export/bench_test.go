package export_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/export"
	"github.com/lendgraph/lendgraph-go/internal/toxitest"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// benchCities are the 20 cities of the benchmark's 20 shards.
var benchCities = []any{"Los Angeles", "San Diego", "San Jose", "Sacramento", "Fresno", "Houston", "Dallas", "Austin",
	"San Antonio", "Fort Worth", "Miami", "Orlando", "Tampa", "Jacksonville", "New York", "Buffalo", "Rochester", "Albany",
	"Chicago", "Naperville"}

// BenchmarkExportThroughCappedLink is the wall time of a 20-shard parquet
// export whose downloads go through Toxiproxy with a bandwidth cap on each
// connection (and jobs that take a while), by concurrency: 1 (one shard
// after the other), the default, and one shard a worker. slowest-shard-s is
// the longest single shard (submit to landed) of the run: the floor a run
// can approach.
//
//	go test -run '^$' -bench ExportThroughCappedLink -benchtime 3x ./export
func BenchmarkExportThroughCappedLink(b *testing.B) {
	tox, err := toxitest.Start()
	if err != nil {
		b.Skipf("no toxiproxy-server: %v", err)
	}
	defer tox.Close()
	srv := lendgraphtest.NewServer(b, lendgraphtest.WithRows("agents", 15000), lendgraphtest.WithJobRate("delivery", 2000), lendgraphtest.WithNoStateShare(0))
	storage := strings.TrimPrefix(srv.StorageURL(), "http://")
	proxy, err := tox.NewProxy("storage", storage)
	if err != nil {
		b.Fatal(err)
	}
	// 256 KB/s a connection: a shard's file (about 70 KB) takes a quarter second.
	if err := proxy.AddToxic("bandwidth", "downstream", map[string]any{"rate": 256}); err != nil {
		b.Fatal(err)
	}
	var d net.Dialer
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == storage {
			addr = proxy.Listen
		}
		return d.DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	c := srv.Client(lendgraph.WithHTTPClient(&http.Client{Transport: tr}))
	ctx := context.Background()
	p, err := export.NewPlan(ctx, c.Agents, &lendgraph.DeliveryRequest{Format: lendgraph.FormatParquet,
		FlatFilters: map[string]any{"city": benchCities}}, &export.PlanOptions{By: []string{"city"}, MaxRows: 5000})
	if err != nil {
		b.Fatal(err)
	}
	if len(p.Shards) != 20 {
		b.Fatalf("%d shards, want 20", len(p.Shards))
	}
	for _, conc := range []int{1, export.DefaultConcurrency, 20} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			var slowest time.Duration
			for b.Loop() {
				var mu sync.Mutex
				start := map[string]time.Time{}
				res, err := export.Run(ctx, c.Agents, p, openDest(b, b.TempDir()), &export.RunOptions{Concurrency: conc, WaitOptions: fastPoll,
					OnEvent: func(e export.Event) {
						mu.Lock()
						defer mu.Unlock()
						switch e.Kind {
						case export.EventSubmitted:
							start[e.Shard] = time.Now()
						case export.EventLanded:
							slowest = max(slowest, time.Since(start[e.Shard]))
						}
					}})
				if err != nil || !res.Complete {
					b.Fatalf("%+v: %v", res, err)
				}
			}
			b.ReportMetric(slowest.Seconds(), "slowest-shard-s")
		})
	}
}
