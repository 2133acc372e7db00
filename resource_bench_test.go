package lendgraph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

const benchRows = 100_000

// BenchmarkIterateAgents compares c.Agents.All with a hand-written
// net/http + encoding/json loop over the same fake server in the same run:
// 100,000 agents, 100 a page, over loopback.
func BenchmarkIterateAgents(b *testing.B) {
	srv := lendgraphtest.NewServer(b, lendgraphtest.WithRows("agents", benchRows))
	ctx := context.Background()

	b.Run("HandLoop", func(b *testing.B) {
		key := srv.DefaultCaller().Key
		hc := &http.Client{}
		b.ReportAllocs()
		m := startMallocs()
		for b.Loop() {
			if n := handLoop(b, hc, srv.URL, key); n != benchRows {
				b.Fatalf("%d rows", n)
			}
		}
		m.report(b)
	})
	sdkAll := func(b *testing.B, c *lendgraph.Client) {
		n := 0
		for a, err := range c.Agents.All(ctx, &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 100}}) {
			if err != nil {
				b.Fatal(err)
			}
			sink += a.TransactionCount
			n++
		}
		if n != benchRows {
			b.Fatalf("%d rows", n)
		}
	}
	b.Run("SDKAll", func(b *testing.B) {
		c := srv.Client()
		b.ReportAllocs()
		m := startMallocs()
		for b.Loop() {
			sdkAll(b, c)
		}
		m.report(b)
	})
	// Alternated runs one loop of each per iteration, in turn, so that
	// both see the same machine (its load drifts over a run), and reports
	// each one's wall time and the process's CPU time (client and
	// in-process server) per record, and the ratio of the wall times.
	b.Run("Alternated", func(b *testing.B) {
		key := srv.DefaultCaller().Key
		hc := &http.Client{}
		c := srv.Client()
		var handWall, sdkWall, handCPU, sdkCPU time.Duration
		i := 0
		for b.Loop() {
			for k := range 2 {
				t0, c0 := time.Now(), cpuTime()
				if (i+k)%2 == 0 {
					if n := handLoop(b, hc, srv.URL, key); n != benchRows {
						b.Fatalf("%d rows", n)
					}
					handWall, handCPU = handWall+time.Since(t0), handCPU+cpuTime()-c0
				} else {
					sdkAll(b, c)
					sdkWall, sdkCPU = sdkWall+time.Since(t0), sdkCPU+cpuTime()-c0
				}
			}
			i++
		}
		per := float64(b.N) * benchRows
		b.ReportMetric(float64(handWall.Nanoseconds())/per, "hand-ns/record")
		b.ReportMetric(float64(sdkWall.Nanoseconds())/per, "sdk-ns/record")
		b.ReportMetric(float64(handCPU.Nanoseconds())/per, "hand-cpu-ns/record")
		b.ReportMetric(float64(sdkCPU.Nanoseconds())/per, "sdk-cpu-ns/record")
		b.ReportMetric(float64(sdkWall)/float64(handWall), "sdk/hand")
	})
}

// mallocs counts allocations over a benchmark loop to report them per
// record. They include the in-process fake server's, which are the same for
// both loops: the difference between the two figures is the client's.
type mallocs uint64

func startMallocs() mallocs {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return mallocs(ms.Mallocs)
}

func (m mallocs) report(b *testing.B) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.Mallocs-uint64(m))/float64(b.N)/benchRows, "allocs/record")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchRows, "ns/record")
}

// handAgent has the typed fields of lendgraph.Agent.
type handAgent struct {
	ID               string `json:"id"`
	FullName         string `json:"fullName"`
	City             string `json:"city"`
	State            string `json:"state"`
	TransactionCount int64  `json:"transactionCount"`
}

func handLoop(b *testing.B, hc *http.Client, base, key string) int {
	n, cursor := 0, ""
	for {
		body := map[string]any{"pagination": map[string]any{"size": 100}}
		if cursor != "" {
			body["pagination"].(map[string]any)["cursor"] = cursor
		}
		buf, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/agents", bytes.NewReader(buf))
		req.Header.Set("x-api-key", key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		var page struct {
			Data   []handAgent `json:"data"`
			Total  int64       `json:"total"`
			Cursor string      `json:"cursor"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			b.Fatal(fmt.Errorf("status %d: %v", resp.StatusCode, err))
		}
		for _, a := range page.Data {
			sink += a.TransactionCount
			n++
		}
		if page.Cursor == "" {
			return n
		}
		cursor = page.Cursor
	}
}
