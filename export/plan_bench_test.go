package export_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/export"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// BenchmarkPlan1000Shards is the time NewPlan takes to size an export of
// agents against lendgraphtest by state, city and brokerage, with an
// entitlement ceiling of one row in 250 a delivery (4,000 of 1,000,000):
// every state is above it, and so is every city of the largest states, so
// every shard is split by all three fields (about 1,100 shards; records
// without a value of a field get shards of their own). 100,000 rows under
// a ceiling of 400 make the same plan at a tenth of the rows. Each
// iteration starts a fresh fake, so that the index the fake builds on its
// first filtered query (reading every record once) is part of the cold
// figure; warm builds it before the timer starts, which leaves the
// planning requests alone. shards is the plan's shard count, requests the
// API requests planning made, fake-heap-MB the live heap after planning
// (the fake's dataset and index, and the plan), after a GC, while the fake
// still runs.
//
//	go test -run '^$' -bench Plan1000Shards -benchmem -benchtime 1x ./export
func BenchmarkPlan1000Shards(b *testing.B) {
	for _, rows := range []int{100_000, 1_000_000} {
		for _, warm := range []bool{false, true} {
			name := fmt.Sprintf("rows=%d/cold", rows)
			if warm {
				name = fmt.Sprintf("rows=%d/warm", rows)
			}
			b.Run(name, func(b *testing.B) { benchPlan(b, rows, int64(rows/250), warm) })
		}
	}
}

func benchPlan(b *testing.B, rows int, ceiling int64, warm bool) {
	ctx := context.Background()
	var shards, requests int
	var heap uint64
	for b.Loop() {
		b.StopTimer()
		srv, err := lendgraphtest.Start(lendgraphtest.WithRows("agents", rows), lendgraphtest.WithNoStateShare(0))
		if err != nil {
			b.Fatal(err)
		}
		srv.SetEntitlement(lendgraphtest.DefaultOrg, "agents", lendgraphtest.Entitlement{MaxRows: ceiling})
		c := srv.Client()
		if warm {
			if _, err := c.Agents.List(ctx, &lendgraph.ListRequest{FlatFilters: map[string]any{"state": "CA"}}); err != nil {
				b.Fatal(err)
			}
			srv.ResetRequests()
		}
		b.StartTimer()
		p, err := export.NewPlan(ctx, c.Agents, &lendgraph.DeliveryRequest{Format: lendgraph.FormatParquet},
			&export.PlanOptions{By: []string{"state", "city", "brokerage"}, IncludeMissing: true})
		b.StopTimer()
		if err == nil && (p.EstimatedRows() != int64(rows) || len(p.By) != 3 || p.MaxRows != ceiling) {
			err = fmt.Errorf("plan of %d rows by %v under %d rows a shard; want %d rows by 3 fields under %d", p.EstimatedRows(), p.By, p.MaxRows, rows, ceiling)
		}
		if err == nil {
			shards, requests = len(p.Shards), len(srv.Requests())
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			heap = ms.HeapAlloc
		}
		srv.Close()
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(shards), "shards")
	b.ReportMetric(float64(requests), "requests")
	b.ReportMetric(float64(heap)/1e6, "fake-heap-MB")
}
