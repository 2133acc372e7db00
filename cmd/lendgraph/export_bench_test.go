package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lendgraph/lendgraph-go/export"
	"github.com/lendgraph/lendgraph-go/internal/miniotest"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// BenchmarkExport50ShardsOn8Processes is the wall time of an export of 50
// or more shards run as eight `lendgraph export run` processes (standing in
// for machines) into MinIO, each taking an eighth of the shards at once,
// then `export commit`; every download is capped at 64 KB/s a connection,
// as object stores cap a stream. one-shard-s is the time of the largest
// shard run alone by one process: the floor the wall time can approach.
//
//	LENDGRAPH_MINIO=$(go env GOPATH)/bin/minio-... \
//	  go test -run '^$' -bench Export50ShardsOn8Processes -benchtime 3x ./cmd/lendgraph
func BenchmarkExport50ShardsOn8Processes(b *testing.B) {
	store := miniotest.Start(b)
	c := exportCLI(b, 12000, 1500, lendgraphtest.WithJobRate("delivery", 2000))
	c.env = awsEnv(store)
	setAWSEnv(b, store)
	ctx := context.Background()
	createBucket(ctx, c.t, rawBucket(b, "s3://"+store.Bucket+"?use_path_style=true"), store.Bucket)
	c.srv.InjectFault("GET", "/objects/*", lendgraphtest.Fault{Kind: lendgraphtest.Throttle, Rate: 64 << 10, Times: -1})
	plan := func(prefix string) (string, *export.Plan) {
		url := "s3://" + store.Bucket + "/" + prefix + "?use_path_style=true"
		r := c.run("export", "plan", "agents", "--by", "state", "--format", "parquet", "--out", url, "--json")
		wantCode(b, r, 0)
		var p export.Plan
		if err := json.Unmarshal([]byte(r.stdout), &p); err != nil {
			b.Fatalf("plan --json: %v", err)
		}
		return url, &p
	}

	// The floor: the largest shard alone.
	url, p := plan("floor")
	if len(p.Shards) < 50 {
		b.Fatalf("a plan of %d shards: want 50 or more", len(p.Shards))
	}
	largest := 0
	for i, sh := range p.Shards {
		if sh.Rows > p.Shards[largest].Rows {
			largest = i
		}
	}
	t0 := time.Now()
	wantCode(b, c.run("export", "run", "--plan", url, "--shard", strconv.Itoa(largest)), 0)
	one := time.Since(t0)

	const procs = 8
	var shards int
	i := 0
	for b.Loop() {
		b.StopTimer()
		i++
		url, p := plan(fmt.Sprintf("run-%d", i))
		shards = len(p.Shards)
		b.StartTimer()
		var wg sync.WaitGroup
		errs := make(chan string, procs)
		for w := range procs {
			args := []string{"export", "run", "--plan", url, "--concurrency", strconv.Itoa((len(p.Shards) + procs - 1) / procs)}
			for s := w; s < len(p.Shards); s += procs {
				args = append(args, "--shard", strconv.Itoa(s))
			}
			wg.Go(func() {
				if r := c.run(args...); r.code != 0 {
					errs <- strings.TrimSpace(r.stderr)
				}
			})
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			b.Fatalf("a worker failed: %s", e)
		}
		wantCode(b, c.run("export", "commit", "--plan", url), 0)
	}
	b.ReportMetric(one.Seconds(), "one-shard-s")
	b.ReportMetric(float64(shards), "shards")
}
